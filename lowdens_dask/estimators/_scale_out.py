"""Scale-out modes shared by the estimators, for Dask arrays and zarr stores (path or fsspec URL,
``.../store.zarr/array`` for an array inside a group).

**Summary mode** (``mode="auto"`` for chunked input and above ``AUTO_SUMMARY_ROWS`` rows, or
``mode="summary"``):

1. one chunked pass builds weighted microclusters (chunk-local k-means, at most
   ``MAX_MICROCLUSTERS_PER_CHUNK`` per chunk and at least ``rows_per_microcluster`` rows each; chunks of
   fewer than ``rows_per_microcluster * MAX_MICROCLUSTERS_PER_CHUNK`` rows are read in groups of consecutive
   chunks, :func:`~lowdens_dask.backend.chunked.summary_blocks`, since one or two microclusters of a small
   chunk average rows of different clusters), keeps each microcluster's member row nearest its mean, and
   counts rows with NaN/inf. The tree reduction that combines the chunks' summaries merges microclusters on
   the workers down to ``max_microclusters`` (default 1024;
   :func:`~lowdens_dask.kernels.summaries.merge_microclusters`), so the client's work after the pass does not
   grow with the number of chunks: at 10^7 rows in 12,500-row chunks the summary had 51,200 microclusters
   and the tree took 0.61 one-pass times, against 0.11 at 5,120 microclusters (issue 25);
2. the estimator is fitted in memory on the microcluster means weighted by their row counts (the
   ``sample_weight`` path of the core estimators). The bandwidth counts rows, as in exact mode, and
   is widened by the microclusters' spread: h² = (0.9 sigma_pc1 n^(-1/5))² + s², with s² the
   weighted mean within-microcluster variance per dimension, so that each mean stands for a
   Gaussian blob of rows. Measured on the ten bundled data sets at one microcluster per 20 rows
   (mean over 3 seeds, ARI of summary-mode against exact-mode labels): 0.57 when n counts
   microclusters instead of rows, 0.68 with rows, 0.72 with rows and spread (benchmarks/agreement.py
   has the current figures). Each restart (e.g. MDH's PC1 and PC2) of each new leaf runs as a named Dask
   task (``lowdens-split-node-<id>-start-<j>``), both children of a split at once
   (:mod:`lowdens_dask.tree.hyperplanes`);
3. with ``refine=k``, each split is polished before it is made: k exact L-BFGS steps over the rows that
   reach the node, from every start's summary hyperplane at once, at the continuation stage the summary
   reached (MDH's alpha); the start the index scores best on the rows wins
   (:func:`lowdens_dask.tree.hyperplanes.polish`). The node's rows and its microclusters are then split by the
   polished hyperplane, and node sizes count rows;
4. one final pass routes every row to its leaf (one product of each chunk, in its own dtype, with every
   hyperplane's direction: :class:`~lowdens_dask.tree.routing.Router`); with ``labels_store`` the labels are
   written to zarr with the same row chunks as the input, by the same task that routes the chunk, in the smallest
   signed integer type that holds them (:func:`store_labels`).

A split of the tree whose leaf no microcluster's nearest-member row reaches is undone, with a warning
(:func:`merge_unreached_leaves`): that row is labelled in that leaf by step 4, so ``n_clusters_`` always
equals the number of distinct labels, 0 to ``n_clusters_ - 1``.

``timings_`` records the seconds of each step: ``summary_pass`` (1), ``tree`` (2 and 3, on the client) and
``label_pass`` (4; None when the labels stay lazy, for chunked input without ``labels_store``).

**Exact mode** (``mode="exact"``) grows the tree on :class:`~lowdens_dask.backend.chunked.ChunkedNode`
objects: every step of every node's pursuit is a chunk map and tree reduction over the node's rows,
which gives the in-memory result. Both fit in the same frame (:func:`exact_frame`, :func:`rows_frame`):
columns whose spread is within rounding error of their values are constant for every split.

On a distributed cluster, every mode first checks that the workers can run the fit's tasks
(:func:`~lowdens_dask.backend.workers.check_worker_memory`), and its passes give up when every worker stays
paused for memory (:func:`~lowdens_dask.backend.workers.compute`): a ``WorkerMemoryError`` names the limit and
the footprint instead of a wait without end.

**Small input** (at most ``SMALL_INPUT_ROWS`` = 256 rows, and at most ``SMALL_INPUT_BYTES`` = 64 MiB as
float64; Dask arrays, zarr stores, and in-memory arrays with ``mode="summary"``) is read into memory in one
pass and fitted by the in-memory path, in summary and exact mode alike: the tree and the labels are those
of the numpy array's fit. A summary of so few rows has at most 13 microclusters at the default 20 rows
each, and only one per chunk of up to 20 rows: too few to place a split (20 rows in one chunk gave one
microcluster, and the fit failed; 30 rows in chunks of 10 gave three, and MDH's ARI on two separated groups
fell to 0.74), while fitting 256 rows in memory takes milliseconds. The Dask-input contract holds:
``labels_`` is a Dask array (written to ``labels_store`` when given), ``predict`` routes Dask input,
NaN/inf rows follow ``nonfinite`` (labelled -1 with "skip"), and in summary mode ``n_microclusters_``
counts the rows (each row is its own microcluster). The one limit left is the in-memory one, at least 2
finite rows (every method splits 2 rows into 2 clusters). Above the threshold, a summary of fewer than 2
microclusters (``rows_per_microcluster`` as large as the chunks) is refused with a message that names
``rows_per_microcluster``.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numbers
import os
import time

import dask.array as da
import numpy as np
import zarr
from sklearn.utils import check_random_state
from zarr.storage import FsspecStore

from .._warnings import warn
from ..backend import ChunkedData, as_dask_array, write_integrity_manifest
from ..backend.chunked import ChunkedNode, PassCounter, Summary, default_max_node_bytes
from ..backend.cluster_summary import ClusterSummary
from ..backend.frame import Frame, column_frame
from ..backend.workers import check_worker_memory, chunk_bytes, compute
from ..tree import ClusterTree

#: Upper bound on microclusters per row chunk; it bounds the k-means cost per row.
MAX_MICROCLUSTERS_PER_CHUNK = 64
#: With mode="auto", in-memory arrays with more rows than this are fitted in summary mode too.
AUTO_SUMMARY_ROWS = 2_000_000
#: Dask or zarr input (or in-memory input in summary mode) of at most this many rows ...
SMALL_INPUT_ROWS = 256
#: ... and at most this many bytes as float64 is read into memory and fitted by the in-memory path, in every mode
#: (see the module docstring): a summary of so few rows has too few microclusters to place a split.
SMALL_INPUT_BYTES = 64 * 2**20


def is_chunked_input(X) -> bool:
    """Dask arrays, zarr arrays and zarr paths/URLs (fitted in summary mode, or exactly with mode="exact")."""
    return isinstance(X, (da.Array, str, os.PathLike, zarr.Array))


def use_summary_mode(est, X) -> bool:
    """Summary mode for ``mode="summary"``, and with ``mode="auto"`` for chunked input and above
    ``AUTO_SUMMARY_ROWS`` rows."""
    if est.mode != "auto":
        return est.mode == "summary"
    if is_chunked_input(X):
        return True
    shape = getattr(X, "shape", None)
    return shape is not None and len(shape) == 2 and shape[0] > AUTO_SUMMARY_ROWS


def check_scale_out_params(est) -> None:
    name = type(est).__name__
    if est.mode not in ("auto", "exact", "summary"):
        raise ValueError(f"{name}: mode must be 'auto', 'exact' or 'summary'; got {est.mode!r}.")
    if est.nonfinite not in ("raise", "skip"):
        raise ValueError(f"{name}: nonfinite must be 'raise' or 'skip'; got {est.nonfinite!r}.")
    refine = getattr(est, "refine", 0)
    if not (isinstance(refine, numbers.Integral) and not isinstance(refine, bool) and refine >= 0):
        raise ValueError(
            f"{name}: refine must be a non-negative integer (exact L-BFGS steps per hyperplane); got {refine!r}."
        )
    limit = getattr(est, "max_node_bytes", 0)
    if not ((isinstance(limit, str) and limit == "auto") or (isinstance(limit, numbers.Real) and limit >= 0)):
        raise ValueError(f"{name}: max_node_bytes must be 'auto' or a non-negative number of bytes; got {limit!r}.")
    if not (isinstance(est.rows_per_microcluster, (int, float)) and est.rows_per_microcluster >= 1):
        raise ValueError(f"{name}: rows_per_microcluster must be a number >= 1; got {est.rows_per_microcluster!r}.")
    budget = getattr(est, "max_microclusters", None)
    if not (budget is None or (isinstance(budget, numbers.Integral) and not isinstance(budget, bool) and budget >= 2)):
        raise ValueError(f"{name}: max_microclusters must be an integer >= 2 or None; got {budget!r}.")


def as_chunked(est, X) -> da.Array:
    """The input as a row-chunked Dask array; in-memory input is cut into chunks that each hold
    ``MAX_MICROCLUSTERS_PER_CHUNK`` microclusters of ``rows_per_microcluster`` rows."""
    if is_chunked_input(X):
        return as_dask_array(X, storage_options=est.storage_options)
    X = np.asarray(X)
    rows = int(max(1, est.rows_per_microcluster * MAX_MICROCLUSTERS_PER_CHUNK))
    return as_dask_array(da.from_array(X, chunks=(rows, X.shape[1])))


def _check_nonfinite(est, n_nonfinite: int, n_rows: int) -> None:
    if n_nonfinite and est.nonfinite == "raise":
        raise ValueError(
            f"X has {n_nonfinite} of {n_rows} rows with NaN or infinite values; pass "
            "nonfinite='skip' to set them aside (they are then labelled -1)."
        )


def check_enough_rows(n_finite: int, n_rows: int) -> None:
    """At least two finite rows: the one limit every method has in memory (two rows make two clusters)."""
    if n_finite < 2:
        aside = f" ({n_rows - n_finite} of {n_rows} set aside for NaN/inf)" if n_rows > n_finite else ""
        raise ValueError(f"X has {n_finite} finite row{'' if n_finite == 1 else 's'}{aside}; at least 2 are needed.")


def summarise(est, arr: da.Array, seed: int) -> Summary:
    """The summarising pass, with the NaN/inf policy applied."""
    budget = getattr(est, "max_microclusters", None)
    summary = ChunkedData(arr).summarise(est.rows_per_microcluster, MAX_MICROCLUSTERS_PER_CHUNK, seed, budget)
    _check_nonfinite(est, summary.n_nonfinite, summary.n_rows)
    n_finite = summary.n_rows - summary.n_nonfinite
    check_enough_rows(n_finite, summary.n_rows)
    k = summary.data.n_samples
    if k == 1 and summary.data.spread is not None and not np.any(summary.data.spread > 0):
        # one microcluster with no spread: every finite row is the same point, as the in-memory check says
        raise ValueError("Every feature of X is constant; there is no direction to split along.")
    if k < 2:
        raise ValueError(
            f"The summary of X's {n_finite} finite rows has {k} microcluster{'' if k == 1 else 's'} (one per "
            f"rows_per_microcluster={est.rows_per_microcluster:g} rows of each chunk); at least 2 are needed: "
            "lower rows_per_microcluster, use smaller chunks, or fit with mode='exact'."
        )
    return summary


def is_small_input(arr: da.Array) -> bool:
    """At most ``SMALL_INPUT_ROWS`` rows and ``SMALL_INPUT_BYTES`` as float64 (known from the array's shape,
    without a pass; never for unknown chunk sizes)."""
    n, d = arr.shape
    return bool(np.isfinite(n)) and n <= SMALL_INPUT_ROWS and n * d * 8 <= SMALL_INPUT_BYTES


def read_small_input(est, arr: da.Array) -> tuple[np.ndarray, np.ndarray, int]:
    """Small chunked input in memory (one pass): ``(X, weights, n_nonfinite)``, the finite rows checked as the
    in-memory path checks them, the NaN/inf policy applied as in summary and exact mode."""
    from ._validation import check_fit_input

    x = np.asarray(arr.compute())
    finite = np.isfinite(x).all(axis=1)
    n_nonfinite = int(finite.size - finite.sum())
    _check_nonfinite(est, n_nonfinite, x.shape[0])
    check_enough_rows(x.shape[0] - n_nonfinite, x.shape[0])
    X, weights = check_fit_input(est, x if n_nonfinite == 0 else x[finite], None)
    return X, weights, n_nonfinite


def fit_small_input(est, arr: da.Array, chunked: bool, fit_rows, route, summary: bool):
    """Fit small input (:func:`is_small_input`) by the in-memory path: ``fit_rows(rows, weights)`` after one
    pass that reads the rows, then ``route(arr)`` every row (lazily, or written to ``labels_store``, for
    ``chunked`` input; computed for in-memory input in summary mode).

    Sets what the summary or exact path sets: ``n_features_in_``, ``n_nonfinite_``, ``labels_``, ``n_passes_``,
    and in summary mode ``n_microclusters_`` (the rows) and ``timings_``."""
    start = time.perf_counter()
    rows, weights, n_nonfinite = read_small_input(est, arr)
    est.n_features_in_ = arr.shape[1]
    read = time.perf_counter()
    fit_rows(rows, weights)
    grown = time.perf_counter()
    est.n_nonfinite_ = n_nonfinite
    if summary:
        est.n_microclusters_ = rows.shape[0]
        est.summary_ = rows_summary(rows, weights, arr.shape[0])
    label_rows(est, arr, chunked, route, (start, read, grown) if summary else None)
    return est


def label_rows(est, arr: da.Array, chunked: bool, route, times=None, counter: PassCounter | None = None) -> None:
    """The last step of a fit or an update: ``route(arr)`` every row to ``labels_`` (lazy, or written to
    ``labels_store`` by :func:`store_labels`, for ``chunked`` input; computed for in-memory input), ``timings_``
    from ``times`` (the starts of the summarising pass, the tree and the label pass; summary mode) and the passes
    (``counter``'s, with the summarising pass and the labels written added)."""
    est.labels_ = store_labels(est, arr, route) if chunked else route(arr).compute()
    if times is not None:
        start, summarised, grown = times
        computed = not chunked or est.labels_store is not None
        est.timings_ = {
            "summary_pass": summarised - start,
            "tree": grown - summarised,
            "label_pass": time.perf_counter() - grown if computed else None,
        }
    counter = PassCounter() if counter is None else counter
    counter.add(1 + (est.labels_store is not None and chunked))  # the rows read or summarised; the labels written
    record_passes(est, counter)


#: Codec of the labels written to ``labels_store``: few distinct small integers compress well bit-shuffled, and
#: lz4 writes a 125,000-row chunk in 3.9 ms where zarr's default zstd takes 8.7 ms (68 KB against 78 KB).
LABELS_CODEC = {"cname": "lz4", "clevel": 1, "shuffle": "bitshuffle"}


def store_labels(est, arr: da.Array, route) -> da.Array:
    """``route(arr)``: the labels of chunked rows, written to ``est.labels_store`` (same row chunks) with a lowdens
    integrity manifest (:func:`~lowdens_dask.backend.write_integrity_manifest`) and returned from there, or lazy
    when no store is given.

    ``route(arr, out)`` gives one task per chunk that routes it and writes its labels to its rows of ``out``,
    the zarr array made here once, in the smallest signed integer type that holds the labels
    (:func:`labels_dtype`): reading the chunk, routing and writing it take one task of ours, and 1 byte per
    row for up to 128 clusters instead of 8. Row chunks that a zarr array cannot have (of different sizes but
    the last) are written by ``to_zarr``, which rechunks them."""
    if est.labels_store is None:
        return route(arr)
    path = os.fspath(est.labels_store)
    codec = zarr.codecs.BloscCodec(**LABELS_CODEC)
    dtype = labels_dtype(est)
    rows = arr.chunks[0]
    if all(size == rows[0] for size in rows[:-1]) and rows[-1] <= rows[0]:
        store = path if est.storage_options is None else FsspecStore.from_url(path, storage_options=est.storage_options)
        shape, chunks = (arr.shape[0],), (max(rows[0], 1),)
        out = zarr.create_array(
            store, shape=shape, chunks=chunks, dtype=dtype, fill_value=0, compressors=[codec], overwrite=True
        )
        compute(*route(arr, out))
    else:
        route(arr).astype(dtype).to_zarr(path, storage_options=est.storage_options, overwrite=True, compressors=[codec])
    # zarr writes no chunk of label 0 only (the fill value): the manifest tells those from chunks lost later
    write_integrity_manifest(path, storage_options=est.storage_options)
    return da.from_zarr(path, storage_options=est.storage_options)


def labels_dtype(est) -> np.dtype:
    """The smallest signed integer type that holds the estimator's labels and -1 (NaN/inf rows): up to its tree's
    largest leaf label (stable cluster ids can be sparse and large after ``partial_fit``), or 1 for the sides of
    one hyperplane."""
    tree = getattr(est, "tree_", None)
    return smallest_signed_dtype(1 if tree is None else max(tree.leaf_labels().values()))


def smallest_signed_dtype(largest: int) -> np.dtype:
    """The narrowest of int8, int16, int32 and int64 that holds ``-1`` to ``largest``."""
    return next(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64) if largest <= np.iinfo(t).max)


