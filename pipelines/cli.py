"""The ``lowdens`` command (a console script of the package).

    lowdens fit INPUT [--method NAME] [--n-clusters K] [--store RUNS] [--run-id ID] [--scheduler ADDRESS]
    lowdens runs list [--store RUNS]
    lowdens runs show RUN [--store RUNS]

Errors are one line on stderr and a non-zero exit status.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import sys

from .runs import DEFAULT_STORE, RunsStore


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lowdens", description="Low-density-separation clustering runs.")
    sub = parser.add_subparsers(dest="command", required=True)

    fit = sub.add_parser("fit", help="recluster a zarr array with the recluster flow and persist the run")
    fit.add_argument("input", help="a zarr array: a path zarr opens as a 2-D array, or group.zarr/X")
    fit.add_argument("--method", default="mdh", help="a registered method (default: mdh)")
    fit.add_argument("--n-clusters", type=int, default=None, help="clusters (default: until no valid split)")
    fit.add_argument("--store", default=DEFAULT_STORE, help=f"runs store (default: {DEFAULT_STORE})")
    fit.add_argument("--run-id", default=None, help="run id (default: made from the time)")
    fit.add_argument("--scheduler", default=None, help="address of a Dask scheduler (default: a LocalCluster)")
    fit.add_argument("--random-state", type=int, default=0)

    runs = sub.add_parser("runs", help="the committed runs of a runs store").add_subparsers(
        dest="runs_command", required=True
    )
    listing = runs.add_parser("list", help="one line per committed run, newest first")
    listing.add_argument("--store", default=DEFAULT_STORE)
    show = runs.add_parser("show", help="a run's parameters, input and metrics, as JSON")
    show.add_argument("run")
    show.add_argument("--store", default=DEFAULT_STORE)
    return parser


def _fit(args) -> int:
    from prefect_dask import DaskTaskRunner

    from .flows import make_estimator, recluster

    make_estimator(args.method, args.n_clusters, None, args.random_state)  # fail before any cluster starts
    if args.scheduler:
        runner = DaskTaskRunner(address=args.scheduler)
    else:
        runner = DaskTaskRunner(cluster_kwargs={"n_workers": 2, "threads_per_worker": 1, "dashboard_address": None})
    run_id = recluster.with_options(task_runner=runner)(
        args.input,
        method=args.method,
        n_clusters=args.n_clusters,
        random_state=args.random_state,
        store=args.store,
        run_id=args.run_id,
    )
    run = RunsStore(args.store).get(run_id)
    print(f"{run_id}\t{run.attrs['metrics']['n_leaves']} clusters\t{run.url}")
    return 0


def _runs(args) -> int:
    store = RunsStore(args.store)
    if args.runs_command == "list":
        for run in store.runs():
            params, metrics = run.attrs.get("params", {}), run.attrs.get("metrics", {})
            path = run.attrs.get("input", {}).get("path", "?")
            print(
                f"{run.run_id}\t{run.committed_at}\t{params.get('method', '?')}\t{metrics.get('n_leaves', '?')}\t{path}"
            )
        return 0
    run = store.get(args.run)
    shown = {key: value for key, value in run.attrs.items() if key != "tree"}
    print(json.dumps({"run_id": run.run_id, "committed_at": run.committed_at, "url": run.url, **shown}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _fit(args) if args.command == "fit" else _runs(args)
    except (ValueError, KeyError, FileNotFoundError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"lowdens: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
