"""The inputs of the pipelines: a 2-D array of rows from a zarr array, ``.npy``, ``.csv`` or parquet, as a
row-chunked Dask array; true labels from the same formats; and labels saved in the format an output path's
suffix names.

Zarr and ``.npy`` are read chunk by chunk wherever the chunks are computed, so they scale; a ``.csv`` file is
parsed in the reading process (use zarr or parquet for data beyond one machine's memory); parquet is read per
row group through dask.dataframe. :func:`read_input` also says what was read (:class:`InputInfo`, whose
``str()`` is a one-line report); every input error is a one-line ``ValueError`` (``FileNotFoundError`` for a
missing path) that names the path and what was expected.

A CSV's first row is data when every field is a number, else a header (see :func:`open_input`); values may be
separated by commas, or by spaces or tabs as ``np.savetxt`` writes them without a delimiter. A header whose first
field is empty above a first column of distinct non-negative integers is pandas' ``to_csv`` with its index: that
column is the row index, not a feature. A compressed CSV cut short is an error naming it. Parquet's nullable
numbers (``Int64``, ``Float64``) are numbers, their nulls NaN; a parquet folder whose files differ in their columns
is an error naming them.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
import re
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .paths import is_url

if TYPE_CHECKING:  # Dask and the library's backend are imported where rows are read: a path is checked without them
    import dask.array as da

#: Rows per chunk for formats that have no chunks of their own (``.npy``, ``.csv``): at most this many bytes ...
DEFAULT_ROW_CHUNK_BYTES = 64 * 2**20
#: ... in at least this many chunks, of at least ``MIN_CHUNK_ROWS`` rows each. A summary-mode fit keeps at most 64
#: microclusters per chunk (``lowdens_dask``'s ``MAX_MICROCLUSTERS_PER_CHUNK``): 100,000 rows of 8 float32 columns
#: in one chunk were summarised by 64, too few for ``n_clusters="auto"`` to find five well-separated clusters
#: significant (it found one); in 16 chunks, by 1,024 (it found the five).
MIN_ROW_CHUNKS = 16
MIN_CHUNK_ROWS = 4_096


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
    spread = max(MIN_CHUNK_ROWS, -(-n_rows // MIN_ROW_CHUNKS))
    return max(1, min(n_rows, spread, DEFAULT_ROW_CHUNK_BYTES // max(1, n_cols * itemsize)))


#: What an input path may name (the end of a "expected ..." message).
_EXPECTED_INPUT = (
    "expected a zarr array, a zarr group holding one 2-D array, an array inside a group (group.zarr/X), "
    "or a .npy, .csv, .csv.gz or .parquet file"
)


@dataclass(frozen=True)
class InputInfo:
    """What :func:`read_input` read: ``format`` is ``"zarr"``, ``"npy"``, ``"csv"`` or ``"parquet"``; ``header``
    (CSV only, else ``None``) whether the first row was taken as a header; ``delimiter`` (CSV only) ``","`` or
    ``"whitespace"``; ``index`` (CSV only) whether a first column was the row index pandas writes, and left out.
    ``str()`` is a one-line report, e.g. ``"x.npy: 200,000 rows × 10 columns, float32 (npy)"``."""

    path: str
    format: str
    n_rows: int
    n_columns: int
    dtype: str
    header: bool | None = None
    delimiter: str | None = None
    index: bool = False

    def __str__(self) -> str:
        detail = [self.format]
        if self.format == "csv":
            if self.delimiter == "whitespace":
                detail.append("whitespace-separated")
            detail.append("first row read as a header" if self.header else "no header row")
            if self.index:
                detail.append("first column read as the row index")
        rows = f"{self.n_rows:,} row{'' if self.n_rows == 1 else 's'}"
        cols = f"{self.n_columns:,} column{'' if self.n_columns == 1 else 's'}"
        return f"{self.path}: {rows} × {cols}, {self.dtype} ({', '.join(detail)})"


class _NpyRows:
    """Rows of a ``.npy`` file, memory-mapped on first access in the process that reads them (so a task
    carries the path, not the data)."""

    def __init__(self, path: str):
        self.path = path
        header = _load_npy(path, mmap_mode="r")
        self.shape, self.dtype, self.ndim = header.shape, header.dtype, header.ndim
        self._mmap = None

    def __getitem__(self, key):
        if self._mmap is None:
            self._mmap = np.load(self.path, mmap_mode="r")
        return np.asarray(self._mmap[key])

    def __getstate__(self):
        return {**self.__dict__, "_mmap": None}


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line (the part after dask's "Original Message:" when it wraps one)."""
    text = str(exc)
    if "Original Message:" in text:
        text = text.split("Original Message:", 1)[1]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return "; ".join(lines) or type(exc).__name__


