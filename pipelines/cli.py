"""The ``lowdens`` command (a console script of the package).

    lowdens demo [--out DIR]                       a bundled data set clustered end to end, persisted and plotted
    lowdens fit INPUT [--method NAME] [--n-clusters K|auto] [--param NAME=VALUE ...] [--labels PATH] [--store RUNS]
                      [--run-id ID [--replace [--force]]] [--update-from RUN [--allow-same-input]]
                      [--header | --no-header]
                      [--scheduler ADDRESS | --workers N | --cluster-class CLASS --cluster-kwargs JSON]
    lowdens predict RUN INPUT --out OUT            OUT's suffix picks the format: .zarr, .npy, .csv, .parquet
    lowdens plot RUN [--out DIR]
    lowdens runs list | lowdens runs show RUN
    lowdens params METHOD                          a method's parameters (for --param) and their defaults
    lowdens serve INPUT [--cron "0 2 * * *"] [--incremental [--refit-every N]] ...
                                                   the recluster deployment, on the server at PREFECT_API_URL

Where the work runs: without a Prefect API (no ``PREFECT_API_URL``), ``fit`` and ``demo`` run the recluster job's
steps themselves (:mod:`.job`) and start no Prefect server; input up to ``IN_PROCESS_MAX_BYTES`` is fitted in
this process on Dask's threaded scheduler, larger input (or ``--workers``, ``--scheduler``, ``--cluster-class``)
on a Dask cluster. With a Prefect API the same steps run as the ``recluster`` flow, reported to that server.

Every check of the request (method, parameters, input, labels, NaN rows) runs before any cluster or server
starts. Errors are one line on stderr and exit status 2 (bad input) or 1; Ctrl-C exits with status 130 and
leaves no run behind.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from .hosts import IN_PROCESS_MAX_BYTES, local_cluster_kwargs
from .parameter_names import PARAMETER_NAMES, RUN_DEFAULTS, check_parameter_names

DEFAULT_STORE = "./lowdens-runs"  # the runs store's default (lowdens_pipelines.runs.DEFAULT_STORE)
DEMO_DATASET = "pendigits"
DEMO_OUT = "./lowdens-demo"
#: The registered methods (lowdens_dask.METHODS; from a table, so that --help needs no import of the library).
METHOD_NAMES = tuple(PARAMETER_NAMES)
#: Exit status when stdout's reader closed the pipe (128 + SIGPIPE, as a shell reports a process killed by it).
BROKEN_PIPE = 141
#: ``lowdens serve --incremental``: a full fit every this many runs (a week of nightly runs) by default.
REFIT_EVERY = 7


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, exit status 2."""

    def error(self, message: str):
        self.exit(2, f"lowdens: error: {message} (see {self.prog} --help)\n")


