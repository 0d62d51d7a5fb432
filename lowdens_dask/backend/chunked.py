"""Dask backend of the data layer: row-chunked arrays from Dask or zarr.

Every operation is a map over row chunks followed by a tree reduction of small partial results, so
no chunk is ever needed on the client and no code assumes that workers share memory with it (all
task inputs are plain arrays or JSON-able dicts). Row chunks follow the zarr chunks (or the shards
of a sharded array) for reads, and label writes use the same row chunks.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections.abc import Callable

import dask
import dask.array as da
import numpy as np
from scipy.linalg import eigh

from ..kernels.summaries import microclusters
from .cluster_summary import ClusterSummary, bottom_rows, key_threshold, sample_keys, sample_size
from .frame import check_value_range, column_units
from .label_pass import label_rows
from .memory import InMemoryData
from .passes import PassCounter, delayed_task, map_reduce
from .summary_pass import SummaryPass, concat_summaries, summarise_chunks
from .workers import large_allocations_from_the_heap
from .zarr_input import ChunkReadError, as_dask_array  # noqa: F401 (their home before zarr_input.py)


class ChunkedData:
    """Row-chunked data behind a Dask array (the scale-out backend): its summarising pass and its label pass.

    Parameters
    ----------
    X : dask.array.Array
        Row-chunked array (see :func:`as_dask_array`).
    weights : dask.array.Array, optional
        The rows' frequencies, a 1-D array with X's row chunks, and their sum ``total_weight``.
    """

    def __init__(self, X: da.Array, weights: da.Array | None = None, total_weight: float | None = None):
        self.X = X
        self.weights, self.total_weight = weights, total_weight
        self.n_samples, self.n_features = X.shape

    def summarise(
        self, rows_per_microcluster: float, max_per_chunk: int, seed: int = 0, budget: int | None = None
    ) -> SummaryPass:
        """The summarising pass (:func:`~lowdens_dask.backend.summary_pass.summarise_chunks`)."""
        return summarise_chunks(
            self.X, rows_per_microcluster, max_per_chunk, seed, budget, self.weights, self.total_weight
        )

    def label_rows(self, labeler: Callable, *args, labels_nonfinite: bool = False, out=None):
        """The label pass (:func:`~lowdens_dask.backend.label_pass.label_rows`)."""
        return label_rows(self.X, labeler, *args, labels_nonfinite=labels_nonfinite, out=out)


def _node_rows(block, path: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The finite rows of a chunk (as float64) on the given sides of the path's splits, and their mask. A weighted
    node's ``block`` is ``(x, weights)``; its weights are :func:`_node_weights`'.

    A path entry is ``(v, b, side)`` for a hyperplane, or ``(router, side)`` for any split rule (an object
    whose ``side(rows)`` is True for the rows of side 1)."""
    x = block[0] if isinstance(block, tuple) else block
    keep = np.isfinite(x).all(axis=1)
    if isinstance(block, tuple):  # rows of weight 0 carry nothing (the label pass routes them as any row)
        keep &= np.asarray(block[1]) > 0
    if not keep.all():
        x = np.where(keep[:, None], x, 0.0)
    x = np.asarray(x, dtype=np.float64)
    for entry in path:
        if len(entry) == 2:
            router, side = entry
            keep &= router.side(x) == bool(side)
        else:
            v, b, side = entry
            keep &= (x @ v >= b) == bool(side)
    return x[keep], keep