#: What a CSV input holds, in the errors that find otherwise.
_EXPECTED_CSV = "rows of comma-separated numbers, optionally after a header line"

#: :func:`check_csv_start` reads at most this many data lines.
_START_LINES = 1_000


def check_csv_start(path: str, header: bool | None = None) -> None:
    """What the first lines of a local CSV input settle, checked with the standard library before Dask and pandas
    are imported (seconds), with :func:`read_input`'s errors: a file with no data rows after its header, and a
    column that holds text in its first :data:`_START_LINES` rows. Anything else (other paths, ragged or quoted
    rows, repeated column names) is left to :func:`read_input`."""
    if input_format(path) != "csv" or is_url(path) or not os.path.isfile(path):
        return
    header, sep, _ = _sniff_csv(path, None, header, _EXPECTED_CSV)
    lines = _CsvLines(path, None)
    try:
        rows = [lines.next() for _ in range(_START_LINES + 1)]
    finally:
        lines.close()
    rows = [row for row in rows if row is not None]
    if header:
        names, rows = rows[0].split(",") if sep == "," else rows[0].split(), rows[1:]
    if not rows:
        after = " after the header line" if header else ""
        raise ValueError(f"{path}: the file has no data rows{after}; expected {_EXPECTED_CSV}.")
    if any('"' in row or "'" in row for row in rows):
        return
    fields = [row.split(",") if sep == "," else row.split() for row in rows]
    width = len(fields[0])
    if any(len(f) != width for f in fields) or (header and len(names) != width):
        return
    if not header:
        names = [str(i) for i in range(width)]
    names = [name if name.strip() else f"Unnamed: {i}" for i, name in enumerate(names)]
    if len(set(names)) != width:
        return
    text = [names[i] for i in range(width) if not all(_is_number_or_missing(f[i]) for f in fields)]
    if text:
        raise ValueError(
            f"{path}: the columns {text} are not numeric; every column is a feature." + _csv_hint(path, None)
        )


def require_exists(path: str) -> None:
    """A missing local path is a ``FileNotFoundError`` naming it; URLs are left to the reader."""
    if not is_url(path) and not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist.")


def _require_local_file(path: str, what: str) -> None:
    """A missing local file is a ``FileNotFoundError``, a directory where a file is expected a ``ValueError``,
    each naming ``path``. URLs are left to the reader."""
    require_exists(path)
    if not is_url(path) and os.path.isdir(path):
        raise ValueError(f"{path} is a directory; expected {what}.")


def _load_npy(path: str, mmap_mode: str | None = None) -> np.ndarray:
    """``np.load`` of a ``.npy`` file, where a file that is not one (empty, truncated, pickled objects) is a
    ``ValueError`` naming the path."""
    _require_local_file(path, "a .npy file written by numpy.save")
    try:
        return np.load(path, mmap_mode=mmap_mode)
    except (EOFError, ValueError, OSError) as exc:
        size = os.path.getsize(path)
        why = "the file is empty (0 bytes)" if size == 0 else f"it is not a readable .npy array ({_one_line(exc)})"
        raise ValueError(f"{path}: {why}; expected an array written by numpy.save.") from None


_ZARR_MARKERS = ("zarr.json", ".zarray", ".zgroup", ".zmetadata")