def _n_clusters(text: str) -> int | str:
    """--n-clusters: "auto" or a positive integer."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a positive integer; got {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text!r}")
    return value


def _add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store", default=DEFAULT_STORE, help=f"the runs store: a path or an fsspec URL (default: {DEFAULT_STORE})"
    )


def _add_verbose(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the logs of Dask and Prefect, and every warning"
    )


def _add_recluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "input",
        help="the rows: a zarr array (a path zarr opens, or group.zarr/X), .npy, .csv (.csv.gz) or parquet; every "
        "column is a feature",
    )
    parser.add_argument(
        "--method",
        default=None,
        choices=METHOD_NAMES,
        metavar="NAME",
        help=f"the clustering method, one of: {', '.join(METHOD_NAMES)} (default: mdh; with --update-from, the "
        "parent run's)",
    )
    parser.add_argument(
        "--n-clusters",
        type=_n_clusters,
        default=None,
        metavar="K",
        help="the number of clusters, or 'auto' (the default; with --update-from, the parent run's setting): split "
        "a leaf only while its split is significant against a one-cluster null (a dip test of the leaf's rows along "
        "the split, against the dips the same search finds in one-cluster samples; --param significance_level=0.01 "
        "and --param max_clusters=K tune it)",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an estimator parameter, VALUE as JSON or text (repeat for several: --param mode=exact --param "
        "min_size=50; with --update-from, set over the parent run's); 'lowdens params METHOD' lists a method's "
        "parameters",
    )
    parser.add_argument(
        "--labels", default=None, help="true labels (.npy, .csv, parquet, zarr): the run's scores (ARI, purity, ...)"
    )
    parser.add_argument(
        "--random-state",
        type=int,
        default=None,
        help="seed of the fit (default: 0; with --update-from, the parent run's)",
    )
    parser.add_argument(
        "--header",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether a CSV input's first row is a header (default: it is when any of its fields is not a number, "
        "or when it reads 0,1,...,n-1 above a row of non-integers, as pandas' to_csv writes it; else it is data)",
    )
    _add_store(parser)
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", default=None, metavar="ADDRESS", help="address of a running Dask scheduler")
    cluster.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"fit on a temporary LocalCluster of N worker processes (default: none for input up to "
        f"{IN_PROCESS_MAX_BYTES / 2**30:g} GiB, which is fitted in this process; a LocalCluster of one "
        "single-threaded worker per core above that)",
    )
    cluster.add_argument(
        "--cluster-class",
        default=None,
        metavar="CLASS",
        help="a cluster class, e.g. dask_kubernetes.operator.KubeCluster",
    )
    parser.add_argument("--cluster-kwargs", default=None, metavar="JSON", help="keyword arguments of the cluster class")
    _add_verbose(parser)


def _version() -> str:
    from importlib.metadata import version

    return version("lowdens-dask")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lowdens",
        description="Low-density-separation clustering runs: fit, keep the runs, predict, plot, serve nightly.",
        epilog="Without PREFECT_API_URL, fit and demo run in this process (or on the Dask cluster they are given) "
        "and start no Prefect server; with it, they run the recluster flow on that server.",
    )
    parser.add_argument("--version", action="version", version=f"lowdens {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="cluster a bundled data set end to end: a zarr copy, a committed run, its scores and plots",
        description="Cluster a bundled data set end to end, as fit does (in this process; no Prefect server "
        "unless PREFECT_API_URL is set), then plot the run.",
    )
    demo.add_argument("--out", default=DEMO_OUT, help=f"where the data and the plots go (default: {DEMO_OUT})")
    demo.add_argument("--dataset", default=DEMO_DATASET, help=f"a bundled data set (default: {DEMO_DATASET})")
    _add_store(demo)
    _add_verbose(demo)

    fit = sub.add_parser("fit", help="cluster an array and commit the run to the runs store")
    _add_recluster_options(fit)
    fit.add_argument(
        "--run-id",
        default=None,
        help="the run's id (default: made from the time); an id at which a run is committed is refused unless "
        "--replace is given (an id whose earlier attempt failed before it committed is free)",
    )
    fit.add_argument(
        "--replace",
        action="store_true",
        help="replace the run committed at --run-id, if any (refused, even so, for a run that other runs name as "
        "their parent: see --force)",
    )
    fit.add_argument(
        "--force",
        action="store_true",
        help="with --replace: replace the run even if other runs name it as their parent (they were updated from "
        "it, and will name a parent that no longer holds what they were updated from)",
    )
    fit.add_argument(
        "--update-from",
        default=None,
        metavar="RUN",
        help="update the committed run RUN with these rows (partial_fit) instead of fitting afresh: the new run "
        "keeps RUN's cluster ids, names RUN as its parent and records what changed; --method, --n-clusters, "
        "--param and --random-state default to RUN's; an input holding the same rows as RUN's, or as a run before "
        "it in its line, is refused (see --allow-same-input)",
    )
    fit.add_argument(
        "--allow-same-input",
        action="store_true",
        help="with --update-from: add the rows even if RUN, or a run before it in its line, already holds them (the "
        "same file ingested again, or the same rows under another name)",
    )

    predict = sub.add_parser("predict", help="the cluster ids of a run for new rows")
    predict.add_argument("run", help="a run id")
    predict.add_argument("input", help="the rows (same formats as fit)")
    predict.add_argument(
        "--out", default=None, help="where the labels go: .zarr, .npy, .csv or .parquet (default: stdout, one per line)"
    )
    predict.add_argument(
        "--header", action=argparse.BooleanOptionalAction, default=None, help="as for fit: a CSV input's header row"
    )
    _add_store(predict)

    plot = sub.add_parser(
        "plot",
        help="a run's plots: the tree, each split's profile, the dendrogram, and for an update run the clusters' "
        "shares before and after it (PNG)",
    )
    plot.add_argument("run", help="a run id")
    plot.add_argument("--out", default=None, help="folder for the PNG files (default: ./lowdens-plots/RUN)")
    plot.add_argument("--input", default=None, help="the rows to draw (default: the run's input)")
    plot.add_argument("--labels", default=None, help="true labels to colour the rows by (default: the run's)")
    plot.add_argument(
        "--max-points", type=int, default=2000, help="rows drawn at most, a random sample (default: 2000)"
    )
    _add_store(plot)

    runs = sub.add_parser("runs", help="the committed runs of a runs store")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, metavar="{list,show}")
    listing = runs_sub.add_parser(
        "list",
        help="one line per committed run, newest first: id, commit time, method, clusters, input; then one per "
        "damaged run: id, 'damaged', the path and what is wrong",
    )
    _add_store(listing)
    show = runs_sub.add_parser("show", help="a run's parameters, input, versions and metrics, as JSON")
    show.add_argument("run", help="a run id")
    _add_store(show)

    params = sub.add_parser("params", help="a method's parameters, for --param, with their defaults")
    params.add_argument("method", choices=METHOD_NAMES, metavar="METHOD", help=f"one of: {', '.join(METHOD_NAMES)}")

    serve = sub.add_parser(
        "serve", help="serve the recluster deployment on a schedule (needs a Prefect server: PREFECT_API_URL)"
    )
    _add_recluster_options(serve)
    serve.add_argument(
        "--cron", default="0 2 * * *", help='the schedule (default: "0 2 * * *", nightly at 02:00 in --timezone)'
    )
    serve.add_argument(
        "--timezone",
        default="UTC",
        metavar="NAME",
        help="the time zone of --cron, an IANA name such as Europe/Paris or America/New_York (default: UTC)",
    )
    serve.add_argument("--name", default="nightly", help="the deployment's name (default: nightly)")
    serve.add_argument(
        "--incremental",
        action="store_true",
        help="each run updates the deployment's latest run with its rows (partial_fit) instead of fitting afresh, "
        "keeping its cluster ids; the first run, and one run in --refit-every, fit afresh",
    )
    serve.add_argument(
        "--allow-same-input",
        action="store_true",
        help="with --incremental: a run whose input holds the same rows as the run it updates, or a run before that "
        "in its line (the nightly file not replaced), adds them again instead of failing",
    )
    serve.add_argument(
        "--refit-every",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"with --incremental: a full fit every N runs, N-1 updates between (default: {REFIT_EVERY})",
    )
    return parser


# ------------------------------------------------------------------------------------------------ checks
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


def _cli_words(message: str, pairs: list[str]) -> str:
    """An estimator's message in the words of the command line: ``MDHClustering: mode must be ...; got 'exakt'``
    becomes ``--param mode=exakt: must be ...``, ``nonfinite='skip'`` ``--param nonfinite=skip``, ``n_clusters``
    ``--n-clusters``; "or None" goes (the command line has no None) and True or False are written as it takes them."""
    given = dict(pair.partition("=")[::2] for pair in pairs)
    name = re.match(r"^[\w-]+: (\w+) ", message)
    message = re.sub(r"^[\w-]+: ", "", message).replace(" or None", "").replace("True or False", "true or false")
    if name and name.group(1) in given:
        message = f"--param {name.group(1)}={given[name.group(1)]}: " + re.sub(
            r"; got .*$", ".", message[len(name.group(1)) + 1 :]
        )
    message = re.sub(r"\bn_clusters='([^']*)'", r"--n-clusters \1", message)
    message = re.sub(r"(?<![\w-])(\w+)='([^']*)'", r"--param \1=\2", message)
    return re.sub(r"(?<!['\w])n_clusters\b(?!')", "--n-clusters", message)


def _first_nonfinite(X) -> tuple[int, int]:
    """(rows with NaN or inf, the first such row or -1), in one pass."""
    import dask.array as da
    from dask.threaded import get

    bad = ~da.isfinite(X).all(axis=1)
    count, first = da.compute(bad.sum(), da.argmax(bad), scheduler=get)  # before any cluster starts
    return int(count), int(first) if count else -1


@contextmanager
def _importing():
    """The block's imports without the cyclic garbage collector, their objects then frozen (``gc.freeze``): modules
    live as long as the process, and the collections that scanned them again and again took about a tenth of a
    small fit's time (0.6 s of 6.4 s)."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _check_before_imports(args, input_path: str, true_labels) -> None:
    """The checks of a request that need neither the library nor Dask, so that their errors come at once (the
    imports take seconds): the input and labels paths exist, and each ``--param`` is NAME=VALUE with a NAME the
    method takes and a VALUE its estimator's constraints table allows (``method_constraints``: the table its fit
    checks, in the standard library; for an update whose method is its parent's, checked once the parent is read);
    a local CSV's first lines (:func:`~lowdens_pipelines.inputs.check_csv_start`)."""
    from lowdens_dask.estimators import check_constraints, method_constraints

    from .inputs import check_csv_start, require_exists

    require_exists(input_path)
    if isinstance(true_labels, str):
        require_exists(true_labels)
    method = args.method or (None if getattr(args, "update_from", None) else RUN_DEFAULTS["method"])
    names = _params(args.param)
    if method is not None:
        try:
            check_parameter_names(method, {"n_clusters", *names})
            check_constraints(method_constraints(method), names, method)
        except ValueError as exc:
            raise ValueError(_cli_words(str(exc), args.param)) from None
    check_csv_start(input_path, args.header)


