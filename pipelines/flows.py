"""The ``recluster`` Prefect flow: fit a clustering of a zarr array on the flow's Dask cluster and persist the
run (labels, tree, parameters, input identity, metrics) in a runs store.

Steps, each a Prefect task: load and validate; fit; route the rows and write the labels; metrics; persist
(commit). The Dask work of a step runs on the flow's cluster through ``prefect_dask.get_dask_client``; the
estimator keeps its own fine-grained parallelism (nodes, restarts) as Dask tasks, so Prefect tasks are never
nested. The estimator is chosen by name from the library's registry (``lowdens_dask.METHODS``).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import time
from contextlib import contextmanager
from importlib.metadata import version

from distributed import rejoin, secede
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect_dask import DaskTaskRunner, get_dask_client

from lowdens_dask import METHODS, ClusterTree
from lowdens_dask.backend import ChunkedData, as_dask_array
from lowdens_dask.tree import leaf_labels_from_json

from .identity import input_identity
from .metrics import label_metrics, tree_metrics
from .runs import DEFAULT_STORE, RunsStore


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


def make_estimator(method: str, n_clusters: int | None, params: dict | None, random_state: int):
    """The registered clustering estimator for ``method``; unknown methods and parameters are a ValueError."""
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}; known methods: {sorted(METHODS)}.")
    estimator = METHODS[method].clustering()
    accepted = estimator.get_params()
    settings = {"n_clusters": n_clusters, **(params or {})}
    if "random_state" in accepted:
        settings.setdefault("random_state", random_state)
    unknown = sorted(set(settings) - set(accepted))
    if unknown:
        raise ValueError(f"Unknown parameters {unknown} for method {method!r}; it takes {sorted(accepted)}.")
    return estimator.set_params(**settings)


@task(cache_policy=NO_CACHE)
def load_and_validate(input_path: str, storage_options: dict | None) -> dict:
    """The input's identity; a missing store or array, a wrong dtype or shape, or too few rows fail here."""
    identity = input_identity(input_path, storage_options)
    if identity["shape"][0] < 2:
        raise ValueError(f"The array at {input_path!r} has {identity['shape'][0]} rows; at least 2 are needed.")
    return identity


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def fit(input_path: str, method: str, n_clusters, params: dict, random_state: int, storage_options) -> dict:
    """Fit on the flow's cluster; returns the tree as JSON and the fit's figures."""
    estimator = make_estimator(method, n_clusters, params, random_state)
    if storage_options is not None:
        estimator.set_params(storage_options=storage_options)
    with cluster_client():
        estimator.fit(input_path)
    names = ("n_microclusters_", "n_nonfinite_")
    figures = {name: int(getattr(estimator, name)) for name in names if hasattr(estimator, name)}
    return {"tree": estimator.tree_.to_json(), **figures}


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def write_labels(input_path: str, tree_json: str, attempt_url: str, storage_options) -> None:
    """Route every row through the tree (-1 for rows with NaN/inf) and write the labels into the attempt,
    in the input's row chunks."""
    with cluster_client():
        X = as_dask_array(input_path, storage_options=storage_options)
        labels = ChunkedData(X).label_rows(leaf_labels_from_json, tree_json)
        labels.to_zarr(attempt_url, component="labels", storage_options=storage_options, overwrite=True)


@task(cache_policy=NO_CACHE)
def compute_metrics(tree_json: str, attempt_url: str, true_labels, storage_options) -> dict:
    import dask.array as da

    labels = da.from_zarr(attempt_url, component="labels", storage_options=storage_options)
    with cluster_client():
        labels = labels.compute()
    return {**tree_metrics(ClusterTree.from_json(tree_json)), **label_metrics(labels, true_labels)}


@flow(name="recluster", task_runner=DaskTaskRunner())
def recluster(
    input_path: str,
    method: str = "mdh",
    n_clusters: int | None = None,
    params: dict | None = None,
    random_state: int = 0,
    store: str = DEFAULT_STORE,
    run_id: str | None = None,
    true_labels: list | None = None,
    storage_options: dict | None = None,
) -> str:
    """Recluster ``input_path`` (a zarr array) with ``method`` and persist the run; returns the run id.

    Bad input (an unknown method or parameter, a missing or malformed array) fails before any cluster work.
    """
    make_estimator(method, n_clusters, params, random_state)  # fail fast on the parameters
    times = {}
    start = time.perf_counter()
    identity = load_and_validate.submit(input_path, storage_options).result()
    times["load_and_validate"] = time.perf_counter() - start
    runs = RunsStore(store)
    with runs.attempt(run_id) as attempt:
        start = time.perf_counter()
        fitted = fit.submit(input_path, method, n_clusters, params or {}, random_state, storage_options).result()
        times["fit"] = time.perf_counter() - start
        start = time.perf_counter()
        write_labels.submit(input_path, fitted["tree"], attempt.url, storage_options).result()
        times["write_labels"] = time.perf_counter() - start
        start = time.perf_counter()
        metrics = compute_metrics.submit(fitted["tree"], attempt.url, true_labels, storage_options).result()
        times["metrics"] = time.perf_counter() - start
        attempt.set_attrs(
            tree=ClusterTree.from_json(fitted["tree"]),
            params={"method": method, "n_clusters": n_clusters, "random_state": random_state, **(params or {})},
            versions={name: version(name) for name in ("lowdens-dask", "dask", "distributed", "zarr", "numpy")},
            input=identity,
            metrics={**metrics, **{k: v for k, v in fitted.items() if k != "tree"}, "seconds": times},
        )
        return attempt.commit().run_id


__all__ = ["make_estimator", "recluster"]
