"""The summarising pass and the reading of chunked input, shared by the estimators' fit path
(:class:`~lowdens_dask.estimators._fit.TreeClustering`), for Dask arrays and zarr stores (path or fsspec URL,
``.../store.zarr/array`` for an array inside a group).

**Summary mode** (``mode="auto"`` above ``AUTO_MEMORY_VALUES`` values or ``AUTO_SUMMARY_ROWS`` rows, or
``mode="summary"``):

1. one chunked pass builds weighted microclusters (chunk-local k-means, at most
   ``MAX_MICROCLUSTERS_PER_CHUNK`` per chunk and at least ``rows_per_microcluster`` rows each; chunks of
   fewer than ``rows_per_microcluster * MAX_MICROCLUSTERS_PER_CHUNK`` rows are read in groups of consecutive
   chunks, :func:`~lowdens_dask.backend.summary_pass.summary_blocks`, since one or two microclusters of a small
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
   (:mod:`lowdens_dask.growth.hyperplane_splitter`);
3. with ``refine=k``, each split is polished before it is made: k exact L-BFGS steps over the rows that
   reach the node, from every start's summary hyperplane at once, at the continuation stage the summary
   reached (MDH's alpha); the start the index scores best on the rows wins
   (:func:`lowdens_dask.growth.hyperplane_splitter.polish`). The node's rows and its microclusters are then split by the
   polished hyperplane, and node sizes count rows;
4. one final pass routes every row to its leaf (one product of each chunk, in its own dtype, with every
   hyperplane's direction: :class:`~lowdens_dask.tree.routing.Router`); with ``labels_store`` the labels are
   written to zarr with the same row chunks as the input, by the same task that routes the chunk, in the smallest
   signed integer type that holds them (:func:`store_labels`).

A split of the tree whose leaf no microcluster's nearest-member row reaches is undone, with a warning
(:func:`~lowdens_dask.growth.grower.merge_unreached_leaves`): that row is labelled in that leaf by step 4, so ``n_clusters_`` always
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

import dask
import dask.array as da
import numpy as np

from ..backend import ChunkedData, as_dask_array
from ..backend.cluster_summary import ClusterSummary
from ..backend.frame import check_value_range
from ..backend.summary_pass import SummaryPass, summary_min_rows
from ._params import is_chunked_input, seed_of

#: Upper bound on microclusters per row chunk; it bounds the k-means cost per row.
MAX_MICROCLUSTERS_PER_CHUNK = 64

#: Dask or zarr input (or in-memory input in summary mode) of at most this many rows ...
SMALL_INPUT_ROWS = 256
#: ... and at most this many bytes as float64 is read into memory and fitted by the in-memory path, in every mode
#: (see the module docstring): a summary of so few rows has too few microclusters to place a split.
SMALL_INPUT_BYTES = 64 * 2**20


def as_chunked(est, X, sample_weight=None) -> da.Array:
    """The input as a row-chunked Dask array; in-memory input is cut into the groups of rows the summarising pass
    reads together (:func:`~lowdens_dask.backend.summary_pass.summary_min_rows`, a whole number of chunks of
    ``MAX_MICROCLUSTERS_PER_CHUNK`` microclusters of ``rows_per_microcluster`` rows): chunks of 1,280 rows made
    10^7 rows 7,813 pieces of the graph to ship to a cluster's workers (63 s against 6 s for the same rows as a
    Dask array of 125,000-row chunks). With ``sample_weight`` (in memory) the groups count weight, as the rows
    repeated would be counted: a group holds as many rows as that weight takes, on average."""
    if is_chunked_input(X):
        return as_dask_array(X, storage_options=est.storage_options)
    X = np.asarray(X)
    n = X.shape[0] if X.ndim == 2 else 0
    total = float(n)
    if sample_weight is not None and n:
        with np.errstate(all="ignore"):
            total = float(np.sum(np.asarray(sample_weight, dtype=np.float64)))
        total = total if np.isfinite(total) and total > 0 else float(n)  # bad weights are refused later
    least = int(max(1, est.rows_per_microcluster * MAX_MICROCLUSTERS_PER_CHUNK))
    group = summary_min_rows(total, est.rows_per_microcluster, MAX_MICROCLUSTERS_PER_CHUNK, est.max_microclusters)
    rows = max(1, int(np.ceil(least * -(-group // least) * n / total))) if n else 1
    return as_dask_array(da.from_array(X, chunks=(rows, X.shape[1])))


def check_nonfinite(est, n_nonfinite: int, n_rows: int) -> None:
    if n_nonfinite and est.nonfinite == "raise":
        raise ValueError(
            f"X has {n_nonfinite} of {n_rows} rows with NaN or infinite values; pass "
            "nonfinite='skip' to set them aside (they are then labelled -1)."
        )


def check_enough_rows(n_finite: int, n_rows: int, least: int = 2) -> None:
    """At least two finite rows: the one limit every method has in memory (two rows make two clusters); an
    update's batch needs one (``least``)."""
    if n_finite < least:
        aside = f" ({n_rows - n_finite} of {n_rows} set aside for NaN/inf)" if n_rows > n_finite else ""
        needed = "at least 2 are needed" if least == 2 else "an update needs at least 1"
        raise ValueError(f"X has {n_finite} finite row{'' if n_finite == 1 else 's'}{aside}; {needed}.")