def fit_in_summary_mode(est, X, sample_weight, fit_rows, route):
    """Summarise X, ``fit_rows(means, counts, spread, rows)`` in memory (``rows`` is the chunked array
    when ``est.refine`` asks for exact polishing, else None), then ``route(arr)`` every row.

    Sets ``n_features_in_``, ``n_microclusters_``, ``n_nonfinite_``, ``labels_`` (lazy or written
    to ``labels_store`` for chunked input, a numpy array for in-memory input) and ``timings_``.
    """
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported in summary mode (the summary carries the weights).")
    arr = as_chunked(est, X)
    check_worker_memory(chunk_bytes(arr))
    if is_small_input(arr):
        return fit_small_input(est, arr, is_chunked_input(X), fit_rows, route, summary=True)
    est.n_features_in_ = arr.shape[1]
    start = time.perf_counter()
    summary = summarise(est, arr, check_random_state(est.random_state).randint(2**31 - 1))
    summarised = time.perf_counter()
    rows = ChunkedNode(arr) if getattr(est, "refine", 0) else None
    fit_rows(summary.data.X, summary.data.weights, summary.data.spread, rows)
    merge_unreached_leaves(est, summary.representatives)
    grown = time.perf_counter()
    est.n_microclusters_ = summary.data.n_samples
    est.n_nonfinite_ = summary.n_nonfinite
    est.summary_ = ClusterSummary.from_data(summary.data, summary.n_rows)
    label_rows(est, arr, is_chunked_input(X), route, (start, summarised, grown), None if rows is None else rows.counter)
    return est


