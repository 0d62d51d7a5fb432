"""The identity of a run's input: where it is, its shape and dtype, and a cheap content fingerprint."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import hashlib
import os

import dask
import numpy as np

from .inputs import open_input

#: Row chunks read for the fingerprint: the first, the last and evenly spaced ones between.
FINGERPRINT_CHUNKS = 8


def input_identity(
    path: str | os.PathLike, storage_options: dict | None = None, header: bool | None = None, X=None
) -> dict:
    """``{"path", "shape", "dtype", "row_chunks", "fingerprint"}`` of an input (:func:`open_input`: a zarr array,
    ``.npy``, ``.csv`` or parquet; a path or an fsspec URL).

    The fingerprint is the SHA-256 of the shape, the dtype and the decoded values of at most
    ``FINGERPRINT_CHUNKS`` row chunks (the first, the last and evenly spaced ones): two runs on the same
    unchanged store agree, and a change to a sampled chunk, the shape or the dtype changes it. It reads a
    few chunks, whatever the store's size; a change confined to unsampled chunks goes unseen. ``X``: the
    input, when it is already open (``header``: see :func:`~.inputs.open_input`).
    """
    arr = open_input(path, storage_options, header=header) if X is None else X
    n_blocks = arr.numblocks[0]
    picks = sorted({int(i) for i in np.linspace(0, n_blocks - 1, min(FINGERPRINT_CHUNKS, n_blocks))})
    digest = hashlib.sha256(f"{arr.shape}|{arr.dtype.str}|{picks}".encode())
    for block in dask.compute(*[arr.blocks[i] for i in picks]):
        digest.update(np.ascontiguousarray(block).tobytes())
    return {
        "path": os.fspath(path),
        "shape": list(arr.shape),
        "dtype": arr.dtype.str,
        "row_chunks": arr.chunks[0][0],
        "fingerprint": digest.hexdigest(),
    }
