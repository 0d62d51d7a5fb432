"""The ``recluster`` Prefect flow: fit a clustering of an array on a Dask cluster, or update a committed run's
clustering with new rows, and persist the run (labels with stable cluster ids, tree, summary, parameters,
versions, input identity, metrics, continuity or the update's report) in a runs store.

``recluster`` checks the parameters (and the run it would update) and runs *load and validate* in the flow's own
process, so bad input fails before any Dask cluster starts. It then runs the subflow ``recluster-on-dask`` on the
configured cluster (prefect-dask's ``DaskTaskRunner``: a temporary ``LocalCluster``, an existing scheduler, or a
class such as ``dask_kubernetes.operator.KubeCluster``), whose tasks are: fit and continuity (match the new
clusters to the previous run's), or update (``partial_fit`` from the parent run's tree and summary, whose ids the
clusters keep); route the rows and write the labels; metrics. Last, *persist* commits the run. Each Dask
task reaches the cluster through ``prefect_dask.get_dask_client``; the estimator keeps its own fine-grained
parallelism (nodes, restarts) as Dask tasks, so Prefect tasks are never nested. The estimator is chosen by
name from the library's registry (``lowdens_dask.METHODS``).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager

# Prefect's anonymous usage telemetry stays off unless the user turns it on: offline, a temporary server
# started for a flow run logs errors for it (set before Prefect is imported and starts one).
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

#: Loggers whose records the Prefect API handler sends to the server (the UI's logs of flow and task runs).
RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")


def _quiet_level() -> int | None:
    """The level of Prefect's logs in this process's terminal when it is above INFO (``lowdens`` without
    ``--verbose`` sets ``PREFECT_LOGGING_LEVEL=WARNING``), else None."""
    name = os.environ.get("PREFECT_LOGGING_LEVEL", "").strip().upper()
    level = logging.getLevelName(name) if name else None
    if isinstance(level, int) and level > logging.INFO:
        return level
    return None


def _runs_log_to_the_api() -> None:
    """Issue 35: the flow and task runs log their steps to the Prefect server at INFO, and the terminal shows
    no more than ``PREFECT_LOGGING_LEVEL`` (quiet: WARNING). ``PREFECT_LOGGING_LEVEL`` is the level of the
    ``prefect`` logger, which would also keep INFO records from the run loggers' API handler; so, when it is
    above INFO, the run loggers are at INFO and the console handler at that level instead, and Dask's
    ``distributed`` loggers at WARNING (their INFO lines go neither to the terminal nor to the server).

    As environment variables (Prefect's ``PREFECT_LOGGING_[PATH]_[KEY]`` overrides of its logging.yml, Dask's
    ``DASK_DISTRIBUTED__LOGGING__DISTRIBUTED``), for the processes started from here (a served flow run's
    subprocess, a temporary cluster's workers) and for this one if Prefect is not imported yet; and on this
    process's loggers and handlers if Prefect has already configured logging."""
    level = _quiet_level()
    if level is None:
        return
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", logging.getLevelName(level))
    for name in RUN_LOGGERS:
        os.environ.setdefault(f"PREFECT_LOGGING_LOGGERS_{name.replace('.', '_').upper()}_LEVEL", "INFO")
    os.environ.setdefault("DASK_DISTRIBUTED__LOGGING__DISTRIBUTED", "warning")
    configuration = sys.modules.get("prefect.logging.configuration")
    if configuration is None or not getattr(configuration, "PROCESS_LOGGING_CONFIG", None):
        return  # Prefect configures its logging from the environment when it is imported
    from prefect.logging.handlers import PrefectConsoleHandler

    loggers = [logging.getLogger(), *(logging.getLogger(name) for name in logging.root.manager.loggerDict)]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if isinstance(handler, PrefectConsoleHandler) and handler.level < level:
                handler.setLevel(level)
    for name in RUN_LOGGERS:
        if logging.getLogger(name).getEffectiveLevel() > logging.INFO:
            logging.getLogger(name).setLevel(logging.INFO)


_runs_log_to_the_api()

from .lifeline import guard_prefect_temporary_server

# A flow run without a Prefect API starts Prefect's temporary server: it dies with this process, even after a
# kill -9 (lifeline.py says how).
guard_prefect_temporary_server()

import dask.array as da
import numpy as np
from distributed import get_task_stream, rejoin, secede
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from prefect_dask import DaskTaskRunner, get_dask_client

from lowdens_dask import ClusterTree
from lowdens_dask.backend import chunks_read
from lowdens_dask.tree import format_p_value

from . import job
from .hosts import local_cluster_kwargs
from .inputs import open_input
from .job import make_estimator, route_to_stable_ids, stable_labels
from .metrics import describe_update, tree_metrics
from .paths import absolute, refuse_relative_in_deployment
from .runs import DEFAULT_STORE, Attempt, RunsStore

if _quiet_level() is not None:  # distributed sets its loggers' levels when it is first imported (above)
    logging.getLogger("distributed").setLevel(max(logging.WARNING, logging.getLogger("distributed").level))

#: Keys of the flow's ``cluster`` parameter (those of prefect-dask's ``DaskTaskRunner``).
CLUSTER_KEYS = ("address", "cluster_class", "cluster_kwargs", "adapt_kwargs", "client_kwargs")


def _is_transient(task, task_run, state) -> bool:
    """Retry a task unless it failed on bad input (which fails the same way every time)."""
    error = state.result(raise_on_failure=False)
    return not isinstance(error, (ValueError, TypeError, KeyError, FileNotFoundError))


@contextmanager
def cluster_client():
    """The flow's Dask cluster from inside a task that runs on one of its workers
    (``prefect_dask.get_dask_client``), with the task's thread seceded from the worker's pool meanwhile, so
    that the estimator's own tasks can use every worker thread (no deadlock on one-thread workers)."""
    secede()
    try:
        with get_dask_client() as client:
            yield client
    finally:
        rejoin()


@contextmanager
def counting_passes(client, X: da.Array):
    """Count the passes over ``X`` made in the block: the tasks that read one of X's chunks (fused ones
    included, whose keys start with X's layer name) and the chunks read inside the library's pass tasks
    (:func:`~lowdens_dask.backend.chunks_read`), divided by the number of chunks. Yields a dict whose
    ``"passes"`` is set at the end of the block."""
    prefix = X.name.rsplit("-", 1)[0]
    out = {"passes": 0.0}
    with get_task_stream(client) as stream:
        yield out
    reads = sum(
        chunks_read(t["key"]) or (isinstance(t["key"], tuple) and str(t["key"][0]).startswith(prefix))
        for t in stream.data
    )
    out["passes"] = reads / X.numblocks[0]


#: The flow's ``cluster`` parameter that leaves the choice to the host the flow runs on (:func:`host_cluster`).
AUTO = "auto"


def host_cluster(cluster: dict | str | None, nbytes: int | None) -> dict | None:
    """The flow's ``cluster`` parameter resolved on the host the flow runs on: ``"auto"`` (:data:`AUTO`, what
    ``lowdens serve`` registers, issue 35) becomes what ``lowdens fit`` chooses on its own host: for input up to
    ``IN_PROCESS_MAX_BYTES`` (2 GiB; ``nbytes``, the input's size), a ``LocalCluster`` in the flow's process with
    one worker of as many threads as this host has cores; above it, a ``LocalCluster`` of one single-threaded
    worker process per core of this host. Any other value is returned as it is."""
    return {"cluster_kwargs": local_cluster_kwargs(nbytes)} if cluster == AUTO else cluster


def dask_task_runner(cluster: dict | str | None = None, api_url: str | None = None) -> DaskTaskRunner:
    """prefect-dask's ``DaskTaskRunner`` from the flow's ``cluster`` parameter: None for a temporary
    ``LocalCluster``; ``{"address": "tcp://..."}`` for an existing scheduler; ``{"cluster_class":
    "dask_kubernetes.operator.KubeCluster", "cluster_kwargs": {...}, "adapt_kwargs": {...}}`` for another
    kind of cluster (``cluster_kwargs`` alone configure the ``LocalCluster``; ``{"processes": False}`` keeps
    its workers in the flow's process). ``"auto"`` is resolved first (:func:`host_cluster`, as for input of an
    unknown size: a ``LocalCluster`` of one worker process per core); the flow resolves it with its input's size.

    ``api_url``: the Prefect API the workers of a temporary ``LocalCluster`` report to (the flow's own, also
    when it is Prefect's temporary server; otherwise each worker would start a server of its own). Workers of
    other clusters get theirs from their environment (``PREFECT_API_URL``, see deploy/).
    """
    if isinstance(cluster, str):
        if cluster != AUTO:
            raise ValueError(f"Unknown cluster setting {cluster!r}: a dict of {list(CLUSTER_KEYS)}, None or {AUTO!r}.")
        cluster = host_cluster(cluster, None)
    if cluster is not None and not isinstance(cluster, dict):
        raise ValueError(
            f"The cluster setting must be a dict of {list(CLUSTER_KEYS)}, None or {AUTO!r}; got {cluster!r}."
        )
    cluster = dict(cluster or {})
    unknown = sorted(set(cluster) - set(CLUSTER_KEYS))
    if unknown:
        raise ValueError(f"Unknown cluster settings {unknown}; use {list(CLUSTER_KEYS)}.")
    if "address" in cluster and set(cluster) & {"cluster_class", "cluster_kwargs", "adapt_kwargs"}:
        raise ValueError("A cluster 'address' cannot be combined with cluster_class, cluster_kwargs or adapt_kwargs.")
    if "address" not in cluster and "cluster_class" not in cluster:
        # a temporary LocalCluster: its workers import the tasks' modules while they start (all at once,
        # instead of on each worker's first task), and report to the flow's API
        kwargs = dict(cluster.get("cluster_kwargs") or {})
        kwargs.setdefault("dashboard_address", ":0")  # a free port: runs side by side do not clash
        if kwargs.get("processes", True):
            kwargs.setdefault("preload", [__name__])
            if api_url:
                kwargs["env"] = {"PREFECT_API_URL": api_url, **(kwargs.get("env") or {})}
        cluster["cluster_kwargs"] = kwargs
    return DaskTaskRunner(**cluster)


# ---------------------------------------------------------------------------------------------------- tasks
@task(retries=2, retry_delay_seconds=1, retry_condition_fn=_is_transient, cache_policy=NO_CACHE)
def load_and_validate(
    input_path: str, storage_options: dict | None, true_labels, header: bool | None = None, update: bool = False
) -> tuple[dict, np.ndarray | None]:
    """The input's identity and the true labels, if any (:func:`.job.load_and_validate`): bad input fails
    here, before any cluster starts. An update's batch (``update``) may be one row."""
    identity, truth = job.load_and_validate(input_path, storage_options, true_labels, header=header, update=update)
    get_run_logger().info("%s", describe_input(identity, truth))
    return identity, truth


def describe_input(identity: dict, truth) -> str:
    """What was read, in one line: where, the rows and columns, the type (and the true labels, if any)."""
    shape = tuple(identity.get("shape") or ())
    rows = f"{shape[0]:,} rows" if shape else "no rows"
    columns = f" x {' x '.join(str(n) for n in shape[1:])} columns" if len(shape) > 1 else ""
    labels = "" if truth is None else f", with {len(truth):,} true labels"
    dtype = np.dtype(identity["dtype"]).name  # "<f4": float32
    return f"read {identity['path']}: {rows}{columns}, {dtype}{labels}"


def describe_fit(name: str, result: dict) -> list[str]:
    """A fit's or an update's outcome in log lines: the mode and the resolution (microclusters of a summary fit,
    the rows the split tests ran on), each split of the tree with its size, index value and dip test p-value
    (``n_clusters="auto"``), the leaves whose split was tested and refused, and an update's drift and node
    actions (:func:`.metrics.describe_update`)."""
    resolution = []
    if result.get("n_microclusters_") is not None:
        resolution.append(f"{result['n_microclusters_']:,} microclusters")
    if result.get("test_rows") is not None:
        resolution.append(f"split tests on {result['test_rows']:,} rows")
    if result.get("n_passes_") is not None:
        resolution.append(f"passes over the input: {result['n_passes_']}")
    lines = [
        f"{name}: mode: {result.get('fit_mode')}"
        + (f" ({result['fit_mode_reason']})" if result.get("fit_mode_reason") else "")
        + (f"; resolution: {', '.join(resolution)}" if resolution else "")
    ]
    figures = tree_metrics(ClusterTree.from_json(result["tree"]))

    def rows(size) -> str:  # sizes are weights: whole for unweighted rows
        return f"{size:,.0f}" if float(size).is_integer() else f"{size:,.2f}"

    def test(node) -> str:
        if node.get("p_value") is None:
            return "no dip test (a fixed number of clusters)"
        return f"dip {node['dip']:.4g}, {format_p_value(node)} on {int(node['n_test'] or 0):,} rows"

    for node in figures["splits"]:
        fval = "-" if node["fval"] is None else f"{node['fval']:.4g}"
        forced = ", forced" if node["forced"] else ""
        lines.append(
            f"split: node {node['id']} (depth {node['depth']}, {rows(node['size'])} rows{forced}): index {fval}, "
            f"{test(node)}"
        )
    for node in figures["leaf_tests"]:
        lines.append(f"not split: node {node['id']} ({rows(node['size'])} rows): {test(node)}")
    if "report" in result:
        lines += describe_update(result["report"])
    return lines


@task(retries=2, retry_delay_seconds=1, retry_condition_fn=_is_transient, cache_policy=NO_CACHE)
def cluster_step(function, input_path: str, storage_options, header, *args):
    """One of the job's cluster steps (:func:`.job.cluster_steps`: fit, update, continuity, write_labels),
    ``function(X, *args)`` with the input opened on the flow's Dask cluster; returns its result with the passes
    over the input it made (``"passes"``). The task run takes the step's name."""
    with cluster_client() as client:
        X = open_input(input_path, storage_options, header=header)
        with counting_passes(client, X) as counted:
            result = function(X, *args)
    get_run_logger().info("%s: %.2f passes over the input", function.__name__, counted["passes"])
    return {**(result or {}), "passes": counted["passes"]}


@task(cache_policy=NO_CACHE)
def compute_metrics(tree_json: str, attempt_url: str, truth) -> dict:
    """The tree's figures, the cluster sizes and the external scores (:func:`.job.compute_metrics`)."""
    metrics = job.compute_metrics(tree_json, attempt_url, truth)
    sizes = ", ".join(f"{size:,}" for size in metrics.get("cluster_sizes", []))
    scores = ", ".join(f"{k} {metrics[k]:.3f}" for k in ("adjusted_rand", "purity", "v_measure") if k in metrics)
    get_run_logger().info("metrics: cluster sizes %s%s", sizes, f"; {scores}" if scores else "")
    return metrics


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def persist(attempt: Attempt, attrs: dict) -> str:
    """Record the run's attributes and commit the attempt (its completion marker is written last)."""
    attempt.set_attrs(**attrs)
    run_id = attempt.commit().run_id
    get_run_logger().info("committed run %s (%s)", run_id, attempt.url)
    return run_id


def markdown_table(rows: list[dict], formats: dict | None = None) -> list[str]:
    """``rows`` (dicts with the same keys) as the lines of a markdown table: a header, the separator row without
    which a markdown renderer (the Prefect UI's) shows the lines as text, and one line per row, numbers
    right-aligned; ``formats``: a format spec by column (``{"share": ".1%"}``)."""
    if not rows:
        return []
    columns, formats = list(rows[0]), formats or {}
    numeric = [all(isinstance(row[c], (int, float)) for row in rows) for c in columns]
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---:" if right else "---" for right in numeric) + "|",
        *("| " + " | ".join(format(row[c], formats.get(c, "")) for c in columns) + " |" for row in rows),
    ]


