"""The pipelines' input reading (issue 21, points 2 and 4): a CSV's first row is data when it is all numbers
(no row silently cut), ``--header/--no-header`` as ``header=``, whitespace-separated and gzipped CSV, the
labels by the same rule; one-line errors naming the file and what was expected (empty ``.npy``, a directory
that is not a zarr store, an empty CSV, ragged rows, a missing file); and what was read, for every format."""

import gzip
import os
import pickle
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import zarr
from cli_helpers import blobs as _blobs
from cli_helpers import lowdens
from cli_helpers import one_error_line as _one_error_line
from lowdens_pipelines import RunsStore, inputs
from lowdens_pipelines.inputs import load_labels, open_input, read_input


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


def _lines(X, sep=",", end="", decimal="."):
    return "".join(sep.join(f"{v:.6f}".replace(".", decimal) for v in row) + end + "\n" for row in X)


@pytest.mark.parametrize("header", ["a,b,c,\n", ""], ids=["header", "no header"])
def test_a_csv_whose_lines_end_with_a_comma_has_the_columns_before_it(tmp_path, monkeypatch, capsys, header):
    """Issue 43, item 3: 'a,b,c,' / '1.0,2.0,3.0,' was read with a fourth, empty column, and lowdens fit refused every row
    ('600 of the 600 rows have NaN or inf values')."""
    from cli_helpers import blobs, lowdens
    from lowdens_pipelines.inputs import read_input

    monkeypatch.chdir(tmp_path)
    X = blobs(300)
    with open("trailing.csv", "w") as file:
        file.write(header + _lines(X, end=","))
    rows, info = read_input("trailing.csv")
    assert rows.shape == (600, 3) and bool(info.header) == bool(header), info
    np.testing.assert_allclose(rows.compute(), X, atol=1e-6)
    status, out, err = lowdens(capsys, "fit", "trailing.csv", "--run-id", "r")
    assert status == 0, err
    assert "600 rows × 3 columns" in err[0] and out[0].startswith("r\t2 clusters\t"), (out, err)


@pytest.mark.parametrize(
    "text, named",
    [
        ("# exported by a tool\na,b,c\n" + _lines(np.ones((5, 3))), "Line 1 ('# exported by a tool') starts with '#'"),
        ("a,b,c\n" + _lines(np.ones((5, 3))) + "# more rows\n" + _lines(np.ones((5, 3))), "Line 7 ('# more rows')"),
        ("a;b;c\n" + _lines(np.full((5, 3), 1.5), sep=";", decimal=","), "Line 1 ('a;b;c') has ';'"),
        (_lines(np.full((5, 3), 1.5), sep=";", decimal=","), "Line 1 ('1,500000;1,500000;1,500000') has ';'"),
        ("a,b,c\n" + _lines(np.eye(3)) + _lines(np.eye(3), end=","), "Line 5 ('1.000000,0.000000,0.000000,') ends"),
    ],
    ids=["comment first", "comment inside", "semicolons", "semicolons no header", "some lines end with a comma"],
)
def test_a_csv_that_does_not_parse_names_the_line_and_the_likely_cause(tmp_path, monkeypatch, capsys, text, named):
    """Issue 43, item 3: a '#' comment line or decimal commas with ';' gave 'the first data row has more fields than the
    header row ... (ragged rows)' (or 'the columns [...] are not numeric') without the line or the likely cause."""
    from cli_helpers import lowdens, one_error_line

    monkeypatch.chdir(tmp_path)
    with open("odd.csv", "w") as file:
        file.write(text)
    status, _, err = lowdens(capsys, "fit", "odd.csv", "--run-id", "r")
    line = one_error_line(err)
    assert status == 2 and line.startswith("lowdens: error: odd.csv: ") and named in line, line


# --------------------------------------------------------- inputs read right or refused in one line (issue 34, item 15)
def test_pandas_to_csv_with_its_index_is_read_as_pandas_wrote_it(here, capsys):
    """Before: the header ',0,1,2' was read as a row of data (NaN first) and, with nonfinite=skip, the index was a
    feature and the fit found 1 cluster instead of 2."""
    X = _blobs()
    pd.DataFrame(X).to_csv("idx.csv")
    status, out, err = lowdens(capsys, "fit", "idx.csv", "--param", "nonfinite=skip", "--run-id", "r")
    assert status == 0, err
    assert err[0] == (
        "lowdens: read idx.csv: 200 rows × 3 columns, float64 (csv, first row read as a header, first column read as "
        "the row index)"
    ), err
    assert out[0].startswith("r\t2 clusters\t"), out
    np.testing.assert_allclose(read_input("idx.csv")[0].compute(), X, rtol=1e-6)
    # named columns with the index (',a,b,c'), a shuffled index, and a gzipped one: the index is left out too
    frame = pd.DataFrame(X, columns=list("abc")).sample(frac=1, random_state=0)
    frame.to_csv("named.csv")
    frame.to_csv("named.csv.gz")
    for path in ("named.csv", "named.csv.gz"):
        rows, info = read_input(path)
        assert info.index and rows.shape == (200, 3), info
        np.testing.assert_allclose(rows.compute(), frame.to_numpy(), rtol=1e-6)
    # an unnamed first column that is not an index (floats) stays a feature
    pd.DataFrame(X, columns=["", "b", "c"]).to_csv("feature.csv", index=False)
    rows, info = read_input("feature.csv")
    assert not info.index and rows.shape == (200, 3)


