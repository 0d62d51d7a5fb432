"""CLI benchmark (issue 21, Acceptance; issue 35, item 6): the whole ``lowdens`` command, a baseline commit beside the new code.

Two programs, each a ``lowdens`` console script (``--baseline-bin``, ``--new-bin``): the baseline is a normal
install of an earlier commit in a venv of its own, the new one this checkout. Every command runs in a
subprocess, timed with ``time.perf_counter`` around it, with PREFECT_API_URL removed from the environment and
PREFECT_HOME set to a folder made fresh for each program once: one untimed warm-up fit per program
(200,000-row ``.npy``, then the same rows as zarr when the fit section runs) creates it and warms the numba
cache, so every timed command is at least "the second such command in a fresh PREFECT_HOME". The two
programs run interleaved, run by run (baseline, new, baseline, new, ...), so that machine noise hits both
alike; each command has a timeout (``--timeout``, 900 s), recorded as such, after which that program's
further runs of the same case are skipped.

Sections (``--only``):

- ``fit``: ``lowdens fit X --n-clusters 5 --store STORE --run-id <fresh>`` on ``--sizes`` rows x 10 columns
  float32, five well-separated Gaussian groups (centres 12 e_k, unit variances, equal weights), first as
  ``.npy``, then as a zarr array (chunks of 250,000 rows). Generated chunk by chunk, never whole in memory.
- ``demo``: ``lowdens demo --out DIR --store DIR`` into a fresh scratch folder per run, after one untimed demo.
- ``bad``: bad input, each as a ``lowdens fit`` with ``--store`` and a fresh ``--run-id``: ``--n-clusters 0``,
  ``--n-clusters -3``, NaN rows, ``--param mode=exakt``, a 20-row input with ``--n-clusters 2``, an empty
  ``.npy``, a directory that is not a zarr store, an empty CSV, and a header-less CSV written by
  ``np.savetxt`` (200,000 rows; the rows each program read, from ``lowdens runs show RUN``).

- ``startup`` (issue 35, item 6: the CLI's fixed cost, each case against its goal; on an idle machine, whole
  command, warm, median of 5): X.csv is the first 5,000 rows of the bundled pendigits data set
  (``np.savetxt``, comma-separated, no header) and X-labels.csv its 5,000 labels, one integer per line (named
  ``.csv`` because the baseline refuses a ``.labels`` file, issue 35 item 8); S is a runs store of the
  program's own holding 5 runs, made untimed before the timed cases by that program's warm-up fit and 4 more
  fits of X.csv.

  1. ``lowdens fit missing.csv`` (a missing file; expect exit 2, one stderr line): <= 1 s
  2. ``lowdens fit X.csv --method bogus`` (an unknown method; exit 2): <= 1 s
  3. ``lowdens fit X.csv --param bogus=1`` (an unknown parameter name; exit 2): <= 1 s
  4. ``lowdens fit X.csv --param mode=exakt`` (a bad parameter value; exit 2): <= 1 s
  4a. ``lowdens fit header-only.csv`` (a header line and no rows; exit 2): <= 1 s (issue 43, item 5)
  4b. ``lowdens fit text-column.csv`` (X.csv's rows under a header, the last column text; exit 2): <= 1 s
  4c. ``lowdens fit X.csv --param bandwidth=-1`` (a bad value of a method's own parameter; exit 2): <= 1 s
  5. ``lowdens runs list --store S`` (5 runs): <= 1.5 s
  6. ``lowdens runs show RUN --store S``: <= 1.5 s
  7. ``lowdens fit X.csv --labels X-labels.csv --store S --run-id <fresh>`` (default settings,
     ``--n-clusters auto``): <= 3 s
  8. ``lowdens demo --out DIR --store DIR`` (the ``demo`` section's case, fresh folders per run, after one
     untimed demo): <= 15 s
  9. ``lowdens plot RUN --store S --out DIR`` of the run that case 7 made in the same repetition (5,000 rows,
     coloured by its true labels), into a fresh folder: <= 8 s

  A case meets its goal when the new program's median is at most the goal and every run ended as expected
  (exit 2 and one stderr line for cases 1-4, exit 0 for the others); the baseline is judged the same way.

  For this section the programs are, by default, two wrappers that run the same venv's Python the same way
  (``--make-wrappers`` writes them, and the worktree if it is missing):

  - baseline, ``/tmp/lowdens-baseline/lowdens``: the commit before issue 35 (``--baseline-commit``, default
    e908172) from the git worktree ``/tmp/wt_base``, not installed anywhere::

        #!/bin/sh
        PYTHONPATH=/tmp/wt_base:/tmp/wt_basepath exec /work/main/.venv/bin/python \
            -c 'from lowdens_pipelines.cli import run; run()' "$@"

    where ``/tmp/wt_basepath/lowdens_pipelines`` is a symbolic link to ``/tmp/wt_base/pipelines`` (the
    folder that the install names ``lowdens_pipelines``); PYTHONPATH comes before the editable install's
    finder, so both ``lowdens_dask`` and ``lowdens_pipelines`` are the worktree's.
  - new, ``/tmp/lowdens-new/lowdens``: the same line without PYTHONPATH, so the editable install of this
    checkout (``/work/main``).

  Before timing, the script imports both packages as each wrapper would and records where they came from.

    python benchmarks/cli.py [--baseline-bin BIN] [--new-bin BIN] [--baseline-commit REV] [--repeats 3]
                             [--sizes 200000,2000000,20000000] [--only fit,demo,bad] [--timeout 900]
                             [--data-dir DIR] [--keep-data] [--out benchmarks/results/cli.md]

    python benchmarks/cli.py --only startup --make-wrappers   # issue 35, item 6: medians of 5, baseline
                                                              # e908172, to benchmarks/results/cli-startup.md

Defaults that depend on the sections: with ``startup`` among them, ``--baseline-bin`` and ``--new-bin`` are
the two wrappers, ``--baseline-commit`` e908172, ``--repeats`` 5 and ``--out``
benchmarks/results/cli-startup.md (issue 21's cli.md is kept); otherwise ``/work/old-venv/bin/lowdens``,
``/work/venv/bin/lowdens``, f0c0cdc, 3 and benchmarks/results/cli.md, as for issue 21.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from harness import REPO_ROOT, RESULTS_DIR, command_line, fmt, markdown_table, write_markdown

K, D = 5, 10
ZARR_CHUNK = 250_000
GEN_CHUNK = 250_000
BASE_ROWS = 200_000  # warm-up fit, the bad-value cases' input, the CSV case
SECTIONS = ("fit", "demo", "bad", "startup")
ISSUE21_SECTIONS = ("fit", "demo", "bad")
TARGET_BAD = "<= 5 s, exit 2, 1 stderr line"
DEMO_ARGS = ["demo", "--out", "{scratch}/out", "--store", "{scratch}/runs"]

# The startup section (issue 35, item 6).
STARTUP_ROWS = 5_000
STARTUP_SEED_RUNS = 5  # runs in the store S before the timed cases (the warm-up fit and 4 more)
STARTUP_BASELINE = "e908172"  # the commit before issue 35
WORKTREE = Path("/tmp/wt_base")
WORKTREE_PATH = Path("/tmp/wt_basepath")  # holds lowdens_pipelines -> WORKTREE/pipelines
BASELINE_WRAPPER = Path("/tmp/lowdens-baseline/lowdens")
NEW_WRAPPER = Path("/tmp/lowdens-new/lowdens")
CLI_CALL = "from lowdens_pipelines.cli import run; run()"


# ---------------------------------------------------------------------------------------------------------
# data


def centres() -> np.ndarray:
    return (12.0 * np.eye(K, D)).astype("f4")


def rows(start: int, m: int, seed: int = 0) -> np.ndarray:
    """Rows ``start .. start + m`` of the mixture (each generation chunk has its own seed: any layout agrees)."""
    rng = np.random.default_rng([seed, start])
    labels = rng.integers(0, K, size=m)
    return centres()[labels] + rng.standard_normal((m, D), dtype=np.float32)


def generate(data: Path, n: int, npy: bool = True, zarr_too: bool = False) -> dict:
    """``data/X-n.npy`` (and ``data/X-n.zarr``) written chunk by chunk; reuses files already there."""
    npy_path, zarr_path = data / f"X-{n}.npy", data / f"X-{n}.zarr"
    want_npy = npy and not npy_path.exists()
    want_zarr = zarr_too and not zarr_path.exists()
    if want_npy or want_zarr:
        started = time.perf_counter()
        out_npy = np.lib.format.open_memmap(npy_path, mode="w+", dtype="f4", shape=(n, D)) if want_npy else None
        out_zarr = None
        if want_zarr:
            import zarr

            out_zarr = zarr.create_array(str(zarr_path), shape=(n, D), chunks=(ZARR_CHUNK, D), dtype="f4")
        for start in range(0, n, GEN_CHUNK):
            m = min(GEN_CHUNK, n - start)
            block = rows(start, m)
            if out_npy is not None:
                out_npy[start : start + m] = block
            if out_zarr is not None:
                out_zarr[start : start + m] = block
        if out_npy is not None:
            out_npy.flush()
            del out_npy
        log(f"data: {n:,} rows ({'npy ' if want_npy else ''}{'zarr' if want_zarr else ''}) in "
            f"{time.perf_counter() - started:.1f} s")
    return {"npy": npy_path, "zarr": zarr_path}


def bad_inputs(data: Path) -> dict:
    """The bad-input files: NaN rows, 20 rows, an empty .npy, a non-zarr directory, an empty CSV, a savetxt CSV."""
    base = generate(data, BASE_ROWS)["npy"]
    paths = {"base": base}
    nan = rows(0, 10_000).copy()
    nan[[10, 500, 9_000]] = np.nan
    paths["nan"] = data / "nan-rows.npy"
    np.save(paths["nan"], nan)
    paths["small"] = data / "rows-20.npy"
    np.save(paths["small"], rows(0, 20))
    paths["empty_npy"] = data / "empty.npy"
    np.save(paths["empty_npy"], np.empty((0, 5), dtype="f4"))
    paths["not_zarr"] = data / "not-a-zarr-store"
    paths["not_zarr"].mkdir(exist_ok=True)
    (paths["not_zarr"] / "notes.txt").write_text("not a zarr store\n")
    paths["empty_csv"] = data / "empty.csv"
    paths["empty_csv"].write_text("")
    paths["csv"] = data / f"savetxt-{BASE_ROWS}.csv"
    if not paths["csv"].exists():
        np.savetxt(paths["csv"], np.load(base), delimiter=",")
    return paths


def startup_inputs(data: Path) -> dict:
    """The startup section's files: X.csv (the first 5,000 pendigits rows, ``np.savetxt``, comma-separated, no
    header), X-labels.csv (their labels, one integer per line) and the path of a file that does not exist."""
    from lowdens_dask.datasets import load_dataset

    X, y = load_dataset("pendigits")
    paths = {"X": data / "X.csv", "labels": data / "X-labels.csv", "missing": data / "missing.csv"}
    np.savetxt(paths["X"], X[:STARTUP_ROWS], delimiter=",")
    np.savetxt(paths["labels"], np.asarray(y[:STARTUP_ROWS]).astype(int), fmt="%d")
    columns = [f"f{j}" for j in range(X.shape[1])]
    (data / "header-only.csv").write_text(",".join(columns) + "\n")
    text = [",".join(columns)]
    text += [",".join([*map(str, row[:-1]), f"kind-{int(row[-1]) % 3}"]) for row in X[:STARTUP_ROWS]]
    (data / "text-column.csv").write_text("\n".join(text) + "\n")
    return paths


# ---------------------------------------------------------------------------------------------------------
# the programs of the startup section: wrappers that run the baseline worktree and this checkout alike


def venv_python() -> Path:
    return REPO_ROOT / ".venv" / "bin" / "python"


def wrapper_text(pythonpath: str | None) -> str:
    env = f"PYTHONPATH={pythonpath} " if pythonpath else ""
    return f"#!/bin/sh\n{env}exec {venv_python()} -c '{CLI_CALL}' \"$@\"\n"


def make_wrappers(commit: str) -> None:
    """The worktree of ``commit`` at WORKTREE (added when missing; an existing one must be at that commit), the
    link that names its pipelines/ ``lowdens_pipelines``, and the two wrappers."""
    if not WORKTREE.exists():
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", str(WORKTREE), commit],
                       check=True)
    at = subprocess.run(["git", "-C", str(WORKTREE), "rev-parse", "HEAD"], capture_output=True, text=True,
                        check=True).stdout.strip()
    want = git("rev-parse", f"{commit}^{{commit}}")
    if at != want:
        raise SystemExit(f"{WORKTREE} is a checkout of {at[:12]}, not of {commit} ({want[:12]}); move it away "
                         "or pass --baseline-bin and --new-bin")
    WORKTREE_PATH.mkdir(parents=True, exist_ok=True)
    link = WORKTREE_PATH / "lowdens_pipelines"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(WORKTREE / "pipelines")
    for path, pythonpath in ((BASELINE_WRAPPER, f"{WORKTREE}:{WORKTREE_PATH}"), (NEW_WRAPPER, None)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(wrapper_text(pythonpath))
        path.chmod(0o755)
        log(f"wrote {path}")


def wrapper_imports(bin_: str) -> str:
    """Where ``lowdens_pipelines`` and ``lowdens_dask`` come from when imported as the wrapper ``bin_`` would
    (its own line, with the ``run()`` call replaced by a print), or why that cannot be told."""
    try:
        text = Path(bin_).read_text()
    except (OSError, UnicodeDecodeError):
        return "not checked (not a wrapper script)"
    if CLI_CALL not in text:
        return "not checked (not a wrapper of this script's form)"
    probe = "import lowdens_pipelines, lowdens_dask; print(lowdens_pipelines.__file__, lowdens_dask.__file__)"
    done = subprocess.run(["sh", "-c", text.replace(CLI_CALL, probe)], capture_output=True, text=True, cwd="/", check=False,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if done.returncode != 0:
        return f"import failed: {_tail(done.stderr)}"
    pipelines, dask = done.stdout.split()
    return f"lowdens_pipelines from {os.path.realpath(pipelines)}, lowdens_dask from {dask}"


# ---------------------------------------------------------------------------------------------------------
# running the programs


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Result:
    seconds: float
    rc: int | None  # None: timed out
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        return self.rc is None

    @property
    def stderr_lines(self) -> int:
        return len(self.stderr.splitlines())


@dataclass
class Program:
    label: str  # "baseline" or "new"
    bin: str
    work: Path
    commit: str
    warmups: dict = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.work / "prefect-home"

    @property
    def store(self) -> Path:
        return self.work / "runs"

    @property
    def startup_store(self) -> Path:
        """S of the startup section: its own store, so that the runs of the other sections do not land in it."""
        return self.work / "startup-runs"

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PYTHONPATH")}
        env["PREFECT_HOME"] = str(self.home)
        return env

    def run(self, args: list[str], timeout: float) -> Result:
        """``bin args`` in its own process group (so a timeout ends the servers and workers it started too)."""
        started = time.perf_counter()
        proc = subprocess.Popen(
            [self.bin, *map(str, args)],
            cwd=self.work,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
            seconds = time.perf_counter() - started
            rc = proc.returncode
        except BaseException as exc:  # a timeout, or Ctrl-C of this script: end the command's whole group
            seconds = time.perf_counter() - started
            _end_group(proc)
            out, err = proc.communicate()
            if not isinstance(exc, subprocess.TimeoutExpired):
                raise
            rc = None
        _end_group(proc, quiet=True)  # anything the command left running in its group
        return Result(seconds, rc, out, err)


def _end_group(proc: subprocess.Popen, quiet: bool = False) -> None:
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        if not quiet:
            log(f"  sent {sig.name} to the process group {proc.pid}")
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            if proc.poll() is None:
                try:
                    proc.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    pass
            else:
                time.sleep(0.2)


@dataclass
class Case:
    section: str
    key: str
    title: str
    args: list  # after the program; "{store}", "{run_id}" and "{scratch}" are filled in per run
    target: str = ""
    results: dict = field(default_factory=lambda: {"baseline": [], "new": []})
    rows_read: dict = field(default_factory=dict)
    goal: float | None = None  # the startup section: seconds, the median's goal
    expect_rc: int = 0  # the startup section: the exit status every run should have
    expect_lines: int | None = None  # the startup section: stderr lines every run should have (None: any)


def fill(args: list, program: Program, run_id: str, rep: int = 0) -> list[str]:
    """``args`` with "{store}", "{startup_store}", "{run_id}", "{scratch}" (a fresh folder per run) and "{rep}"
    (the repetition, from 0) filled in."""
    scratch = program.work / run_id
    return [str(a).format(store=program.store, startup_store=program.startup_store, run_id=run_id,
                          scratch=scratch, rep=rep) for a in args]


def fit_args(path, *extra) -> list:
    return ["fit", str(path), *extra, "--store", "{store}", "--run-id", "{run_id}"]


def measure(case: Case, programs: list[Program], repeats: int, timeout: float) -> None:
    for i in range(repeats):
        for program in programs:
            done = case.results[program.label]
            if any(r.timed_out for r in done):
                continue
            run_id = f"{case.key}-r{i}"
            result = program.run(fill(case.args, program, run_id, i), timeout)
            done.append(result)
            status = "timeout" if result.timed_out else f"exit {result.rc}"
            log(f"[{case.key}] {program.label} run {i + 1}: {result.seconds:.1f} s, {status}, "
                f"{result.stderr_lines} stderr lines")
            if case.key == "csv" and result.rc == 0:
                case.rows_read[program.label] = rows_read(program, run_id, result)


def rows_read(program: Program, run_id: str, result: Result) -> dict:
    """The rows the run recorded (``runs show`` → input.shape) and the rows the program said it read."""
    shown = program.run(["runs", "show", run_id, "--store", str(program.store)], 120)
    recorded = None
    try:
        recorded = json.loads(shown.stdout)["input"]["shape"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    said = re.search(r"read .*?: ([\d,]+) rows", result.stderr)
    return {"recorded": recorded, "said": int(said.group(1).replace(",", "")) if said else None}


def warm_up(programs: list[Program], label: str, args: list, timeout: float, run_id: str | None = None) -> None:
    for program in programs:
        result = program.run(fill(args, program, run_id or f"warmup-{label}"), timeout)
        program.warmups[label] = result
        status = "timeout" if result.timed_out else f"exit {result.rc}"
        log(f"[warm-up {label}] {program.label}: {result.seconds:.1f} s, {status}")
        if result.rc != 0:
            log(_tail(result.stderr, 5))


# ---------------------------------------------------------------------------------------------------------
# the report


def median(results: list[Result], timeout: float) -> float | None:
    if not results:
        return None
    return statistics.median(float("inf") if r.timed_out else r.seconds for r in results)


def show_seconds(value: float | None, timeout: float) -> str:
    if value is None:
        return "-"
    return f"> {timeout:.0f} (timeout)" if value == float("inf") else fmt(value, 2)


def show_ratio(base: float | None, new: float | None, timeout: float) -> str:
    if base is None or new is None or new == float("inf"):
        return "-"
    if base == float("inf"):
        return f"> {timeout / new:.1f}"
    return f"{base / new:.2f}"


def distinct(values) -> str:
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return ", ".join(map(str, seen)) if seen else "-"


def statuses(results: list[Result]) -> str:
    return distinct("timeout" if r.timed_out else r.rc for r in results)


def runs_list(results: list[Result]) -> str:
    return ", ".join("timeout" if r.timed_out else fmt(r.seconds, 1) for r in results) or "-"


def _tail(text: str, n: int = 1) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-n:])


def message(stderr: str) -> str:
    """What a failing command said: its lines when there are at most two, else its last ``lowdens:`` line (the
    baseline's error comes before Prefect's and Dask's shutdown logs), else its last line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if len(lines) <= 2:
        return " ⏎ ".join(lines)
    ours = [line for line in lines if line.startswith("lowdens:")]
    return f"({len(lines)} lines) … " + (ours[-1] if ours else lines[-1])


def cell(text: str, width: int = 320) -> str:
    text = " ".join(text.split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`" if text else "(nothing)"


def verdict(case: Case, timeout: float) -> str:
    new = case.results["new"]
    if not new or not case.target:
        return case.target or "-"
    med = median(new, timeout)
    if case.target.startswith("<= 5 s"):
        ok = med <= 5 and all(r.rc == 2 and r.stderr_lines == 1 for r in new)
    elif case.target.startswith("<= "):
        ok = med <= float(case.target.split()[1])
    elif case.key == "small":
        ok = all(r.rc == 0 for r in new)
    elif case.key == "csv":
        ok = case.rows_read.get("new", {}).get("recorded") == BASE_ROWS
    else:
        return case.target
    return f"{case.target}: {'met' if ok else 'missed'}"


def goal_verdict(case: Case, label: str, timeout: float) -> str:
    """"met" or "not met", with the median against the goal, and what ended otherwise than expected."""
    results = case.results[label]
    if not results:
        return "-"
    med = median(results, timeout)
    fast = med <= case.goal
    shown = "timeout" if med == float("inf") else f"{med:.2f} s"
    why = [f"{shown} {'<=' if fast else '>'} {case.goal:g} s"]
    rcs = {r.rc for r in results}
    if rcs != {case.expect_rc}:
        why.append(f"exit {distinct('timeout' if r.timed_out else r.rc for r in results)}, expected {case.expect_rc}")
    if case.expect_lines is not None and any(r.stderr_lines != case.expect_lines for r in results):
        why.append(f"{distinct(r.stderr_lines for r in results)} stderr lines, expected {case.expect_lines}")
    ok = fast and len(why) == 1
    return f"{'met' if ok else 'not met'} ({'; '.join(why)})"


def startup_row(case: Case, timeout: float) -> list:
    b, n = case.results["baseline"], case.results["new"]
    mb, mn = median(b, timeout), median(n, timeout)
    return [
        case.title,
        f"<= {case.goal:g}",
        show_seconds(mb, timeout),
        show_seconds(mn, timeout),
        show_ratio(mb, mn, timeout),
        f"{statuses(b)} / {statuses(n)}",
        f"{distinct(r.stderr_lines for r in b)} / {distinct(r.stderr_lines for r in n)}",
        goal_verdict(case, "baseline", timeout),
        goal_verdict(case, "new", timeout),
        f"{runs_list(b)} / {runs_list(n)}",
    ]


def timing_row(case: Case, timeout: float) -> list:
    b, n = case.results["baseline"], case.results["new"]
    mb, mn = median(b, timeout), median(n, timeout)
    return [
        case.title,
        show_seconds(mb, timeout),
        show_seconds(mn, timeout),
        show_ratio(mb, mn, timeout),
        f"{statuses(b)} / {statuses(n)}",
        verdict(case, timeout),
        f"{runs_list(b)} / {runs_list(n)}",
    ]


def failures(cases: list[Case]) -> list[str]:
    notes = []
    for case in cases:
        for label, results in case.results.items():
            for r in results:
                if r.timed_out or r.rc != case.expect_rc:
                    what = "timed out" if r.timed_out else f"exit {r.rc}"
                    notes.append(f"- {case.title}, {label}: {what}; last stderr line {cell(_tail(r.stderr))}")
                    break
    return notes


def report(args, programs: list[Program], cases: list[Case], started_load, finished_load, sections=ISSUE21_SECTIONS,
           imports=None, startup_paths=None) -> str:
    timeout = args.timeout
    imports = imports or {}

    def stderr_table(first: str, shown: list[Case]) -> str:
        """What each program printed on stderr in its last run of each case."""
        return markdown_table(
            [first, "baseline", "new"],
            [
                [c.title] + [cell(message(c.results[p.label][-1].stderr)) if c.results[p.label] else "-"
                             for p in programs]
                for c in shown
            ],
        )

    head = ["case", "baseline median (s)", "new median (s)", "ratio baseline/new", "exit status baseline / new",
            "target (new)", "runs (s): baseline / new"]
    body = [
        "## Programs and environment",
        "",
        *(
            f"- {p.label}: commit {p.commit}, `{p.bin}`"
            + (f"; imports: {imports[p.label]}" if p.label in imports else "")
            for p in programs
        ),
        *wrapper_lines(programs),
        "- Each command is the whole `lowdens` process (imports, checks, any Prefect server or Dask cluster it "
        "starts, teardown), timed with `time.perf_counter` around the subprocess (started, waited for, its output read); PREFECT_API_URL "
        "is not in its environment; PREFECT_HOME is a folder made fresh for each program, created by that "
        "program's untimed warm-up fit and reused for all its later commands (so each timed command is at least "
        "the second in a fresh PREFECT_HOME, with the numba cache warm).",
        f"- Runs interleaved baseline, new, baseline, new, ...; medians of {args.repeats}; timeout {timeout:.0f} s "
        "per command (after a timeout that program's further runs of the case are skipped). Every fit that "
        "succeeds has `--store` (one per program) and a fresh `--run-id`.",
        "- Warm-up (untimed in the tables; the first command in the fresh PREFECT_HOME): "
        + "; ".join(
            f"{p.label} " + ", ".join(
                f"{name} {'timeout' if r.timed_out else f'{r.seconds:.1f} s (exit {r.rc})'}"
                for name, r in p.warmups.items()
            )
            for p in programs
        )
        + ".",
        f"- Load average (1, 5, 15 min) at the start: {', '.join(f'{x:.2f}' for x in started_load)}; "
        f"at the end: {', '.join(f'{x:.2f}' for x in finished_load)}.",
        "",
    ]
    fit_cases = [c for c in cases if c.section == "fit"]
    if fit_cases:
        body += [
            "## 1. `lowdens fit X --n-clusters 5`",
            "",
            f"{D} float32 columns, five well-separated Gaussian groups (centres 12 e_k, unit variances); `.npy`, "
            f"then a zarr array (zarr v3, chunks of {ZARR_CHUNK:,} rows). Target: the {BASE_ROWS:,}-row `.npy` "
            "fit <= 6 s.",
            "",
            markdown_table(head, [timing_row(c, timeout) for c in fit_cases]),
            "",
        ]
    demo_cases = [c for c in cases if c.section == "demo"]
    if demo_cases:
        body += [
            "## 2. `lowdens demo`, warm",
            "",
            "Each run into a fresh scratch `--out` and `--store`, after one untimed demo per program. "
            "Target: <= 15 s.",
            "",
            markdown_table(head, [timing_row(c, timeout) for c in demo_cases]),
            "",
        ]
    bad_cases = [c for c in cases if c.section == "bad"]
    if bad_cases:
        bad_head = head[:5] + ["stderr lines baseline / new"] + head[5:]
        bad_rows = []
        for c in bad_cases:
            row = timing_row(c, timeout)
            lines = f"{distinct(r.stderr_lines for r in c.results['baseline'])} / " \
                    f"{distinct(r.stderr_lines for r in c.results['new'])}"
            bad_rows.append(row[:5] + [lines] + row[5:])
        body += [
            "## 3. Bad input",
            "",
            f"Each a `lowdens fit ... --store STORE --run-id <fresh>`. The bad-value cases use the {BASE_ROWS:,}-row "
            "`.npy` of section 1 unless the case says otherwise. Target for each bad value: "
            f"{TARGET_BAD}.",
            "",
            markdown_table(bad_head, bad_rows),
            "",
            "What each program printed on stderr (its last run of the case; of a long output, the last line "
            "starting `lowdens:`, else the last line):",
            "",
            stderr_table("case", bad_cases),
            "",
        ]
        csv = next((c for c in bad_cases if c.key == "csv"), None)
        if csv is not None:
            def said(label):
                got = csv.rows_read.get(label)
                if not got:
                    return "- (no successful run)"
                line = f"{fmt_int(got['said'])} rows" if got["said"] is not None else "no such line"
                return (f"{fmt_int(got['recorded'])} rows recorded by the run (`lowdens runs show RUN` → input.shape); "
                        f"its stderr's \"read ...: N rows\" line: {line}")

            body += [
                f"Rows read from the {BASE_ROWS:,}-row CSV written by `np.savetxt(path, X, delimiter=\",\")` "
                "(no header):",
                "",
                f"- baseline: {said('baseline')}",
                f"- new: {said('new')}",
                "",
            ]
    startup_cases = [c for c in cases if c.section == "startup" or (c.key == "demo" and "startup" in sections)]
    if startup_cases:
        sp = startup_paths or {}
        body += [
            "## Issue 35, item 6: the CLI's fixed cost, against the goals",
            "",
            "Goals: on an idle machine, the whole command, warm, median of 5. A goal is met when the median is at "
            "most the goal and every run ended as expected (exit 2 and one stderr line for a bad request, exit 0 "
            "otherwise). Each program made its store S untimed before the timed cases: its warm-up fit (the first "
            f"command in its fresh PREFECT_HOME, warming the numba cache) and {STARTUP_SEED_RUNS - 1} more fits, "
            f"all `lowdens fit X.csv --labels X-labels.csv --store S --run-id startup-seed-K`, so S held "
            f"{STARTUP_SEED_RUNS} runs for `runs list` and `runs show`.",
            "",
            f"- X.csv: the first {STARTUP_ROWS:,} rows of the bundled pendigits data set (16 columns), written by "
            "`np.savetxt(path, X, delimiter=\",\")` (no header); X-labels.csv: their labels, one integer per line "
            "(named `.csv` rather than `.labels` because the baseline refuses a `.labels` file, issue 35 item 8).",
            "- S: the program's own runs store; RUN in `runs show`: `startup-seed-0`; RUN in `plot`: the run that "
            "the fit case made in the same repetition (`startup-fit-rI`), so each plot is the first of its run.",
            "- DIR: a folder that does not exist yet, one per run.",
            "- Where they were: " + "; ".join(f"{name} `{path}`" for name, path in sp.items()) + ".",
            "",
            markdown_table(
                ["command", "goal (s)", "baseline median (s)", "new median (s)", "ratio baseline/new",
                 "exit status baseline / new", "stderr lines baseline / new", "baseline against the goal",
                 "new against the goal", "runs (s): baseline / new"],
                [startup_row(c, timeout) for c in startup_cases],
            ),
            "",
            "What each bad request printed on stderr (its last run; of a long output, the last line starting "
            "`lowdens:`, else the last line):",
            "",
            stderr_table("command", [c for c in startup_cases if c.expect_rc == 2]),
            "",
        ]
    notes = failures(fit_cases + demo_cases + [c for c in startup_cases if c not in demo_cases])
    if notes:
        body += ["## Runs that failed, timed out or ended otherwise than expected", "", *notes, ""]
    return "\n".join(body)


def wrapper_lines(programs: list[Program]) -> list[str]:
    """The report's account of the two wrappers, when the programs are this script's wrappers."""
    lines = []
    for p in programs:
        try:
            text = Path(p.bin).read_text()
        except (OSError, UnicodeDecodeError):
            continue
        if CLI_CALL in text:
            script = " ⏎ ".join(line for line in text.splitlines() if line.strip())
            lines.append(f"- `{p.bin}` is the shell script {cell(script, 1000)}")
    if lines and any(Path(p.bin) == BASELINE_WRAPPER for p in programs):
        lines.append(f"- {WORKTREE} is a git worktree of the baseline commit (not installed anywhere); "
                     f"{WORKTREE_PATH}/lowdens_pipelines links to {WORKTREE}/pipelines. Both wrappers run the same "
                     "venv's Python the same way; without PYTHONPATH it imports this checkout (editable install).")
    return lines


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def fmt_int(x) -> str:
    return "-" if x is None else f"{x:,}"


# ---------------------------------------------------------------------------------------------------------


def git(*args) -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def new_commit() -> str:
    head = git("rev-parse", "--short", "HEAD")
    changed = [line for line in git("status", "--porcelain", "--untracked-files=no").splitlines() if line.strip()]
    if changed:
        head += f" with uncommitted changes to {len(changed)} tracked file(s) (the new program is an editable install)"
    return head


def build_cases(sections, sizes, data: Path) -> list[Case]:
    cases = []
    if "fit" in sections:
        for kind in ("npy", "zarr"):
            for n in sizes:
                path = data / f"X-{n}.{kind}"
                target = "<= 6 s" if (kind == "npy" and n == BASE_ROWS) else ""
                cases.append(Case("fit", f"fit-{kind}-{n}", f"{n:,} rows, {kind}", fit_args(path, "--n-clusters", "5"),
                                  target))
    demo = None
    if "demo" in sections or "startup" in sections:  # one demo case, in the startup section's table too
        demo = Case("demo" if "demo" in sections else "startup", "demo", "`lowdens demo --out DIR --store DIR`",
                    DEMO_ARGS, "<= 15 s", goal=15.0)
    if "demo" in sections:
        cases.append(demo)
    if "bad" in sections:
        p = {
            "base": data / f"X-{BASE_ROWS}.npy", "nan": data / "nan-rows.npy", "small": data / "rows-20.npy",
            "empty_npy": data / "empty.npy", "not_zarr": data / "not-a-zarr-store", "empty_csv": data / "empty.csv",
            "csv": data / f"savetxt-{BASE_ROWS}.csv",
        }
        cases += [
            Case("bad", "n0", "`--n-clusters 0`", fit_args(p["base"], "--n-clusters", "0"), TARGET_BAD),
            Case("bad", "n-3", "`--n-clusters -3`", fit_args(p["base"], "--n-clusters", "-3"), TARGET_BAD),
            Case("bad", "nan", "NaN rows (10,000 × 10 `.npy`, 3 NaN rows), `--n-clusters 5`",
                 fit_args(p["nan"], "--n-clusters", "5"), TARGET_BAD),
            Case("bad", "exakt", "`--n-clusters 5 --param mode=exakt`",
                 fit_args(p["base"], "--n-clusters", "5", "--param", "mode=exakt"), TARGET_BAD),
            Case("bad", "small", "too small: 20-row `.npy`, `--n-clusters 2`", fit_args(p["small"], "--n-clusters", "2"),
                 "succeeds (exit 0)"),
            Case("bad", "empty-npy", "empty `.npy` (shape (0, 5)), `--n-clusters 5`",
                 fit_args(p["empty_npy"], "--n-clusters", "5"), TARGET_BAD),
            Case("bad", "not-zarr", "a directory that is not a zarr store, `--n-clusters 5`",
                 fit_args(p["not_zarr"], "--n-clusters", "5"), TARGET_BAD),
            Case("bad", "empty-csv", "empty CSV file, `--n-clusters 5`", fit_args(p["empty_csv"], "--n-clusters", "5"),
                 TARGET_BAD),
            Case("bad", "csv", f"CSV by `np.savetxt`, {BASE_ROWS:,} × {D}, `--n-clusters 5`",
                 fit_args(p["csv"], "--n-clusters", "5"), f"all {BASE_ROWS:,} rows read"),
        ]
    if "startup" in sections:
        x, labels, missing = data / "X.csv", data / "X-labels.csv", data / "missing.csv"
        s = "{startup_store}"
        bad = {"expect_rc": 2, "expect_lines": 1, "goal": 1.0}
        cases += [
            Case("startup", "startup-missing", "`lowdens fit missing.csv`", ["fit", missing], **bad),
            Case("startup", "startup-method", "`lowdens fit X.csv --method bogus`", ["fit", x, "--method", "bogus"],
                 **bad),
            Case("startup", "startup-param-name", "`lowdens fit X.csv --param bogus=1`",
                 ["fit", x, "--param", "bogus=1"], **bad),
            Case("startup", "startup-param-value", "`lowdens fit X.csv --param mode=exakt`",
                 ["fit", x, "--param", "mode=exakt"], **bad),
            Case("startup", "startup-header-only", "`lowdens fit header-only.csv` (a header line, no rows)",
                 ["fit", data / "header-only.csv"], **bad),
            Case("startup", "startup-text-column", "`lowdens fit text-column.csv` (5,000 rows, a column of text)",
                 ["fit", data / "text-column.csv"], **bad),
            Case("startup", "startup-method-value", "`lowdens fit X.csv --param bandwidth=-1`",
                 ["fit", x, "--param", "bandwidth=-1"], **bad),
            Case("startup", "startup-runs-list", f"`lowdens runs list --store S` ({STARTUP_SEED_RUNS} runs)",
                 ["runs", "list", "--store", s], goal=1.5),
            Case("startup", "startup-runs-show", "`lowdens runs show RUN --store S`",
                 ["runs", "show", "startup-seed-0", "--store", s], goal=1.5),
            Case("startup", "startup-fit",
                 f"`lowdens fit X.csv --labels X-labels.csv --store S --run-id <fresh>` ({STARTUP_ROWS:,} rows)",
                 startup_fit_args(x, labels, "{run_id}"), goal=3.0),
            *([] if "demo" in sections else [demo]),
            Case("startup", "startup-plot", f"`lowdens plot RUN --store S --out DIR` ({STARTUP_ROWS:,}-row run)",
                 ["plot", "startup-fit-r{rep}", "--store", s, "--out", "{scratch}/plots"], goal=8.0),
        ]
    return cases


def startup_fit_args(x: Path, labels: Path, run_id: str) -> list:
    return ["fit", x, "--labels", labels, "--store", "{startup_store}", "--run-id", run_id]


class _Defaults(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default unless it is None (a default that depends on the sections, which the help describes)."""

    def _get_help_string(self, action):
        return action.help if action.default is None else super()._get_help_string(action)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=_Defaults)
    parser.add_argument("--baseline-bin", default=None,
                        help=f"the baseline commit's lowdens (default: {BASELINE_WRAPPER} with the startup section, "
                             "else /work/old-venv/bin/lowdens, a normal install in a venv of its own)")
    parser.add_argument("--baseline-commit", default=None,
                        help=f"the baseline's commit (default: {STARTUP_BASELINE} with the startup section, else "
                             "f0c0cdc)")
    parser.add_argument("--new-bin", default=None,
                        help=f"the new program's lowdens (default: {NEW_WRAPPER} with the startup section, else "
                             "/work/venv/bin/lowdens, an install of this checkout)")
    parser.add_argument("--make-wrappers", action="store_true",
                        help=f"first write {BASELINE_WRAPPER} (the baseline commit from the git worktree {WORKTREE}, "
                             f"added when missing) and {NEW_WRAPPER} (this checkout), both running {venv_python()}")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per program and case, the median reported (default: 5 with the startup "
                             "section, else 3)")
    parser.add_argument("--sizes", default=f"{BASE_ROWS},2000000,20000000",
                        help="rows of the fit inputs, comma-separated (1e6 style accepted)")
    parser.add_argument("--only", default=",".join(ISSUE21_SECTIONS),
                        help=f"sections to run, comma-separated: {', '.join(SECTIONS)}")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per command")
    parser.add_argument("--data-dir", default=None,
                        help="where a temporary folder for the generated inputs, the PREFECT_HOMEs and the runs "
                             "stores is made (default: the system's temporary directory); removed at the end")
    parser.add_argument("--keep-data", action="store_true", help="keep that folder (its path is printed)")
    parser.add_argument("--out", default=None,
                        help="the markdown report (default: benchmarks/results/cli-startup.md with the startup "
                             "section, else benchmarks/results/cli.md)")
    args = parser.parse_args(argv)

    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"--only: unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    startup = "startup" in sections
    if args.baseline_bin is None:
        args.baseline_bin = str(BASELINE_WRAPPER) if startup else "/work/old-venv/bin/lowdens"
    if args.new_bin is None:
        args.new_bin = str(NEW_WRAPPER) if startup else "/work/venv/bin/lowdens"
    if args.baseline_commit is None:
        args.baseline_commit = STARTUP_BASELINE if startup else "f0c0cdc"
    if args.repeats is None:
        args.repeats = 5 if startup else 3
    if args.out is None:
        args.out = str(RESULTS_DIR / ("cli-startup.md" if startup else "cli.md"))
    if args.make_wrappers:
        make_wrappers(args.baseline_commit)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    for bin_ in (args.baseline_bin, args.new_bin):
        if not os.access(bin_, os.X_OK):
            hint = " (--make-wrappers writes it)" if Path(bin_) in (BASELINE_WRAPPER, NEW_WRAPPER) else ""
            parser.error(f"{bin_} is not an executable{hint}")
    imports = {"baseline": wrapper_imports(args.baseline_bin), "new": wrapper_imports(args.new_bin)}
    for label, where in imports.items():
        log(f"{label}: {where}")
    if Path(args.baseline_bin) == BASELINE_WRAPPER and str(WORKTREE) not in imports["baseline"]:
        parser.error(f"{BASELINE_WRAPPER} does not import from {WORKTREE}: {imports['baseline']}")
    if Path(args.new_bin) == NEW_WRAPPER and str(REPO_ROOT) not in imports["new"]:
        parser.error(f"{NEW_WRAPPER} does not import this checkout ({REPO_ROOT}): {imports['new']}")

    if args.data_dir:
        Path(args.data_dir).mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="lowdens-cli-bench-", dir=args.data_dir))
    data = root / "data"
    data.mkdir()
    programs = [
        Program("baseline", args.baseline_bin, root / "baseline", args.baseline_commit),
        Program("new", args.new_bin, root / "new", new_commit()),
    ]
    for program in programs:
        program.work.mkdir()
        program.home.mkdir()  # fresh, once per program
    log(f"working in {root}")
    started_load = os.getloadavg()
    startup_paths = None
    try:
        if set(sections) & set(ISSUE21_SECTIONS):
            base = generate(data, BASE_ROWS, zarr_too="fit" in sections)
            if "bad" in sections:
                bad_inputs(data)
            warm_up(programs, "npy-fit", fit_args(base["npy"], "--n-clusters", "5"), args.timeout)
            if "fit" in sections:
                warm_up(programs, "zarr-fit", fit_args(base["zarr"], "--n-clusters", "5"), args.timeout)
        if startup:
            paths = startup_inputs(data)
            startup_paths = {"X.csv": paths["X"], "X-labels.csv": paths["labels"], "missing.csv": paths["missing"],
                             "S": " and ".join(f"{p.startup_store}" for p in programs)}
            for k in range(STARTUP_SEED_RUNS):  # the warm-up fit first, then the rest of S's runs
                warm_up(programs, "startup-fit" if k == 0 else f"seed fit {k}",
                        startup_fit_args(paths["X"], paths["labels"], f"startup-seed-{k}"), args.timeout)
        if "demo" in sections or startup:
            warm_up(programs, "demo", DEMO_ARGS, args.timeout)
        cases = build_cases(sections, sizes, data)
        for case in cases:
            if case.section == "fit":
                n = int(case.key.rsplit("-", 1)[1])
                generate(data, n, npy=case.key.startswith("fit-npy"), zarr_too=case.key.startswith("fit-zarr"))
            measure(case, programs, args.repeats, args.timeout)
            if case.section == "fit" and int(case.key.rsplit("-", 1)[1]) != BASE_ROWS:
                _remove(data / f"X-{case.key.rsplit('-', 1)[1]}.{case.key.split('-')[1]}")  # 800 MB at 2e7
        finished_load = os.getloadavg()
    finally:
        if args.keep_data:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    issues = ("issue 21" if set(sections) & set(ISSUE21_SECTIONS) else "") + \
        (" and " if startup and set(sections) & set(ISSUE21_SECTIONS) else "") + ("issue 35, item 6" if startup else "")
    title = f"CLI benchmark: `lowdens` end to end, baseline against new ({issues})"
    body = report(args, programs, cases, started_load, finished_load, sections, imports, startup_paths)
    path = write_markdown(args.out, title, command_line(), body)
    print(path.read_text())
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
