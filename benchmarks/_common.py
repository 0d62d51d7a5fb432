"""Shared helpers for the benchmark scripts: machine description, timing and result files."""

import datetime
import os
import platform
import shlex
import statistics
import sys
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = Path(__file__).resolve().parent / "results"

# Benchmarks measure this checkout, also when lowdens_dask is not installed.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(1, str(REPO_ROOT))


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
    env = {k: os.environ[k] for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                       "MKL_NUM_THREADS") if k in os.environ}
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


def median_time(fn, repeats: int) -> tuple[float, list[float]]:
    """Call ``fn()`` ``repeats`` times; return (median wall-clock seconds, all times)."""
    times = []
    for _ in range(max(1, int(repeats))):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def command_line() -> str:
    """The command that is running, as it could be retyped from the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        script = script.relative_to(REPO_ROOT)
    except ValueError:
        pass
    return " ".join(["python", shlex.quote(str(script)), *map(shlex.quote, sys.argv[1:])])


def write_markdown(path, title: str, command: str, body: str) -> Path:
    """Write a results file: title, the producing command, the UTC date, the machine, then ``body``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (
        f"# {title}\n\n"
        f"Produced by `{command}` on {date}.\n\n"
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
