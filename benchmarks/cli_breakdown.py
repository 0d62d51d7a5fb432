"""Where ``lowdens fit`` spends its seconds on an input it fits in its own process (issue 44): the whole command,
then the same steps timed one by one in fresh processes.

Each repetition runs, in a fresh Python process, what the command's in-process path runs (Dask's threaded
scheduler, the process's numba threads):

- ``import``: ``lowdens_pipelines.job`` and the input reader (dask.array, zarr, numba, the library's modules);
- ``estimator``: ``make_estimator``, which imports the method's estimator (scikit-learn, and with it scipy.stats
  and pandas);
- ``first calls``: a fit and ``summary()`` of the input's first 2,000 rows, less a second one: numba's typing
  context and the cached kernels, loaded on their first call;
- ``fit`` and ``summary``: the fit of every row and ``estimator.summary()`` (the summary a run keeps for updates);

then the packages' shares of the imports (``python -X importtime``: its own overhead inflates them), and the whole
command (``lowdens fit INPUT --n-clusters K --store DIR --run-id ...``, PREFECT_API_URL unset), each timed around
the process, medians of ``--repeats``.

    python benchmarks/cli_breakdown.py --input X.npy [--n-clusters 5] [--repeats 3] [--output FILE]

``benchmarks/cli.py`` generates the issue's input (200,000 x 10 float32 rows, five separated groups).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown

CHILD = r"""
import json, sys, time
start = time.perf_counter()
import dask
from dask.threaded import get
from lowdens_pipelines import job
from lowdens_pipelines.inputs import read_input
marks = {"import": time.perf_counter()}
X, _ = read_input(sys.argv[1], header=None)
k = int(sys.argv[2])
with dask.config.set(scheduler=get):
    estimator = job.make_estimator("mdh", k, None, 0)
    marks["estimator"] = time.perf_counter()
    for name in ("first small fit", "second small fit"):
        job.make_estimator("mdh", k, None, 0).fit(X[:2000]).summary()
        marks[name] = time.perf_counter()
    estimator.fit(X)
    marks["fit"] = time.perf_counter()
    estimator.summary()
    marks["summary"] = time.perf_counter()
seconds, last = {}, start
for name, t in marks.items():
    seconds[name], last = t - last, t
print(json.dumps(seconds))
"""

IMPORTS = "from lowdens_pipelines import job; job.make_estimator('mdh', 5, None, 0)"


def child_env() -> dict:
    """This environment (the installed lowdens-dask), without a Prefect API."""
    return {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}


def steps(input_path: str, k: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, input_path, str(k)], capture_output=True, text=True, check=True, env=child_env()
    )
    s = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "import": s["import"],
        "estimator": s["estimator"],
        "first calls": s["first small fit"] - s["second small fit"],
        "fit": s["fit"],
        "summary": s["summary"],
    }


def import_shares() -> dict:
    """Self time of each top-level package imported by the job and the estimator (``-X importtime``), in seconds."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", IMPORTS], capture_output=True, text=True, check=True, env=child_env()
    )
    shares: dict[str, float] = {}
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = (part.strip() for part in line[len("import time:") :].split("|"))
        top = name.split(".")[0]
        shares[top] = shares.get(top, 0.0) + int(self_us) / 1e6
    return shares


def whole_command(input_path: str, k: int, store: str, home: str, run: int) -> float:
    env = {**child_env(), "PREFECT_HOME": home}
    command = [sys.executable, "-c", "from lowdens_pipelines.cli import run; run()", "fit", input_path,
               "--n-clusters", str(k), "--store", store, "--run-id", f"breakdown-{run}"]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True, env=env)
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--n-clusters", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=str(RESULTS_DIR / "cli-breakdown.md"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        store, home = f"{scratch}/store", f"{scratch}/prefect"
        whole_command(args.input, args.n_clusters, store, home, -1)  # warm-up: numba's cache, the store, PREFECT_HOME
        runs = [steps(args.input, args.n_clusters) for _ in range(args.repeats)]
        commands = [whole_command(args.input, args.n_clusters, store, home, r) for r in range(args.repeats)]
    shares = [import_shares() for _ in range(args.repeats)]
    medians = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    rows = [[name, fmt(value, 2), " ".join(fmt(run[name], 2) for run in runs)] for name, value in medians.items()]
    rows.append(["sum of the steps", fmt(sum(medians.values()), 2), ""])
    rows.append(["whole command", fmt(statistics.median(commands), 2), " ".join(fmt(c, 2) for c in commands)])
    packages = sorted({p for s in shares for p in s}, key=lambda p: -statistics.median(s.get(p, 0.0) for s in shares))
    package_rows = [[p, fmt(statistics.median(s.get(p, 0.0) for s in shares), 2)] for p in packages[:12]]
    total = statistics.median(sum(s.values()) for s in shares)
    body = (
        f"Input: `{args.input}`, `--n-clusters {args.n_clusters}`; {args.repeats} fresh processes, medians.\n\n"
        + markdown_table(["step", "median (s)", "runs (s)"], rows)
        + f"\n\nImports by package (`python -X importtime`, self time, median; all packages: {fmt(total, 2)} s):\n\n"
        + markdown_table(["package", "seconds"], package_rows)
        + "\n"
    )
    print(body)
    write_markdown(Path(args.output), "Where `lowdens fit` spends its seconds (issue 44)", command_line(), body)


if __name__ == "__main__":
    main()