def rows_summary(rows: np.ndarray, weights: np.ndarray, n_rows: int) -> ClusterSummary:
    """Rows as their own microclusters (no spread): the summary of small input."""
    return ClusterSummary(np.asarray(rows, dtype=np.float64), np.asarray(weights, dtype=np.float64),
                          np.zeros(rows.shape[0]), int(n_rows))  # fmt: skip


def build_summary(est, X) -> ClusterSummary:
    """The summary of X (in memory, a Dask array or a zarr store) that summary mode would build with ``est``'s
    ``rows_per_microcluster``, ``random_state`` and ``nonfinite``: one pass (small input: its rows). What a fit
    in exact mode or in memory keeps for later updates (``est.summary_ = build_summary(est, X)``)."""
    arr = as_chunked(est, X)
    if is_small_input(arr):
        rows, weights, _ = read_small_input(est, arr)
        return rows_summary(rows, weights, arr.shape[0])
    summary = summarise(est, arr, check_random_state(est.random_state).randint(2**31 - 1))
    return ClusterSummary.from_data(summary.data, summary.n_rows)


def summary_of_rows(est, X, weights: np.ndarray | None) -> ClusterSummary:
    """The summary a first update merges into after a fit in memory or in exact mode: :func:`build_summary` of the
    rows fitted (``X``, finite rows in memory or the chunked input), or for weighted rows in memory the rows
    themselves merged down to ``max_microclusters``."""
    if weights is None:
        return build_summary(est, X)
    return rows_summary(X, weights, X.shape[0]).bounded(getattr(est, "max_microclusters", None), 0)