def summarise(est, arr: da.Array, seed: int, update: bool = False, weights: tuple | None = None) -> SummaryPass:
    """The summarising pass, with the NaN/inf policy applied. A fit needs rows to split (two finite rows, two
    microclusters); an update's batch (``update``) only rows to merge: one finite row, or many identical ones.
    ``weights``: the rows' frequencies and their total, from :func:`~lowdens_dask.estimators._validation.chunked_weights`."""
    data = ChunkedData(arr) if weights is None else ChunkedData(arr, *weights)
    done = data.summarise(est.rows_per_microcluster, MAX_MICROCLUSTERS_PER_CHUNK, seed, est.max_microclusters)
    summary = done.summary
    check_nonfinite(est, done.n_nonfinite, summary.n_rows)
    n_finite = summary.n_rows - done.n_nonfinite
    check_enough_rows(n_finite, summary.n_rows, 1 if update else 2)
    check_summary_scale(summary, spread=not update)
    if update:
        return done
    k = summary.n_microclusters
    if not np.any(np.ptp(summary.means, axis=0) > 0) and not np.any(summary.spread > 0):
        # microclusters at one point with no spread: every finite row is the same point, as the in-memory check says
        raise ValueError("Every feature of X is constant; there is no direction to split along.")
    if k < 2:
        raise ValueError(
            f"The summary of X's {n_finite} finite rows has {k} microcluster{'' if k == 1 else 's'} (one per "
            f"rows_per_microcluster={est.rows_per_microcluster:g} rows of each chunk); at least 2 are needed: "
            "lower rows_per_microcluster, use smaller chunks, or fit with mode='exact'."
        )
    return done


def is_small_input(arr: da.Array) -> bool:
    """At most ``SMALL_INPUT_ROWS`` rows and ``SMALL_INPUT_BYTES`` as float64 (known from the array's shape,
    without a pass; never for unknown chunk sizes)."""
    n, d = arr.shape
    return bool(np.isfinite(n)) and n <= SMALL_INPUT_ROWS and n * d * 8 <= SMALL_INPUT_BYTES


def read_small_input(
    est, arr: da.Array, update: bool = False, weights: tuple | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Small chunked input in memory (one pass): ``(X, weights, n_nonfinite)``, the finite rows checked as the
    in-memory path checks them, the NaN/inf policy applied as in summary and exact mode. An update's batch
    (``update``) may be one row, or identical rows: it is merged, not split. ``weights``: the rows' frequencies
    (:func:`~lowdens_dask.estimators._validation.chunked_weights`), read with them."""
    from ._validation import check_fit_input

    if weights is None:
        x, w = np.asarray(arr.compute()), None
    else:
        x, w = (np.asarray(a) for a in dask.compute(arr, weights[0]))
    finite = np.isfinite(x).all(axis=1)
    n_nonfinite = int(finite.size - finite.sum())
    check_nonfinite(est, n_nonfinite, x.shape[0])
    check_enough_rows(x.shape[0] - n_nonfinite, x.shape[0], 1 if update else 2)
    if update:
        X = np.ascontiguousarray(x if n_nonfinite == 0 else x[finite], dtype=np.float64)
        if X.shape[0]:  # a batch may be one point: only its largest |x| is checked
            check_value_range(X.min(axis=0), X.max(axis=0), spread=False)
        return X, np.ones(X.shape[0]), n_nonfinite
    if n_nonfinite:
        x, w = x[finite], None if w is None else w[finite]
    X, checked = check_fit_input(est, x, w)
    return X, checked, n_nonfinite


def check_summary_scale(summary: ClusterSummary, spread: bool = True) -> None:
    """X's scale (:func:`~lowdens_dask.backend.frame.check_value_range`) from the summarising pass, the first
    pass over it, before anything else is computed: the least and largest values of its microclusters' means and
    of its sample of rows (means lie within the rows' range, so a scale refused here is X's). An update's batch
    (``spread`` False) may be one point; only its largest |x| is checked."""
    points = summary.means
    if summary.sample is not None and len(summary.sample):
        points = np.vstack([points, summary.sample])
    if len(points):
        check_value_range(points.min(axis=0), points.max(axis=0), spread=spread)


def rows_summary(rows: np.ndarray, weights: np.ndarray, n_rows: int) -> ClusterSummary:
    """Rows as their own microclusters (no spread): the summary of small input."""
    return ClusterSummary(np.asarray(rows, dtype=np.float64), np.asarray(weights, dtype=np.float64),
                          np.zeros(rows.shape[0]), int(n_rows))  # fmt: skip


def build_summary(est, X, sample_weight=None) -> ClusterSummary:
    """The summary of X (in memory, a Dask array or a zarr store; with its ``sample_weight``) that summary mode
    would build with ``est``'s ``rows_per_microcluster``, ``random_state`` and ``nonfinite``: one pass (small
    input: its rows). What a fit in exact mode or in memory keeps for later updates
    (``est.summary_ = build_summary(est, X)``)."""
    from ._validation import chunked_weights

    arr = as_chunked(est, X, sample_weight)
    weights = None if sample_weight is None else chunked_weights(sample_weight, arr)
    if is_small_input(arr):
        rows, row_weights, _ = read_small_input(est, arr, weights=weights)
        return rows_summary(rows, row_weights, arr.shape[0])
    summary = summarise(est, arr, seed_of(est.random_state), weights=weights)
    return summary.summary


def summary_of_rows(est, X, weights) -> ClusterSummary:
    """The summary a first update merges into after a fit in memory or in exact mode: :func:`build_summary` of the
    rows fitted (``X``, finite rows in memory or the chunked input, with their ``weights`` when chunked), or for
    weighted rows in memory the rows themselves merged down to ``max_microclusters``."""
    if weights is None or is_chunked_input(X):
        return build_summary(est, X, weights)
    return rows_summary(X, weights, X.shape[0]).bounded(est.max_microclusters, 0)
