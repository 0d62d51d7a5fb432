"""Passes over row chunks: tasks that read their chunks themselves (:func:`chunk_tasks`), map and tree-reduce
(:func:`map_reduce`, :func:`tree_reduce`), and the count of the passes a fit makes (:class:`PassCounter`)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import dask
import dask.array as da

from .workers import compute

#: Partial results are combined in groups of this size (the fan-in of the tree reduction).
FAN_IN = 8


@functools.cache
def delayed_task(fn: Callable):
    """``dask.delayed(fn)``, made once per function (it tokenises the function)."""
    return dask.delayed(fn, pure=True)


def tree_reduce(parts: Sequence, combine: Callable, name: str):
    """Combine delayed partial results pairwise-by-groups into one delayed result (named tasks)."""
    level = 0
    parts = list(parts)
    while len(parts) > 1:
        parts = [
            delayed_task(combine)(*parts[i : i + FAN_IN], dask_key_name=f"{name}-combine-{level}-{i}")
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
    name: str,
    X: da.Array,
    fn: Callable,
    groups: Sequence[tuple[int, int]],
    shared: tuple = (),
    own=None,
    weights: da.Array | None = None,
) -> list:
    """One delayed task per group ``(first, stop)`` of consecutive row chunks of X: ``fn(*shared, *own[i],
    *chunks)``, with key ``(name, first, stop)`` (``name`` starts with one of :data:`CHUNK_TASK_PREFIXES`), in one
    graph layer. With ``weights`` (a 1-D array with X's row chunks), the same chunks of it follow X's:
    ``fn(*shared, *own[i], *chunks, *weight_chunks)``.

    Each task reads its chunks itself: the tasks of X's last layer (the chunk reads of a zarr store) are nested in
    it, so a chunk is never a task result of its own that a scheduler may place on another worker than the task
    that needs it. ``shared`` (parameters, a tree, a zarr array) enter the graph once, as keys of their own, and
    ``own[i]`` (small literals) in task i: the graph's size and the time to build and ship it grow with the chunks
    only (a delayed call per chunk embedded each argument in each task, and merged X's graph into each: 0.3 s of
    client time for 80 chunks)."""
    from dask._task_spec import Task, TaskRef
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    assert name.startswith(CHUNK_TASK_PREFIXES), name
    arrays = [X] if weights is None else [X, weights]
    if weights is not None and weights.chunks[0] != X.chunks[0]:
        raise ValueError("chunk_tasks: the weights' row chunks differ from X's.")
    graph = HighLevelGraph.merge(*(a.__dask_graph__() for a in arrays)) if weights is not None else X.__dask_graph__()
    constants = [dask.delayed(value, pure=True) for value in shared]
    refs = [TaskRef(c.key) for c in constants]
    # a layer another layer reads (the weights taken from X's columns) stays a layer of its own
    needed = {dep for n, deps in graph.dependencies.items() if n not in (a.name for a in arrays) for dep in deps}
    needed |= {dep for a in arrays for dep in graph.dependencies.get(a.name, ()) if dep in (b.name for b in arrays)}
    readers = []  # per array: its chunk keys, and a chunk's read nested in the task, or a reference to it
    for a in arrays:
        keys = [key[0] if isinstance(key, list) else key for key in a.__dask_keys__()]  # one column chunk
        reads = dict(graph.layers[a.name]) if a.name in graph.layers else {}
        nested = (
            a.name not in needed and len(reads) == len(keys) and all(isinstance(reads.get(key), Task) for key in keys)
        )
        readers.append((a.name, keys, reads, nested))

    def chunk_reads(first: int, stop: int) -> list:
        return [
            reads[key] if nested else TaskRef(key) for _, keys, reads, nested in readers for key in keys[first:stop]
        ]

    layer = {
        (name, first, stop): Task(
            (name, first, stop), fn, *refs, *(() if own is None else own[i]), *chunk_reads(first, stop)
        )
        for i, (first, stop) in enumerate(groups)
    }
    inlined = {a_name for a_name, _, _, nested in readers if nested}
    below = set()
    for a_name, _, _, nested in readers:
        below |= set(graph.dependencies[a_name]) if nested else {a_name}
    below -= inlined
    layers = {n: g for n, g in graph.layers.items() if n not in inlined}
    dependencies = {n: set(graph.dependencies[n]) - inlined for n in layers}
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
    partial = [delayed_task(fn)(*args, dask_key_name=f"{name}-{i}") for i, args in enumerate(chunk_args)]
    return compute(tree_reduce(partial, combine, name))[0]


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
