"""The ``lowdens`` command (a console script of the package).

    lowdens demo [--out DIR]                       a bundled data set, clustered by the flow, persisted and plotted
    lowdens fit INPUT [--method NAME] [--n-clusters K] [--labels PATH] [--store RUNS] [--run-id ID]
                      [--scheduler ADDRESS | --workers N | --cluster-class CLASS --cluster-kwargs JSON]
    lowdens predict RUN INPUT --out OUT            OUT's suffix picks the format: .zarr, .npy, .csv, .parquet
    lowdens plot RUN [--out DIR]
    lowdens runs list | lowdens runs show RUN
    lowdens serve INPUT [--cron "0 2 * * *"] ...   the recluster deployment, on the server at PREFECT_API_URL
                                                   (with fit's options, but --run-id: each run gets its own)

Every command takes ``--store RUNS`` (default ``./lowdens-runs``). Errors are one line on stderr and a non-zero
exit status.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from .runs import DEFAULT_STORE, RunsStore

DEMO_DATASET = "pendigits"
DEMO_OUT = "./lowdens-demo"


def _add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", default=DEFAULT_STORE, help=f"runs store: a path or fsspec URL ({DEFAULT_STORE})")


def _add_recluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "input", help="the rows: a zarr array (a path zarr opens, or group.zarr/X), .npy, .csv, parquet"
    )
    parser.add_argument("--method", default="mdh", help="a registered method: mdh, ncut, mc, pddp, ... (default: mdh)")
    parser.add_argument("--n-clusters", type=int, default=None, help="clusters (default: until no leaf has a split)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="an estimator parameter")
    parser.add_argument("--labels", default=None, help="true labels (.npy, .csv, parquet, zarr) for ARI and purity")
    parser.add_argument("--random-state", type=int, default=0)
    _add_store(parser)
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", default=None, help="address of a running Dask scheduler")
    cluster.add_argument("--workers", type=int, default=None, help="workers of the temporary LocalCluster")
    cluster.add_argument("--cluster-class", default=None, help="e.g. dask_kubernetes.operator.KubeCluster")
    parser.add_argument("--cluster-kwargs", default=None, metavar="JSON", help="keyword arguments of the cluster class")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lowdens",
        description="Low-density-separation clustering runs: fit with the recluster flow, keep the runs, predict, plot.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="cluster a bundled data set end to end (no server, no set-up)")
    demo.add_argument("--out", default=DEMO_OUT, help=f"where the data and the plots go (default: {DEMO_OUT})")
    demo.add_argument("--dataset", default=DEMO_DATASET, help=f"a bundled data set (default: {DEMO_DATASET})")
    _add_store(demo)

    fit = sub.add_parser("fit", help="recluster an array with the recluster flow and persist the run")
    _add_recluster_options(fit)
    fit.add_argument("--run-id", default=None, help="run id (default: made from the time)")

    predict = sub.add_parser("predict", help="the cluster ids of a run for new rows")
    predict.add_argument("run", help="a run id")
    predict.add_argument("input", help="the rows (same formats as fit)")
    predict.add_argument("--out", required=True, help="where the labels go: .zarr, .npy, .csv or .parquet")
    _add_store(predict)

    plot = sub.add_parser("plot", help="a run's plots: the tree, each split's profile, the dendrogram (PNG)")
    plot.add_argument("run", help="a run id")
    plot.add_argument("--out", default=None, help="folder for the PNG files (default: ./lowdens-plots/RUN)")
    plot.add_argument("--input", default=None, help="the rows to draw (default: the run's input)")
    plot.add_argument("--labels", default=None, help="true labels to colour the rows by")
    plot.add_argument("--max-points", type=int, default=2000, help="rows drawn at most (a random sample)")
    _add_store(plot)

    runs = sub.add_parser("runs", help="the committed runs of a runs store")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, metavar="{list,show}")
    listing = runs_sub.add_parser("list", help="one line per committed run, newest first: id, time, method, clusters")
    _add_store(listing)
    show = runs_sub.add_parser("show", help="a run's parameters, input, versions and metrics, as JSON")
    show.add_argument("run")
    _add_store(show)

    serve = sub.add_parser("serve", help="serve the recluster deployment on a schedule (needs PREFECT_API_URL)")
    _add_recluster_options(serve)
    serve.add_argument("--cron", default="0 2 * * *", help='the schedule (default: "0 2 * * *", nightly at 02:00)')
    serve.add_argument("--name", default="nightly", help="the deployment's name (default: nightly)")
    return parser


def _params(pairs: list[str]) -> dict:
    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"--param takes NAME=VALUE; got {pair!r}.")
        try:
            params[name] = json.loads(value)
        except json.JSONDecodeError:
            params[name] = value
    return params


def _check_recluster_arguments(args) -> dict:
    """Fail before any cluster starts: the method and parameters, the input, the labels."""
    from .flows import make_estimator
    from .inputs import load_labels, open_input

    params = _params(args.param)
    make_estimator(args.method, args.n_clusters, params, args.random_state)
    X = open_input(args.input)
    if args.labels is not None:
        labels = load_labels(args.labels)
        if labels.shape != (X.shape[0],):
            raise ValueError(f"The labels at {args.labels} have shape {labels.shape}; the input has {X.shape[0]} rows.")
    return params


def _cluster(args) -> dict | None:
    if args.scheduler:
        return {"address": args.scheduler}
    kwargs = json.loads(args.cluster_kwargs) if args.cluster_kwargs else {}
    if args.cluster_class:
        return {"cluster_class": args.cluster_class, "cluster_kwargs": kwargs}
    if args.workers is not None:
        kwargs.setdefault("n_workers", args.workers)
    return {"cluster_kwargs": kwargs} if kwargs else None


def _fit(args) -> int:
    from .flows import recluster

    params = _check_recluster_arguments(args)
    run_id = recluster(
        os.fspath(args.input),
        method=args.method,
        n_clusters=args.n_clusters,
        params=params or None,
        random_state=args.random_state,
        store=args.store,
        run_id=args.run_id,
        true_labels=args.labels,
        cluster=_cluster(args),
    )
    run = RunsStore(args.store).get(run_id)
    print(f"{run_id}\t{run.attrs['metrics']['n_leaves']} clusters\t{run.url}")
    return 0


def _demo(args) -> int:
    import numpy as np
    import zarr

    from lowdens_dask.datasets import load_dataset

    from .flows import recluster

    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    X, y = load_dataset(args.dataset)
    data = out / f"{args.dataset}.zarr"
    labels = out / f"{args.dataset}-labels.npy"
    zarr.create_array(str(data), data=X, chunks=(2_000, X.shape[1]), overwrite=True)
    np.save(labels, y)
    n_classes = len(np.unique(y))
    print(f"data: {data} ({X.shape[0]} rows, {X.shape[1]} features, {n_classes} classes; labels {labels})")
    print(f"running the recluster flow (a local Dask cluster, Prefect without a server) with {n_classes} clusters ...")
    run_id = recluster(
        str(data),
        n_clusters=n_classes,
        store=args.store,
        true_labels=str(labels),
        cluster={"cluster_kwargs": {"n_workers": 2, "threads_per_worker": 1}},
    )
    run = RunsStore(args.store).get(run_id)
    metrics = run.attrs["metrics"]
    print(f"run: {run_id} in the runs store {args.store} ({run.url})")
    print(
        f"clusters: {metrics['n_leaves']}; adjusted Rand {metrics['adjusted_rand']:.3f}, "
        f"purity {metrics['purity']:.3f}, V-measure {metrics['v_measure']:.3f}"
    )
    written = _save_plots(run, X, y, out / "plots", max_points=2000)
    print(f"plots: {out / 'plots'} ({', '.join(sorted(p.name for p in written.values()))})")
    print(f"done in {time.perf_counter() - started:.0f} s. Next: lowdens runs list; lowdens runs show {run_id}")
    return 0


def _save_plots(run, X, labels, out: Path, max_points: int) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    from lowdens_dask.plots import save_plots

    return save_plots(run.tree, X, out, labels=labels, max_points=max_points)


def _plot(args) -> int:
    from .inputs import load_labels, open_input

    run = RunsStore(args.store).get(args.run)
    source = args.input or run.attrs.get("input", {}).get("path")
    if source is None:
        raise ValueError(f"Run {args.run!r} records no input; give the rows with --input.")
    X = open_input(source)
    labels = load_labels(args.labels) if args.labels else None
    out = Path(args.out or Path("lowdens-plots") / args.run)
    written = _save_plots(run, X, labels, out, args.max_points)
    for name in sorted(written):
        print(written[name])
    return 0


def _predict(args) -> int:
    from dask.diagnostics import ProgressBar

    from .flows import route_to_stable_ids
    from .inputs import open_input, save_labels

    run = RunsStore(args.store).get(args.run)
    X = open_input(args.input)
    if X.shape[1] != run.tree.n_features:
        raise ValueError(
            f"{args.input} has {X.shape[1]} columns; run {args.run!r} was fitted on {run.tree.n_features}."
        )
    labels = route_to_stable_ids(X, run.tree.to_json(), run.stable_ids)
    with ProgressBar(minimum=2):
        path = save_labels(labels, args.out)
    print(f"{path}\t{X.shape[0]} rows")
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


def _serve(args) -> int:
    from prefect.settings import PREFECT_API_URL
    from prefect.types.entrypoint import EntrypointType

    from .flows import recluster

    if not PREFECT_API_URL.value():
        raise ValueError("lowdens serve needs a Prefect server: set PREFECT_API_URL (e.g. http://127.0.0.1:4200/api).")
    params = _check_recluster_arguments(args)
    parameters = {
        "input_path": os.fspath(args.input),
        "method": args.method,
        "n_clusters": args.n_clusters,
        "params": params or None,
        "random_state": args.random_state,
        "store": args.store,
        "true_labels": args.labels,
        "cluster": _cluster(args),
    }
    print(f"serving the deployment recluster/{args.name} on {PREFECT_API_URL.value()} with cron {args.cron!r}")
    # registered by module path (lowdens_pipelines.flows.recluster), so any worker with the package can load it
    recluster.serve(name=args.name, cron=args.cron, parameters=parameters, entrypoint_type=EntrypointType.MODULE_PATH)
    return 0


COMMANDS = {"demo": _demo, "fit": _fit, "predict": _predict, "plot": _plot, "runs": _runs, "serve": _serve}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Prefect's temporary server (no PREFECT_API_URL) migrates its database on a first start: give it time.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    # and its anonymous usage telemetry stays off unless the user turns it on (offline it logs errors)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        return 130
    except (ValueError, KeyError, TypeError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"lowdens: error: {message}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 (a failed flow run: Prefect has logged its traceback; one line here)
        print(f"lowdens: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