def publish_artifacts(run, store: str) -> None:
    """The run's result in the Prefect UI: a markdown summary (clusters, scores, for an update what changed, where
    the run is kept, and a table of the clusters: id, rows, share) and a table artifact of the cluster sizes by
    cluster id (a list of rows, one dict per cluster, as ``create_table_artifact`` takes them)."""
    metrics = run.attrs["metrics"]
    sizes = metrics.get("cluster_sizes", [])  # by cluster id: ids need not be 0..K-1, and unused ids count 0
    ids = sorted(set(run.stable_ids[list(run.tree.leaf_labels().values())].tolist()))
    sizes = {i: sizes[i] if i < len(sizes) else 0 for i in ids}
    scores = ", ".join(
        f"{name} {metrics[name]:.3f}" for name in ("adjusted_rand", "purity", "v_measure") if name in metrics
    )
    update = []
    if run.parent is not None:
        update = [f"- an update of run {run.parent}:", *(f"  - {line}" for line in describe_update(metrics["update"]))]
    total = max(1, sum(sizes.values()))
    table = [{"cluster": int(i), "rows": int(size), "share": round(size / total, 4)} for i, size in sizes.items()]
    lines = [
        f"# Run {run.run_id}",
        "",
        f"- clusters: **{metrics['n_leaves']}** ({run.attrs['params']['method']}, "
        f"{run.attrs['input']['shape'][0]:,} rows of {run.attrs['input']['path']})",
        f"- rows not labelled (NaN or inf): {metrics.get('n_unlabelled', 0):,}",
        *([f"- scores against the true labels: {scores}"] if scores else []),
        *update,
        f"- run store: `{store}`; the run: `{run.url}`",
        "",
        "## Clusters",
        "",
        *markdown_table(table, {"rows": ",", "share": ".1%"}),
    ]
    key = "".join(c if c.isalnum() else "-" for c in run.run_id.lower())
    create_markdown_artifact("\n".join(lines), key=f"run-{key}"[:100], description=f"lowdens run {run.run_id}")
    create_table_artifact(table, key=f"sizes-{key}"[:100], description=f"cluster sizes of run {run.run_id}")


