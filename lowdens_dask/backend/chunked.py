"""Dask backend of the data layer: row-chunked arrays from Dask or zarr.

Every operation is a map over row chunks followed by a tree reduction of small partial results, so
no chunk is ever needed on the client and no code assumes that workers share memory with it (all
task inputs are plain arrays or JSON-able dicts). Row chunks follow the zarr chunks (or the shards
of a sharded array) for reads, and label writes use the same row chunks.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import dask
import dask.array as da
import numpy as np
import zarr

from ..kernels.summaries import microclusters
from .memory import InMemoryData

#: Partial results are combined in groups of this size (the fan-in of the tree reduction).
FAN_IN = 8


def as_dask_array(X: Any, *, array_name: str | None = None, storage_options: dict | None = None) -> da.Array:
    """A 2-D, row-chunked Dask array for a Dask array, a zarr array, or a zarr path / fsspec URL.

    For zarr input the row chunks are the store's chunks, or its shards when it is sharded; the
    feature axis is one chunk. ``array_name`` selects an array inside a zarr group.
    """
    if isinstance(X, da.Array):
        arr = X
    else:
        if isinstance(X, (str, os.PathLike)):
            node = zarr.open(store=os.fspath(X), mode="r", storage_options=storage_options)
            if isinstance(node, zarr.Group):
                names = sorted(name for name, _ in node.arrays())
                if array_name is None:
                    if len(names) != 1:
                        raise ValueError(
                            f"The zarr group at {X!r} holds arrays {names}; pass array_name to choose one."
                        )
                    array_name = names[0]
                if array_name not in names:
                    raise ValueError(f"The zarr group at {X!r} has no array {array_name!r}; it holds {names}.")
                node = node[array_name]
            X = node
        if not isinstance(X, zarr.Array):
            raise TypeError(f"Expected a dask array, a zarr array or a zarr path; got {type(X).__name__}.")
        if X.ndim != 2:
            raise ValueError(f"The zarr array must be 2-D (rows, features); it has shape {X.shape}.")
        rows = (X.shards or X.chunks)[0]
        arr = da.from_zarr(X, chunks=(rows, X.shape[1]))
    if arr.ndim != 2:
        raise ValueError(f"X must be 2-D (rows, features); got shape {arr.shape}.")
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"X must hold real numbers; its dtype is {arr.dtype}.")
    if any(np.isnan(c) for c in arr.chunks[0]):
        raise ValueError("X has unknown chunk sizes; call X.compute_chunk_sizes() first.")
    if len(arr.chunks[1]) > 1:
        arr = arr.rechunk({1: arr.shape[1]})
    return arr


def tree_reduce(parts: Sequence, combine: Callable, name: str):
    """Combine delayed partial results pairwise-by-groups into one delayed result (named tasks)."""
    level = 0
    parts = list(parts)
    while len(parts) > 1:
        parts = [
            dask.delayed(combine, pure=True)(*parts[i : i + FAN_IN], dask_key_name=f"{name}-combine-{level}-{i}")
            for i in range(0, len(parts), FAN_IN)
        ]
        level += 1
    return parts[0]


class Summary(NamedTuple):
    """What one summarising pass over the data returns."""

    data: InMemoryData  #: microcluster means weighted by row counts, with per-dimension spread
    n_rows: int  #: rows read
    n_nonfinite: int  #: rows with NaN or inf, left out of the summary


def _chunk_microclusters(x: np.ndarray, rows_per_microcluster: float, max_per_chunk: int, seed: int):
    finite = np.isfinite(x).all(axis=1)
    x = x[finite]
    k = min(int(np.ceil(x.shape[0] / rows_per_microcluster)), max_per_chunk)
    counts, means, spread = microclusters(x, k, seed)
    return counts, means, spread, finite.size, int(finite.size - finite.sum())


def _concat_summaries(*parts):
    arrays = tuple(np.concatenate([p[j] for p in parts]) for j in range(3))
    return (*arrays, sum(p[3] for p in parts), sum(p[4] for p in parts))


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

    def summarise(self, rows_per_microcluster: float, max_per_chunk: int, seed: int = 0) -> Summary:
        """One pass: chunk-local k-means microclusters and a count of rows with NaN/inf.

        Each chunk gets ``min(ceil(rows / rows_per_microcluster), max_per_chunk)`` microclusters.
        """
        rng = np.random.default_rng(seed)
        seeds = rng.integers(0, 2**31 - 1, size=self.X.numblocks[0])
        blocks = self.X.to_delayed().ravel()
        parts = [
            dask.delayed(_chunk_microclusters, pure=True)(
                block,
                rows_per_microcluster,
                max_per_chunk,
                int(s),
                dask_key_name=f"lowdens-summarise-{self._token}-{i}",
            )
            for i, (block, s) in enumerate(zip(blocks, seeds))
        ]
        total = tree_reduce(parts, _concat_summaries, f"lowdens-summarise-{self._token}")
        counts, means, spread, n_rows, n_nonfinite = dask.compute(total)[0]
        return Summary(InMemoryData(means, counts, spread / means.shape[1]), int(n_rows), int(n_nonfinite))

    def label_rows(self, labeler: Callable, *args) -> da.Array:
        """Lazy int64 labels with X's row chunks: ``labeler(rows, *args)`` on each chunk's finite rows,
        -1 for rows with NaN or inf. ``labeler`` and ``args`` must be picklable (they go to workers)."""
        name = f"lowdens-route-{dask.base.tokenize(self.X, labeler, *args)}"
        return self.X.map_blocks(_label_chunk, labeler, *args, drop_axis=1, dtype=np.int64, name=name)


def _label_chunk(x: np.ndarray, labeler: Callable, *args) -> np.ndarray:
    out = np.full(x.shape[0], -1, dtype=np.int64)
    finite = np.isfinite(x).all(axis=1)
    if finite.any():
        out[finite] = labeler(x[finite], *args)
    return out