class _Request:
    """A checked ``fit``/``serve``/``demo`` request: the estimator's settings (for ``--update-from``, the parent
    run's where not given), the input, the labels, and where the work runs. Everything is checked here, before any
    cluster or server starts."""

    def __init__(self, args, input_path: str, true_labels=None):
        _check_before_imports(args, input_path, true_labels)
        with _importing():
            from . import job
            from .inputs import load_labels, read_input
            from .runs import RunsStore

        self.args, self.input_path, self.true_labels = args, input_path, true_labels
        self.update_from = getattr(args, "update_from", None)
        self.replace, self.force = getattr(args, "replace", False), getattr(args, "force", False)
        self.allow_same_input = getattr(args, "allow_same_input", False)
        if self.allow_same_input and self.update_from is None and not getattr(args, "incremental", False):
            option = "--incremental" if args.command == "serve" else "--update-from"
            raise ValueError(f"--allow-same-input goes with {option}: it lets an update add rows its line holds.")
        try:  # the settings not given: the parent run's for an update, else the defaults
            settings = (args.method, args.n_clusters, _params(args.param) or None, args.random_state)
            run_id = getattr(args, "run_id", None)
            self.plan = job.plan_run(
                RunsStore(args.store),
                *settings,
                update_from=self.update_from,
                run_id=run_id,
                replace=self.replace,
                force=self.force,
                allow_same_input=self.allow_same_input,
            )
        except job.RunIdTaken as exc:
            raise ValueError(_run_id_taken(exc, args.store)) from None
        except ValueError as exc:
            raise ValueError(_cli_words(str(exc), args.param)) from None
        self.estimator = self.plan.estimator()
        self.X, self.info = read_input(input_path, header=args.header)
        if self.plan.parent is not None:
            job.check_update_input(self.plan.parent, {"path": input_path, "shape": list(self.X.shape)})
            if not self.allow_same_input:
                from .identity import input_identity

                try:
                    job.check_same_input(RunsStore(args.store), self.plan.parent, input_identity(input_path, X=self.X))
                except job.SameInputError as exc:
                    held = f" ({exc.path})" if exc.path else ""  # None: the same file as input_path
                    raise ValueError(
                        f"{input_path}: run {exc.run_id!r}{held} already holds these rows, in the line of run "
                        f"{self.update_from!r}; an update adds new rows (--allow-same-input adds them again)."
                    ) from None
        self.in_process = not (args.scheduler or args.workers or args.cluster_class) and (
            self.X.nbytes <= IN_PROCESS_MAX_BYTES
        )
        # NaN/inf rows: one pass over input fitted here; the first chunk of input going to a cluster (the fit
        # counts the rest)
        rows = self.X if self.in_process else self.X.blocks[0]
        n_bad, first = _first_nonfinite(rows)
        if n_bad and self.estimator.nonfinite != "skip":
            counted = f"{n_bad:,} of the {rows.shape[0]:,} rows" + ("" if self.in_process else " of the first chunk")
            raise ValueError(
                f"{input_path}: {counted} {'has' if n_bad == 1 else 'have'} NaN or inf values (the first is row "
                f"{first}); remove them, or pass "
                "--param nonfinite=skip to leave them unlabelled (-1)."
            )
        n_rows = self.X.shape[0] - (n_bad if self.in_process else 0)
        told = self.plan.n_clusters if isinstance(self.plan.n_clusters, int) and self.plan.parent is None else 0
        needed = 1 if self.plan.parent is not None else max(2, told)  # an update's batch may be one row
        if n_rows < needed:
            raise ValueError(f"{input_path}: {n_rows} row(s) without NaN or inf; at least {needed} are needed.")
        if isinstance(true_labels, str):
            labels = load_labels(true_labels)
            if labels.shape != (self.X.shape[0],):
                raise ValueError(
                    f"The labels at {true_labels} have shape {labels.shape}; the input has {self.X.shape[0]} rows."
                )
        _say(f"read {self.info}")  # what was read, once it passed every check

    def cluster(self, here: bool = True) -> dict | str | None:
        """The flow's ``cluster`` parameter (:func:`.flows.dask_task_runner`). ``here``: the flow runs now, on this
        host (``fit``), which sizes the cluster: in this process with a thread per core for input up to
        ``IN_PROCESS_MAX_BYTES``. Else (``serve``: the deployment runs later, on whichever host serves it) only what
        the command line says, and without it ``"auto"``: the flow sizes it when it runs, on its host
        (:func:`.flows.host_cluster`)."""
        args = self.args
        if args.scheduler:
            return {"address": args.scheduler}
        kwargs = json.loads(args.cluster_kwargs) if args.cluster_kwargs else {}
        if args.cluster_class:
            return {"cluster_class": args.cluster_class, "cluster_kwargs": kwargs}
        if not here and args.workers is None and not kwargs:
            return "auto"
        if self.in_process and here:
            kwargs = {**local_cluster_kwargs(self.X.nbytes), **kwargs}
        elif args.workers is not None:
            kwargs.setdefault("n_workers", args.workers)
        return {"cluster_kwargs": kwargs} if kwargs else None

    def run(self, store: str, run_id: str | None) -> str:
        """Run the job: as the Prefect flow when a Prefect API is configured, else its steps here."""
        a, plan = self.args, self.plan
        settings = dict(
            method=plan.method,
            n_clusters=plan.n_clusters,
            params=plan.params or None,
            random_state=plan.random_state,
            store=store,
            run_id=run_id,
            true_labels=self.true_labels,
            header=self.info.header,
            update_from=self.update_from,
        )
        if _prefect_api_url():
            from .flows import recluster

            if self.allow_same_input:  # the flow's parameter, only when asked for
                settings["allow_same_input"] = True
            return recluster(
                self.input_path, cluster=self.cluster(), replace=self.replace, force=self.force, **settings
            )
        from . import job
        from .progress import Progress

        with _dask_cluster(self) as _, Progress(enabled=False if a.verbose else None) as progress:
            return job.run_job(
                self.input_path,
                X=self.X,
                step=progress.step,
                replace=self.replace,
                force=self.force,
                allow_same_input=self.allow_same_input,
                **settings,
            )


