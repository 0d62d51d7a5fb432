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

import os
import time
from contextlib import contextmanager

# Prefect's anonymous usage telemetry stays off unless the user turns it on: offline, a temporary server
# started for a flow run logs errors for it (set before Prefect is imported and starts one).
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from .lifeline import guard_prefect_temporary_server  # noqa: E402

# A flow run without a Prefect API starts Prefect's temporary server: it dies with this process, even after a
# kill -9 (lifeline.py says how).
guard_prefect_temporary_server()

import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402
from distributed import get_task_stream, rejoin, secede  # noqa: E402
from prefect import flow, get_run_logger, task  # noqa: E402
from prefect.artifacts import create_markdown_artifact, create_table_artifact  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.client.orchestration import get_client  # noqa: E402
from prefect_dask import DaskTaskRunner, get_dask_client  # noqa: E402

from lowdens_dask.backend import chunks_read  # noqa: E402

from . import job  # noqa: E402
from .inputs import open_input  # noqa: E402
from .job import make_estimator, route_to_stable_ids, stable_labels  # noqa: E402
from .metrics import describe_update  # noqa: E402
from .runs import DEFAULT_STORE, Attempt, RunsStore  # noqa: E402

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


def dask_task_runner(cluster: dict | None = None, api_url: str | None = None) -> DaskTaskRunner:
    """prefect-dask's ``DaskTaskRunner`` from the flow's ``cluster`` parameter: None for a temporary
    ``LocalCluster``; ``{"address": "tcp://..."}`` for an existing scheduler; ``{"cluster_class":
    "dask_kubernetes.operator.KubeCluster", "cluster_kwargs": {...}, "adapt_kwargs": {...}}`` for another
    kind of cluster (``cluster_kwargs`` alone configure the ``LocalCluster``; ``{"processes": False}`` keeps
    its workers in the flow's process).

    ``api_url``: the Prefect API the workers of a temporary ``LocalCluster`` report to (the flow's own, also
    when it is Prefect's temporary server; otherwise each worker would start a server of its own). Workers of
    other clusters get theirs from their environment (``PREFECT_API_URL``, see deploy/).
    """
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
    return job.load_and_validate(input_path, storage_options, true_labels, header=header, update=update)


@task(retries=2, retry_delay_seconds=1, retry_condition_fn=_is_transient, cache_policy=NO_CACHE)
def cluster_step(function, input_path: str, storage_options, header, *args):
    """One of the job's cluster steps (:func:`.job.cluster_steps`: fit, update, continuity, write_labels),
    ``function(X, *args)`` with the input opened on the flow's Dask cluster; returns its result with the passes
    over the input it made (``"passes"``). The task run takes the step's name."""
    with cluster_client() as client:
        X = open_input(input_path, storage_options, header=header)
        with counting_passes(client, X) as counted:
            result = function(X, *args)
    return {**(result or {}), "passes": counted["passes"]}


@task(cache_policy=NO_CACHE)
def compute_metrics(tree_json: str, attempt_url: str, truth) -> dict:
    """The tree's figures, the cluster sizes and the external scores (:func:`.job.compute_metrics`)."""
    return job.compute_metrics(tree_json, attempt_url, truth)


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def persist(attempt: Attempt, attrs: dict) -> str:
    """Record the run's attributes and commit the attempt (its completion marker is written last)."""
    attempt.set_attrs(**attrs)
    return attempt.commit().run_id


