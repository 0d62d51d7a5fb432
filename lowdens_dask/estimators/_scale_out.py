"""Scale-out modes shared by the estimators, for Dask arrays and zarr stores (path or fsspec URL,
``.../store.zarr/array`` for an array inside a group).

**Summary mode** (``mode="auto"`` for chunked input and above ``AUTO_SUMMARY_ROWS`` rows, or
``mode="summary"``):

1. one chunked pass builds weighted microclusters (chunk-local k-means, at most
   ``MAX_MICROCLUSTERS_PER_CHUNK`` per chunk and at least ``rows_per_microcluster`` rows each) and
   counts rows with NaN/inf;
2. the estimator is fitted in memory on the microcluster means weighted by their row counts (the
   ``sample_weight`` path of the core estimators). The bandwidth counts rows, as in exact mode, and
   is widened by the microclusters' spread: h² = (0.9 sigma_pc1 n^(-1/5))² + s², with s² the
   weighted mean within-microcluster variance per dimension, so that each mean stands for a
   Gaussian blob of rows. Measured on the ten bundled data sets at one microcluster per 20 rows
   (mean over 3 seeds, ARI of summary-mode against exact-mode labels): 0.57 when n counts
   microclusters instead of rows, 0.68 with rows, 0.72 with rows and spread (benchmarks/agreement.py
   has the current figures). Each restart (e.g. MDH's PC1 and PC2) of each new leaf runs as a named Dask
   task (``lowdens-split-node-<id>-start-<j>``), both children of a split at once
   (:mod:`lowdens_dask.tree.grower`);
3. with ``refine=k``, each split is polished before it is made: k exact L-BFGS steps over the rows that
   reach the node, from every start's summary hyperplane at once, at the continuation stage the summary
   reached (MDH's alpha); the start the index scores best on the rows wins
   (:func:`lowdens_dask.tree.grower.polish`). The node's rows and its microclusters are then split by the
   polished hyperplane, and node sizes count rows;
4. one final pass routes every row to its leaf (one product of each chunk, in its own dtype, with every
   hyperplane's direction: :class:`~lowdens_dask.tree.routing.Router`); with ``labels_store`` the labels are
   written to zarr with the same row chunks as the input.

``timings_`` records the seconds of each step: ``summary_pass`` (1), ``tree`` (2 and 3, on the client) and
``label_pass`` (4; None when the labels stay lazy, for chunked input without ``labels_store``).

**Exact mode** (``mode="exact"``) grows the tree on :class:`~lowdens_dask.backend.chunked.ChunkedNode`
objects: every step of every node's pursuit is a chunk map and tree reduction over the node's rows,
which gives the in-memory result.
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

from ..backend import ChunkedData, as_dask_array
from ..backend.chunked import ChunkedNode, PassCounter, Summary, default_max_node_bytes
from ..backend.frame import Frame
from ..tree import ClusterTree

#: Upper bound on microclusters per row chunk; it bounds the k-means cost per row.
MAX_MICROCLUSTERS_PER_CHUNK = 64
#: With mode="auto", in-memory arrays with more rows than this are fitted in summary mode too.
AUTO_SUMMARY_ROWS = 2_000_000


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


def as_chunked(est, X) -> da.Array:
    """The input as a row-chunked Dask array; in-memory input is cut into chunks that each hold
    ``MAX_MICROCLUSTERS_PER_CHUNK`` microclusters of ``rows_per_microcluster`` rows."""
    if is_chunked_input(X):
        return as_dask_array(X, storage_options=est.storage_options)
    X = np.asarray(X)
    rows = int(max(1, est.rows_per_microcluster * MAX_MICROCLUSTERS_PER_CHUNK))
    return as_dask_array(da.from_array(X, chunks=(rows, X.shape[1])))


def summarise(est, arr: da.Array, seed: int) -> Summary:
    """The summarising pass, with the NaN/inf policy applied."""
    summary = ChunkedData(arr).summarise(est.rows_per_microcluster, MAX_MICROCLUSTERS_PER_CHUNK, seed)
    if summary.n_nonfinite and est.nonfinite == "raise":
        raise ValueError(
            f"X has {summary.n_nonfinite} of {summary.n_rows} rows with NaN or infinite values; pass "
            "nonfinite='skip' to set them aside (they are then labelled -1)."
        )
    if summary.data.n_samples < 2:
        raise ValueError(f"X has {summary.n_rows - summary.n_nonfinite} finite rows; at least 2 are needed.")
    return summary


#: Codec of the labels written to ``labels_store``: few distinct small integers compress well bit-shuffled, and
#: lz4 writes a 125,000-row chunk in 3.9 ms where zarr's default zstd takes 8.7 ms (68 KB against 78 KB).
LABELS_CODEC = {"cname": "lz4", "clevel": 1, "shuffle": "bitshuffle"}


def store_labels(est, labels: da.Array) -> da.Array:
    """Write the labels to ``est.labels_store`` (same row chunks) and return them from there, or keep
    them lazy when no store is given."""
    if est.labels_store is None:
        return labels
    labels.to_zarr(
        os.fspath(est.labels_store),
        storage_options=est.storage_options,
        overwrite=True,
        compressors=[zarr.codecs.BloscCodec(**LABELS_CODEC)],
    )
    return da.from_zarr(os.fspath(est.labels_store), storage_options=est.storage_options)


def fit_in_summary_mode(est, X, sample_weight, fit_rows, route):
    """Summarise X, ``fit_rows(means, counts, spread, rows)`` in memory (``rows`` is the chunked array
    when ``est.refine`` asks for exact polishing, else None), then ``route(arr)`` every row.

    Sets ``n_features_in_``, ``n_microclusters_``, ``n_nonfinite_``, ``labels_`` (lazy or written
    to ``labels_store`` for chunked input, a numpy array for in-memory input) and ``timings_``.
    """
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported in summary mode (the summary carries the weights).")
    arr = as_chunked(est, X)
    est.n_features_in_ = arr.shape[1]
    start = time.perf_counter()
    summary = summarise(est, arr, check_random_state(est.random_state).randint(2**31 - 1))
    summarised = time.perf_counter()
    rows = ChunkedNode(arr) if getattr(est, "refine", 0) else None
    fit_rows(summary.data.X, summary.data.weights, summary.data.spread, rows)
    grown = time.perf_counter()
    est.n_microclusters_ = summary.data.n_samples
    est.n_nonfinite_ = summary.n_nonfinite
    labels = route(arr)
    computed = not is_chunked_input(X) or est.labels_store is not None
    est.labels_ = store_labels(est, labels) if is_chunked_input(X) else labels.compute()
    est.timings_ = {
        "summary_pass": summarised - start,
        "tree": grown - summarised,
        "label_pass": time.perf_counter() - grown if computed else None,
    }
    counter = PassCounter() if rows is None else rows.counter
    counter.add(1 + (est.labels_store is not None and is_chunked_input(X)))  # the summary; the labels written
    record_passes(est, counter)
    return est


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


def fit_exact_chunked(est, X, sample_weight, fit_node, route):
    """Exact mode over chunked input: ``fit_node(root)`` on a :class:`ChunkedNode` of all finite rows
    (every pursuit step a pass over the chunks), then ``route(arr)`` every row.

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
    est.n_features_in_ = arr.shape[1]
    root = ChunkedNode(arr)
    if root.n_nonfinite and est.nonfinite == "raise":
        raise ValueError(
            f"X has {root.n_nonfinite} of {arr.shape[0]} rows with NaN or infinite values; pass "
            "nonfinite='skip' to set them aside (they are then labelled -1)."
        )
    if root.n_samples < 2:
        raise ValueError(f"X has {root.n_samples} finite rows; at least 2 are needed.")
    fit_node(root)
    est.n_nonfinite_ = root.n_nonfinite
    est.labels_ = store_labels(est, route(arr))
    root.counter.add(est.labels_store is not None)
    record_passes(est, root.counter)
    return est


def exact_frame(est, root: ChunkedNode) -> tuple[ChunkedNode, Frame]:
    """The chunked rows in the frame exact mode fits them in: ``(root, frame)``, z-scored lazily as by
    ``_validation.standardisation`` (divisor n - 1; constant columns keep scale 1) if ``est.standardize``,
    else unchanged with the identity frame."""
    if not est.standardize:
        return root, Frame()
    mean = root.mean()
    scale = np.sqrt(np.diag(root.scatter_matrix()) / max(root.total_weight - 1.0, 1.0))
    scale[scale == 0] = 1.0
    return ChunkedNode((root.X - mean) / scale, counter=root.counter), Frame(mean, scale)


def route_rows(tree: ClusterTree, arr: da.Array) -> da.Array:
    """Lazy leaf labels for chunked rows (-1 for NaN/inf); the tree travels to the workers as JSON."""
    return tree.predict(arr)