def _run_id_taken(exc, store: str) -> str:
    """:class:`.job.RunIdTaken` in the words of the command line."""
    if not exc.children:
        return (
            f"run {exc.run_id!r} is already committed in the runs store {store}; --replace replaces it (or choose "
            "another --run-id)."
        )
    named = ", ".join(exc.children[:5]) + (", ..." if len(exc.children) > 5 else "")
    return (
        f"run {exc.run_id!r} is the parent of run(s) {named}, which updated it: replacing it would leave them naming "
        "a parent they were not updated from; add --force to replace it all the same (or choose another --run-id)."
    )


def _prefect_api_url() -> str | None:
    """The Prefect API the user configured, without importing Prefect: ``PREFECT_API_URL``, else the active
    profile's (``$PREFECT_PROFILES_PATH`` or ``$PREFECT_HOME/profiles.toml``)."""
    if "PREFECT_API_URL" in os.environ:
        return os.environ["PREFECT_API_URL"] or None
    home = Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect")).expanduser()
    path = Path(os.environ.get("PREFECT_PROFILES_PATH", home / "profiles.toml")).expanduser()
    try:
        import tomllib

        profiles = tomllib.loads(path.read_text())
    except (OSError, ValueError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or profiles.get("active", "ephemeral")
    return profiles.get("profiles", {}).get(active, {}).get("PREFECT_API_URL") or None


@contextmanager
def _dask_cluster(request: _Request):
    """Dask's threaded scheduler for input fitted in this process; else a distributed client of the cluster the
    request names (a temporary LocalCluster by default). A LocalCluster's worker processes write their stderr
    to a temporary log unless ``--verbose`` (Ctrl-C reaches every process of the terminal's group, and this
    process reports it, in one line)."""
    if request.in_process:
        import dask
        from dask.threaded import get

        with dask.config.set(scheduler=get):  # by function: a scheduler's name would import distributed
            yield None
        return
    import logging
    import tempfile

    from distributed import Client, LocalCluster

    cluster_settings = request.cluster() or {}
    cluster = None
    log = tempfile.NamedTemporaryFile(prefix="lowdens-workers-", suffix=".log", delete=False)
    log.close()
    try:
        if "address" in cluster_settings:
            client = Client(cluster_settings["address"])
        else:
            kwargs = dict(cluster_settings.get("cluster_kwargs") or {})
            if "cluster_class" in cluster_settings:
                from importlib import import_module

                module, _, name = cluster_settings["cluster_class"].rpartition(".")
                cluster = getattr(import_module(module), name)(**kwargs)
            else:
                kwargs = {**local_cluster_kwargs(None), **kwargs}
                kwargs.setdefault("dashboard_address", ":0")
                kwargs.setdefault("silence_logs", logging.DEBUG if request.args.verbose else logging.ERROR)
                with _stderr_to(None if request.args.verbose else log.name):
                    cluster = LocalCluster(**kwargs)
            client = Client(cluster)
        yield client
        # an orderly shutdown after success only: after Ctrl-C the process exits, and its workers with it
        client.close(timeout=5)
        if cluster is not None:
            cluster.close(timeout=5)
    finally:
        os.unlink(log.name)


@contextmanager
def _stderr_to(path: str | None):
    """The processes started in the block write their stderr to ``path`` (None: to this process's stderr)."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


# ------------------------------------------------------------------------------------------------ output
def _say(line: str) -> None:
    """A line of what the command is doing, on stderr."""
    print(f"lowdens: {line}", file=sys.stderr, flush=True)


def _count(n: int, noun: str) -> str:
    """``1 cluster``, ``2 clusters``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _print_scores(metrics: dict) -> None:
    scores = [(k, metrics[k]) for k in ("adjusted_rand", "purity", "v_measure") if k in metrics]
    if scores:
        print("scores: " + ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in scores))


