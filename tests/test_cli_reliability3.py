"""Issue 34, items 8 (the runs store's half), 14, 15 and 16, through the ``lowdens`` command run in this process:
damaged runs are listed as damaged with the reason and skipped for continuity; inputs are read right or refused in
one line naming the path; a committed run id is not replaced without ``--replace`` (nor a parent without
``--force``); a failed update changes nothing in the runs store, and a retry succeeds."""

import gzip
import hashlib
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from lowdens_pipelines import RunsStore
from lowdens_pipelines.cli import main
from lowdens_pipelines.inputs import read_input


def _blobs(n: int = 100, d: int = 3, seed: int = 0) -> np.ndarray:
    """Two well-separated groups of ``n`` rows each."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(size=(n, d)), rng.normal(size=(n, d)) + 10.0]).astype("f4")


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    return tmp_path


def lowdens(capsys, *args) -> tuple[int, list[str], list[str]]:
    """(exit status, stdout lines, stderr lines) of ``lowdens ARGS`` run in this process."""
    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err.splitlines()


def _one_error_line(err: list[str]) -> str:
    errors = [line for line in err if line.startswith("lowdens: error:")]
    assert len(errors) == 1 and not any("Traceback" in line for line in err), err
    return errors[0]


def _hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder``, by relative path."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _attempt(store: Path, run_id: str) -> Path:
    (folder,) = (store / run_id).glob("attempt-*")
    return folder


# ------------------------------------------------------------------------------------------------ item 15
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
    """Found by tests/test_cli_input_generator.py. Before: a column int64 in the first file and double in another
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