def _deployment_id() -> str | None:
    """The deployment of the flow run in progress, or None (a flow called directly, ``lowdens fit``). As
    ``prefect.runtime.deployment.id`` (its ``PREFECT__RUNTIME__DEPLOYMENT__ID`` override included), without its
    request to the server when the flow run's context already says."""
    override = os.environ.get("PREFECT__RUNTIME__DEPLOYMENT__ID")
    if override:
        return override
    context = FlowRunContext.get()
    deployment_id = getattr(getattr(context, "flow_run", None), "deployment_id", None)
    return None if deployment_id is None else str(deployment_id)


def _nbytes(identity: dict) -> int | None:
    """The input's size in bytes, from its identity (shape and dtype), or None if they do not say."""
    try:
        return int(np.prod(identity["shape"], dtype=np.int64)) * np.dtype(identity["dtype"]).itemsize
    except (KeyError, TypeError, ValueError):
        return None


def _describe_cluster(cluster: dict) -> str:
    kwargs = cluster.get("cluster_kwargs") or {}
    if kwargs.get("processes", True) is False:
        return f"in the flow's process, {kwargs.get('threads_per_worker')} threads (the host's cores)"
    return f"a LocalCluster of {kwargs.get('n_workers')} single-threaded worker processes (the host's cores)"


