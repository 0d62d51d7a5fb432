"""The pipelines' input reading (issue 21, points 2 and 4): a CSV's first row is data when it is all numbers
(no row silently cut), ``--header/--no-header`` as ``header=``, whitespace-separated and gzipped CSV, the
labels by the same rule; one-line errors naming the file and what was expected (empty ``.npy``, a directory
that is not a zarr store, an empty CSV, ragged rows, a missing file); and what was read, for every format."""

import gzip
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import zarr
from lowdens_pipelines import inputs
from lowdens_pipelines.inputs import load_labels, open_input


def _rows(n=200, d=3, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def _one_line_error(excinfo, path):
    message = str(excinfo.value)
    assert "\n" not in message.strip(), message
    assert str(path) in message, message
    return message


# -- point 2: the header rule ---------------------------------------------------------------------------


def test_a_csv_without_header_keeps_its_first_row_in_one_pandas_read(tmp_path, monkeypatch):
    X = _rows()
    path = tmp_path / "X.csv"
    np.savetxt(path, X, delimiter=",")
    calls = []
    read_csv = pd.read_csv
    monkeypatch.setattr(pd, "read_csv", lambda *a, **k: calls.append(1) or read_csv(*a, **k))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = open_input(path).compute()
    assert got.shape == X.shape and len(calls) == 1
    np.testing.assert_array_equal(got, X)


def test_a_csv_with_a_header_row_and_the_overrides(tmp_path):
    X = _rows()
    named = tmp_path / "named.csv"
    pd.DataFrame(X, columns=["a", "b", "c"]).to_csv(named, index=False)
    np.testing.assert_array_equal(open_input(named).compute(), X)
    bare = tmp_path / "bare.csv"
    np.savetxt(bare, X, delimiter=",")
    np.testing.assert_array_equal(open_input(bare, header=False).compute(), X)
    np.testing.assert_array_equal(open_input(bare, header=True).compute(), X[1:])  # as the user says
    with pytest.raises(ValueError) as excinfo:
        open_input(named, header=False)
    assert "not numbers" in _one_line_error(excinfo, named) and "'a'" in str(excinfo.value)


def test_the_first_row_is_a_header_when_any_field_is_not_a_number(tmp_path):
    path = tmp_path / "X.csv"
    path.write_text("1.5,x,3\n1,2,3\n4,5,6\n")
    np.testing.assert_array_equal(open_input(path).compute(), [[1, 2, 3], [4, 5, 6]])
    path.write_text("1.5,NA,3\n1,2,3\n")  # a missing value is no header
    got = open_input(path).compute()
    assert got.shape == (2, 3) and np.isnan(got[0, 1])
    path.write_text("-1e-3,+2,inf\n1,2,3\n")
    assert open_input(path).shape == (2, 3)


def test_pandas_default_column_names_are_a_header(tmp_path):
    X = _rows()
    path = tmp_path / "X.csv"
    pd.DataFrame(X).to_csv(path, index=False)  # header 0,1,2
    np.testing.assert_array_equal(open_input(path).compute(), X)
    ints = tmp_path / "ints.csv"
    ints.write_text("0,1\n2,3\n4,5\n")  # integers after it: data, with a warning
    with pytest.warns(UserWarning, match="read as data"):
        np.testing.assert_array_equal(open_input(ints).compute(), [[0, 1], [2, 3], [4, 5]])


def test_a_gzipped_csv_without_header(tmp_path):
    X = _rows()
    path = tmp_path / "X.csv.gz"
    np.savetxt(path, X, delimiter=",")
    with gzip.open(path, "rt") as f:
        assert "," in f.readline()
    np.testing.assert_array_equal(open_input(path).compute(), X)


@pytest.mark.parametrize("delimiter", [" ", "\t"])
def test_a_whitespace_separated_csv_is_read_by_columns(tmp_path, delimiter):
    """``np.savetxt`` without a delimiter writes spaces: never one column of strings or NaN."""
    X = _rows()
    path = tmp_path / "X.csv"
    np.savetxt(path, X, delimiter=delimiter)
    X_read, info = inputs.read_input(path)
    np.testing.assert_array_equal(X_read.compute(), X)
    assert info.delimiter == "whitespace" and info.header is False
    with_header = tmp_path / "h.csv"
    np.savetxt(with_header, X, delimiter=delimiter, header=delimiter.join("abc"), comments="")
    np.testing.assert_array_equal(open_input(with_header).compute(), X)


def test_another_separator_or_a_non_numeric_column_is_an_error_that_says_so(tmp_path):
    path = tmp_path / "X.csv"
    path.write_text("1;2;3\n4;5;6\n")
    with pytest.raises(ValueError) as excinfo:
        open_input(path)
    assert "one column after splitting on ','" in _one_line_error(excinfo, path)
    path.write_text("a,b\n1,x\n2,y\n")  # a non-numeric column: refused, as before
    with pytest.raises(ValueError) as excinfo:
        open_input(path)
    assert "['b'] are not numeric" in _one_line_error(excinfo, path)


def test_labels_follow_the_same_rule(tmp_path):
    y = np.array([0, 1, 1, 2, 0])
    bare = tmp_path / "y.csv"
    np.savetxt(bare, y, fmt="%d")
    np.testing.assert_array_equal(load_labels(bare), y)
    np.testing.assert_array_equal(load_labels(bare, header=True), y[1:])
    named = tmp_path / "named.csv"
    pd.DataFrame({"x": np.arange(5), "label": y}).to_csv(named, index=False)
    np.testing.assert_array_equal(load_labels(named), y)
    only = tmp_path / "only.csv"
    pd.DataFrame({"truth": y}).to_csv(only, index=False)
    np.testing.assert_array_equal(load_labels(only), y)
    gz = tmp_path / "y.csv.gz"
    np.savetxt(gz, y, fmt="%d")
    np.testing.assert_array_equal(load_labels(gz), y)
    wide = tmp_path / "wide.csv"
    np.savetxt(wide, np.ones((5, 2)), delimiter=",")
    with pytest.raises(ValueError) as excinfo:
        load_labels(wide)
    assert "no header row" in _one_line_error(excinfo, wide)


# -- point 4: one-line errors naming the file and what was expected -------------------------------------------


@pytest.mark.parametrize("make", ["0-byte", "(0, 5)", "(0,)", "(5, 0)", "text"])
def test_an_empty_or_broken_npy_is_a_value_error_naming_it(tmp_path, make):
    path = tmp_path / "X.npy"
    if make == "0-byte":
        path.write_bytes(b"")
    elif make == "text":
        path.write_text("1,2,3\n")
    else:
        np.save(path, np.empty(eval(make)))
    with pytest.raises(ValueError) as excinfo:
        open_input(path)
    assert "expected" in _one_line_error(excinfo, path)
    with pytest.raises(ValueError) as excinfo:
        load_labels(path)
    _one_line_error(excinfo, path)


@pytest.mark.parametrize("content", ["empty", "csv files", "npy file"])
def test_a_directory_that_is_not_a_zarr_store(tmp_path, content):
    path = tmp_path / "data"
    path.mkdir()
    if content == "csv files":
        for i in range(3):
            np.savetxt(path / f"part-{i}.csv", np.ones((3, 2)), delimiter=",")
    elif content == "npy file":
        np.save(path / "X.npy", np.ones((3, 2)))
    with pytest.raises(ValueError) as excinfo:
        open_input(path)
    message = _one_line_error(excinfo, path)
    assert "is a directory but not a zarr array or group (no zarr.json / .zarray" in message
    assert "expected a zarr array" in message and "group.zarr/X" in message
    if content == "csv files":
        assert "part-0.csv" in message
    with pytest.raises(ValueError) as excinfo:
        load_labels(path)
    assert "not a zarr array or group" in _one_line_error(excinfo, path)


def test_a_file_of_unknown_format(tmp_path):
    path = tmp_path / "X.txt"
    np.savetxt(path, np.ones((3, 2)), delimiter=",")
    with pytest.raises(ValueError) as excinfo:
        open_input(path)
    assert "unknown input format" in _one_line_error(excinfo, path)


@pytest.mark.parametrize("text, what", [("", "empty"), ("\n\n", "empty"), ("a,b\n", "no data rows after the header")])
def test_an_empty_csv_names_the_file_and_what_was_expected(tmp_path, text, what):
    path = tmp_path / "X.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as excinfo:
        open_input(path)
    message = _one_line_error(excinfo, path)
    assert what in message and "expected rows of comma-separated numbers" in message
    with pytest.raises(ValueError) as excinfo:
        load_labels(path)
    assert "expected one label per line" in _one_line_error(excinfo, path)


@pytest.mark.parametrize(
    "text, line",
    [("a,b\n1,2\n3,4,5\n6,7\n", "line 3 has 3 fields; expected 2"), ("1,2\n3,4,5\n", "line 2 has 3 fields"),
     ("a,b\n1,2,3\n4,5,6\n", "more fields than the header row")],
)
def test_ragged_rows_name_the_file_and_line(tmp_path, text, line):
    path = tmp_path / "X.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as excinfo:
        open_input(path)
    assert line in _one_line_error(excinfo, path)


@pytest.mark.parametrize("name", ["X.npy", "X.csv", "X.csv.gz", "X.parquet", "X.zarr", "group.zarr/X", "X"])
def test_a_missing_file_is_file_not_found_naming_it(tmp_path, name):
    path = tmp_path / name
    with pytest.raises(FileNotFoundError) as excinfo:
        open_input(path)
    assert str(excinfo.value) == f"{path} does not exist."
    with pytest.raises(FileNotFoundError) as excinfo:
        load_labels(path)
    assert str(excinfo.value) == f"{path} does not exist."


def test_header_must_be_true_false_or_none(tmp_path):
    path = tmp_path / "X.csv"
    np.savetxt(path, np.ones((3, 2)), delimiter=",")
    with pytest.raises(ValueError, match="header must be True, False or None"):
        open_input(path, header="yes")


# -- every format reports what it read --------------------------------------------------------------------------


def test_every_format_reports_rows_and_columns(tmp_path):
    X = _rows(1200, 4).astype(np.float32)
    np.save(tmp_path / "X.npy", X)
    zarr.create_array(str(tmp_path / "X.zarr"), data=X, chunks=(500, 4))
    group = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    group.create_array("X", data=X, chunks=(500, 4))
    pd.DataFrame(X, columns=list("abcd")).to_parquet(tmp_path / "X.parquet")
    np.savetxt(tmp_path / "bare.csv", X, delimiter=",")
    pd.DataFrame(X, columns=list("abcd")).to_csv(tmp_path / "named.csv", index=False)
    expected = {
        "X.npy": "1,200 rows × 4 columns, float32 (npy)",
        "X.zarr": "1,200 rows × 4 columns, float32 (zarr)",
        "g.zarr": "1,200 rows × 4 columns, float32 (zarr)",
        "X.parquet": "1,200 rows × 4 columns, float32 (parquet)",
        "bare.csv": "1,200 rows × 4 columns, float64 (csv, no header row)",
        "named.csv": "1,200 rows × 4 columns, float64 (csv, first row read as a header)",
    }
    for name, report in expected.items():
        path = str(tmp_path / name)
        X_read, info = inputs.read_input(path)
        assert str(info) == f"{path}: {report}"
        assert (info.path, info.n_rows, info.n_columns, info.dtype) == (path, 1200, 4, str(X_read.dtype))
        assert info.format == name.split(".")[1] and X_read.shape == (1200, 4)
        assert info.header == {"bare.csv": False, "named.csv": True}.get(name)
        np.testing.assert_allclose(X_read.compute(), X, rtol=1e-6)
    with pytest.raises(Exception):
        info.n_rows = 3  # frozen
    one = tmp_path / "one.csv"
    one.write_text("5\n")
    assert str(inputs.read_input(one)[1]) == f"{one}: 1 row × 1 column, int64 (csv, no header row)"


def test_npy_stays_memory_mapped_and_lazy(tmp_path):
    X = _rows(100_000, 10).astype(np.float32)  # 4 MB
    path = tmp_path / "X.npy"
    np.save(path, X)
    X_read, info = inputs.read_input(path)
    assert str(info).endswith("100,000 rows × 10 columns, float32 (npy)")
    assert len(pickle.dumps(dict(X_read.__dask_graph__()))) < 100_000  # the graph carries the path, not the rows
    np.testing.assert_array_equal(X_read[-5:].compute(), X[-5:])



@pytest.mark.parametrize("end", [", ", ",,", ", ,", ","], ids=["comma-space", "two-commas", "comma-space-comma", "one"])
@pytest.mark.parametrize("header", [True, False])
def test_lines_that_end_in_commas_read_as_their_columns(tmp_path, end, header):
    """Issue 53 item 5 (fuzz5 repro_9): lines ending in ", " were refused as a text column [' '], and lines ending
    in ",," kept an empty column that then failed as NaN on every row."""
    V = np.random.default_rng(0).normal(size=(40, 3)).round(4)
    sep = ", " if end.startswith(", ") else ","
    text = ("a" + sep + "b" + sep + "c" + end + "\n" if header else "") + "".join(
        sep.join(f"{v:.4f}" for v in row) + end + "\n" for row in V
    )
    path = tmp_path / "X.csv"
    path.write_text(text)
    np.testing.assert_array_equal(open_input(str(path)).compute(), V)


def test_a_ragged_csv_names_its_first_short_line(tmp_path):
    """Issue 53 item 5: a line with fewer fields was read with NaN in them and reported as "100 of the 300 rows have
    NaN or inf values"; the README promises the line and its field count. A real empty field is a NaN value."""
    lines = ["a,b,c"] + [f"{i},{i % 7}" if i % 3 == 2 else f"{i},{i % 7},{i % 5}" for i in range(30)]
    path = tmp_path / "ragged.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"line 4 \('2,2'\) has 2 fields; expected 3"):
        open_input(str(path))
    path.write_text("a,b,c\n1,2,3\n4,,6\n7,8,9\n")
    got = open_input(str(path)).compute()
    assert got.shape == (3, 3) and np.isnan(got[1, 1])
