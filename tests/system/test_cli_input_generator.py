"""Issue 34, item 15, generated: inputs of the classes the issue found misread (pandas' default CSV with its index,
a .csv.gz cut at a random byte, parquet with nullable Int64/Float64 columns holding nulls, parquet folders whose
files may differ in their columns), of random shapes and contents. ``lowdens fit`` (run in this process) either
reads each right (the rows and values written, NaN where a value is missing, and a run with a label per row) or
exits 2 with one line naming the path."""

import gzip
import os

import numpy as np
import pandas as pd
import pytest
from lowdens_pipelines import RunsStore
from lowdens_pipelines.cli import main
from lowdens_pipelines.inputs import read_input

CLASSES = ("pandas-csv", "truncated-csv-gz", "nullable-parquet", "parquet-folder")
N_CASES = 20


def _values(rng, n: int, d: int, nan_share: float) -> np.ndarray:
    X = rng.normal(size=(n, d)) * rng.choice([1e-3, 1.0, 1e4], size=d)
    X[rng.random((n, d)) < nan_share] = np.nan
    return X


def _pandas_csv(rng, path_stem):
    """``DataFrame.to_csv(path)`` with its index (default names or named columns; the index as made, or shuffled
    as ``sample`` leaves it; sometimes gzipped): read as the values, the index left out."""
    n, d = int(rng.integers(3, 300)), int(rng.integers(1, 7))
    X = _values(rng, n, d, nan_share=float(rng.choice([0.0, 0.02, 0.2])))
    frame = pd.DataFrame(X, columns=None if rng.random() < 0.6 else [f"c{i}" for i in range(d)])
    if rng.random() < 0.3:
        frame = frame.sample(frac=1, random_state=int(rng.integers(1000)))
    path = f"{path_stem}.csv" + (".gz" if rng.random() < 0.3 else "")
    frame.to_csv(path)
    return path, frame.to_numpy()


def _truncated_csv_gz(rng, path_stem):
    """A gzipped CSV cut at a random byte (the gzip trailer or more missing): refused, naming it."""
    n, d = int(rng.integers(3, 300)), int(rng.integers(1, 7))
    frame = pd.DataFrame(_values(rng, n, d, nan_share=0.0))
    raw = gzip.compress(frame.to_csv(index=bool(rng.random() < 0.5)).encode())
    path = f"{path_stem}.csv.gz"
    with open(path, "wb") as file:
        file.write(raw[: int(rng.integers(0, len(raw)))])
    return path, None


def _nullable_frame(rng, n: int, columns: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    frame, expected = {}, []
    for name in columns:
        kind = rng.choice(["Int64", "Float64", "float64", "int64"])
        nulls = rng.random(n) < (0.0 if kind in ("float64", "int64") else float(rng.choice([0.0, 0.05, 0.3])))
        if kind in ("Int64", "int64"):
            values = rng.integers(-1000, 1000, size=n).astype(float)
        else:
            values = rng.normal(size=n)
        values[nulls] = np.nan
        if kind == "Int64":
            frame[name] = pd.array([None if np.isnan(v) else int(v) for v in values], dtype="Int64")
        elif kind == "Float64":
            frame[name] = pd.array([None if np.isnan(v) else v for v in values], dtype="Float64")
        else:
            frame[name] = values.astype(kind)
        expected.append(values)
    return pd.DataFrame(frame), np.column_stack(expected)


def _nullable_parquet(rng, path_stem):
    """Parquet with nullable Int64/Float64 columns (and plain ones), nulls among them: read as numbers, nulls NaN."""
    n, d = int(rng.integers(3, 300)), int(rng.integers(1, 6))
    frame, expected = _nullable_frame(rng, n, [f"c{i}" for i in range(d)])
    path = f"{path_stem}.parquet"
    frame.to_parquet(path)
    return path, expected


def _parquet_folder(rng, path_stem):
    """A folder of 2-4 parquet files with the same columns, each column's type drawn per file (int64, Int64,
    float64, Float64) and their order sometimes another: read as their rows, in the files' order, by column name;
    or one file lacking, adding or renaming a column, or holding text in one: refused, naming the folder."""
    d, k = int(rng.integers(2, 5)), int(rng.integers(2, 5))
    columns = [f"c{i}" for i in range(d)]
    odd = int(rng.integers(1, k)) if rng.random() < 0.5 else None
    path = f"{path_stem}.parquet"
    os.mkdir(path)
    parts = []
    for i in range(k):
        frame, expected = _nullable_frame(rng, int(rng.integers(2, 80)), columns)
        if i == odd:
            change = rng.choice(["lacks", "adds", "renames", "text"])
            if change == "lacks":
                frame = frame.drop(columns=columns[-1])
            elif change == "adds":
                frame["extra"] = 1.0
            elif change == "renames":
                frame = frame.rename(columns={columns[-1]: "z"})
            else:
                frame[columns[-1]] = frame[columns[-1]].astype(str)
        elif i > 0 and rng.random() < 0.3:
            frame = frame[list(rng.permutation(columns))]
        frame.to_parquet(f"{path}/part.{i}.parquet")
        parts.append(expected)
    return path, None if odd is not None else np.vstack(parts)


MAKERS = dict(zip(CLASSES, (_pandas_csv, _truncated_csv_gz, _nullable_parquet, _parquet_folder), strict=True))


@pytest.mark.parametrize("case", range(N_CASES))
def test_generated_inputs_are_read_right_or_refused_in_one_line(tmp_path, monkeypatch, capsys, case):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    kind = CLASSES[case % len(CLASSES)]
    rng = np.random.default_rng(1000 + case)
    path, expected = MAKERS[kind](rng, f"input-{case}")
    status = main(["fit", path, "--n-clusters", "1", "--param", "nonfinite=skip", "--run-id", "r", "--store", "runs"])
    err = capsys.readouterr().err
    lines = err.splitlines()
    n_finite = None if expected is None else int(np.isfinite(expected).all(axis=1).sum())
    if expected is None or n_finite < 2:  # refused: exit 2, one line that names the path
        assert status == 2 and len(lines) == 1 and lines[0].startswith(f"lowdens: error: {path}"), (kind, err)
        assert not os.path.exists("runs") or RunsStore("runs").runs() == []
        return
    assert status == 0, (kind, err)
    n, d = expected.shape
    assert lines[0].startswith(f"lowdens: read {path}: {n:,} row{'s' * (n != 1)} × {d} column{'s' * (d != 1)}"), err
    rows = read_input(path)[0].compute()  # what the command read: the values written, NaN where none was
    np.testing.assert_allclose(rows, expected, rtol=1e-12, equal_nan=True)
    labels = RunsStore("runs").get("r").labels.compute()
    assert labels.shape == (n,) and ((labels == -1) == ~np.isfinite(expected).all(axis=1)).all()
