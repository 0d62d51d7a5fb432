"""The one benchmark harness: what every script in ``benchmarks/`` measures with and writes through.

- **This checkout, or another one.** Importing the harness puts the checkout being measured first on ``sys.path``:
  this repository, or the folder named by ``LOWDENS_CHECKOUT`` (set by :func:`run_worker` for a base commit's
  worker), so that ``import lowdens_dask`` in a script measures that checkout even if another one is installed.
  :data:`CHECKOUT` names it; :func:`check_checkout` asserts that the package came from there.
- **A base commit beside the current one.** :func:`base_checkout` checks a commit out into a temporary git
  worktree (removed afterwards); :func:`run_worker` runs ``script --worker CHECKOUT ...`` in a subprocess on either
  checkout (``LOWDENS_CHECKOUT`` and ``PYTHONPATH`` name it, single thread by default) and returns the JSON object
  the worker printed last (:func:`emit`); :func:`start_worker` starts one, for workers that run side by side. A script alternates the two checkouts in one run, so that a ratio
  base / this is measured on the same machine at the same time.
- **Data sets.** :func:`bundled` yields the bundled data sets of ``lowdens_dask.datasets`` with their number of
  classes; :func:`drop_constant_columns`, :func:`names`.
- **Timing.** :func:`median_time`: the median (and every time) of ``repeats`` calls after ``warmup`` untimed ones;
  :func:`timed`: one call's result and seconds. :data:`SINGLE_THREAD_ENV`, :func:`single_thread` (before numpy
  loads) and :func:`subprocess_env` for single-thread measurements.
- **Peak memory.** :class:`PeakRSS` (this process and its children, sampled), :func:`peak_rss` (the kernel's
  high-water mark of this process or of its finished children).
- **Scores.** :func:`scores` (ARI, V-measure, purity against the classes), :func:`purity`; scikit-learn only, so
  that a base commit's worker scores the same way.
- **Results files.** :func:`write_markdown` writes the title, then the command that regenerates the file
  (:func:`command_line`), the UTC date and the commit, then the machine (:func:`machine_info`), then the body;
  :func:`fmt` and :func:`markdown_table` format the tables. :data:`ANCHORS_DIR` and :func:`load_anchors` read the
  reference figures of ``shared/anchors``.

The harness imports only the standard library at import time, so that a script may call :func:`single_thread`
after importing it and before numpy loads.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.util
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCHMARKS_DIR / "results"
TESTS_DIR = REPO_ROOT / "tests"

#: The checkout whose ``lowdens_dask`` is measured: this repository, or ``LOWDENS_CHECKOUT`` (a base commit's
#: worktree, set by :func:`run_worker`).
CHECKOUT = Path(os.environ.get("LOWDENS_CHECKOUT") or REPO_ROOT).resolve()
if os.environ.get("LOWDENS_CHECKOUT"):
    sys.path.insert(0, str(CHECKOUT))  # before this repository and any install
elif str(REPO_ROOT) not in sys.path:
    sys.path.insert(1, str(REPO_ROOT))  # after the script's folder (benchmarks/), before any install

#: Every thread pool of the fits at one thread (numba, OpenMP, BLAS).
SINGLE_THREAD_ENV = {k: "1" for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                      "MKL_NUM_THREADS")}  # fmt: skip


# --- this checkout and a base commit -----------------------------------------------------------------------


def check_checkout(checkout=None):
    """Import ``lowdens_dask`` and assert that it is the one in ``checkout`` (default :data:`CHECKOUT`)."""
    import lowdens_dask

    where = os.path.realpath(lowdens_dask.__path__[0])
    want = os.path.realpath(str(checkout or CHECKOUT))
    assert where.startswith(want + os.sep), f"lowdens_dask imported from {where}, not from {want}"
    return lowdens_dask


def git(*args: str, cwd=None) -> str:
    """The stripped output of ``git args`` in ``cwd`` (default this repository)."""
    return subprocess.run(["git", "-C", str(cwd or REPO_ROOT), *args], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def describe_commit(checkout=None) -> str:
    """``abc1234`` (the checkout's commit), with ``+ uncommitted changes`` where its tracked files differ."""
    try:
        head = git("rev-parse", "--short", "HEAD", cwd=checkout)
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", "lowdens_dask", cwd=checkout)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" + uncommitted changes to lowdens_dask/" if dirty else "")


@contextlib.contextmanager
def base_checkout(rev: str):
    """``rev`` checked out into a temporary git worktree, yielded as a path and removed afterwards."""
    path = tempfile.mkdtemp(prefix="lowdens-base-")
    subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "-q", "--detach", path, rev], check=True)
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", path], check=False,
                       capture_output=True)  # fmt: skip
        shutil.rmtree(path, ignore_errors=True)


