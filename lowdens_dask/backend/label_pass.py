"""The label pass: every row chunk routed by a labeller, lazily, or written to a zarr array by the task that
routes the chunk."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import functools
from collections.abc import Callable

import dask
import dask.array as da
import numpy as np

from .passes import chunk_tasks


def label_rows(X: da.Array, labeler: Callable, *args, labels_nonfinite: bool = False, out=None):
    """Lazy int64 labels with X's row chunks: ``labeler(rows, *args)`` on each chunk's finite rows,
    -1 for rows with NaN or inf. ``labeler`` and ``args`` must be picklable (they go to workers).

    With ``labels_nonfinite=True`` the labeller gets each whole chunk as it was read and labels the rows
    with NaN or inf -1 itself (no finiteness scan or copy of the chunk here).

    With ``out`` (a zarr array of X's rows whose chunks are X's row chunks) the labels are written there
    instead: the delayed tasks, one per chunk, each labelling its chunk and writing the labels to the chunk's
    rows in ``out``'s dtype (route and write in one task; no labels come back)."""
    task = labeler if labels_nonfinite else functools.partial(_label_chunk, labeler)
    token = dask.base.tokenize(X, labeler, *args, None if out is None else str(out.store_path))
    if out is None:
        return X.map_blocks(task, *args, drop_axis=1, dtype=np.int64, name=f"lowdens-route-{token}")
    starts = np.cumsum((0,) + X.chunks[0][:-1])
    groups = [(i, i + 1) for i in range(len(starts))]
    name = f"lowdens-write-labels-{token}"
    return chunk_tasks(name, X, _write_label_chunk, groups, (out, task, args), [(int(s),) for s in starts])


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