def check_n_features(est, X) -> None:
    """X (in memory, Dask or zarr) has the features ``est`` was fitted on (scikit-learn's message)."""
    shape = getattr(X, "shape", None) if not isinstance(X, (str, os.PathLike)) else None
    n = as_dask_array(X, storage_options=est.storage_options).shape[1] if shape is None else shape[-1]
    if n != est.n_features_in_:
        raise ValueError(
            f"X has {n} features, but {type(est).__name__} is expecting {est.n_features_in_} features as input."
        )


def update_in_summary_mode(est, X, update_tree, route):
    """``partial_fit`` after the first call: summarise X's rows (one pass), merge them into ``est.summary_``
    (old weights times ``1 - decay``), ``update_tree(merged, old_weights)`` (the report), keep the merged summary
    within ``max_microclusters`` for the next update, then ``route(arr)`` X's rows to their cluster ids.

    Sets ``summary_``, ``n_microclusters_``, ``n_clusters_``, ``n_nonfinite_``, ``labels_`` (of X),
    ``update_report_`` and ``timings_``."""
    arr = as_chunked(est, X)
    check_worker_memory(chunk_bytes(arr))
    start = time.perf_counter()
    if is_small_input(arr):
        rows, weights, n_nonfinite = read_small_input(est, arr)
        new = rows_summary(rows, weights, arr.shape[0])
    else:
        seed = np.random.default_rng([check_random_state(est.random_state).randint(2**31 - 1), est.tree_.update + 1])
        summary = summarise(est, arr, int(seed.integers(2**31 - 1)))
        new, n_nonfinite = ClusterSummary.from_data(summary.data, summary.n_rows), summary.n_nonfinite
    summarised = time.perf_counter()
    merged = est.summary_.merged(new, getattr(est, "decay", None))
    old_weights = merged.weights.copy()
    old_weights[merged.n_microclusters - new.n_microclusters :] = 0.0
    report = update_tree(merged, old_weights)
    est.summary_ = merged.bounded(getattr(est, "max_microclusters", None), est.tree_.update)
    grown = time.perf_counter()
    est.n_microclusters_ = est.summary_.n_microclusters
    est.n_clusters_ = est.tree_.n_leaves
    est.n_nonfinite_ = n_nonfinite
    est.update_report_ = {"n_rows": new.n_rows, "decay": getattr(est, "decay", None), **report}
    label_rows(est, arr, is_chunked_input(X), route, (start, summarised, grown))
    return est