def _check_zarr_path(path: str, expected: str) -> None:
    """A local path handed to zarr must be a zarr array or group: a missing path is a ``FileNotFoundError``,
    a plain file of another format or a directory without zarr metadata a ``ValueError``; each names it."""
    if is_url(path):
        return
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist.")
    if not os.path.isdir(path):
        raise ValueError(
            f"{path}: unknown input format (not a directory, and the name does not end in .npy, .csv, .csv.gz, "
            f".parquet or .pq); {expected}."
        )
    if not any(os.path.exists(os.path.join(path, marker)) for marker in _ZARR_MARKERS):
        entries = sorted(os.listdir(path))
        held = "it is empty" if not entries else "it holds " + ", ".join(entries[:5])
        held += ", ..." if len(entries) > 5 else ""
        raise ValueError(
            f"{path} is a directory but not a zarr array or group (no zarr.json / .zarray; {held}); {expected}."
        )


def _check_numeric_columns(frame, path: str, hint: Callable[[], str] = str):
    """``frame`` (pandas or dask) when every column is numeric; a non-numeric column is an error, followed by
    ``hint()`` (a CSV's likely cause: :func:`_csv_hint`)."""
    import pandas as pd

    wrong = [str(c) for c, t in frame.dtypes.items() if not pd.api.types.is_numeric_dtype(t) or t == bool]
    if wrong:
        why = hint()
        if len(frame.columns) == 1:
            why = (
                " The file has one column after splitting on ','; if its values are separated by another "
                "character (';', '|'), write it with commas."
            ) + why
        raise ValueError(f"{path}: the columns {wrong} are not numeric; every column is a feature.{why}")
    return frame


# -- CSV ---------------------------------------------------------------------------------------------------