def test_a_truncated_csv_gz_is_one_line_naming_the_path(here, capsys):
    """Before: exit 1 with 'EOFError: Compressed file ended before the end-of-stream marker was reached'."""
    raw = gzip.compress(pd.DataFrame(_blobs()).to_csv(index=False).encode())
    Path("cut.csv.gz").write_bytes(raw[: len(raw) // 2])
    status, _, err = lowdens(capsys, "fit", "cut.csv.gz", "--store", "runs")
    line = _one_error_line(err)
    assert status == 2 and line.startswith("lowdens: error: cut.csv.gz: ") and "cut short" in line, err
    assert not Path("runs").exists() or RunsStore("runs").runs() == []


def test_nullable_parquet_columns_are_numbers_and_nulls_nan(here, capsys):
    """Before: 'nullable.parquet: X must hold real numbers; its dtype is object.'"""
    X = _blobs().astype("f8")
    frame = pd.DataFrame(X, columns=list("abc"))
    frame["d"] = pd.array(np.r_[np.arange(199), [None]], dtype="Int64")
    frame["e"] = pd.array(np.r_[[None], np.arange(199) / 2], dtype="Float64")
    frame.to_parquet("nullable.parquet")
    rows = read_input("nullable.parquet")[0].compute()
    expected = np.column_stack([X, np.r_[np.arange(199), np.nan], np.r_[np.nan, np.arange(199) / 2]])
    np.testing.assert_array_equal(rows, expected)
    status, _, err = lowdens(capsys, "fit", "nullable.parquet", "--n-clusters", "2", "--store", "runs")
    assert status == 2 and "2 of the 200 rows have NaN or inf values" in _one_error_line(err), err
    status, _, err = lowdens(
        capsys, "fit", "nullable.parquet", "--n-clusters", "2", "--param", "nonfinite=skip", "--run-id", "r"
    )
    assert status == 0, err
    labels = RunsStore("lowdens-runs").get("r").labels.compute()
    assert labels[0] == labels[-1] == -1 and (labels[1:-1] >= 0).all()


def test_a_parquet_folder_whose_files_differ_in_columns_is_one_line(here, capsys):
    """Before: "lowdens: error: ['c'] not in index"."""
    X = _blobs()
    os.mkdir("mixed.parquet")
    pd.DataFrame(X[:100], columns=list("abc")).to_parquet("mixed.parquet/part.0.parquet")
    pd.DataFrame(X[100:, :2], columns=list("ab")).to_parquet("mixed.parquet/part.1.parquet")
    status, _, err = lowdens(capsys, "fit", "mixed.parquet", "--store", "runs")
    assert status == 2, err
    assert _one_error_line(err) == (
        "lowdens: error: mixed.parquet: its parquet files differ in their columns: part.1.parquet lacks the "
        "columns ['c'] (of part.0.parquet); every file must hold the same columns."
    )


def test_a_parquet_folder_whose_files_differ_in_column_types(here, capsys):
    """Found by tests/system/test_cli_input_generator.py. Before: a column int64 in the first file and double in another
    was read as int64 (1.5 read as 1, silently); nullable Int64 in another failed ("ufunc 'isfinite' not
    supported"). Now such columns are float64 in every file, and a column of text in one file is one line."""
    os.mkdir("types.parquet")
    pd.DataFrame({"a": [0, 1, 2], "b": [0.0, 1.0, 2.0]}).to_parquet("types.parquet/part.0.parquet")
    pd.DataFrame({"b": [3.0, 4.0], "a": [1.5, 2.5]}).to_parquet("types.parquet/part.1.parquet")  # other order
    later = pd.DataFrame({"a": pd.array([7, None], dtype="Int64"), "b": pd.array([None, 8.0], dtype="Float64")})
    later.to_parquet("types.parquet/part.2.parquet")
    rows, info = read_input("types.parquet")
    assert info.dtype == "float64"
    expected = [[0, 0], [1, 1], [2, 2], [1.5, 3], [2.5, 4], [7, np.nan], [np.nan, 8]]
    np.testing.assert_array_equal(rows.compute(), np.array(expected))
    pd.DataFrame({"a": ["x", "y"], "b": [5.0, 6.0]}).to_parquet("types.parquet/part.3.parquet")
    status, _, err = lowdens(capsys, "fit", "types.parquet", "--store", "runs")
    line = _one_error_line(err)  # the text's arrow type: string or large_string, by pandas' version
    assert status == 2 and line.startswith(
        "lowdens: error: types.parquet: its parquet files differ in the type of the column 'a': part.0.parquet "
        "holds int64, part.3.parquet "
    ), err
