"""The inputs of the pipelines: a 2-D array of rows from a zarr array, ``.npy``, ``.csv`` or parquet, as a
row-chunked Dask array; true labels from the same formats; and labels saved in the format an output path's
suffix names.

Zarr and ``.npy`` are read chunk by chunk wherever the chunks are computed, so they scale; a ``.csv`` file is
parsed in the reading process (use zarr or parquet for data beyond one machine's memory); parquet is read per
row group through dask.dataframe.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os

import dask.array as da
import numpy as np
from dask.base import tokenize

from lowdens_dask.backend import as_dask_array

#: Rows per chunk for formats that have no chunks of their own (``.npy``, ``.csv``).
DEFAULT_ROW_CHUNK_BYTES = 64 * 2**20


def input_format(path: str) -> str:
    """``"npy"``, ``"csv"``, ``"parquet"`` or ``"zarr"`` (anything else: a path zarr opens), from the suffix."""
    name = os.fspath(path).rstrip("/").lower()
    if name.endswith(".npy"):
        return "npy"
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    return "zarr"


def _row_chunks(n_rows: int, n_cols: int, itemsize: int) -> int:
    return max(1, min(n_rows, DEFAULT_ROW_CHUNK_BYTES // max(1, n_cols * itemsize)))


class _NpyRows:
    """Rows of a ``.npy`` file, memory-mapped on first access in the process that reads them (so a task
    carries the path, not the data)."""

    def __init__(self, path: str):
        self.path = path
        header = np.load(path, mmap_mode="r")
        self.shape, self.dtype, self.ndim = header.shape, header.dtype, header.ndim
        self._mmap = None

    def __getitem__(self, key):
        if self._mmap is None:
            self._mmap = np.load(self.path, mmap_mode="r")
        return np.asarray(self._mmap[key])

    def __getstate__(self):
        return {**self.__dict__, "_mmap": None}


def _check_numeric_columns(frame, path: str):
    """``frame`` (pandas or dask) when every column is numeric; a non-numeric column is an error."""
    import pandas as pd

    wrong = [str(c) for c, t in frame.dtypes.items() if not pd.api.types.is_numeric_dtype(t) or t == bool]
    if wrong:
        raise ValueError(f"{path}: the columns {wrong} are not numeric; every column is a feature.")
    return frame


def open_input(path: str | os.PathLike, storage_options: dict | None = None) -> da.Array:
    """The rows at ``path`` as a 2-D Dask array: a zarr array (a path zarr opens as a 2-D array, or
    ``group.zarr/X``), ``.npy``, ``.csv`` (a header line, every column a numeric feature) or parquet (every
    column a numeric feature). A missing file, a wrong shape or dtype, or an empty array is a ``ValueError``
    (or ``FileNotFoundError``) that names the path."""
    path = os.fspath(path)
    kind = input_format(path)
    if kind == "zarr":
        X = as_dask_array(path, storage_options=storage_options)
    elif kind == "npy":
        if not os.path.exists(path):
            raise FileNotFoundError(f"No such file: {path!r}.")
        rows = _NpyRows(path)
        if rows.ndim != 2:
            raise ValueError(f"{path}: expected a 2-D array (rows, features); it has shape {rows.shape}.")
        chunks = (_row_chunks(rows.shape[0], rows.shape[1], rows.dtype.itemsize), rows.shape[1])
        X = da.from_array(rows, chunks=chunks, name=f"from-npy-{_file_token(path)}", asarray=False)
    elif kind == "csv":
        import pandas as pd

        frame = _check_numeric_columns(pd.read_csv(path, storage_options=storage_options), path)
        values = frame.to_numpy()
        X = da.from_array(values, chunks=(_row_chunks(*values.shape, values.dtype.itemsize), values.shape[1]))
    else:
        import dask.dataframe as dd

        frame = _check_numeric_columns(dd.read_parquet(path, storage_options=storage_options), path)
        X = frame.to_dask_array(lengths=True)
    X = as_dask_array(X)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{path}: the array is empty (shape {X.shape}).")
    return X


def _file_token(path: str) -> str:
    stat = os.stat(path)
    return tokenize(os.path.abspath(path), stat.st_size, stat.st_mtime_ns)


def load_labels(path: str | os.PathLike, storage_options: dict | None = None) -> np.ndarray:
    """True labels from a 1-D zarr array or ``.npy`` file, or from a ``.csv``/parquet file's only column (or
    its column named ``label``)."""
    path = os.fspath(path)
    kind = input_format(path)
    if kind in ("csv", "parquet"):
        import pandas as pd

        read = pd.read_csv if kind == "csv" else pd.read_parquet
        frame = read(path, storage_options=storage_options)
        if "label" in frame.columns:
            return frame["label"].to_numpy()
        if frame.shape[1] != 1:
            raise ValueError(f"{path}: expected one column of labels, or a column named 'label'.")
        return frame.iloc[:, 0].to_numpy()
    if kind == "npy":
        labels = np.load(path)
    else:
        import zarr

        labels = zarr.open_array(path, mode="r", storage_options=storage_options)[...]
    if labels.ndim != 1:
        raise ValueError(f"{path}: expected 1-D labels; the array has shape {labels.shape}.")
    return labels


def save_labels(labels: da.Array, out: str | os.PathLike, storage_options: dict | None = None) -> str:
    """Write 1-D labels to ``out`` in the format its suffix names (``.zarr``, ``.npy``, ``.csv`` with a
    ``label`` column, ``.parquet``); returns the path written."""
    out = os.fspath(out)
    name = out.rstrip("/").lower()
    if name.endswith(".zarr"):
        labels.to_zarr(out, storage_options=storage_options, overwrite=True)
    elif name.endswith(".npy"):
        np.save(out, labels.compute())
    elif name.endswith((".csv", ".parquet", ".pq")):
        import pandas as pd

        frame = pd.DataFrame({"label": labels.compute()})
        if name.endswith(".csv"):
            frame.to_csv(out, index=False, storage_options=storage_options)
        else:
            frame.to_parquet(out, index=False, storage_options=storage_options)
    else:
        raise ValueError(f"Unknown output format for {out!r}: use a .zarr, .npy, .csv or .parquet path.")
    return out