def merge_unreached_leaves(est, representatives: np.ndarray) -> None:
    """Undo each split of ``est.tree_`` that made a leaf no microcluster's representative row reaches (with a
    warning), and set ``n_clusters_`` to the leaves left.

    A leaf of a tree grown on microclusters may hold only microclusters whose rows lie elsewhere (a microcluster
    averaging rows of two groups lies between them): no row would be labelled there, and ``n_clusters_`` would
    count a cluster that ``labels_`` never holds. Each microcluster's representative is its member row nearest to
    its mean, routed as the label pass routes rows: a leaf it reaches gets that row's label, so every leaf left
    is a label of ``labels_``."""
    tree = getattr(est, "tree_", None)
    if not isinstance(tree, ClusterTree) or representatives is None or not len(representatives):
        return
    merged = 0
    while tree.n_leaves > 1:
        reached = set(np.unique(tree.apply(representatives)).tolist())
        unreached = [leaf for leaf in tree.leaves() if leaf.id not in reached]
        if not unreached:
            break
        tree.merge_leaf(unreached[0])
        merged += 1
    if merged:
        warn(
            f"Summary mode: {merged} split(s) made a cluster that no row reaches (its microclusters averaged rows of "
            f"other clusters), so they were undone: {tree.n_leaves} clusters are left. Smaller rows_per_microcluster, "
            "larger chunks or mode='exact' avoid this."
        )
        if hasattr(est, "_set_tree"):  # MSC: its attributes describe the root's split
            est._set_tree(tree)
    est.n_clusters_ = tree.n_leaves