def subprocess_env(checkout=None, single_thread: bool = True, **extra: str) -> dict:
    """The environment of a worker on ``checkout`` (default this repository): ``LOWDENS_CHECKOUT`` and
    ``PYTHONPATH`` name it, every thread pool at one thread when ``single_thread``, then ``extra``."""
    env = dict(os.environ)
    if single_thread:
        env.update(SINGLE_THREAD_ENV)
    checkout = str(Path(checkout or REPO_ROOT).resolve())
    env["PYTHONPATH"] = checkout
    if checkout == str(REPO_ROOT):
        env.pop("LOWDENS_CHECKOUT", None)
    else:
        env["LOWDENS_CHECKOUT"] = checkout
    env.update(extra)
    return env


def worker_argv(script, checkout=None, args=()) -> list[str]:
    """``python script --worker CHECKOUT args``, the command line of a worker on ``checkout``."""
    checkout = str(Path(checkout or REPO_ROOT).resolve())
    return [sys.executable, str(Path(script).resolve()), "--worker", checkout, *map(str, args)]


def start_worker(script, checkout=None, args=(), single_thread: bool = True, env: dict | None = None,
                 **popen) -> subprocess.Popen:
    """Start ``python script --worker CHECKOUT args`` on ``checkout`` (default this repository) in a subprocess
    (:func:`subprocess_env`, ``env`` on top, the system's temporary folder as its working folder); for workers
    that run side by side."""
    full_env = subprocess_env(checkout, single_thread)
    full_env.update(env or {})
    return subprocess.Popen(worker_argv(script, checkout, args), env=full_env, cwd=tempfile.gettempdir(), **popen)


