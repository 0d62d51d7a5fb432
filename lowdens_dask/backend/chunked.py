"""Dask backend of the data layer: row-chunked arrays from Dask or zarr.

Every operation is a map over row chunks followed by a tree reduction of small partial results, so
no chunk is ever needed on the client and no code assumes that workers share memory with it (all
task inputs are plain arrays or JSON-able dicts). Row chunks follow the zarr chunks (or the shards
of a sharded array) for reads, and label writes use the same row chunks.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import NamedTuple

import dask
import dask.array as da
import numpy as np
from scipy.linalg import eigh

from ..kernels.summaries import merge_microclusters, microclusters
from .cluster_summary import ClusterSummary
from .memory import InMemoryData
from .workers import compute
from .zarr_input import ChunkReadError, as_dask_array  # noqa: F401 (their home before zarr_input.py)

#: Partial results are combined in groups of this size (the fan-in of the tree reduction).
FAN_IN = 8


@functools.cache
def _delayed(fn: Callable):
    """``dask.delayed(fn)``, made once per function (it tokenises the function)."""
    return dask.delayed(fn, pure=True)


def tree_reduce(parts: Sequence, combine: Callable, name: str):
    """Combine delayed partial results pairwise-by-groups into one delayed result (named tasks)."""
    level = 0
    parts = list(parts)
    while len(parts) > 1:
        parts = [
            _delayed(combine)(*parts[i : i + FAN_IN], dask_key_name=f"{name}-combine-{level}-{i}")
            for i in range(0, len(parts), FAN_IN)
        ]
        level += 1
    return parts[0]


#: Name prefixes of the layers :func:`chunk_tasks` builds (its callers' passes over the rows).
CHUNK_TASK_PREFIXES = ("lowdens-summarise-", "lowdens-write-labels-")


def chunks_read(key) -> int:
    """How many of X's row chunks the task with this key reads itself: ``stop - first`` for a task of
    :func:`chunk_tasks` (key ``(name, first, stop)``), else 0. What a count of passes from a task stream needs,
    since those chunk reads are no tasks of their own."""
    if isinstance(key, tuple) and len(key) == 3 and str(key[0]).startswith(CHUNK_TASK_PREFIXES):
        return int(key[2]) - int(key[1])
    return 0


def chunk_tasks(
    name: str, X: da.Array, fn: Callable, groups: Sequence[tuple[int, int]], shared: tuple = (), own=None
) -> list:
    """One delayed task per group ``(first, stop)`` of consecutive row chunks of X: ``fn(*shared, *own[i],
    *chunks)``, with key ``(name, first, stop)`` (``name`` starts with one of :data:`CHUNK_TASK_PREFIXES`), in one
    graph layer.

    Each task reads its chunks itself: the tasks of X's last layer (the chunk reads of a zarr store) are nested in
    it, so a chunk is never a task result of its own that a scheduler may place on another worker than the task
    that needs it. ``shared`` (parameters, a tree, a zarr array) enter the graph once, as keys of their own, and
    ``own[i]`` (small literals) in task i: the graph's size and the time to build and ship it grow with the chunks
    only (a delayed call per chunk embedded each argument in each task, and merged X's graph into each: 0.3 s of
    client time for 80 chunks)."""
    from dask._task_spec import Task, TaskRef
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    rows = [key[0] for key in X.__dask_keys__()]  # X has one column chunk
    graph = X.__dask_graph__()
    constants = [dask.delayed(value, pure=True) for value in shared]
    refs = [TaskRef(c.key) for c in constants]
    reads = dict(graph.layers[X.name]) if X.name in graph.layers else {}
    nested = all(isinstance(reads.get(row), Task) for row in rows)
    assert name.startswith(CHUNK_TASK_PREFIXES), name
    layer = {
        (name, first, stop): Task(
            (name, first, stop), fn, *refs, *(() if own is None else own[i]),
            *(reads[row] if nested else TaskRef(row) for row in rows[first:stop]),
        )  # fmt: skip
        for i, (first, stop) in enumerate(groups)
    }
    below = graph.dependencies[X.name] if nested else {X.name}
    layers = {n: g for n, g in graph.layers.items() if not (nested and n == X.name)}
    dependencies = {n: set(graph.dependencies[n]) for n in layers}
    for c in constants:
        layers.update(c.__dask_graph__().layers)
        dependencies.update(c.__dask_graph__().dependencies)
    layers[name] = layer
    dependencies[name] = set(below) | {c.key for c in constants}
    full = HighLevelGraph(layers, dependencies)
    return [Delayed(key, full, layer=name) for key in layer]


def map_reduce(name: str, fn: Callable, chunk_args: Sequence[tuple], combine: Callable):
    """``combine`` of ``fn(*args)`` over the chunks' argument tuples: one named task per chunk
    (``<name>-<i>``) and a tree reduction, computed at once."""
    partial = [_delayed(fn)(*args, dask_key_name=f"{name}-{i}") for i, args in enumerate(chunk_args)]
    return compute(tree_reduce(partial, combine, name))[0]


class SummaryPass(NamedTuple):
    """What one summarising pass over the data returns."""

    summary: ClusterSummary  #: the microclusters (``n_rows``: the rows read, NaN/inf rows included)
    n_nonfinite: int  #: rows with NaN or inf, left out of the summary
    #: each microcluster's member row nearest to its mean, in the data's dtype: rows the label pass will route
    representatives: np.ndarray | None = None


def _chunk_microclusters(rows_per_microcluster: float, max_per_chunk: int, seed: int, *blocks: np.ndarray):
    """Microclusters of consecutive row chunks (``blocks``):
    ``(counts, means, spread, representatives, rows, rows with NaN/inf)``."""
    x = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
    n = x.shape[0]
    n_nonfinite = 0
    if not np.isfinite(x.sum()):  # a NaN or inf makes the sum so (an overflow of finite values only may)
        finite = np.isfinite(x).all(axis=1)
        n_nonfinite = int(n - finite.sum())
        x = x[finite]
    k = min(int(np.ceil(x.shape[0] / rows_per_microcluster)), max_per_chunk)
    counts, means, spread, representatives = microclusters(x, k, seed, representatives=True)
    return counts, means, spread, representatives, n, n_nonfinite


def _concat_summaries(*parts):
    """Chunk summaries combined: their arrays concatenated, their counts added."""
    return tuple(
        np.concatenate([p[j] for p in parts]) if isinstance(parts[0][j], np.ndarray) else sum(p[j] for p in parts)
        for j in range(len(parts[0]))
    )


#: A partial summary (of a share s of the rows) is merged down to ``max(MIN_PART_BUDGET, 2 s budget)``
#: microclusters in the tree reduction, and the whole to ``budget``: each merge has a few times as many
#: microclusters as it keeps, so its cost stays that of a few products of their means, wherever it happens.
MIN_PART_BUDGET = 256


def _merge_summaries(n_rows: int, budget: int | None, seed: int, *parts):
    """Chunk summaries combined: arrays concatenated, counts added, and (with a ``budget``) the microclusters
    merged down to the part's share of it (:data:`MIN_PART_BUDGET`, :func:`merge_microclusters`)."""
    counts, means, spread, representatives, rows, nonfinite = _concat_summaries(*parts)
    if budget is not None:
        cap = budget if rows >= n_rows else max(MIN_PART_BUDGET, int(np.ceil(2 * budget * rows / n_rows)))
        if counts.size > cap:
            counts, means, spread, nearest = merge_microclusters(counts, means, spread, cap, seed + rows)
            representatives = representatives[nearest]
    return counts, means, spread, representatives, rows, nonfinite


