"""The ``lowdens`` command (issue 10): runs listing, predict in every format, plots, bad input refused before
any cluster starts, errors as one line and a non-zero exit. (``fit`` and ``demo`` run the flow: see
test_flow.py.)"""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import zarr
from lowdens_pipelines import RunsStore


def lowdens(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "lowdens_pipelines.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_runs_list_and_show(tmp_path):
    empty = lowdens("runs", "list", "--store", str(tmp_path / "none"), cwd=tmp_path)
    assert empty.returncode == 0 and empty.stdout == f"no runs in {tmp_path / 'none'}\n"
    store = RunsStore(str(tmp_path / "runs"))
    for run_id, path in (("old", "a.zarr"), ("new", "b.zarr")):
        with store.attempt(run_id) as attempt:
            attempt.set_attrs(params={"method": "mdh"}, metrics={"n_leaves": 4}, input={"path": path})
            attempt.commit()
    listing = lowdens("runs", "list", "--store", str(tmp_path / "runs"), cwd=tmp_path)
    assert listing.returncode == 0
    header, *lines = listing.stdout.splitlines()
    assert header.split("\t") == ["run", "committed", "method", "clusters", "input"]
    assert [line.split("\t")[0] for line in lines] == ["new", "old"] and lines[0].endswith("\tmdh\t4\tb.zarr")
    shown = lowdens("runs", "show", "old", "--store", str(tmp_path / "runs"), cwd=tmp_path)
    assert shown.returncode == 0 and '"path": "a.zarr"' in shown.stdout


def test_errors_are_one_line_and_a_nonzero_exit(tmp_path):
    missing = lowdens("runs", "show", "nope", "--store", str(tmp_path), cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"lowdens: error: No committed run 'nope' in the runs store '{tmp_path}'."
    ]
    bad = lowdens("fit", str(tmp_path / "X.zarr"), "--method", "kmeans", cwd=tmp_path)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "argument --method: invalid choice: 'kmeans'" in bad.stderr


@pytest.fixture(scope="module")
def fitted_run(tmp_path_factory):
    """A committed run made with the runs store API (the flow's own tests run the flow)."""
    from lowdens_dask import MDHClustering
    from lowdens_dask.datasets import load_dataset

    root = tmp_path_factory.mktemp("cli")
    X, y = load_dataset("dermatology")
    model = MDHClustering(n_clusters=4).fit(X)
    path = str(root / "X.zarr")
    zarr.create_array(path, data=X, chunks=(100, X.shape[1]))
    store = RunsStore(str(root / "runs"))
    ids = [3, 0, 2, 1]  # ids carried over from earlier runs: predict must give these, not the tree's labels
    with store.attempt("r1") as attempt:
        attempt.set_attrs(tree=model.tree_, stable_ids=ids, input={"path": path}, params={"method": "mdh"})
        attempt.commit()
    return root, X, y, np.asarray(ids)[model.labels_]


@pytest.mark.slow
@pytest.mark.parametrize(
    "suffix, out_suffix", [(".npy", ".zarr"), (".csv", ".npy"), (".parquet", ".csv"), (".npy", ".parquet")]
)
def test_predict_reads_and_writes_every_format(fitted_run, tmp_path, suffix, out_suffix):
    import pandas as pd

    root, X, _, expected = fitted_run
    rows = tmp_path / f"rows{suffix}"
    if suffix == ".npy":
        np.save(rows, X)
    elif suffix == ".csv":
        pd.DataFrame(X).to_csv(rows, index=False)
    else:
        pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])]).to_parquet(rows)
    out = tmp_path / f"labels{out_suffix}"
    done = lowdens("predict", "r1", str(rows), "--out", str(out), "--store", str(root / "runs"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{out}\t{len(X)} rows"
    if out_suffix == ".zarr":
        labels = zarr.open_array(str(out))[...]
    elif out_suffix == ".npy":
        labels = np.load(out)
    elif out_suffix == ".csv":
        labels = pd.read_csv(out)["label"].to_numpy()
    else:
        labels = pd.read_parquet(out)["label"].to_numpy()
    np.testing.assert_array_equal(labels, expected)


@pytest.mark.slow
def test_predict_refuses_rows_of_another_width(fitted_run, tmp_path):
    root, X, _, _ = fitted_run
    np.save(tmp_path / "narrow.npy", X[:, :5])
    done = lowdens(
        "predict", "r1", str(tmp_path / "narrow.npy"), "--out", "x.npy", "--store", str(root / "runs"), cwd=tmp_path
    )
    assert done.returncode == 2 and not (tmp_path / "x.npy").exists()
    assert done.stderr.strip().splitlines()[-1] == (
        f"lowdens: error: {tmp_path / 'narrow.npy'} has 5 columns; run 'r1' was fitted on {X.shape[1]}."
    )


@pytest.mark.slow
def test_plot_writes_the_runs_plots(fitted_run, tmp_path):
    root, _, y, _ = fitted_run
    np.save(tmp_path / "y.npy", y)
    done = lowdens(
        "plot",
        "r1",
        "--out",
        str(tmp_path / "plots"),
        "--labels",
        str(tmp_path / "y.npy"),
        "--store",
        str(root / "runs"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    names = sorted(os.path.basename(line) for line in done.stdout.splitlines())
    assert names == ["dendrogram.png", "node-0.png", "node-1.png", "node-2.png", "tree.png"]
    for name in names:
        assert (tmp_path / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: zarr.create_array(p, data=np.arange(10.0)), "must be 2-D"),
        (lambda p: zarr.create_array(p, shape=(0, 4), dtype="f8"), "the array is empty"),
        (lambda p: zarr.create_array(p, data=np.ones((5, 2), dtype=complex)), "must hold real numbers"),
        (lambda p: None, "does not exist"),
    ],
)
def test_fit_refuses_bad_input_before_any_cluster(tmp_path, make, message):
    path = str(tmp_path / "X.zarr")
    make(path)
    done = lowdens("fit", path, "--store", str(tmp_path / "runs"), cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
    assert "Dask" not in done.stderr and not (tmp_path / "runs").exists()


def test_serve_needs_a_server(tmp_path):
    np.save(tmp_path / "X.npy", np.ones((5, 2)))
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "lowdens_pipelines.cli", "serve", str(tmp_path / "X.npy")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 2 and "set PREFECT_API_URL" in done.stderr


def test_every_command_has_help(capsys):
    from lowdens_pipelines.cli import main

    for command in (["demo"], ["fit"], ["predict"], ["plot"], ["runs", "list"], ["runs", "show"], ["serve"]):
        with pytest.raises(SystemExit) as exit_:
            main([*command, "--help"])
        assert exit_.value.code == 0 and "--store" in capsys.readouterr().out, command


def two_blobs(n=500):
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(size=(n, 2)), rng.normal(size=(n, 2)) + [8.0, 0.0]])


#: Values of the methods' parameters that the command's table refuses, and values it accepts.
BAD_VALUES = {
    "bandwidth": [-1.0, 0.0, 1e101, "scott"],
    "alphas": [[], [0.5, 0.1], [1.5], [-0.1, 0.2]],
    "eta": [0.0, 1.0, -0.5],
    "penalty_exponent": [0.0, 1.0],
    "max_iter": [0, -3, 2.5],
    "tol": [0.0, -1e-3],
    "min_size": [0, -1.0],
    "max_clusters": [0, -2, 1.5],
    "significance_level": [0.0, 1.0, 1.5],
    "decay": [1.0, -0.1],
    "min_cluster_size": [-0.1, float("inf")],
    # issue 53: booleans are True or False, not a string that reads as one ("False" is truthy)
    "standardize": ["False", "no", "yes", 1, None],
    "force_n_clusters": ["False", "true", 0, None],
}


GOOD_VALUES = {
    "bandwidth": [None, "silverman", 0.5],
    "alphas": [[0.0, 0.3, 0.6], [0.9]],
    "eta": [0.01],
    "penalty_exponent": [1e-6],
    "max_iter": [30],
    "tol": [1e-6],
    "min_size": [2.0],
    "max_clusters": [None, 5],
    "significance_level": [0.05],
    "decay": [None, 0.0, 0.5],
    "min_cluster_size": [0.0, 0.01, 20],
    "standardize": [True, False, np.True_],
    "force_n_clusters": [True, False, np.False_],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_the_commands_table_of_method_values_agrees_with_the_estimators(name):
    """Each method that takes one of these parameters refuses the bad values before the command's imports (by its
    estimator's constraints table, ``method_constraints``) and in a fit, and fits with the good ones."""
    from lowdens_pipelines.parameter_names import PARAMETER_NAMES

    from lowdens_dask import METHODS
    from lowdens_dask.estimators import check_constraints, method_constraints
    from lowdens_dask.estimators._constraints import BANDWIDTH_RANGE
    from lowdens_dask.indices.minimum_density import BANDWIDTH_RANGE as INDEX_RANGE

    assert BANDWIDTH_RANGE == INDEX_RANGE and set(BAD_VALUES) == set(GOOD_VALUES)
    X = two_blobs(60)
    methods = [method for method in METHODS if name in PARAMETER_NAMES.get(method, ())]
    assert methods, f"no method takes {name}"
    for method in methods:
        for value in BAD_VALUES[name]:
            with pytest.raises(ValueError, match=name):
                check_constraints(method_constraints(method), {name: value}, method)
            with pytest.raises(ValueError, match=name), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                METHODS[method].clustering(n_clusters=2, random_state=0, **{name: value}).fit(X)
        for value in GOOD_VALUES[name]:
            check_constraints(method_constraints(method), {name: value}, method)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                METHODS[method].clustering(n_clusters=2, random_state=0, **{name: value}).fit(X)
