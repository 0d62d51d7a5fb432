"""The recluster job's steps as plain functions: check the request and the input, fit, match the cluster ids
to the previous run's, write the labels, compute the metrics, commit the run.

The Prefect flow ``recluster`` (:mod:`.flows`) runs these steps as tasks on a Dask cluster. ``lowdens fit``
without a Prefect API runs them itself with :func:`run_job`, in its own process (Dask's threaded scheduler)
or on the Dask cluster it is given, so that it starts no Prefect server. Neither Prefect nor distributed is
imported here.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
import time
import warnings
from importlib.metadata import version

import dask.array as da
import numpy as np

from lowdens_dask import METHODS, ClusterTree, check_params
from lowdens_dask.backend import ChunkedData
from lowdens_dask.tree import leaf_labels_from_json

from .continuity import contingency, match_cluster_ids, stability
from .identity import input_identity
from .inputs import load_labels, open_input
from .metrics import label_metrics, tree_metrics
from .runs import LabelsDamagedError, RunsStore, read_labels
from .runs import write_labels as write_run_labels

#: Versions recorded with each run.
VERSIONED = ("lowdens-dask", "numpy", "scipy", "scikit-learn", "numba", "dask", "distributed", "zarr", "prefect")


def make_estimator(method: str, n_clusters: int | str | None, params: dict | None, random_state: int):
    """The registered clustering estimator for ``method``, its parameters checked as its ``fit`` checks them
    first; an unknown method, an unknown parameter or a bad value is a ValueError."""
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
    estimator.set_params(**settings)
    check_params(estimator)
    return estimator


def stable_labels(x: np.ndarray, tree_json: str, stable_ids: tuple[int, ...]) -> np.ndarray:
    """The stable cluster id of each row: its leaf label in the tree, through ``stable_ids`` (a chunk task)."""
    return np.asarray(stable_ids, dtype=np.int64)[leaf_labels_from_json(x, tree_json)]


def route_to_stable_ids(X: da.Array, tree_json: str, stable_ids) -> da.Array:
    """Lazy stable cluster ids of X's rows (-1 for rows with NaN/inf), in X's row chunks."""
    return ChunkedData(X).label_rows(stable_labels, tree_json, tuple(int(i) for i in stable_ids))


def load_and_validate(
    input_path: str, storage_options: dict | None, true_labels, header: bool | None = None, X: da.Array | None = None
) -> tuple[dict, np.ndarray | None]:
    """The input's identity and the true labels, if any: a missing store or array, a wrong dtype or shape,
    an empty array, or labels of the wrong length fail here, before any cluster starts. ``X``: the input,
    when it is already open."""
    identity = input_identity(input_path, storage_options, header=header, X=X)
    n_rows = identity["shape"][0]
    if n_rows < 2:
        raise ValueError(f"The array at {input_path!r} has {n_rows} row(s); at least 2 are needed.")
    if true_labels is None:
        return identity, None
    truth = load_labels(true_labels) if isinstance(true_labels, str) else np.asarray(true_labels)
    if truth.shape != (n_rows,):
        raise ValueError(f"The true labels have shape {truth.shape}; the input has {n_rows} rows.")
    return identity, truth


def previous_run(runs: RunsStore, identity: dict) -> dict | None:
    """What continuity needs of the newest committed run on the same input path, or None."""
    latest = runs.latest_on(identity["path"])
    if latest is None or "stable_ids" not in latest.attrs:
        return None
    return {
        "run_id": latest.run_id,
        "url": latest.url,
        "tree": latest.tree.to_json(),
        "stable_ids": latest.attrs["stable_ids"],
        "input": latest.attrs["input"],
    }


def fit_tree(estimator, X: da.Array) -> dict:
    """Fit ``estimator`` on X; the tree as JSON and the fit's figures."""
    estimator.fit(X)
    names = ("n_microclusters_", "n_nonfinite_", "n_passes_")
    figures = {name: int(getattr(estimator, name)) for name in names if hasattr(estimator, name)}
    return {"tree": estimator.tree_.to_json(), **figures}