#: Summary mode reads row chunks smaller than ``rows_per_microcluster * max_per_chunk`` rows in groups of
#: consecutive chunks of at least that many rows (and of at most this many bytes, or the largest chunk's):
#: a chunk of fewer than about twice ``rows_per_microcluster`` rows gets one or two microclusters, which then
#: average rows of different clusters (a microcluster between two groups, that no row lies near). With a
#: microcluster budget, chunks are grouped up to ``SUMMARY_BLOCK_ROWS`` rows too, while at least twice the
#: budget's microclusters are left: each task's k-means then costs a small share of its reading time.
SUMMARY_BLOCK_BYTES = 32 * 2**20
SUMMARY_BLOCK_ROWS = 100_000


def summary_min_rows(n_rows: int, rows_per_microcluster: float, max_per_chunk: int, budget: int | None) -> int:
    """Fewest rows a task of the summarising pass summarises (see :data:`SUMMARY_BLOCK_ROWS`)."""
    least = int(np.ceil(rows_per_microcluster * max_per_chunk))
    if budget is None:
        return least
    return max(least, min(SUMMARY_BLOCK_ROWS, int(n_rows * max_per_chunk / (2 * budget))))


def summary_blocks(chunks: Sequence[int], min_rows: int, row_bytes: int) -> tuple[int, ...]:
    """Row chunking of the summarising pass: consecutive chunks grouped until a group holds ``min_rows`` rows,
    within ``max(SUMMARY_BLOCK_BYTES, largest chunk)`` bytes; a short last group joins the one before. Chunks that
    all hold ``min_rows`` rows but the last (the chunking of in-memory input) are kept as they are."""
    if all(rows >= min_rows for rows in chunks[:-1]):
        return tuple(chunks)
    cap = max(SUMMARY_BLOCK_BYTES // max(row_bytes, 1), max(chunks, default=0))
    groups: list[int] = []
    current = 0
    for rows in chunks:
        if current and (current >= min_rows or current + rows > cap):
            groups.append(current)
            current = 0
        current += rows
    if current:
        if groups and current < min_rows and groups[-1] + current <= cap:
            groups[-1] += current
        else:
            groups.append(current)
    return tuple(groups)


class ChunkedData:
    """Row-chunked data behind a Dask array (the scale-out backend).

    Parameters
    ----------
    X : dask.array.Array
        Row-chunked array (see :func:`as_dask_array`).
    """

    def __init__(self, X: da.Array):
        self.X = X
        self.n_samples, self.n_features = X.shape
        self._token = dask.base.tokenize(X)[:8]

    def summarise(
        self, rows_per_microcluster: float, max_per_chunk: int, seed: int = 0, budget: int | None = None
    ) -> SummaryPass:
        """One pass: chunk-local k-means microclusters, each with its member row nearest to its mean, and a count
        of rows with NaN/inf; with a ``budget``, at most that many microclusters, merged on the workers.

        Each task gets ``min(ceil(rows / rows_per_microcluster), max_per_chunk)`` microclusters of one chunk or of
        a group of consecutive chunks (:func:`summary_min_rows`, :func:`summary_blocks`), read by the task itself.
        The tree reduction that combines the tasks' summaries merges them down to the budget
        (:func:`_merge_summaries`).
        """
        chunks = self.X.chunks[0]
        min_rows = summary_min_rows(sum(chunks), rows_per_microcluster, max_per_chunk, budget)
        groups = summary_blocks(chunks, min_rows, self.n_features * self.X.itemsize)
        bounds, first = [], 0
        for rows in groups:  # groups are unions of consecutive chunks (a chunk larger than a group: itself)
            stop, covered = first, 0
            while covered < rows:
                covered += chunks[stop]
                stop += 1
            bounds.append((first, stop))
            first = stop
        name = f"lowdens-summarise-{self._token}"
        seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=len(groups))
        shared = (rows_per_microcluster, max_per_chunk)
        parts = chunk_tasks(name, self.X, _chunk_microclusters, bounds, shared, [(int(s),) for s in seeds])
        combine = functools.partial(_merge_summaries, sum(chunks), budget, int(seed))
        counts, means, spread, representatives, n_rows, n_nonfinite = compute(tree_reduce(parts, combine, name))[0]
        summary = ClusterSummary(
            np.ascontiguousarray(means, dtype=np.float64),
            np.ascontiguousarray(counts, dtype=np.float64),
            np.ascontiguousarray(spread / means.shape[1], dtype=np.float64),
            int(n_rows),
        )
        return SummaryPass(summary, int(n_nonfinite), representatives)

    def label_rows(self, labeler: Callable, *args, labels_nonfinite: bool = False, out=None):
        """Lazy int64 labels with X's row chunks: ``labeler(rows, *args)`` on each chunk's finite rows,
        -1 for rows with NaN or inf. ``labeler`` and ``args`` must be picklable (they go to workers).

        With ``labels_nonfinite=True`` the labeller gets each whole chunk as it was read and labels the rows
        with NaN or inf -1 itself (no finiteness scan or copy of the chunk here).

        With ``out`` (a zarr array of X's rows whose chunks are X's row chunks) the labels are written there
        instead: the delayed tasks, one per chunk, each labelling its chunk and writing the labels to the chunk's
        rows in ``out``'s dtype (route and write in one task; no labels come back)."""
        task = labeler if labels_nonfinite else functools.partial(_label_chunk, labeler)
        token = dask.base.tokenize(self.X, labeler, *args, None if out is None else str(out.store_path))
        if out is None:
            return self.X.map_blocks(task, *args, drop_axis=1, dtype=np.int64, name=f"lowdens-route-{token}")
        starts = np.cumsum((0,) + self.X.chunks[0][:-1])
        groups = [(i, i + 1) for i in range(len(starts))]
        name = f"lowdens-write-labels-{token}"
        return chunk_tasks(name, self.X, _write_label_chunk, groups, (out, task, args), [(int(s),) for s in starts])