# ---------------------------------------------------------------------------------------------------- flows
def run_reference(point: dict | None) -> dict | None:
    """A run that :func:`recluster_on_dask` starts from (:func:`.job.resume_point`, :func:`.job.previous_run`) as
    its parameter: its id and its committed attempt's URL, not its tree (issue 35: the tree's JSON, the whole
    parameter in the Prefect UI)."""
    return None if point is None else {"run_id": point["run_id"], "url": point["url"]}


def _committed_run(runs: RunsStore, reference: dict):
    """The run a :func:`run_reference` names, read back; a ``ValueError`` if it was replaced since (its committed
    attempt is another)."""
    run = runs.get(reference["run_id"])
    if run.url.rstrip("/") != reference["url"].rstrip("/"):
        raise ValueError(
            f"Run {reference['run_id']!r} was replaced while this run started ({reference['url']} is no longer its "
            "committed attempt); run it again."
        )
    return run


@flow(name="recluster-on-dask")
def recluster_on_dask(
    input_path: str,
    settings: dict,
    storage_options: dict | None,
    identity: dict,
    previous: dict | None,
    attempt_url: str,
    header: bool | None = None,
    resume: dict | None = None,
    store: str = DEFAULT_STORE,
) -> dict:
    """The cluster work of :func:`recluster`: fit and continuity with the ``previous`` run, or the update of the
    ``resume`` run (its parent); then the labels; each a task on the flow's Dask cluster (the task runner is set
    by :func:`recluster`). ``settings``: method, n_clusters, params, random_state. ``previous`` and ``resume`` are
    references (:func:`run_reference`) to runs of ``store``, read back here (:func:`.job.previous_run`,
    :func:`.job.resume_point`)."""
    logger = get_run_logger()
    seconds, passes = {}, {}
    runs = RunsStore(store)
    if resume is not None:
        resume = job.resume_point(_committed_run(runs, resume))
    if previous is not None:
        previous = job.previous_run(runs, identity, _committed_run(runs, previous))

    def run(name, function, *args):
        start = time.perf_counter()
        submitted = cluster_step.with_options(name=name).submit(function, input_path, storage_options, header, *args)
        result = submitted.result()
        seconds[name] = time.perf_counter() - start
        passes[name] = result.pop("passes")
        logger.info("%s: done in %.1f s", name, seconds[name])
        if name in ("fit", "update"):
            for line in describe_fit(name, result):
                logger.info("%s", line)
        return result

    done = job.cluster_steps(run, settings, identity, previous, resume, attempt_url, log=logger.info)
    done["metrics"].update(seconds=seconds, passes=passes)
    return done