#: Strings pandas reads as a missing value by default: in a first row they are not evidence of a header.
_NA_STRINGS = frozenset(
    ["#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
)


def _is_number_or_missing(field: str) -> bool:
    field = field.strip()
    if len(field) >= 2 and field[0] == field[-1] and field[0] in "\"'":
        field = field[1:-1].strip()
    if field == "" or field in _NA_STRINGS:
        return True
    if not field.isascii() or "_" in field:
        return False
    try:
        float(field)
    except ValueError:
        return False
    return True


class _CsvLines:
    """The first non-blank lines of a CSV file (plain or compressed, local or an fsspec URL), read one at a
    time: deciding on the header reads the first line only. ``number``: the line number (from 1, blank lines
    counted) of the line :meth:`next` returned last."""

    def __init__(self, path: str, storage_options: dict | None):
        import fsspec

        self.path = path
        try:
            opened = fsspec.open(
                path, "rt", compression="infer", encoding="utf-8", errors="replace", **(storage_options or {})
            )
            self._file = opened.open()
            self.number = 0
        except FileNotFoundError:
            raise FileNotFoundError(f"{path} does not exist.") from None
        except IsADirectoryError:
            raise ValueError(f"{path} is a directory; expected a CSV file.") from None

    def next(self) -> str | None:
        try:
            for line in self._file:
                self.number += 1
                line = line.lstrip("\ufeff").strip()
                if line:
                    return line
        except (EOFError, OSError, zlib.error) as exc:  # a compressed file cut short or damaged
            raise ValueError(
                f"{self.path}: cannot read the file to its end ({type(exc).__name__}: {_one_line(exc)}); it is cut "
                "short or damaged."
            ) from None
        return None

    def close(self) -> None:
        self._file.close()


#: :func:`_csv_hint` reads at most this many lines.
_HINT_LINES = 10_000


def _csv_hint(path: str, storage_options: dict | None, upto: int = _HINT_LINES) -> str:
    """The likely cause of a CSV file that did not read as columns of numbers, as a sentence naming the line: a
    ``#`` comment line, values separated by ``;`` (with decimal commas, as spreadsheets write them in many locales),
    or lines of which some end with a comma and some do not; ``""`` when its first ``upto`` lines show none."""
    lines = _CsvLines(path, storage_options)
    try:
        first_end = None
        while (text := lines.next()) is not None and lines.number <= upto:
            quoted = repr(text if len(text) <= 40 else text[:37] + "...")
            if text.startswith("#"):
                return f" Line {lines.number} ({quoted}) starts with '#': a comment line? Remove comment lines."
            if ";" in text:
                return (
                    f" Line {lines.number} ({quoted}) has ';' in it: values separated by ';', with decimal commas? "
                    "Write the file with ',' between values and '.' as the decimal mark."
                )
            if first_end is None:
                first_end = text.endswith(",")
            elif text.endswith(",") != first_end:
                ends = "ends" if text.endswith(",") else "does not end"
                return f" Line {lines.number} ({quoted}) {ends} with a comma, unlike the lines before it."
    finally:
        lines.close()
    return ""


def _is_pandas_default_header(fields: list[str], second: str | None, sep: str) -> bool:
    """Whether a first row of numbers is the column names ``0,1,…,n-1`` that ``DataFrame.to_csv`` writes for a
    frame without names (n ≥ 2), followed by a row that is not all integers (so not more rows like it)."""
    if len(fields) < 2 or [f.strip() for f in fields] != [str(i) for i in range(len(fields))] or second is None:
        return False
    values = second.split(",") if sep == "," else second.split()
    return any(re.fullmatch(r"[+-]?\d+", v.strip()) is None for v in values)


def _is_pandas_index_header(fields: list[str], second: str | None) -> bool:
    """Whether a first row of numbers is ``,0,1,…,n-1``, the header ``DataFrame.to_csv`` writes for a frame
    without column names with its index (the index's name empty), above a row whose first field is an integer."""
    if len(fields) < 2 or fields[0].strip() != "" or second is None:
        return False
    if [f.strip() for f in fields[1:]] != [str(i) for i in range(len(fields) - 1)]:
        return False
    return re.fullmatch(r"\d+", second.split(",", 1)[0].strip()) is not None


def _sniff_csv(path: str, storage_options: dict | None, header: bool | None, what: str) -> tuple[bool, str, bool]:
    r"""``(header, sep, trailing)`` for the CSV at ``path``. ``sep`` is ``","``, or ``r"\s+"`` for values separated
    by spaces or tabs (``np.savetxt`` without a delimiter); ``trailing``: the first line ends with a comma (an
    export style that ends every line so). ``header`` as given, or (``None``) whether the first
    line has a field that is neither a number nor empty (nor a missing-value mark such as ``NA``); a first
    line ``0,1,…,n-1`` followed by a row with a non-integer value is also a header (pandas' default column
    names). Reads the first line, and the second only in those two cases: a first line without commas with
    several space-separated fields that are not all numbers, or the line ``0,1,…,n-1``."""
    if header not in (None, True, False):
        raise ValueError(f"header must be True, False or None (decide from the first row); got {header!r}.")
    lines = _CsvLines(path, storage_options)
    try:
        first = lines.next()
        if first is None:
            raise ValueError(f"{path}: the file is empty; expected {what}.")
        second = ...  # read on demand
        sep, fields = ",", first.split(",")
        if "," not in first and len(first.split()) >= 2:
            spaced = first.split()
            if all(_is_number_or_missing(f) for f in spaced):
                sep, fields = r"\s+", spaced
            else:  # a header line without commas: spaces in the data rows tell
                second = lines.next()
                if second is not None and "," not in second and len(second.split()) >= 2:
                    sep, fields = r"\s+", spaced
        text = [f.strip() for f in fields if not _is_number_or_missing(f)]
        if header is None:
            header = bool(text)
            if not header and sep == "," and fields[0].strip() == "":  # ",0,1,2": pandas' header with its index
                if second is ...:
                    second = lines.next()
                header = _is_pandas_index_header(fields, second)
            if not header and [f.strip() for f in fields] == [str(i) for i in range(len(fields))]:
                if second is ...:
                    second = lines.next()
                header = _is_pandas_default_header(fields, second, sep)
                if not header and len(fields) >= 2:
                    warnings.warn(
                        f"{path}: the first row is {first!r}, like pandas' default column names, but the rows "
                        f"after it are integers too; it is read as data. Say that the file has a header if it "
                        f"is one.",
                        UserWarning,
                        stacklevel=4,
                    )
        elif header is False and text:
            raise ValueError(
                f"{path}: the first row is read as data (no header), but it has fields that are not numbers: "
                f"{text[:5]}."
            )
    finally:
        lines.close()
    return header, sep, sep == "," and first.rstrip().endswith(",")


def _index_column(frame, header: bool) -> bool:
    """Whether the frame's first column is the row index ``DataFrame.to_csv`` writes: below a header whose first
    field is empty (pandas reads it as ``Unnamed: 0``), a column of distinct non-negative integers, with more
    columns after it."""
    import pandas as pd

    if not header or frame.shape[1] < 2 or not str(frame.columns[0]).startswith("Unnamed: 0"):
        return False
    first = frame.iloc[:, 0]
    if not pd.api.types.is_integer_dtype(first.dtype) or pd.api.types.is_bool_dtype(first.dtype):
        return False
    return bool((first >= 0).all()) and first.is_unique


def _read_csv(path: str, storage_options: dict | None, header: bool | None, what: str):
    """``(frame, header, sep, index)``: the CSV at ``path`` in one pandas read (C engine), its header decided by
    :func:`_sniff_csv`, and whether its first column was the row index pandas writes (:func:`_index_column`; it
    is dropped from the frame). Ragged rows, a file without data rows and a compressed file cut short or
    damaged are ``ValueError``s naming the path."""
    import pandas as pd

    header, sep, trailing = _sniff_csv(path, storage_options, header, what)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pd.errors.ParserWarning)
        try:
            frame = pd.read_csv(
                path,
                header=0 if header else None,
                sep=sep,
                engine="c",
                index_col=False,
                low_memory=False,
                storage_options=storage_options,
            )
        except pd.errors.EmptyDataError:
            frame = None
        except pd.errors.ParserError as exc:
            found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
            if found:
                n, line, saw = found.groups()
                raise ValueError(
                    f"{path}: line {line} has {saw} fields; expected {n}, like the rows before it (ragged rows)."
                    + _csv_hint(path, storage_options, int(line))
                ) from None
            raise ValueError(f"{path}: cannot parse as CSV ({_one_line(exc)}).") from None
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text ({_one_line(exc)}); expected a CSV file.") from None
        except (EOFError, OSError, zlib.error) as exc:  # a compressed file cut short or damaged (gzip's errors)
            if isinstance(exc, FileNotFoundError):
                raise FileNotFoundError(f"{path} does not exist.") from None
            raise ValueError(
                f"{path}: cannot read the file to its end ({type(exc).__name__}: {_one_line(exc)}); it is cut short "
                "or damaged."
            ) from None
    for w in caught:
        if issubclass(w.category, pd.errors.ParserWarning) and "does not match length" in str(w.message):
            raise ValueError(
                f"{path}: the first data row has more fields than the header row; expected the same number "
                f"in every row (ragged rows)." + _csv_hint(path, storage_options)
            )
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if frame is None or frame.shape[0] == 0:
        after = " after the header line" if header else ""
        raise ValueError(f"{path}: the file has no data rows{after}; expected {what}.")
    index = _index_column(frame, header)
    if index:
        frame = frame.iloc[:, 1:]
    while trailing and frame.shape[1] >= 2 and _is_empty_last_column(frame, header):
        frame = frame.iloc[:, :-1]  # "a,b,c," / "1,2,3, " / "1,2,3,,": the empty fields after the last value
    if sep == "," and frame.isna().to_numpy().any():
        _check_short_lines(path, storage_options)
    return frame, header, sep, index