def _write_label_chunk(out, task: Callable, args: tuple, start: int, x: np.ndarray) -> None:
    """Label a chunk and write the labels to its rows of the zarr array ``out`` (a region write)."""
    out[start : start + x.shape[0]] = task(x, *args).astype(out.dtype, copy=False)


#: Rows labelled at once: the labeller's working copies (float64 rows, node subsets) stay this small
#: whatever the chunk size.
LABEL_BLOCK = 65_536


def _label_chunk(labeler: Callable, x: np.ndarray, *args) -> np.ndarray:
    out = np.full(x.shape[0], -1, dtype=np.int64)
    for start in range(0, x.shape[0], LABEL_BLOCK):
        block = x[start : start + LABEL_BLOCK]
        labels = out[start : start + block.shape[0]]
        finite = np.isfinite(block).all(axis=1)
        if finite.all():
            labels[:] = labeler(block, *args)
        elif finite.any():
            labels[finite] = labeler(block[finite], *args)
    return out


def _node_rows(x: np.ndarray, path: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The finite rows of a chunk (as float64) on the given sides of the path's splits, and their mask.

    A path entry is ``(v, b, side)`` for a hyperplane, or ``(router, side)`` for any split rule (an object
    whose ``side(rows)`` is True for the rows of side 1)."""
    keep = np.isfinite(x).all(axis=1)
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


def _apply_to_block(fn: Callable, x: np.ndarray, path: tuple, args: tuple):
    large_allocations_from_the_heap()
    return fn(x, path, *args)


def _chunk_stats(x: np.ndarray, path: tuple):
    rows, _ = _node_rows(x, path)
    return np.float64(rows.shape[0]), rows.sum(axis=0), int(x.shape[0] - np.isfinite(x).all(axis=1).sum())


def _chunk_node_microclusters(x: np.ndarray, path: tuple, rows_per_microcluster: float, max_per_chunk: int, seed):
    rows, _ = _node_rows(x, path)
    k = min(int(np.ceil(rows.shape[0] / rows_per_microcluster)), max_per_chunk)
    counts, means, spread = microclusters(rows, k, seed)
    return counts, means, spread, rows.shape[0], 0


def _chunk_weight_below(x: np.ndarray, path: tuple, v: np.ndarray, b: float) -> float:
    rows, _ = _node_rows(x, path)
    return float((rows @ v < b).sum())


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


def _chunk_scatter(x: np.ndarray, path: tuple, mean: np.ndarray) -> np.ndarray:
    rows, _ = _node_rows(x, path)
    rows = rows - mean
    return rows.T @ rows


def _chunk_project(x: np.ndarray, path: tuple, U: np.ndarray, offset: np.ndarray):
    large_allocations_from_the_heap()
    rows, _ = _node_rows(x, path)
    return np.ascontiguousarray((rows @ U - offset).T), np.ones(rows.shape[0])


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
            _delayed(_chunk_project)(b, path, U, offset, dask_key_name=f"{self._name}-{i}")
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


class PassCounter:
    """Passes over a chunked array's rows (each reads every chunk once), shared by a node and its descendants:
    ``evaluation`` counts those of the pursuit's objective evaluations (``X @ V`` and ``X.T @ G``), ``total``
    all of them (node statistics, gathers and summarising passes too)."""

    def __init__(self):
        self.total = 0
        self.evaluation = 0

    def add(self, passes: int = 1, evaluation: bool = False) -> None:
        self.total += passes
        if evaluation:
            self.evaluation += passes


def _gather_node_rows(path: tuple, *blocks) -> InMemoryData:
    """The node's finite rows of every chunk, in row order, as float64 rows in memory (a task on one worker)."""
    large_allocations_from_the_heap()
    return InMemoryData(np.concatenate([_node_rows(x, path)[0] for x in blocks]))


#: glibc's mallopt parameters M_TRIM_THRESHOLD and M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Freed heap kept for reuse: at most this, and at most 1/16 of the worker's memory limit.
_KEEP_FREED_BYTES = 256 * 2**20


@functools.cache
def large_allocations_from_the_heap() -> bool:
    """Let glibc serve large arrays from the heap and keep some freed heap for reuse (once per process).

    Dask's workers start with ``MALLOC_TRIM_THRESHOLD_=65536``, which also freezes glibc's mmap threshold at
    128 KiB: every array above that is mapped and unmapped, and its pages faulted in again, on each allocation.
    An in-memory pursuit allocates a few arrays of n floats per objective evaluation; on a worker that doubled
    the time of a split (measured: 5.1 s against 2.3 s at n = 200,000). The freed heap kept is at most 256 MB
    and 1/16 of the worker's memory limit (a quarter of that for the mmap threshold): memory kept for reuse
    still counts against the limit, and a worker over Dask's pause threshold runs no task. Returns whether the
    settings were made (glibc only)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        settings = zip((_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD), malloc_thresholds(_worker_memory_limit()))
        return all(libc.mallopt(param, value) == 1 for param, value in settings)
    except (OSError, AttributeError):  # not glibc
        return False


def malloc_thresholds(memory_limit: float | None) -> tuple[int, int]:
    """``(trim threshold, mmap threshold)`` in bytes for a worker with this memory limit (None: no limit): the
    freed heap kept is 256 MB and at most 1/16 of the limit, the mmap threshold a quarter of that (128 KiB at
    least)."""
    keep = _KEEP_FREED_BYTES if not memory_limit else int(min(_KEEP_FREED_BYTES, memory_limit / 16))
    return keep, max(keep // 4, 128 * 2**10)


def _client():
    """This process's distributed client, or None. Without ``distributed`` imported there is none, and importing
    it only to find that out costs about a second."""
    distributed = sys.modules.get("distributed")
    try:
        return None if distributed is None else distributed.get_client()
    except ValueError:
        return None


def _worker_memory_limit() -> float | None:
    """The memory limit of the Dask worker this runs on, or None (no worker, or no limit)."""
    distributed = sys.modules.get("distributed")
    try:
        return None if distributed is None else distributed.get_worker().memory_manager.memory_limit or None
    except (ValueError, AttributeError):
        return None


def default_max_node_bytes() -> float:
    """A quarter of the smallest worker's memory limit (of the machine's memory without a distributed client):
    the in-memory fit of a node holds its rows, a centred copy and a few vectors per row."""
    client = _client()
    if client is not None:
        limits = [w["memory_limit"] for w in client.scheduler_info()["workers"].values()]
        limits = [limit for limit in limits if limit]
        if limits:
            return min(limits) / 4
    try:
        import psutil

        return psutil.virtual_memory().total / 4
    except ImportError:  # pragma: no cover - psutil comes with distributed
        return 2.0**30


def task_slots() -> int:
    """Tasks that run at once where ``dask.compute`` sends them: the worker threads of the distributed client,
    or this machine's cores for Dask's local schedulers."""
    client = _client()
    if client is None:
        return os.cpu_count() or 1
    return max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))


def _as_literals(*values) -> list:
    """Each value as one delayed literal, so the graph of a pass does not traverse it once per chunk."""
    return [dask.delayed(v, pure=True, traverse=False) for v in values]


class ChunkedNode:
    """The rows of a row-chunked array that lie on given sides of a path of hyperplanes (a tree node),
    for exact mode: every operation is a pass over the array's chunks, and rows with NaN/inf are left out.

    Provides the data-layer operations of :class:`~lowdens_dask.backend.InMemoryData` that projection
    pursuit uses (mean, leading eigenvectors, total weight, split), with projections held in chunks
    (:class:`Projections`) instead of whole arrays. All rows have weight 1.

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

    def __init__(self, X: da.Array, path: tuple = (), counter: PassCounter | None = None):
        self.X = X
        self.path = tuple(path)
        self.counter = PassCounter() if counter is None else counter
        self.n_features = X.shape[1]
        self.blocks = X.to_delayed().ravel()
        self.token = dask.base.tokenize(X, self.path)[:12]
        self._stats = None
        self._scatter = None

    def _pass(self, fn: Callable, *args):
        self.counter.add()
        name = f"lowdens-{fn.__name__.strip('_')}-{dask.base.tokenize(self.token, *args)[:12]}"
        path, args = _as_literals(self.path, args)
        return map_reduce(name, _apply_to_block, [(fn, b, path, args) for b in self.blocks], _sum)

    def _row_stats(self):
        if self._stats is None:
            self._stats = self._pass(_chunk_stats)
        return self._stats

    @property
    def n_samples(self) -> int:
        """Rows in the node (finite rows only)."""
        return int(self._row_stats()[0])

    @property
    def total_weight(self) -> float:
        return float(self._row_stats()[0])

    @property
    def n_nonfinite(self) -> int:
        """Rows of the whole array with NaN or inf (found by the node's first pass)."""
        return self._row_stats()[2]

    def mean(self) -> np.ndarray:
        count, total, _ = self._row_stats()
        return total / count

    def scatter_matrix(self) -> np.ndarray:
        """``sum_i (x_i - mean)(x_i - mean)^T`` over the node's rows (one pass)."""
        if self._scatter is None:
            self._scatter = self._pass(_chunk_scatter, self.mean())
        return self._scatter

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

    def summarise(self, rows_per_microcluster: float, max_per_chunk: int, seed: int = 0) -> InMemoryData:
        """One pass: chunk-local k-means microclusters of the node's rows (as :meth:`ChunkedData.summarise`),
        their means weighted by row counts, with per-dimension spread."""
        seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=len(self.blocks))
        self.counter.add()
        name = f"lowdens-node-summarise-{dask.base.tokenize(self.token, rows_per_microcluster, seed)[:12]}"
        (path,) = _as_literals(self.path)
        chunks = [
            (_chunk_node_microclusters, b, path, (rows_per_microcluster, max_per_chunk, int(s)))
            for b, s in zip(self.blocks, seeds)
        ]
        counts, means, spread, _, _ = map_reduce(name, _apply_to_block, chunks, _concat_summaries)
        return ClusterSummary(means, counts, spread / self.n_features, int(round(float(counts.sum()))))

    def partition_by(self, router) -> tuple[ChunkedNode, ChunkedNode]:
        """The rows on side 0 and on side 1 of a split rule (``router.side(rows)`` True for side 1)."""
        return tuple(ChunkedNode(self.X, self.path + ((router, side),), self.counter) for side in (0, 1))

    def partition(self, v: np.ndarray, b: float) -> tuple[ChunkedNode, ChunkedNode]:
        """The rows with ``x @ v < b`` and those with ``x @ v >= b``."""
        v = np.asarray(v, dtype=np.float64)
        return tuple(ChunkedNode(self.X, self.path + ((v, float(b), side),), self.counter) for side in (0, 1))

    @property
    def nbytes(self) -> int:
        """Bytes of the node's rows as float64 in memory."""
        return self.n_samples * self.n_features * 8

    def gathered(self):
        """A Dask task holding the node's rows in memory (:class:`InMemoryData`, in row order) on one worker:
        tasks that take it run the in-memory path there (one pass)."""
        self.counter.add()
        (path,) = _as_literals(self.path)
        return _delayed(_gather_node_rows)(path, *self.blocks, dask_key_name=f"lowdens-node-rows-{self.token}")
