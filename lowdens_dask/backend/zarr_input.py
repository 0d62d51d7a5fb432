"""zarr input: a zarr array, a zarr path or an fsspec URL as a row-chunked Dask array, read as zarr means it.

**Missing chunks.** zarr writes no chunk whose values all equal the array's fill value (``write_empty_chunks``
is False by default), and reads a chunk that is not in the store as the fill value. A store with a block of zero
rows, or an all-False chunk, is complete although chunks are missing, while a chunk deleted by accident reads
the same way. ``as_dask_array`` tells them apart by the writer's word:

- an array whose attributes carry a lowdens **integrity manifest** (``attrs["lowdens_integrity"]``, written by
  :func:`write_integrity_manifest` right after the array is written: by lowdens_dask's own writers, such as the
  estimators' ``labels_store``, and by anyone who calls it) lists the chunks that were not written because
  they held only the fill value; any other missing chunk is damage, and a ``ValueError`` names it;
- an array without a manifest is read as zarr reads it: a missing chunk is the fill value (logged at DEBUG);
- ``missing_chunks="raise"`` requires every chunk to be present, whatever the manifest says, and
  ``missing_chunks="fill"`` checks nothing.

A manifest that no longer describes the array (its shape or chunks changed since) is ignored with a warning.

**Damaged metadata.** A ``zarr.json`` (or ``.zarray``/``.zgroup``/``.zattrs``) that is not valid JSON, as a
truncated write leaves it, raises a ``ValueError`` that names the store and says it is damaged. A chunk that
cannot be decoded raises :class:`ChunkReadError`, naming the store and the chunk.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import itertools
import json
import logging
import os
from typing import Any

import dask
import dask.array as da
import numpy as np
import zarr

from .._warnings import warn

logger = logging.getLogger(__name__)

#: The attribute of a zarr array that holds its lowdens integrity manifest.
INTEGRITY_ATTRIBUTE = "lowdens_integrity"
#: Version of the manifest's layout.
MANIFEST_VERSION = 1
#: What ``missing_chunks`` may be.
MISSING_CHUNKS = ("auto", "raise", "fill")


class ChunkReadError(OSError):
    """A chunk of a zarr store could not be read or decoded (truncated, overwritten, or a codec error)."""


def as_dask_array(
    X: Any, *, array_name: str | None = None, storage_options: dict | None = None, missing_chunks: str = "auto"
) -> da.Array:
    """A 2-D, row-chunked Dask array for a Dask array, a zarr array, or a zarr path / fsspec URL.

    For zarr input the row chunks are the store's chunks, or its shards when it is sharded; the
    feature axis is one chunk. ``array_name`` selects an array inside a zarr group.

    Missing chunks (zarr input; see the module docstring): with ``missing_chunks="auto"`` a chunk that is not in
    the store is an error when the array carries a lowdens integrity manifest that does not list it as unwritten
    (:func:`write_integrity_manifest`), and the fill value otherwise, as zarr reads it; ``"raise"`` requires every
    chunk of the grid, ``"fill"`` accepts any missing chunk as the fill value. A damaged metadata file raises a
    ``ValueError`` naming the store; a chunk that cannot be decoded raises :class:`ChunkReadError` naming the
    store and the chunk.
    """
    if missing_chunks not in MISSING_CHUNKS:
        raise ValueError(f"missing_chunks must be one of {MISSING_CHUNKS}; got {missing_chunks!r}.")
    if isinstance(X, da.Array):
        arr = X
    else:
        if isinstance(X, (str, os.PathLike)):
            X = _open_zarr_array(os.fspath(X), array_name, storage_options)
        if not isinstance(X, zarr.Array):
            raise TypeError(f"Expected a dask array, a zarr array or a zarr path; got {type(X).__name__}.")
        if X.ndim != 2:
            raise ValueError(f"The zarr array must be 2-D (rows, features); it has shape {X.shape}.")
        _check_missing_chunks(X, missing_chunks)
        rows = (X.shards or X.chunks)[0]
        reader = _CheckedZarrReader(X)
        arr = da.from_array(reader, chunks=(rows, X.shape[1]), name=f"from-zarr-{dask.base.tokenize(reader)}")
    if arr.ndim != 2:
        raise ValueError(f"X must be 2-D (rows, features); got shape {arr.shape}.")
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"X must hold real numbers; its dtype is {arr.dtype}.")
    if any(np.isnan(c) for c in arr.chunks[0]):
        raise ValueError("X has unknown chunk sizes; call X.compute_chunk_sizes() first.")
    if len(arr.chunks[1]) > 1:
        arr = arr.rechunk({1: arr.shape[1]})
    return arr


def _open_zarr_array(path: str, array_name: str | None, storage_options: dict | None) -> zarr.Array:
    try:
        return _open_node(path, array_name, storage_options)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = path if array_name is None else f"{path} (array {array_name!r})"
        raise ValueError(
            f"The zarr store {where} is damaged: a metadata file (zarr.json, or .zarray/.zgroup/.zattrs for zarr "
            f"format 2) is not valid JSON ({type(exc).__name__}: {exc}), as a write cut short leaves it. Restore "
            "the store or write it again."
        ) from exc


def _open_node(path: str, array_name: str | None, storage_options: dict | None) -> zarr.Array:
    node = zarr.open(store=path, mode="r", storage_options=storage_options)
    if not isinstance(node, zarr.Group):
        return node
    names = sorted(name for name, _ in node.arrays())
    if not names:
        raise ValueError(f"The zarr group at {path!r} holds no array.")
    if array_name is None:
        if len(names) != 1:
            raise ValueError(
                f"The zarr group at {path!r} holds several arrays, {names}; give the array's path, "
                f"for example {path.rstrip('/') + '/' + names[0]!r}."
            )
        array_name = names[0]
    if array_name not in names:
        raise ValueError(f"The zarr group at {path!r} has no array {array_name!r}; it holds {names}.")
    return node[array_name]


def _store_name(arr: zarr.Array) -> str:
    return str(arr.store_path)


def _grid_step(arr: zarr.Array) -> tuple[int, ...]:
    """The shape of the stored objects of the grid: the shards of a sharded array, else its chunks."""
    return tuple(arr.shards or arr.chunks)


def _absent_chunks(arr: zarr.Array) -> list[tuple[int, ...]]:
    """The grid coordinates of the chunks (shards) that are not in the store, in grid order (one listing)."""
    from zarr.core.array import _shards_initialized
    from zarr.core.sync import sync

    present = set(sync(_shards_initialized(arr._async_array)))
    grid = [range(-(-size // step)) for size, step in zip(arr.shape, _grid_step(arr))]
    return [c for c in itertools.product(*grid) if arr.metadata.encode_chunk_key(c) not in present]


def write_integrity_manifest(X: Any, storage_options: dict | None = None) -> dict:
    """Record in a zarr array's attributes that it was written completely: the manifest holds the array's shape,
    its chunk (shard) shape, and the chunks absent now, which zarr did not write because they held only the fill
    value. From then on :func:`as_dask_array` refuses the array when another chunk is missing (deleted or lost).

    Call it once the array's chunks are all written. ``X``: a zarr array opened for writing, or a path / fsspec
    URL of one. Returns the manifest."""
    if isinstance(X, (str, os.PathLike)):
        X = zarr.open_array(os.fspath(X), mode="r+", storage_options=storage_options)
    manifest = {
        "version": MANIFEST_VERSION,
        "shape": list(X.shape),
        "chunks": list(_grid_step(X)),
        "unwritten": [list(c) for c in _absent_chunks(X)],
    }
    X.attrs[INTEGRITY_ATTRIBUTE] = manifest
    return manifest


def _check_missing_chunks(arr: zarr.Array, missing_chunks: str) -> None:
    """Apply the missing-chunk rule of the module docstring (one listing of the store when it is checked)."""
    if missing_chunks == "fill":
        return
    manifest = arr.attrs.get(INTEGRITY_ATTRIBUTE) if missing_chunks == "auto" else None
    if manifest is not None and (
        not isinstance(manifest, dict)
        or list(manifest.get("shape", ())) != list(arr.shape)
        or list(manifest.get("chunks", ())) != list(_grid_step(arr))
    ):
        warn(
            f"The zarr array {_store_name(arr)} carries a lowdens integrity manifest for shape "
            f"{manifest.get('shape') if isinstance(manifest, dict) else '?'} and chunks "
            f"{manifest.get('chunks') if isinstance(manifest, dict) else '?'}, but has shape {list(arr.shape)} and "
            f"chunks {list(_grid_step(arr))}: it was changed since, and its missing chunks are read as the fill value. "
            "Call lowdens_dask.backend.write_integrity_manifest on it once it is complete again."
        )
        return
    if missing_chunks == "auto" and manifest is None:
        logger.debug("%s has no lowdens integrity manifest: missing chunks read as the fill value", _store_name(arr))
        return
    absent = _absent_chunks(arr)
    if manifest is not None:
        unwritten = {tuple(c) for c in manifest.get("unwritten", ())}
        absent = [c for c in absent if c not in unwritten]
    missing = sorted({c[0] for c in absent})
    if missing:
        rows = _grid_step(arr)[0]
        n_row_chunks = -(-arr.shape[0] // rows)
        spans = ", ".join(f"{i} (rows {i * rows}-{min((i + 1) * rows, arr.shape[0]) - 1})" for i in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        why = (
            "its lowdens integrity manifest says every other chunk was written"
            if manifest is not None
            else "missing_chunks='raise' requires every chunk"
        )
        raise ValueError(
            f"The zarr array {_store_name(arr)} is damaged: {len(missing)} of {n_row_chunks} row chunks missing: "
            f"{spans}{more} ({why}). zarr would read them as the fill value "
            f"({np.asarray(arr.fill_value).item()!r}). If the store is sparse on purpose, pass "
            "lowdens_dask.backend.as_dask_array(X, missing_chunks='fill') as X."
        )


class _CheckedZarrReader:
    """A zarr array for ``da.from_array`` whose read errors name the store and the row chunk."""

    def __init__(self, arr: zarr.Array):
        self.array = arr
        self.shape, self.dtype, self.ndim = arr.shape, arr.dtype, arr.ndim
        self.rows = _grid_step(arr)[0]

    def __dask_tokenize__(self):
        return ("lowdens-zarr", _store_name(self.array), self.shape, str(self.dtype), self.rows)

    def __getitem__(self, key):
        try:
            return self.array[key]
        except Exception as exc:
            rows = key[0] if isinstance(key, tuple) else key
            start = (rows.start or 0) if isinstance(rows, slice) else 0
            chunk = start // self.rows
            raise ChunkReadError(
                f"Reading row chunk {chunk} (rows from {start}) of the zarr array {_store_name(self.array)} "
                f"failed: {type(exc).__name__}: {exc}"
            ) from exc