def record_passes(est, counter: PassCounter) -> None:
    """``n_passes_`` (all passes over the rows in the fit) and ``n_evaluation_passes_`` (those of objective
    evaluations)."""
    est.n_passes_ = counter.total
    est.n_evaluation_passes_ = counter.evaluation


def max_node_bytes(est) -> float:
    """The estimator's ``max_node_bytes``, with "auto" resolved by
    :func:`~lowdens_dask.backend.chunked.default_max_node_bytes`."""
    value = getattr(est, "max_node_bytes", 0.0)
    return default_max_node_bytes() if isinstance(value, str) and value == "auto" else float(value)


def fit_exact_chunked(est, X, sample_weight, fit_node, route, fit_rows=None):
    """Exact mode over chunked input: ``fit_node(root)`` on a :class:`ChunkedNode` of all finite rows
    (every pursuit step a pass over the chunks), then ``route(arr)`` every row. Small input
    (:func:`is_small_input`) is read into memory and fitted by ``fit_rows(rows, weights)`` (default
    ``est._fit_rows``), the in-memory path.

    Sets ``n_features_in_``, ``n_nonfinite_`` and ``labels_`` (lazy, or written to ``labels_store``).
    """
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported for Dask or zarr input.")
    for name in ("bandwidth", "v0", "split_index"):
        if callable(getattr(est, name, None)):
            raise ValueError(
                f"A callable {name} needs the rows in memory; exact mode on chunked input does not support it."
            )
    arr = as_dask_array(X, storage_options=est.storage_options)
    check_worker_memory(chunk_bytes(arr))
    if is_small_input(arr):
        fit_rows = est._fit_rows if fit_rows is None else fit_rows
        return fit_small_input(est, arr, True, fit_rows, route, summary=False)
    est.n_features_in_ = arr.shape[1]
    root = ChunkedNode(arr)
    _check_nonfinite(est, root.n_nonfinite, arr.shape[0])
    check_enough_rows(root.n_samples, arr.shape[0])
    fit_node(root)
    est.n_nonfinite_ = root.n_nonfinite
    est.labels_ = store_labels(est, arr, route)
    root.counter.add(est.labels_store is not None)
    record_passes(est, root.counter)
    return est