# ------------------------------------------------------------------------------------------------ commands
def _fit(args) -> int:
    from .runs import RunsStore

    if args.force and not args.replace:
        raise ValueError("--force goes with --replace: it replaces a run that other runs name as their parent.")

    request = _Request(args, os.fspath(args.input), true_labels=args.labels)
    run_id = request.run(args.store, args.run_id)
    run = RunsStore(args.store).get(run_id)
    metrics = run.attrs["metrics"]
    print(f"{run_id}\t{_count(metrics['n_leaves'], 'cluster')}\t{_run_path(args.store, run_id)}")
    _print_scores(metrics)
    weak = set(metrics.get("splits_not_significant", ()))
    if weak:
        p_values = ", ".join(f"{s['p_value']:.2g}" for s in metrics["splits"] if s["id"] in weak)
        _say(
            f"{len(weak)} of the {len(metrics['splits'])} splits are not significant (p {p_values}, at least "
            f"significance_level {metrics['significance_level']:g}): the rows show no evidence of "
            f"{metrics['n_leaves']} clusters; --n-clusters auto makes only the significant splits"
        )
    if metrics.get("fit_mode") == "summary" and run.parent is None:
        tested = f"; the root's split tested on {metrics['test_rows']:,} sampled rows" if "test_rows" in metrics else ""
        _say(f"summary mode: {metrics.get('n_microclusters_', 0):,} microclusters{tested}")
    if run.parent is not None:
        report = metrics["update"]
        _say(
            f"updated run {run.parent} (update {report['update']} since its fit): {report['n_clusters_before']} "
            f"clusters before, {report['n_clusters']} now; lowdens runs show {run_id} says what changed"
        )
    return 0