@flow(name="recluster")
def recluster(
    input_path: str,
    method: str | None = None,
    n_clusters: int | str | None = None,
    params: dict | None = None,
    random_state: int | None = None,
    store: str = DEFAULT_STORE,
    run_id: str | None = None,
    true_labels: str | list | None = None,
    storage_options: dict | None = None,
    cluster: dict | str | None = None,
    header: bool | None = None,
    update_from: str | None = None,
    series: str | None = None,
    refit_every: int | None = None,
    replace: bool = True,
    force: bool = False,
    allow_same_input: bool = False,
) -> str:
    """Recluster the array at ``input_path`` (zarr, ``.npy``, ``.csv`` or parquet) with ``method`` (default mdh)
    into ``n_clusters`` clusters (default "auto") and persist the run in ``store`` as ``run_id`` (default: made
    from the time); returns the run id.

    ``true_labels`` (a list, or a path to them) adds ARI, V-measure and purity to the metrics. ``cluster``
    chooses the Dask cluster (:func:`dask_task_runner`; ``"auto"``, as ``lowdens serve`` registers it: chosen on
    the host the flow runs on, from its cores and the input's size, :func:`host_cluster`). ``header``: whether a CSV input's first row is a header
    (None: when it is not all numbers). Cluster ids are kept stable across runs on the same input path: each
    new cluster takes the id of the previous run's cluster it overlaps most. Bad input (an unknown method or
    parameter, a missing or malformed array, a bad cluster setting) fails before any Dask cluster starts, and a
    failed run leaves no trace in the store. The flow run publishes the result as Prefect artifacts (a summary,
    and a table of the cluster sizes).

    Updates (:mod:`.job`): ``update_from`` names a committed run to update with the rows at ``input_path``
    (``partial_fit``) instead of fitting afresh; the new run names it (``attrs["parent"]``), keeps its cluster ids
    and records the update report (``metrics["update"]``). ``series`` names the series the run belongs to
    (``lowdens serve`` gives its deployment's name); with ``refit_every`` N, each run updates the series' latest
    run, and every N-th is a full fit. The settings (``method``, ``n_clusters``, ``params``, ``random_state``) left
    at None are the parent's for an update (``params`` given are set over the parent's). A failed update leaves
    its parent as it was. A run committed at ``run_id`` is replaced only with ``replace`` (the default here, as
    a deployment's runs or Prefect's retries need; ``lowdens fit`` asks for ``--replace``), and never one that other
    runs name as their parent unless ``force`` (:func:`.job.plan_run`); a run committed there while this one ran
    is not replaced without ``replace`` either: the commit fails. An update whose input holds the same rows as its
    parent's, or an earlier run's in its line, is refused unless ``allow_same_input``.

    Local paths (``input_path``, ``store``, ``true_labels``) are recorded absolute, URLs as given. A flow run of a
    deployment refuses a relative local path: the worker that runs it starts in a directory nobody chose.
    """
    if _deployment_id() is not None:  # a worker's working directory is nobody's choice (issue 35)
        refuse_relative_in_deployment(
            input_path=input_path, store=store, true_labels=true_labels if isinstance(true_labels, str) else None
        )
    # local paths absolute from here on (URLs as given): the tasks on the cluster's workers, which need not share
    # this process's working directory, and the run's record (job.run_attrs) name the same files
    input_path, store, true_labels = absolute(input_path), absolute(store), absolute(true_labels)
    logger = get_run_logger()
    runs = RunsStore(store)
    plan = job.plan_run(
        runs,
        method,
        n_clusters,
        params,
        random_state,
        update_from,
        series,
        refit_every,
        run_id,
        replace,
        force,
        allow_same_input=allow_same_input,
    )
    with get_client(sync_client=True) as client:
        api_url = str(client.api_url)
    runner = None if cluster == AUTO else dask_task_runner(cluster, api_url=api_url)  # bad settings fail here
    started = time.perf_counter()
    identity, truth = load_and_validate(input_path, storage_options, true_labels, header, plan.parent is not None)
    load_seconds = time.perf_counter() - started
    if runner is None:  # "auto" (lowdens serve): this host's cores, and the input's size as it is tonight
        cluster = host_cluster(cluster, _nbytes(identity))
        logger.info("cluster: %s", _describe_cluster(cluster))
        runner = dask_task_runner(cluster, api_url=api_url)
    resume, previous = job.start_point(runs, plan, identity)
    if plan.parent is not None:
        logger.info("updating run %s (update %d since its fit)", plan.parent.run_id, plan.parent.tree.n_updates + 1)
    with runs.attempt(run_id, replace=replace) as attempt:
        done = recluster_on_dask.with_options(task_runner=runner)(
            input_path,
            plan.estimator_settings,
            storage_options,
            identity,
            run_reference(previous),
            attempt.url,
            header,
            run_reference(resume),
            store=store,
        )
        started = time.perf_counter()
        metrics = {**compute_metrics(done["tree"], attempt.url, truth), **done["metrics"]}
        metrics["seconds"] = {"load_and_validate": load_seconds, **metrics["seconds"]}
        metrics["seconds"]["metrics"] = time.perf_counter() - started
        parent = None if plan.parent is None else plan.parent.run_id
        attrs = job.run_attrs(done["tree"], done["ids"], plan.settings, identity, metrics, true_labels, parent, series)
        run_id = persist(attempt, attrs)
    logger.info("committed run %s in %s", run_id, store)
    publish_artifacts(runs.get(run_id), store)
    return run_id


__all__ = ["dask_task_runner", "make_estimator", "recluster", "route_to_stable_ids", "stable_labels"]
