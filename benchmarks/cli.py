"""CLI benchmark (issue 21, Acceptance): the whole ``lowdens`` command, a baseline commit beside the new code.

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

    python benchmarks/cli.py [--baseline-bin BIN] [--new-bin BIN] [--baseline-commit REV] [--repeats 3]
                             [--sizes 200000,2000000,20000000] [--only fit,demo,bad] [--timeout 900]
                             [--data-dir DIR] [--keep-data] [--out benchmarks/results/cli.md]
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
from _common import REPO_ROOT, RESULTS_DIR, command_line, fmt, markdown_table, write_markdown

K, D = 5, 10
ZARR_CHUNK = 250_000
GEN_CHUNK = 250_000
BASE_ROWS = 200_000  # warm-up fit, the bad-value cases' input, the CSV case
SECTIONS = ("fit", "demo", "bad")
TARGET_BAD = "<= 5 s, exit 2, 1 stderr line"


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

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
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


def fill(args: list, program: Program, run_id: str) -> list[str]:
    scratch = program.work / run_id
    return [str(a).format(store=program.store, run_id=run_id, scratch=scratch) for a in args]


def fit_args(path, *extra) -> list:
    return ["fit", str(path), *extra, "--store", "{store}", "--run-id", "{run_id}"]


def measure(case: Case, programs: list[Program], repeats: int, timeout: float) -> None:
    for i in range(repeats):
        for program in programs:
            done = case.results[program.label]
            if any(r.timed_out for r in done):
                continue
            run_id = f"{case.key}-r{i}"
            result = program.run(fill(case.args, program, run_id), timeout)
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


def warm_up(programs: list[Program], label: str, args: list, timeout: float) -> None:
    for program in programs:
        result = program.run(fill(args, program, f"warmup-{label}"), timeout)
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
                if r.timed_out or r.rc != 0:
                    what = "timed out" if r.timed_out else f"exit {r.rc}"
                    notes.append(f"- {case.title}, {label}: {what}; last stderr line {cell(_tail(r.stderr))}")
                    break
    return notes


def report(args, programs: list[Program], cases: list[Case], started_load, finished_load) -> str:
    baseline, new = programs
    timeout = args.timeout
    head = ["case", "baseline median (s)", "new median (s)", "ratio baseline/new", "exit status baseline / new",
            "target (new)", "runs (s): baseline / new"]
    body = [
        "## Programs and environment",
        "",
        f"- baseline: commit {baseline.commit}, `{baseline.bin}`",
        f"- new: commit {new.commit}, `{new.bin}`",
        "- Each command is the whole `lowdens` process (imports, checks, any Prefect server or Dask cluster it "
        "starts, teardown), timed with `time.perf_counter` around the subprocess (started, waited for, its output read); PREFECT_API_URL "
        "is not in its environment; PREFECT_HOME is a folder made fresh for each program, created by that "
        "program's untimed warm-up fit and reused for all its later commands (so each timed command is at least "
        "the second in a fresh PREFECT_HOME, with the numba cache warm).",
        f"- Runs interleaved baseline, new, baseline, new, ...; medians of {args.repeats}; timeout {timeout:.0f} s "
        "per command (after a timeout that program's further runs of the case are skipped). Every fit has "
        "`--store` (one per program) and a fresh `--run-id`.",
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
            markdown_table(
                ["case", "baseline", "new"],
                [
                    [c.title] + [cell(message(c.results[p.label][-1].stderr)) if c.results[p.label] else "-"
                                 for p in programs]
                    for c in bad_cases
                ],
            ),
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
    notes = failures(fit_cases + demo_cases)
    if notes:
        body += ["## Failed or timed-out fits and demos", "", *notes, ""]
    return "\n".join(body)


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
    if "demo" in sections:
        cases.append(Case("demo", "demo", "`lowdens demo`",
                          ["demo", "--out", "{scratch}/out", "--store", "{scratch}/runs"], "<= 15 s"))
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
    return cases


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--baseline-bin", default="/work/old-venv/bin/lowdens",
                        help="the baseline commit's lowdens (a normal install in a venv of its own)")
    parser.add_argument("--baseline-commit", default="f0c0cdc", help="the commit the baseline was installed from")
    parser.add_argument("--new-bin", default="/work/venv/bin/lowdens",
                        help="the new program's lowdens (an install of this checkout)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per program and case (median reported)")
    parser.add_argument("--sizes", default=f"{BASE_ROWS},2000000,20000000",
                        help="rows of the fit inputs, comma-separated (1e6 style accepted)")
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections to run, comma-separated: fit, demo, bad")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per command")
    parser.add_argument("--data-dir", default=None,
                        help="where a temporary folder for the generated inputs, the PREFECT_HOMEs and the runs "
                             "stores is made (default: the system's temporary directory); removed at the end")
    parser.add_argument("--keep-data", action="store_true", help="keep that folder (its path is printed)")
    parser.add_argument("--out", default=str(RESULTS_DIR / "cli.md"), help="the markdown report")
    args = parser.parse_args(argv)

    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"--only: unknown section(s) {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    for bin_ in (args.baseline_bin, args.new_bin):
        if not os.access(bin_, os.X_OK):
            parser.error(f"{bin_} is not an executable")

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
    try:
        base = generate(data, BASE_ROWS, zarr_too="fit" in sections)
        if "bad" in sections:
            bad_inputs(data)
        warm_up(programs, "npy-fit", fit_args(base["npy"], "--n-clusters", "5"), args.timeout)
        if "fit" in sections:
            warm_up(programs, "zarr-fit", fit_args(base["zarr"], "--n-clusters", "5"), args.timeout)
        if "demo" in sections:
            warm_up(programs, "demo", ["demo", "--out", "{scratch}/out", "--store", "{scratch}/runs"], args.timeout)
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

    title = "CLI benchmark: `lowdens` end to end, baseline against new (issue 21)"
    path = write_markdown(args.out, title, command_line(), report(args, programs, cases, started_load, finished_load))
    print(path.read_text())
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