def exact_frame(est, root: ChunkedNode) -> tuple[ChunkedNode, Frame]:
    """The chunked rows in the frame exact mode fits them in: ``(root, frame)``, as :func:`rows_frame` puts rows in
    memory (z-scored lazily if ``est.standardize``, divisor n - 1; columns constant up to rounding set aside);
    the rows themselves with the identity frame when neither applies. Column means and variances come from
    the root's first two passes, which the root's principal components reuse."""
    mean = root.mean()
    var = np.diag(root.scatter_matrix()) / max(root.total_weight - 1.0, 1.0)
    frame, constant = column_frame(mean, var, root.total_weight, est.standardize)
    _warn_constant(constant & (var > 0))
    if frame.mean is None:
        return root, frame
    return ChunkedNode((root.X - frame.mean) / frame.scale, counter=root.counter), frame


def rows_frame(X: np.ndarray, weights: np.ndarray, standardize: bool) -> tuple[Frame, np.ndarray]:
    """The frame rows in memory are fitted in, and the mask of their constant columns: weighted column means
    and variances (divisor W - 1) through :func:`~lowdens_dask.backend.frame.column_frame`, with W the total
    weight (the rows a summary stands for), as exact mode does on chunks."""
    total = float(weights.sum())
    mean = weights @ X / total
    scatter = np.zeros(X.shape[1])
    for start in range(0, X.shape[0], FRAME_BLOCK_ROWS):  # working copies of a block of rows only
        block = X[start : start + FRAME_BLOCK_ROWS] - mean
        scatter += weights[start : start + FRAME_BLOCK_ROWS] @ (block * block)
    var = scatter / max(total - 1.0, 1.0)
    frame, constant = column_frame(mean, var, total, standardize)
    if constant.any():
        rows = X[weights > 0][:, constant]
        rounding = np.zeros_like(constant)
        rounding[constant] = rows.max(axis=0) > rows.min(axis=0)
        _warn_constant(rounding)
    return frame, constant


#: Rows whose deviations from the mean :func:`rows_frame` holds at once.
FRAME_BLOCK_ROWS = 65_536


def _warn_constant(rounding: np.ndarray) -> None:
    """Warn about the columns that vary, but only within rounding error of their values (exactly constant
    columns are reported by the input checks)."""
    rounding = np.flatnonzero(rounding)
    if rounding.size:
        warn(
            f"X has {rounding.size} column(s) whose spread is within rounding error of their values (indices "
            f"{rounding[:10].tolist()}{'...' if rounding.size > 10 else ''}: the variance is within the error "
            "bound of a float64 variance, scikit-learn's rule for StandardScaler); they are treated as constant "
            "and do not affect the splits."
        )


def route_rows(tree: ClusterTree, arr: da.Array, out: zarr.Array | None = None):
    """Lazy leaf labels for chunked rows (-1 for NaN/inf), or with ``out`` the tasks that write them there
    (:meth:`~lowdens_dask.tree.ClusterTree.predict_chunked`)."""
    return tree.predict_chunked(arr, out)