def _is_empty_last_column(frame, header: bool) -> bool:
    """Whether the frame's last column is what a line that ends with a comma (", " or ",," included) leaves: no
    name (pandas' ``Unnamed: k``, or blank) and no value but empty or blank fields."""
    name = str(frame.columns[-1])
    if header and not (name.startswith("Unnamed: ") or not name.strip()):
        return False
    import pandas as pd

    last = frame.iloc[:, -1]
    if pd.api.types.is_object_dtype(last.dtype) or pd.api.types.is_string_dtype(last.dtype):
        return bool((last.isna() | last.astype(str).str.strip().eq("")).all())
    return bool(last.isna().all())


def _check_short_lines(path: str, storage_options: dict | None, upto: int = _HINT_LINES) -> None:
    """A ValueError naming the first of the first ``upto`` lines with fewer fields than the first line (pandas
    reads a short line with NaN in its missing fields, which would be reported as NaN rows)."""
    lines = _CsvLines(path, storage_options)
    try:
        first = lines.next()
        expected = len(first.split(","))
        while (text := lines.next()) is not None and lines.number <= upto:
            count = len(text.split(","))
            if count < expected:
                quoted = repr(text if len(text) <= 40 else text[:37] + "...")
                raise ValueError(
                    f"{path}: line {lines.number} ({quoted}) has {count} fields; expected {expected}, like the lines "
                    "before it (ragged rows)." + _csv_hint(path, storage_options, lines.number)
                )
    finally:
        lines.close()