def _run_path(store: str, run_id: str) -> str:
    """Where the run is, as the user names it: the runs store's path (or URL) and the run id; not the committed
    attempt's folder inside it, which is the store's business."""
    return f"{str(store).rstrip('/')}/{run_id}"


def _demo(args) -> int:
    import numpy as np
    import zarr

    from lowdens_dask.datasets import load_dataset

    from .runs import RunsStore

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
    where = "on the Prefect server at " + _prefect_api_url() if _prefect_api_url() else "in this process"
    # --n-clusters auto and mode=auto (the defaults): the store is read into memory in one pass and fitted there
    print(f"running the recluster job ({where}) with --n-clusters auto ...")
    fit_args = _parser().parse_args(["fit", str(data)])
    fit_args.verbose = args.verbose
    run_id = _Request(fit_args, str(data), true_labels=str(labels)).run(args.store, None)
    run = RunsStore(args.store).get(run_id)
    metrics = run.attrs["metrics"]
    print(f"run: {run_id} in the runs store {args.store} ({_run_path(args.store, run_id)})")
    print(
        f"clusters: {metrics['n_leaves']} found ({n_classes} classes); adjusted Rand {metrics['adjusted_rand']:.3f}, "
        f"purity {metrics['purity']:.3f}, V-measure {metrics['v_measure']:.3f}"
    )
    print(
        "auto splits a cluster only while its split is significant (p < significance_level, 0.01) and leaves "
        "min_cluster_size (0.5% of the rows) on each side; for more clusters: --param significance_level=0.05, or "
        "--n-clusters K; for fewer: --param significance_level=0.001, --param min_cluster_size=0.02 or "
        "--param max_clusters=K"
    )
    if metrics["n_leaves"] > 1:
        written = _save_plots(run, X, y, out / "plots", max_points=2000)
        print(f"plots: {out / 'plots'} ({', '.join(sorted(p.name for p in written.values()))})")
    else:
        print("plots: none (one cluster: the tree has no split to draw)")
    print(f"done in {time.perf_counter() - started:.0f} s. Next: lowdens runs list; lowdens runs show {run_id}")
    return 0


def _save_plots(run, X, labels, out: Path, max_points: int) -> dict:
    """The run's plots (one colour per true label in every file; for an update run, the clusters' shares before
    and after it too); a figure that cannot be drawn is named on stderr and the others are written."""
    with _importing():
        import matplotlib

        matplotlib.use("Agg")
        from lowdens_dask.plots import save_plots

    report = run.attrs.get("metrics", {}).get("update")  # an update run's report
    written = save_plots(
        run.tree, X, out, labels=labels, max_points=max_points, n_jobs=os.cpu_count() or 1, update_report=report
    )
    for name, reason in written.skipped.items():
        _say(f"{name}: not drawn ({reason})")
    return written