def run_worker(script, checkout=None, args=(), single_thread: bool = True, env: dict | None = None,
               timeout: float | None = None) -> dict:
    """Run ``python script --worker CHECKOUT args`` on ``checkout`` (default this repository) to its end, as
    :func:`start_worker` does, and return the JSON object of the last line it printed (:func:`emit`). A failed
    worker raises ``RuntimeError`` with the end of its stderr."""
    process = start_worker(script, checkout, args, single_thread, env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    lines = out.strip().splitlines()
    if process.returncode or not lines:
        raise RuntimeError(f"worker {process.args[1:]} failed ({process.returncode}): {err.strip()[-2000:]}")
    return json.loads(lines[-1])


def emit(result) -> None:
    """Print a worker's result as one JSON line (the last line :func:`run_worker` reads)."""
    print(json.dumps(result), flush=True)


def single_thread(force: bool = False) -> None:
    """Every thread pool at one thread in this process (and its children): call before numpy, numba or
    scikit-learn load. Values already in the environment are kept unless ``force``."""
    for name, value in SINGLE_THREAD_ENV.items():
        if force:
            os.environ[name] = value
        else:
            os.environ.setdefault(name, value)


def load_reference():
    """The plain numpy/scipy reference MDH, ``tests/reference_mdh.py`` (``mdh_reference``, ``mddc_reference``)."""
    spec = importlib.util.spec_from_file_location("reference_mdh", TESTS_DIR / "reference_mdh.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- data sets ---------------------------------------------------------------------------------------------


def names(text: str | None, default=None) -> list[str]:
    """A comma-separated list (empty items dropped); ``default`` (a list, or all bundled sets) when empty."""
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    if items:
        return items
    if default is not None:
        return list(default)
    from lowdens_dask.datasets import list_datasets

    return list(list_datasets())


def drop_constant_columns(X):
    """``X`` without its constant columns (PPCI's protocol for the bundled data sets)."""
    import numpy as np

    X = np.asarray(X)
    return X[:, np.ptp(X, axis=0) > 0]


def bundled(datasets=None, drop_constant: bool = False):
    """``(name, X, y, k)`` for each bundled data set (``datasets``: names, or a comma-separated string; default
    all ten), k its number of classes; constant columns dropped when ``drop_constant``."""
    import numpy as np

    from lowdens_dask.datasets import load_dataset

    for name in names(datasets) if not isinstance(datasets, (list, tuple)) else datasets:
        X, y = load_dataset(name)
        if drop_constant:
            X = drop_constant_columns(X)
        yield name, X, y, int(np.unique(y).size)


# --- timing and memory -------------------------------------------------------------------------------------


def timed(fn):
    """``(fn(), wall-clock seconds)``."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def median_time(fn, repeats: int, warmup: int = 0) -> tuple[float, list[float]]:
    """Call ``fn()`` ``warmup`` times untimed, then ``repeats`` times; return (median seconds, all times)."""
    for _ in range(max(0, int(warmup))):
        fn()
    times = []
    for _ in range(max(1, int(repeats))):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def median(values):
    """The median of ``values``; None when there is none."""
    values = list(values)
    return statistics.median(values) if values else None


def peak_rss(children: bool = False) -> int:
    """The kernel's high-water mark of resident memory in bytes: of this process, or (``children``) of the largest
    finished child process waited for."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return int(usage.ru_maxrss) * (1 if sys.platform == "darwin" else 1024)


class PeakRSS:
    """Sum of the RSS of this process and its children (scheduler, nannies, workers), sampled every ``interval``
    seconds while the ``with`` block runs; ``peak`` holds the largest sum."""

    def __init__(self, interval: float = 0.2):
        import psutil

        self._psutil = psutil
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        me = self._psutil.Process()
        total = me.memory_info().rss
        for child in me.children(recursive=True):
            try:
                total += child.memory_info().rss
            except self._psutil.NoSuchProcess:
                pass
        return total

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            time.sleep(self.interval)

    def __enter__(self):
        self.peak = self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


# --- scores ------------------------------------------------------------------------------------------------


def purity(y, labels) -> float:
    """The share of rows whose cluster's most common class is their own."""
    from sklearn.metrics.cluster import contingency_matrix

    table = contingency_matrix(y, labels)
    return float(table.max(axis=0).sum() / table.sum())


def scores(y, labels) -> dict:
    """``{"ari", "v", "purity"}`` of ``labels`` against the classes ``y``."""
    from sklearn.metrics import adjusted_rand_score, v_measure_score

    return {"ari": float(adjusted_rand_score(y, labels)), "v": float(v_measure_score(y, labels)),
            "purity": purity(y, labels)}  # fmt: skip


# --- results files -----------------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> str:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:  # noqa: BLE001 - a missing optional package is reported, not fatal
        return "not installed"


def _thread_info() -> list[str]:
    lines = []
    try:
        import numba

        lines.append(f"numba threads: {numba.get_num_threads()}")
    except Exception:  # noqa: BLE001
        pass
    try:
        from threadpoolctl import threadpool_info

        for pool in threadpool_info():
            lines.append(
                f"{pool.get('user_api')} ({pool.get('internal_api')}, {os.path.basename(pool.get('filepath', ''))}): "
                f"{pool.get('num_threads')} threads"
            )
    except ImportError:
        lines.append("BLAS threads: threadpoolctl not installed")
    env = {k: os.environ[k] for k in SINGLE_THREAD_ENV if k in os.environ}
    if env:
        lines.append("thread environment: " + ", ".join(f"{k}={v}" for k, v in env.items()))
    return lines


def machine_info() -> str:
    """A markdown bullet list describing the CPU, memory, software versions and thread pools."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    import numpy  # noqa: F401 - make sure numpy's BLAS is loaded before threadpoolctl looks

    items = [
        f"CPU: {_cpu_model()}",
        f"cores: {os.cpu_count()} logical, {usable} usable by this process",
        f"RAM: {_ram_gib()}",
        f"OS: {platform.platform()}",
        f"Python {platform.python_version()}, numpy {_version('numpy')}, scipy {_version('scipy')}, "
        f"numba {_version('numba')}, scikit-learn {_version('sklearn')}",
        *_thread_info(),
    ]
    return "\n".join(f"- {item}" for item in items)


def command_line() -> str:
    """The command that is running, as it could be retyped from the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        script = script.relative_to(REPO_ROOT)
    except ValueError:
        pass
    args = []
    for arg in sys.argv[1:]:
        path = Path(arg)
        if path.is_absolute():
            with contextlib.suppress(ValueError):
                arg = str(path.resolve().relative_to(REPO_ROOT))  # files in the checkout, as from its root
        args.append(arg)
    return " ".join(["python", shlex.quote(str(script)), *map(shlex.quote, args)])


def write_markdown(path, title: str, command: str, body: str) -> Path:
    """Write a results file: the title, the command that regenerates it, the UTC date and the commit, the machine,
    then ``body``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"# {title}\n\n"
        f"Produced by `{command}` on {date} at commit {describe_commit()}.\n\n"
        f"## Machine\n\n{machine_info()}\n\n"
        f"{body.rstrip()}\n"
    )
    path.write_text(text)
    return path


def fmt(x, digits: int = 3) -> str:
    """Format a number for a markdown table ('-' for None or nan)."""
    if x is None or (isinstance(x, float) and x != x):
        return "-"
    return f"{x:.{digits}f}"


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A GitHub markdown table from a header and rows of already formatted cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


#: Reference figures measured on this machine class (see its README): PPCI's mddc, ncutdc, mcdc. The environment
#: variable ``LOWDENS_ANCHORS_DIR`` names another folder (a checkout outside the project folder, e.g. a worktree).
ANCHORS_DIR = Path(os.environ.get("LOWDENS_ANCHORS_DIR") or REPO_ROOT.parent / "shared" / "anchors")


def load_anchors(name: str = "ppci-bundled.csv") -> dict[tuple[str, str], dict]:
    """``{(dataset, method): {"seconds", "ARI", "V"}}`` from a reference-figures file of ``shared/anchors``."""
    import csv

    path = ANCHORS_DIR / name
    if not path.exists():
        raise SystemExit(f"Reference figures not found at {path}; benchmarks read them from shared/anchors.")
    with open(path, newline="") as fh:
        return {
            (row["dataset"], row["method"]): {k: float(row[k]) for k in ("seconds", "ARI", "V")}
            for row in csv.DictReader(fh)
        }
