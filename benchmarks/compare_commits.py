"""Nothing moves for MDH: this checkout against an earlier commit, measured side by side in one run.

For each of the ten bundled data sets (as shipped, K = number of classes):

- labels of ``MDHClustering(n_clusters=K, force_n_clusters=False)`` (the earlier commit has no such
  parameter and never forces) and of ``MDH()`` must be identical;
- warm times of both fits on six of the sets, single thread: the two checkouts alternate in separate
  processes (``--rounds`` rounds); each process reports the median of 5 warm fits; the table gives the
  median over rounds and the ratio this / earlier (target: within 10%).

    python benchmarks/compare_commits.py [--base REV] [--rounds N] [--output FILE]

The earlier commit is checked out into a temporary git worktree, removed afterwards.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

from _common import REPO_ROOT, RESULTS_DIR, command_line, markdown_table, write_markdown

TIMED = ["optidigits", "pendigits", "satellite", "yale", "mfdigits", "chart"]
SINGLE_THREAD_ENV = {k: "1" for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def worker(checkout: str) -> dict:
    """Labels on all sets and warm times on TIMED, for the package in ``checkout``."""
    sys.path.insert(0, checkout)
    import inspect

    import numpy as np

    import lowdens_dask
    from lowdens_dask import MDH, MDHClustering
    from lowdens_dask.datasets import list_datasets, load_dataset

    assert os.path.realpath(lowdens_dask.__path__[0]).startswith(os.path.realpath(checkout))
    warnings.simplefilter("ignore")
    no_force = {"force_n_clusters": False} if "force_n_clusters" in inspect.signature(MDHClustering).parameters else {}
    labels, times = {}, {}
    for name in list_datasets():
        X, y = load_dataset(name)
        k = len(np.unique(y))
        fits = {"MDHClustering": lambda: MDHClustering(n_clusters=k, **no_force).fit(X), "MDH": lambda: MDH().fit(X)}
        for label, fit in fits.items():
            labels[f"{name}/{label}"] = fit().labels_.tolist()
            if name in TIMED:
                runs = []
                for _ in range(5):
                    start = time.perf_counter()
                    fit()
                    runs.append(time.perf_counter() - start)
                times[f"{name}/{label}"] = statistics.median(runs)
    return {"labels": labels, "times": times}


def run(checkout: str) -> dict:
    env = dict(os.environ, **SINGLE_THREAD_ENV)
    env.pop("PYTHONPATH", None)
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--worker", checkout], env=env, capture_output=True, text=True,
        check=True, cwd=tempfile.gettempdir(),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="2727218", help="the earlier commit (default 2727218)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default=str(RESULTS_DIR / "mdh-unchanged.md"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return
    base_dir = tempfile.mkdtemp(prefix="lowdens-base-")
    subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "-q", "--detach", base_dir, args.base], check=True)
    try:
        results = {"earlier": [], "this": []}
        for r in range(args.rounds):
            print(f"round {r + 1} ...", file=sys.stderr, flush=True)
            results["earlier"].append(run(base_dir))
            results["this"].append(run(str(REPO_ROOT)))
    finally:
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", base_dir], check=False)
    earlier, this = results["earlier"][0]["labels"], results["this"][0]["labels"]
    same = [key for key in earlier if earlier[key] == this[key]]
    differ = [key for key in earlier if earlier[key] != this[key]]
    rows = []
    for key in results["earlier"][0]["times"]:
        a = statistics.median(r["times"][key] for r in results["earlier"])
        b = statistics.median(r["times"][key] for r in results["this"])
        rows.append([key, f"{a:.3f}", f"{b:.3f}", f"{b / a:.2f}"])
    body = (
        f"Earlier commit: `{args.base}`. Labels identical on {len(same)} of {len(earlier)} fits"
        + (f"; different: {', '.join(differ)}." if differ else " (all).")
        + f"\n\nWarm times, single thread, the two checkouts alternating in separate processes, {args.rounds} rounds "
        "(median over rounds of each process's median of 5 fits):\n\n"
        + markdown_table(["fit", "earlier (s)", "this (s)", "this / earlier"], rows)
    )
    path = write_markdown(args.output, "MDH against an earlier commit", command_line(), body)
    print(path.read_text())


if __name__ == "__main__":
    main()