def match_previous(X: da.Array, tree_json: str, identity: dict, previous: dict | None) -> dict:
    """Stable cluster ids (new leaf label -> id) and the stability figures against the previous run on the same
    input: on the same rows (same shape and fingerprint) the previous labels are compared with the new ones;
    otherwise the rows are routed through the previous tree. The first run's ids are its labels."""
    n_leaves = ClusterTree.from_json(tree_json).n_leaves
    if previous is None:
        return {"stable_ids": list(range(n_leaves)), "stability": None}
    same_rows = previous["input"]["shape"] == identity["shape"] and (
        previous["input"]["fingerprint"] == identity["fingerprint"]
    )
    n_previous = max(previous["stable_ids"]) + 1
    now = ChunkedData(X).label_rows(leaf_labels_from_json, tree_json)
    try:
        if same_rows:  # each chunk of the previous labels checked as it is read (runs.read_labels)
            before = read_labels(previous["url"], max_label=n_previous - 1).rechunk((X.chunks[0],))
        else:
            before = route_to_stable_ids(X, previous["tree"], previous["stable_ids"])
        table = contingency(before, now, shape=(n_previous, n_leaves))
    except LabelsDamagedError as error:
        # never a stability computed from what a damaged store reads (the fill value): no continuity this time
        message = (
            f"No continuity with the previous run {previous['run_id']!r}: {error} The new run's cluster ids start "
            "afresh."
        )
        warnings.warn(message, stacklevel=2)
        return {
            "stable_ids": list(range(n_leaves)),
            "stability": {"previous_run": previous["run_id"], "skipped": str(error)},
            "warning": message,
        }
    mapping = match_cluster_ids(table)
    figures = {
        "previous_run": previous["run_id"],
        "compared": "same rows" if same_rows else "rows routed through the previous tree",
        **stability(table, mapping),
    }
    return {"stable_ids": [mapping[i] for i in range(n_leaves)], "stability": figures}


def write_labels(X: da.Array, tree_json: str, stable_ids, attempt_url: str) -> None:
    """Route every row through the tree to its stable cluster id (-1 for rows with NaN/inf) and write the
    labels into the attempt, in the input's row chunks."""
    write_run_labels(route_to_stable_ids(X, tree_json, stable_ids), attempt_url)


def compute_metrics(tree_json: str, attempt_url: str, truth) -> dict:
    """The tree's figures, the cluster sizes and, with true labels, the external scores (the labels are one
    integer per row, read back in this process)."""
    from dask.threaded import get

    labels = read_labels(attempt_url).compute(scheduler=get)
    return {**tree_metrics(ClusterTree.from_json(tree_json)), **label_metrics(labels, truth)}


def run_attrs(
    tree_json: str,
    stable_ids,
    settings: dict,
    identity: dict,
    metrics: dict,
    true_labels=None,
) -> dict:
    """The attributes a run is committed with. ``settings``: method, n_clusters, random_state and the
    estimator's other parameters."""
    identity = dict(identity)
    if isinstance(true_labels, (str, os.PathLike)):
        identity["true_labels"] = os.fspath(true_labels)
    return {
        "tree": ClusterTree.from_json(tree_json),
        "stable_ids": list(stable_ids),
        "params": settings,
        "versions": {name: _version(name) for name in VERSIONED},
        "input": identity,
        "metrics": metrics,
    }


def _version(name: str) -> str | None:
    try:
        return version(name)
    except Exception:  # noqa: BLE001 (a distribution that is not installed)
        return None


def run_job(
    input_path: str,
    method: str = "mdh",
    n_clusters: int | str | None = "auto",
    params: dict | None = None,
    random_state: int = 0,
    store: str = "./lowdens-runs",
    run_id: str | None = None,
    true_labels=None,
    storage_options: dict | None = None,
    header: bool | None = None,
    X: da.Array | None = None,
    step=None,
) -> str:
    """The whole job where Dask's current scheduler runs it (this process's threads, or the client's cluster),
    without Prefect; returns the committed run's id. ``X``: the input already opened; ``step(name)``: a context
    manager around each step (progress display)."""
    from contextlib import nullcontext

    step = step or (lambda name: nullcontext())
    estimator = make_estimator(method, n_clusters, params, random_state)
    X = open_input(input_path, storage_options, header=header) if X is None else X
    started = time.perf_counter()
    identity, truth = load_and_validate(input_path, storage_options, true_labels, header=header, X=X)
    seconds = {"load_and_validate": time.perf_counter() - started}
    runs = RunsStore(store)
    previous = previous_run(runs, identity)
    with runs.attempt(run_id) as attempt:

        def timed(name, function, *args):
            start = time.perf_counter()
            with step(name):
                result = function(*args)
            seconds[name] = time.perf_counter() - start
            return result

        fitted = timed("fit", fit_tree, estimator, X)
        matched = timed("continuity", match_previous, X, fitted["tree"], identity, previous)
        timed("write_labels", write_labels, X, fitted["tree"], matched["stable_ids"], attempt.url)
        metrics = timed("metrics", compute_metrics, fitted["tree"], attempt.url, truth)
        figures = {k: v for k, v in fitted.items() if k != "tree"}
        metrics.update(figures, stability=matched["stability"], seconds=seconds)
        settings = {"method": method, "n_clusters": n_clusters, "random_state": random_state, **(params or {})}
        attempt.set_attrs(**run_attrs(fitted["tree"], matched["stable_ids"], settings, identity, metrics, true_labels))
        return attempt.commit().run_id