def _plot(args) -> int:
    from .inputs import require_exists
    from .runs import RunsStore

    run = RunsStore(args.store).get(args.run)
    recorded = run.attrs.get("input", {})
    source = args.input or recorded.get("path")
    if source is None:
        raise ValueError(f"Run {args.run!r} records no input; give the rows with --input.")
    require_exists(source)
    with _importing():
        import dask.array

        from .inputs import load_labels, open_input
        from .paths import same_path

    X = open_input(source)
    labels = load_labels(args.labels) if args.labels else None
    if labels is None and same_path(source, recorded.get("path")):  # the run's own rows: its true labels, if any
        truth = recorded.get("true_labels", run.attrs.get("params", {}).get("true_labels"))
        try:
            labels = load_labels(truth) if isinstance(truth, str) else truth
        except (OSError, ValueError) as exc:
            _say(f"the run's true labels cannot be read ({exc}); the rows are coloured by side")
    out = Path(args.out or Path("lowdens-plots") / args.run)
    import dask

    with dask.config.set(scheduler="threads"):  # the sample is read here (naming it spares importing distributed)
        written = _save_plots(run, X, labels, out, args.max_points)
    for name in sorted(written):
        print(written[name])
    return 0


def _predict(args) -> int:
    from .inputs import require_exists
    from .runs import RunsStore

    run = RunsStore(args.store).get(args.run)
    require_exists(args.input)
    from .inputs import read_input, save_labels
    from .job import route_to_stable_ids
    from .progress import Progress

    X, info = read_input(args.input, header=args.header)
    _say(f"read {info}")
    if X.shape[1] != run.tree.n_features:
        raise ValueError(
            f"{args.input} has {X.shape[1]} columns; run {args.run!r} was fitted on {run.tree.n_features}."
        )
    labels = route_to_stable_ids(X, run.tree.to_json(), run.stable_ids)
    if args.out is None:  # as command-line tools do: the labels on stdout, one per line, the words on stderr
        import numpy as np
        from dask.threaded import get

        np.savetxt(sys.stdout, np.asarray(labels.compute(scheduler=get)), fmt="%d")
        _say(f"{_count(X.shape[0], 'row')} labelled")
        return 0
    with Progress() as progress, progress.step("predict"):
        path = save_labels(labels, args.out)
    print(f"{path}\t{_count(X.shape[0], 'row')}")
    return 0


def _runs(args) -> int:
    from .runs import RunsStore

    store = RunsStore(args.store)
    if args.runs_command == "list":
        runs, damaged = store._scan()  # one listing: the readable runs and the damaged ones
        if not runs and not damaged:
            print(f"no runs in {args.store}")
            return 0
        print("\t".join(("run", "committed", "method", "clusters", "input")))
        for run in runs:
            params, metrics = run.attrs.get("params", {}), run.attrs.get("metrics", {})
            path = run.attrs.get("input", {}).get("path", "?")
            print(
                f"{run.run_id}\t{run.committed_at}\t{params.get('method', '?')}\t{metrics.get('n_leaves', '?')}\t{path}"
            )
        for run in damaged:
            print(f"{run.run_id}\tdamaged\t{run.error}")
        return 0
    run = store.get(args.run)
    shown = {key: value for key, value in run.attrs.items() if key != "tree"}
    print(json.dumps({"run_id": run.run_id, "committed_at": run.committed_at, "url": run.url, **shown}, indent=2))
    if run.parent is not None:  # what the update changed, in words, beside the JSON (which stays all of stdout)
        from .metrics import describe_update

        _say(f"run {run.run_id} is an update of run {run.parent}:")
        for line in describe_update(run.attrs["metrics"]["update"]):
            print(f"  {line}", file=sys.stderr)
    return 0


def _method_params(args) -> int:
    from lowdens_dask import METHODS, auto_mode_rule

    estimator = METHODS[args.method].clustering()
    print(f"{type(estimator).__name__} (--method {args.method}); set with --param NAME=VALUE:")
    # the renamed parameters' old names (left at "deprecated") are not listed: they work for one release only
    params = {name: value for name, value in estimator.get_params().items() if not str(value) == "deprecated"}
    # the command's own defaults where they differ from the library's (job.plan_run): --n-clusters auto, seed 0
    params.update({name: value for name, value in RUN_DEFAULTS.items() if name in params})
    for name, value in sorted(params.items()):
        print(f"  {name}={_as_param(value)}")
    print(f"mode=auto fits {auto_mode_rule(estimator)}.")
    return 0


def _as_param(value) -> str:
    """A parameter's value as ``--param`` takes it: text as it is, None and booleans as JSON, numbers as written."""
    if isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, (bool, type(None))) else repr(value)