def publish_artifacts(run, store: str) -> None:
    """The run's result in the Prefect UI: a markdown summary (clusters, sizes, scores, for an update what
    changed, where the run is kept) and a table of the cluster sizes by cluster id."""
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
    lines = [
        f"# Run {run.run_id}",
        "",
        f"- clusters: **{metrics['n_leaves']}** ({run.attrs['params']['method']}, "
        f"{run.attrs['input']['shape'][0]:,} rows of {run.attrs['input']['path']})",
        f"- cluster sizes: {', '.join(f'{i}: {size:,}' for i, size in sizes.items())}",
        f"- rows not labelled (NaN or inf): {metrics.get('n_unlabelled', 0):,}",
        *([f"- scores against the true labels: {scores}"] if scores else []),
        *update,
        f"- run store: `{store}`; the run: `{run.url}`",
    ]
    key = "".join(c if c.isalnum() else "-" for c in run.run_id.lower())
    create_markdown_artifact("\n".join(lines), key=f"run-{key}"[:100], description=f"lowdens run {run.run_id}")
    total = max(1, sum(sizes.values()))
    table = [{"cluster": i, "rows": size, "share": round(size / total, 4)} for i, size in sizes.items()]
    create_table_artifact(table, key=f"sizes-{key}"[:100], description=f"cluster sizes of run {run.run_id}")


# ---------------------------------------------------------------------------------------------------- flows
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
) -> dict:
    """The cluster work of :func:`recluster`: fit and continuity, or with ``resume`` (:func:`.job.resume_point`)
    the update of the parent run; then the labels; each a task on the flow's Dask cluster (the task runner is set
    by :func:`recluster`). ``settings``: method, n_clusters, params, random_state."""
    logger = get_run_logger()
    seconds, passes = {}, {}

    def run(name, function, *args):
        start = time.perf_counter()
        submitted = cluster_step.with_options(name=name).submit(function, input_path, storage_options, header, *args)
        result = submitted.result()
        seconds[name] = time.perf_counter() - start
        passes[name] = result.pop("passes")
        logger.info("%s: done in %.1f s", name, seconds[name])
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
    cluster: dict | None = None,
    header: bool | None = None,
    update_from: str | None = None,
    series: str | None = None,
    refit_every: int | None = None,
    replace: bool = True,
    force: bool = False,
) -> str:
    """Recluster the array at ``input_path`` (zarr, ``.npy``, ``.csv`` or parquet) with ``method`` (default mdh)
    into ``n_clusters`` clusters (default "auto") and persist the run in ``store`` as ``run_id`` (default: made
    from the time); returns the run id.

    ``true_labels`` (a list, or a path to them) adds ARI, V-measure and purity to the metrics. ``cluster``
    chooses the Dask cluster (:func:`dask_task_runner`). ``header``: whether a CSV input's first row is a header
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
    is not replaced without ``replace`` either: the commit fails.
    """
    logger = get_run_logger()
    runs = RunsStore(store)
    plan = job.plan_run(
        runs, method, n_clusters, params, random_state, update_from, series, refit_every, run_id, replace, force
    )
    with get_client(sync_client=True) as client:
        runner = dask_task_runner(cluster, api_url=str(client.api_url))
    started = time.perf_counter()
    identity, truth = load_and_validate(input_path, storage_options, true_labels, header, plan.parent is not None)
    load_seconds = time.perf_counter() - started
    logger.info("load_and_validate: %s, shape %s, %s", identity["path"], identity["shape"], identity["dtype"])
    resume, previous = job.start_point(runs, plan, identity)
    if plan.parent is not None:
        logger.info("updating run %s (update %d since its fit)", plan.parent.run_id, plan.parent.tree.update + 1)
    with runs.attempt(run_id, replace=replace) as attempt:
        done = recluster_on_dask.with_options(task_runner=runner)(
            input_path, plan.estimator_settings, storage_options, identity, previous, attempt.url, header, resume
        )
        started = time.perf_counter()
        metrics = {**compute_metrics(done["tree"], attempt.url, truth), **done["metrics"]}
        metrics["seconds"] = {"load_and_validate": load_seconds, **metrics["seconds"]}
        metrics["seconds"]["metrics"] = time.perf_counter() - started
        parent = None if plan.parent is None else plan.parent.run_id
        attrs = job.run_attrs(done["tree"], done["ids"], plan.settings, identity, metrics, true_labels, parent, series)
        run_id = persist(attempt, attrs)
    logger.info("persisted run %s in %s", run_id, store)
    publish_artifacts(runs.get(run_id), store)
    return run_id


__all__ = ["dask_task_runner", "make_estimator", "recluster", "route_to_stable_ids", "stable_labels"]