# -- parquet -----------------------------------------------------------------------------------------------


def _nullable_as_float(frame, cast: set | frozenset = frozenset()):
    """``frame`` with pandas' nullable numeric columns (``Int64``, ``Float64``, pyarrow numbers) as numpy floats,
    their nulls NaN (``Float32`` as float32, the others float64): numbers, as the other formats' are. The columns
    ``cast`` (of types that differ between a folder's files) become float64 in every partition."""
    import pandas as pd

    types = {}
    for column, dtype in frame.dtypes.items():
        if column in cast:
            types[column] = "float64"
        elif isinstance(dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_numeric_dtype(dtype):
            types[column] = "float32" if str(dtype).lower().startswith("float32") else "float64"
    return frame.astype(types) if types else frame


def _parquet_files(path: str, storage_options: dict | None) -> list[str]:
    """The data files of a parquet folder (``_metadata`` and hidden files left out); none for a file."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(path, **(storage_options or {}))
    if not fs.isdir(root):
        return []
    files = []
    for name in sorted(fs.find(root)):
        relative = name[len(root.rstrip("/")) + 1 :]
        if not any(part.startswith(("_", ".")) for part in relative.split("/")):
            files.append(name)
    return files


def _column_types(schema) -> dict[str, tuple[str, str | None]]:
    """Each column's (arrow type, pandas dtype as pandas wrote it) in a parquet file's schema."""
    pandas_types = {c.get("name"): c.get("numpy_type") for c in (schema.pandas_metadata or {}).get("columns", [])}
    return {
        field.name: (str(field.type), pandas_types.get(field.name))
        for field in schema
        if not field.name.startswith("__index_level_")
    }


def _check_parquet_columns(path: str, storage_options: dict | None) -> set[str]:
    """A parquet folder's files hold the same columns (read from each file's footer, no data): else a
    ``ValueError`` naming the folder, the first file and one that differs, and the columns in question. Returns
    the columns whose types differ between the files (int64 in one, double or nullable Int64 in another, say),
    which are read as float64 (Dask takes the first file's types for every file: 1.5 would be read as 1); a
    column that is a number in one file and not in another is a ``ValueError`` naming both files."""
    import fsspec
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = _parquet_files(path, storage_options)
    if len(files) < 2:
        return set()
    fs, root = fsspec.core.url_to_fs(path, **(storage_options or {}))
    first, first_types, cast = None, None, set()
    for name in files:
        try:
            with fs.open(name, "rb") as file:
                schema = pq.read_schema(file)
        except Exception as exc:  # noqa: BLE001 (pyarrow's errors for a file that is not parquet: each is a bad input)
            raise ValueError(
                f"{path}: the file {_relative(name, root)} cannot be read as parquet ({_one_line(exc)})."
            ) from None
        types = _column_types(schema)
        if first_types is None:
            first, first_types = name, types
            numeric = {f.name: _is_number_type(f.type, pa) for f in schema}
            continue
        if set(types) != set(first_types):  # in another order they are read by name
            missing = [c for c in first_types if c not in types]
            extra = [c for c in types if c not in first_types]
            what = [f"lacks the columns {missing}"] if missing else []
            if extra:
                what.append(f"has the columns {extra} that {_relative(first, root)} has not")
            raise ValueError(
                f"{path}: its parquet files differ in their columns: {_relative(name, root)} {' and '.join(what)} "
                f"(of {_relative(first, root)}); every file must hold the same columns."
            )
        for field in schema:
            column = field.name
            if column.startswith("__index_level_") or types[column] == first_types[column]:
                continue
            if not (numeric[column] and _is_number_type(field.type, pa)):
                raise ValueError(
                    f"{path}: its parquet files differ in the type of the column {column!r}: "
                    f"{_relative(first, root)} holds {first_types[column][0]}, {_relative(name, root)} "
                    f"{types[column][0]}; every file must hold the same columns."
                )
            cast.add(column)
    return cast


def _is_number_type(arrow_type, pa) -> bool:
    return pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type)


def _relative(name: str, root: str) -> str:
    root = root.rstrip("/")
    return name[len(root) + 1 :] if name.startswith(root + "/") else name


# -- inputs ------------------------------------------------------------------------------------------------


def read_input(
    path: str | os.PathLike, storage_options: dict | None = None, header: bool | None = None
) -> tuple[da.Array, InputInfo]:
    """The rows at ``path`` as a 2-D Dask array, and what was read (:class:`InputInfo`; ``str()`` of it is a
    one-line report). The formats are those of :func:`open_input`; ``header`` applies to CSV only."""
    import dask.array as da

    from lowdens_dask.backend import as_dask_array

    path = os.fspath(path)
    kind = input_format(path)
    delimiter, index = None, False
    if kind == "zarr":
        _check_zarr_path(path, _EXPECTED_INPUT)
        try:
            X = as_dask_array(path, storage_options=storage_options)
        except ValueError as exc:  # zarr's NodeNotFoundError is also a FileNotFoundError
            raise ValueError(_one_line(exc) if path in str(exc) else f"{path}: {_one_line(exc)}") from None
    elif kind == "npy":
        rows = _NpyRows(path)
        if 0 in rows.shape:
            raise ValueError(
                f"{path}: the array is empty (shape {rows.shape}); expected a 2-D array (rows, features) with "
                f"at least one row and one column."
            )
        if rows.ndim != 2:
            raise ValueError(f"{path}: expected a 2-D array (rows, features); it has shape {rows.shape}.")
        chunks = (_row_chunks(rows.shape[0], rows.shape[1], rows.dtype.itemsize), rows.shape[1])
        X = da.from_array(rows, chunks=chunks, name=f"from-npy-{_file_token(path)}", asarray=False)
    elif kind == "csv":
        frame, header, sep, index = _read_csv(path, storage_options, header, _EXPECTED_CSV)
        delimiter = "," if sep == "," else "whitespace"
        values = _check_numeric_columns(frame, path, lambda: _csv_hint(path, storage_options)).to_numpy()
        X = da.from_array(values, chunks=(_row_chunks(*values.shape, values.dtype.itemsize), values.shape[1]))
    else:
        import dask.dataframe as dd

        require_exists(path)  # a file, or a directory of parquet files
        cast = _check_parquet_columns(path, storage_options)
        try:
            frame = dd.read_parquet(path, storage_options=storage_options)
        except FileNotFoundError:
            raise FileNotFoundError(f"{path} does not exist.") from None
        except (ValueError, OSError) as exc:
            raise ValueError(f"{path}: cannot read as parquet ({_one_line(exc)}).") from None
        frame = _nullable_as_float(_check_numeric_columns(frame, path), cast)
        try:
            X = frame.to_dask_array(lengths=True)
        except (ValueError, KeyError, TypeError, OSError) as exc:  # pyarrow's errors are ValueErrors and OSErrors
            raise ValueError(f"{path}: cannot read as parquet ({_one_line(exc)}).") from None
    if kind != "zarr":
        try:
            X = as_dask_array(X)
        except ValueError as exc:
            raise ValueError(f"{path}: {_one_line(exc)}") from None
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{path}: the array is empty (shape {X.shape}); expected at least one row and one column.")
    info = InputInfo(
        path=path,
        format=kind,
        n_rows=int(X.shape[0]),
        n_columns=int(X.shape[1]),
        dtype=str(X.dtype),
        header=header if kind == "csv" else None,
        delimiter=delimiter,
        index=index,
    )
    return X, info


def open_input(path: str | os.PathLike, storage_options: dict | None = None, header: bool | None = None) -> da.Array:
    """The rows at ``path`` as a 2-D Dask array: a zarr array (a path zarr opens as a 2-D array, or
    ``group.zarr/X``), ``.npy``, ``.csv``/``.csv.gz`` (every column a numeric feature) or parquet (every
    column a numeric feature). A missing file, a wrong shape or dtype, or an empty array is a ``ValueError``
    (or ``FileNotFoundError``) that names the path. See :func:`read_input` for what was read.

    CSV: values separated by commas, or by spaces/tabs (as ``np.savetxt`` writes without a delimiter).
    ``header=None`` takes the first row as a header when it has a field that is not a number (an empty field
    or ``NA`` counts as a number), and as data when every field is a number, except the line ``0,1,…,n-1``
    before a row with a non-integer value (the column names ``DataFrame.to_csv`` writes for a frame without
    names), which is a header; so is ``,0,1,…,n-1`` above rows whose first field is an integer (the same with
    the index). ``header=True``/``False`` say whether the first row is a header. Below a header whose first field
    is empty, a first column of distinct non-negative integers is the row index ``to_csv`` writes: it is left
    out."""
    return read_input(path, storage_options, header)[0]


def _file_token(path: str) -> str:
    from dask.base import tokenize

    stat = os.stat(path)
    return tokenize(os.path.abspath(path), stat.st_size, stat.st_mtime_ns)


def load_labels(path: str | os.PathLike, storage_options: dict | None = None, header: bool | None = None) -> np.ndarray:
    """True labels from a 1-D zarr array or ``.npy`` file, from a ``.csv``/parquet file's only column (or its
    column named ``label``), or from a plain file of one integer per line (after an optional header line) whatever
    its name's extension (``truth.labels``, ``labels.txt``: a file, where a name the formats do not know would be a
    zarr array, which is a folder). A CSV's header is decided as in :func:`open_input`; without one, the file must
    have one column."""
    path = os.fspath(path)
    kind = input_format(path)
    if kind == "zarr":
        import fsspec

        fs, where = fsspec.core.url_to_fs(path, **(storage_options or {}))
        if fs.isfile(where):
            with fs.open(where, "rb") as file:
                return _integer_lines(file.read(), path)
    if kind == "csv":
        expected = "one label per line, optionally after a header line"
        frame, header, _, _ = _read_csv(path, storage_options, header, expected)
        if header and "label" in frame.columns:
            return frame["label"].to_numpy()
        if frame.shape[1] != 1:
            raise ValueError(
                f"{path}: expected one column of labels, or a header naming a 'label' column; the file has "
                f"{frame.shape[1]} columns" + ("." if header else " and no header row (its first row is all numbers).")
            )
        return frame.iloc[:, 0].to_numpy()
    if kind == "parquet":
        import pandas as pd

        require_exists(path)
        frame = pd.read_parquet(path, storage_options=storage_options)
        if "label" in frame.columns:
            return frame["label"].to_numpy()
        if frame.shape[1] != 1:
            raise ValueError(f"{path}: expected one column of labels, or a column named 'label'.")
        return frame.iloc[:, 0].to_numpy()
    if kind == "npy":
        labels = _load_npy(path)
    else:
        import zarr

        _check_zarr_path(path, "expected a 1-D zarr array, or a .npy, .csv or .parquet file of labels")
        try:
            labels = zarr.open_array(path, mode="r", storage_options=storage_options)[...]
        except ValueError as exc:
            raise ValueError(f"{path}: {_one_line(exc)}; expected a 1-D zarr array of labels.") from None
    if labels.ndim != 1:
        raise ValueError(f"{path}: expected 1-D labels; the array has shape {labels.shape}.")
    if labels.shape[0] == 0:
        raise ValueError(f"{path}: the labels are empty; expected one label per row of the input.")
    return labels


def _integer_lines(data: bytes, path: str) -> np.ndarray:
    """The labels of a plain file of one integer per line, after an optional header line."""
    try:
        lines = [line.strip() for line in data.decode().splitlines() if line.strip()]
    except UnicodeDecodeError:
        lines = None
    if lines and not _is_int(lines[0]) and lines[1:] and all(map(_is_int, lines[1:])):
        lines = lines[1:]  # a header line
    if not lines or not all(map(_is_int, lines)):
        raise ValueError(
            f"{path}: expected labels, one integer per line (or a .npy, .csv or .parquet file, or a 1-D zarr array)."
        )
    return np.asarray([int(line) for line in lines], dtype=np.int64)


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


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
