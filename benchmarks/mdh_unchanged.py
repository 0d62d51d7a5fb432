"""Nothing moves for MDH: this checkout against an earlier commit, measured side by side in one run.

For each of the ten bundled data sets (as shipped, K = number of classes):

- labels of ``MDHClustering(n_clusters=K, force_n_clusters=False)`` (the earlier commit has no such
  parameter and never forces) and of ``MDH()`` must be identical;
- warm times of both fits on six of the sets, single thread: the two checkouts alternate in separate
  processes (``--rounds`` rounds); each process reports the median of 5 warm fits; the table gives the
  median over rounds and the ratio this / earlier (target: within 10%).

    python benchmarks/mdh_unchanged.py [--base REV] [--rounds N] [--datasets a,b] [--output FILE]

The earlier commit is checked out into a temporary git worktree, removed afterwards (``harness.base_checkout``);
each process is a ``harness.run_worker``.
"""

import argparse
import statistics
import sys
import warnings

from harness import (
    REPO_ROOT,
    RESULTS_DIR,
    base_checkout,
    bundled,
    check_checkout,
    command_line,
    emit,
    markdown_table,
    median_time,
    run_worker,
    write_markdown,
)

TIMED = ["optidigits", "pendigits", "satellite", "yale", "mfdigits", "chart"]


def worker(checkout: str, datasets: str = "") -> dict:
    """Labels on all sets and warm times on TIMED, for the package in ``checkout``."""
    import inspect

    check_checkout(checkout)
    from lowdens_dask import MDH, MDHClustering

    warnings.simplefilter("ignore")
    no_force = {"force_n_clusters": False} if "force_n_clusters" in inspect.signature(MDHClustering).parameters else {}
    labels, times = {}, {}
    for name, X, _, k in bundled(datasets):
        fits = {"MDHClustering": lambda: MDHClustering(n_clusters=k, **no_force).fit(X), "MDH": lambda: MDH().fit(X)}
        for label, fit in fits.items():
            labels[f"{name}/{label}"] = fit().labels_.tolist()
            if name in TIMED:
                times[f"{name}/{label}"] = median_time(fit, 5)[0]
    return {"labels": labels, "times": times}


def run(checkout: str, datasets: str) -> dict:
    return run_worker(__file__, checkout, ["--datasets", datasets])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="2727218", help="the earlier commit (default 2727218)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--datasets", default="", help="bundled sets, comma-separated (default: all ten)")
    parser.add_argument("--output", default=str(RESULTS_DIR / "mdh-unchanged.md"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        emit(worker(args.worker, args.datasets))
        return
    results = {"earlier": [], "this": []}
    with base_checkout(args.base) as base_dir:
        for r in range(args.rounds):
            print(f"round {r + 1} ...", file=sys.stderr, flush=True)
            results["earlier"].append(run(base_dir, args.datasets))
            results["this"].append(run(str(REPO_ROOT), args.datasets))
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