def _serve(args) -> int:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:  # before anything else: the schedule's time zone (issue 35, item 5)
        ZoneInfo(args.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"--timezone {args.timezone!r} is not a time zone; give an IANA name such as UTC, Europe/Paris or "
            "America/New_York."
        ) from None
    if args.refit_every is not None and not args.incremental:
        raise ValueError("--refit-every N goes with --incremental (without it every run is a full fit).")
    if args.incremental and args.method is not None:  # the default, mdh, can be updated
        from .job import updatable

        if not updatable(args.method):
            raise ValueError(
                f"--incremental: runs of --method {args.method} cannot be updated (it has no partial_fit)."
            )
    api_url = _prefect_api_url()  # read without importing Prefect, as the checks before any import
    if not api_url:
        raise ValueError("lowdens serve needs a Prefect server: set PREFECT_API_URL (e.g. http://127.0.0.1:4200/api).")
    request = _Request(args, os.fspath(args.input), true_labels=args.labels)
    from prefect.types.entrypoint import EntrypointType

    from . import serving
    from .flows import recluster
    from .paths import absolute

    plan = request.plan
    # the deployment's runs start on whichever worker serves it, in a directory nobody chose: local paths are
    # registered absolute (URLs as given), and the cluster is sized on that host when the run starts (issue 35)
    parameters = {
        "input_path": absolute(args.input),
        "method": plan.method,
        "n_clusters": plan.n_clusters,
        "params": plan.params or None,
        "random_state": plan.random_state,
        "store": absolute(args.store),
        "true_labels": absolute(args.labels),
        "cluster": request.cluster(here=False),
        "header": request.info.header,
        # the runs record the deployment's name; incremental runs update the latest of them
        "series": args.name,
        "refit_every": (args.refit_every or REFIT_EVERY) if args.incremental else None,
        **({"allow_same_input": True} if args.allow_same_input else {}),  # the flow's parameter, only when asked for
    }
    every = f", updating its latest run, a full fit every {parameters['refit_every']} runs" if args.incremental else ""
    print(f"serving the deployment recluster/{args.name} on {api_url} with cron {args.cron!r} ({args.timezone}){every}")
    # registered by module path (lowdens_pipelines.flows.recluster), so any worker with the package can load it;
    # Ctrl-C or SIGTERM pause it and delete its scheduled runs, then exit 130 (serving.py says how and why)
    return serving.serve(
        recluster,
        name=args.name,
        cron=args.cron,
        timezone=args.timezone,
        parameters=parameters,
        entrypoint_type=EntrypointType.MODULE_PATH,
        announce=lambda deployment_id: print(
            f"deployment {deployment_id} registered; trigger a run with: "
            f"prefect deployment run 'recluster/{args.name}'",
            flush=True,
        ),
    )


COMMANDS = {
    "demo": _demo,
    "fit": _fit,
    "predict": _predict,
    "plot": _plot,
    "runs": _runs,
    "params": _method_params,
    "serve": _serve,
}


@contextmanager
def _quiet(verbose: bool):
    """Each distinct warning once, as one line; Dask's and Prefect's log lines only with ``--verbose``."""
    import logging
    import warnings

    if verbose:
        yield
        return
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    seen = set()

    def show(message, category, filename, lineno, file=None, line=None):
        if str(message) not in seen:
            seen.add(str(message))
            print(f"lowdens: warning: {message}", file=sys.stderr, flush=True)

    levels = {name: logging.getLogger(name).level for name in ("distributed", "bokeh", "tornado")}
    with warnings.catch_warnings():
        warnings.showwarning = show
        for name in levels:
            logging.getLogger(name).setLevel(logging.ERROR)
        try:
            yield
        finally:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)


def _interrupt_once(signum, frame):
    """The first Ctrl-C interrupts; later ones are ignored, so that the clean-up it starts can finish, and the
    logs of the work cut short are muted (the command reports the interruption in one line)."""
    import logging
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.disable(logging.CRITICAL)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run one ``lowdens`` command; returns the exit status (0, 1 failure, 2 bad input, 130 interrupted, 141 output
    pipe closed)."""
    import logging
    import signal

    args = _parser().parse_args(argv)
    # Prefect's anonymous usage telemetry stays off unless the user turns it on (offline it logs errors)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    previous = None
    try:
        previous = signal.signal(signal.SIGINT, _interrupt_once)
    except ValueError:  # not the main thread: Python's own handling
        pass
    try:
        with _quiet(getattr(args, "verbose", False)):
            return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("lowdens: interrupted", file=sys.stderr, flush=True)
        return 130
    except BrokenPipeError:  # the reader of the output went away (lowdens runs list | head): stop quietly
        return BROKEN_PIPE
    except (ValueError, KeyError, TypeError, OSError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"lowdens: error: {message}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 (a failed run: one line here; --verbose shows the logs)
        print(f"lowdens: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
            logging.disable(logging.NOTSET)


def run() -> None:
    """The console script: :func:`main`, then exit; after Ctrl-C at once, without waiting for the threads of
    work that was cut short (the run was already cleaned up)."""
    status = main()
    if status == BROKEN_PIPE:  # what is left in stdout's buffer has no reader: exit without flushing it
        os._exit(status)
    if status == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(status)


if __name__ == "__main__":
    run()