def _node_weights(block, path: tuple) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_node_rows` and the rows' weights (ones for a block without weights)."""
    rows, keep = _node_rows(block, path)
    if not isinstance(block, tuple):
        return rows, np.ones(rows.shape[0])
    return rows, np.asarray(block[1], dtype=np.float64)[keep]


def _apply_to_block(fn: Callable, x: np.ndarray, path: tuple, args: tuple):
    large_allocations_from_the_heap()
    return fn(x, path, *args)


def _chunk_stats(x: np.ndarray, path: tuple):
    """Total weight, weighted column sums, rows with NaN/inf, each column's least and largest value (of the node's
    rows), and rows."""
    rows, weights = _node_weights(x, path)
    x = x[0] if isinstance(x, tuple) else x
    return (
        float(weights.sum()),
        weights @ rows,
        int(x.shape[0] - np.isfinite(x).all(axis=1).sum()),
        rows.min(axis=0, initial=np.inf),
        rows.max(axis=0, initial=-np.inf),
        rows.shape[0],
    )


def _combine_stats(*parts):
    """:func:`_chunk_stats` of chunks combined: counts and sums added, least and largest values kept."""
    return (
        *_sum(*(part[:3] for part in parts)),
        np.minimum.reduce([part[3] for part in parts]),
        np.maximum.reduce([part[4] for part in parts]),
        sum(part[5] for part in parts),
    )


def _chunk_node_microclusters(
    x: np.ndarray, path: tuple, rows_per_microcluster: float, max_per_chunk: int, sample: tuple, seed
):
    rows, weights = _node_weights(x, path)
    weighted = isinstance(x, tuple)
    k = min(int(np.ceil(weights.sum() / rows_per_microcluster)), max_per_chunk, rows.shape[0])
    counts, means, spread = microclusters(rows, k, seed, weights=weights if weighted else None)
    keys = sample_keys(rows.shape[0], np.random.default_rng([seed, 1]), weights if weighted else None)
    kept, keys = bottom_rows(rows, keys, *sample)
    return counts, means, spread, kept, keys, rows.shape[0], 0


def _chunk_weight_below(x: np.ndarray, path: tuple, v: np.ndarray, b: float) -> float:
    rows, weights = _node_weights(x, path)
    return float(weights[rows @ v < b].sum())


def _chunk_gap(x: np.ndarray, path: tuple, v: np.ndarray, b: float):
    rows, _ = _node_rows(x, path)
    p = rows @ v
    below = p < b
    lo = p[below].max() if below.any() else -np.inf
    hi = p[~below].min() if not below.all() else np.inf
    return lo, hi, np.abs(rows).max(axis=0, initial=0.0)


def _combine_gaps(*parts):
    return (
        max(part[0] for part in parts),
        min(part[1] for part in parts),
        np.maximum.reduce([part[2] for part in parts]),
    )


def _chunk_scatter(x: np.ndarray, path: tuple, mean: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """The scatter of the node's rows with each column divided by ``unit`` (a power of two: exact)."""
    rows, weights = _node_weights(x, path)
    rows = rows / unit - mean / unit
    return rows.T @ (rows * weights[:, None]) if isinstance(x, tuple) else rows.T @ rows


def _chunk_project(x: np.ndarray, path: tuple, U: np.ndarray, offset: np.ndarray):
    large_allocations_from_the_heap()
    rows, weights = _node_weights(x, path)
    return np.ascontiguousarray((rows @ U - offset).T), weights


def _chunk_backproject(x: np.ndarray, path: tuple, part, fn: Callable, args: tuple):
    rows, _ = _node_rows(x, path)
    G = fn(*part, *args)  # (k, rows)
    return rows.T @ G.T, G.sum(axis=1)


def _sum(*parts):
    if isinstance(parts[0], tuple):
        return tuple(_sum(*items) for items in zip(*parts))
    out = parts[0].copy() if isinstance(parts[0], np.ndarray) else parts[0]
    for p in parts[1:]:
        out = out + p
    return out


class Projections:
    """Projections ``X_node @ U - offset`` of a node's rows, held chunk by chunk where the rows are
    (on the workers of a distributed cluster) for the passes of one objective evaluation.

    Each chunk holds ``(P, w)``: P of shape (k, rows) (one row per direction) and the rows' weights.
    """

    def __init__(self, node: ChunkedNode, U: np.ndarray, offset: np.ndarray):
        self.node = node
        self.n_directions = U.shape[1]
        token = dask.base.tokenize(node.token, U, offset)[:12]
        self._name = f"lowdens-project-{token}"
        path, U, offset = _as_literals(node.path, U, offset)
        parts = [
            delayed_task(_chunk_project)(b, path, U, offset, dask_key_name=f"{self._name}-{i}")
            for i, b in enumerate(node.blocks)
        ]
        self.parts = dask.persist(*parts)
        node.counter.add(evaluation=True)
        self.gathered: tuple[np.ndarray, np.ndarray] | None = None
        self._passes = 0
        self._chunk_rows: list[int] | None = None

    def reduce(self, fn: Callable, combine: Callable, *args):
        """``combine`` of ``fn(P, w, *args)`` over the chunks, by a tree reduction."""
        self._passes += 1
        name = f"{self._name}-pass{self._passes}-{fn.__name__.strip('_')}"
        (args,) = _as_literals(args)
        return map_reduce(name, _apply_to_part, [(fn, part, args) for part in self.parts], combine)

    @property
    def total_weight(self) -> float:
        return self.node.total_weight

    def gather(self) -> tuple[np.ndarray, np.ndarray]:
        """All projections on the client: ``(P, w)`` with P of shape (k, rows), in chunk order (one float per
        row and direction; for indices that need the sorted projections)."""
        parts = dask.compute(*self.parts)
        self._chunk_rows = [part[1].shape[0] for part in parts]
        self.gathered = np.concatenate([part[0] for part in parts], axis=1), np.concatenate([part[1] for part in parts])
        return self.gathered

    def backproject_values(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(X_node.T @ G.T, G.sum(axis=1))`` for per-row weights G (k, rows) in the order of :meth:`gather`."""
        if self._chunk_rows is None:
            self.gather()
        ends = np.cumsum(self._chunk_rows)
        pieces = [np.ascontiguousarray(G[:, end - rows : end]) for rows, end in zip(self._chunk_rows, ends)]
        self._passes += 1
        self.node.counter.add(evaluation=True)
        name = f"{self._name}-pass{self._passes}-backproject-values"
        (path,) = _as_literals(self.node.path)
        chunks = [(b, path, (piece,), _given, ()) for b, piece in zip(self.node.blocks, pieces)]
        return map_reduce(name, _chunk_backproject, chunks, _sum)

    def backproject(self, fn: Callable, *args) -> tuple[np.ndarray, np.ndarray]:
        """``(X_node.T @ G.T, G.sum(axis=1))`` for per-row weights ``G = fn(P, w, *args)`` (k, rows)."""
        self._passes += 1
        self.node.counter.add(evaluation=True)
        name = f"{self._name}-pass{self._passes}-backproject"
        path, args = _as_literals(self.node.path, args)
        chunks = [(b, path, part, fn, args) for b, part in zip(self.node.blocks, self.parts)]
        return map_reduce(name, _chunk_backproject, chunks, _sum)


def _given(G: np.ndarray) -> np.ndarray:
    return G


def _apply_to_part(fn: Callable, part: tuple, args: tuple):
    return fn(*part, *args)


def _gather_node_rows(path: tuple, *blocks) -> InMemoryData:
    """The node's finite rows of every chunk, in row order, as float64 rows in memory (a task on one worker)."""
    large_allocations_from_the_heap()
    parts = [_node_weights(x, path) for x in blocks]
    rows = np.concatenate([part[0] for part in parts])
    return InMemoryData(rows, np.concatenate([part[1] for part in parts]) if isinstance(blocks[0], tuple) else None)


def _as_literals(*values) -> list:
    """Each value as one delayed literal, so the graph of a pass does not traverse it once per chunk."""
    return [dask.delayed(v, pure=True, traverse=False) for v in values]


class ChunkedNode:
    """The rows of a row-chunked array that lie on given sides of a path of hyperplanes (a tree node),
    for exact mode: every operation is a pass over the array's chunks, and rows with NaN/inf are left out.

    Provides the data-layer operations of :class:`~lowdens_dask.backend.InMemoryData` that projection
    pursuit uses (mean, leading eigenvectors, total weight, split), with projections held in chunks
    (:class:`Projections`) instead of whole arrays. Rows have weight 1, or the ``weights`` given (frequencies: a
    1-D array with X's row chunks), which every pass reads beside the rows.

    Parameters
    ----------
    X : dask.array.Array
        Row-chunked array (see :func:`as_dask_array`).
    path : tuple of (v, b, side)
        The node's rows satisfy ``(x @ v >= b) == side`` for every entry.
    """

    within_variance = 0.0
    #: Rows are held in chunks: every operation is a pass over them.
    chunked = True

    def __init__(
        self,
        X: da.Array,
        path: tuple = (),
        counter: PassCounter | None = None,
        check_scale: bool = True,
        weights: da.Array | None = None,
    ):
        self.X = X
        self.weights = weights
        self.check_scale = check_scale and not path
        self.path = tuple(path)
        self.counter = PassCounter() if counter is None else counter
        self.n_features = X.shape[1]
        self.blocks = X.to_delayed().ravel()
        if weights is not None:  # each block a (rows, weights) pair
            self.blocks = [(x, w) for x, w in zip(self.blocks, weights.rechunk((X.chunks[0],)).to_delayed().ravel())]
        self.token = dask.base.tokenize(X, self.path, *(() if weights is None else (weights,)))[:12]
        self._stats = None
        self._scatter = None

    def _pass(self, fn: Callable, *args, combine: Callable = _sum):
        self.counter.add()
        name = f"lowdens-{fn.__name__.strip('_')}-{dask.base.tokenize(self.token, *args)[:12]}"
        path, args = _as_literals(self.path, args)
        return map_reduce(name, _apply_to_block, [(fn, b, path, args) for b in self.blocks], combine)

    def _row_stats(self):
        """The node's first pass: rows, column sums, NaN/inf rows, least and largest values. At the root of a fit
        (``check_scale``) X's scale is checked here, before any other pass (:func:`check_value_range`)."""
        if self._stats is None:
            stats = self._pass(_chunk_stats, combine=_combine_stats)
            if self.check_scale and stats[0] > 0:
                check_value_range(stats[3], stats[4])
            self._stats = stats
        return self._stats

    @property
    def n_samples(self) -> int:
        """Rows in the node (finite rows only)."""
        return int(self._row_stats()[5])

    @property
    def total_weight(self) -> float:
        return float(self._row_stats()[0])

    @property
    def n_nonfinite(self) -> int:
        """Rows of the whole array with NaN or inf (found by the node's first pass)."""
        return self._row_stats()[2]

    def mean(self) -> np.ndarray:
        count, total = self._row_stats()[:2]
        return total / count

    def column_units(self) -> np.ndarray:
        """Per column, the power of two at or above its largest |x| (:func:`~lowdens_dask.backend.frame.column_units`)."""
        _, _, _, lo, hi, _ = self._row_stats()
        return column_units(np.maximum(np.abs(lo), np.abs(hi), where=np.isfinite(lo), out=np.zeros(lo.shape[0])))

    def _unit_scatter(self) -> np.ndarray:
        """The scatter of the rows with each column divided by :meth:`column_units` (one pass), where squares
        neither over- nor underflow."""
        if self._scatter is None:
            self._scatter = self._pass(_chunk_scatter, self.mean(), self.column_units())
        return self._scatter

    def scatter_matrix(self) -> np.ndarray:
        """``sum_i (x_i - mean)(x_i - mean)^T`` over the node's rows (one pass): the scatter of the columns
        divided by powers of two, scaled back (exactly, where it is representable)."""
        unit = self.column_units()
        return self._unit_scatter() * np.outer(unit, unit)

    def column_variances(self) -> tuple[np.ndarray, np.ndarray]:
        """``(var, unit)``: the columns' variances (divisor n - 1) in units of :meth:`column_units` (the variance
        is ``var * unit**2``), as :func:`~lowdens_dask.backend.frame.column_moments` gives them in memory."""
        return np.diag(self._unit_scatter()) / max(self.total_weight - 1.0, 1.0), self.column_units()

    def leading_eigenvectors(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k eigenpairs of the covariance (divisor n - 1), largest first, signs as in InMemoryData."""
        d = self.n_features
        k = min(k, d)
        cov = self.scatter_matrix() / max(self.total_weight - 1.0, 1.0)
        vals, vecs = eigh(cov, subset_by_index=(d - k, d - 1))
        vals, vecs = vals[::-1], vecs[:, ::-1]
        idx = np.argmax(np.abs(vecs), axis=0)
        vecs = vecs * np.sign(vecs[idx, np.arange(vecs.shape[1])])
        return np.maximum(vals, 0.0), np.ascontiguousarray(vecs)

    def total_scatter(self) -> float:
        """Sum of squared distances to the mean (Boley's PDDP scatter)."""
        return float(np.trace(self.scatter_matrix()))

    def weight_below(self, v: np.ndarray, b: float) -> float:
        """Total weight of the rows with ``x @ v < b`` (one pass)."""
        return self._pass(_chunk_weight_below, np.asarray(v, dtype=np.float64), float(b))

    def gap_around(self, v: np.ndarray, b: float) -> tuple[float, float, np.ndarray]:
        """As :meth:`InMemoryData.gap_around <lowdens_dask.backend.InMemoryData.gap_around>` (one pass)."""
        self.counter.add()
        v = np.asarray(v, dtype=np.float64)
        name = f"lowdens-gap-{dask.base.tokenize(self.token, v, b)[:12]}"
        path, v = _as_literals(self.path, v)
        chunks = [(_chunk_gap, blk, path, (v, float(b))) for blk in self.blocks]
        lo, hi, colmax = map_reduce(name, _apply_to_block, chunks, _combine_gaps)
        return float(lo), float(hi), colmax

    def projections(self, U: np.ndarray, offset: np.ndarray | None = None) -> Projections:
        """``X_node @ U - offset`` for a block of directions U (d, k), held in chunks."""
        U = np.ascontiguousarray(np.asarray(U, dtype=np.float64).reshape(self.n_features, -1))
        offset = np.zeros(U.shape[1]) if offset is None else np.asarray(offset, dtype=np.float64)
        return Projections(self, U, offset)

    def summarise(self, rows_per_microcluster: float, max_per_chunk: int, seed: int = 0) -> ClusterSummary:
        """One pass: chunk-local k-means microclusters of the node's rows (as :meth:`ChunkedData.summarise`),
        their means weighted by row counts, with per-dimension spread, and a random sample of the rows."""
        seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=len(self.blocks))
        self.counter.add()
        name = f"lowdens-node-summarise-{dask.base.tokenize(self.token, rows_per_microcluster, seed)[:12]}"
        (path,) = _as_literals(self.path)
        size = sample_size(self.n_features)
        sample = (size, key_threshold(self.total_weight, size))
        chunks = [
            (_chunk_node_microclusters, b, path, (rows_per_microcluster, max_per_chunk, sample, int(s)))
            for b, s in zip(self.blocks, seeds)
        ]
        counts, means, spread, sample, keys, _, _ = map_reduce(name, _apply_to_block, chunks, concat_summaries)
        sample, keys = bottom_rows(sample, keys, size)
        return ClusterSummary(means, counts, spread / self.n_features, self.n_samples, 0, sample, keys)

    def partition_by(self, router) -> tuple[ChunkedNode, ChunkedNode]:
        """The rows on side 0 and on side 1 of a split rule (``router.side(rows)`` True for side 1)."""
        return tuple(self._child(self.path + ((router, side),)) for side in (0, 1))

    def partition(self, v: np.ndarray, b: float) -> tuple[ChunkedNode, ChunkedNode]:
        """The rows with ``x @ v < b`` and those with ``x @ v >= b``."""
        v = np.asarray(v, dtype=np.float64)
        return tuple(self._child(self.path + ((v, float(b), side),)) for side in (0, 1))

    def _child(self, path: tuple) -> ChunkedNode:
        return ChunkedNode(self.X, path, self.counter, weights=self.weights)

    @property
    def nbytes(self) -> int:
        """Bytes of the node's rows as float64 in memory."""
        return self.n_samples * self.n_features * 8

    def gathered(self):
        """A Dask task holding the node's rows in memory (:class:`InMemoryData`, in row order) on one worker:
        tasks that take it run the in-memory path there (one pass)."""
        self.counter.add()
        (path,) = _as_literals(self.path)
        return delayed_task(_gather_node_rows)(path, *self.blocks, dask_key_name=f"lowdens-node-rows-{self.token}")
