"""Issue 34, items 8 (the runs store's half), 14, 15 and 16, through the ``lowdens`` command run in this process:
damaged runs are listed as damaged with the reason and skipped for continuity; inputs are read right or refused in
one line naming the path; a committed run id is not replaced without ``--replace`` (nor a parent without
``--force``); a failed update changes nothing in the runs store, and a retry succeeds."""

import gzip
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import blobs as _blobs
from cli_helpers import lowdens
from cli_helpers import one_error_line as _one_error_line
from lowdens_pipelines import RunsStore, job
from lowdens_pipelines.inputs import read_input


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


# ------------------------------------------------------------------------------------------------ item 14
@pytest.fixture(scope="module")
def fitted_store(tmp_path_factory):
    """A runs store holding the run 'good' (a fit of X.npy), and X.npy."""
    root = tmp_path_factory.mktemp("fitted")
    np.save(root / "X.npy", _blobs())
    cwd = os.getcwd()
    os.chdir(root)
    try:
        job.run_job("X.npy", n_clusters=2, store="runs", run_id="good")
    finally:
        os.chdir(cwd)
    return root


def _edit_attrs(edit):
    def damage(attempt: Path) -> None:
        meta = json.loads((attempt / "zarr.json").read_text())
        edit(meta["attributes"])
        (attempt / "zarr.json").write_text(json.dumps(meta))

    return damage


def _drop_node(attrs):
    attrs["tree"]["nodes"] = [node for node in attrs["tree"]["nodes"] if node["id"] != 2]


DAMAGES = {
    # (how the copy of a committed run is damaged, the reason the listing gives)
    "no-tree": (_edit_attrs(lambda a: a.pop("tree")), "it lacks 'tree', which the run was committed with"),
    "schema-99": (
        _edit_attrs(lambda a: a["tree"].__setitem__("schema_version", 99)),
        "its tree cannot be read (ValueError: Unsupported ClusterTree schema_version 99",
    ),
    "missing-node": (_edit_attrs(_drop_node), "names the child 2, which the tree does not hold"),
    "short-stable-ids": (
        _edit_attrs(lambda a: a.__setitem__("stable_ids", [0])),
        "its cluster ids (stable_ids) number 1; its tree's leaves are labelled up to 1",
    ),
    "garbage-committed": (
        lambda attempt: (attempt / "COMMITTED").write_text("garbage!"),
        "COMMITTED: the commit time 'garbage!' is not a time",
    ),
}


def _damaged_copy(root: Path, how: str) -> tuple[Path, str]:
    """Copy the run 'good' to 'bad', committed later (so that it is the latest on X.npy), then damage it."""
    shutil.copytree(root / "runs" / "good", root / "runs" / "bad")
    attempt = _attempt(root / "runs", "bad")
    marker = json.loads((attempt / "COMMITTED").read_text())
    marker["committed_at"] = "2999-01-01T00:00:00.000000+00:00"
    (attempt / "COMMITTED").write_text(json.dumps(marker))
    damage, reason = DAMAGES[how]
    damage(attempt)
    return attempt, reason


@pytest.mark.parametrize("how", list(DAMAGES))
def test_a_damaged_run_is_listed_as_damaged_and_skipped_and_other_runs_work(fitted_store, here, capsys, how):
    """Before: each was listed as a healthy run (a garbage COMMITTED file as its commit time), and a later fit on
    the same input failed with 'lowdens: error: tree' (no tree), 'lowdens: error: 2' (missing node), the
    schema_version message, or exit 1 with an IndexError (short stable_ids)."""
    shutil.copytree(fitted_store / "runs", here / "runs")
    shutil.copy(fitted_store / "X.npy", here / "X.npy")
    attempt, reason = _damaged_copy(here, how)
    good = _hashes(here / "runs" / "good")

    status, out, err = lowdens(capsys, "runs", "list", "--store", "runs")
    assert status == 0, err
    (line,) = [line for line in out if line.startswith("bad\t")]
    assert line.startswith(f"bad\tdamaged\t{attempt}/") and reason in line, line
    assert any(line.startswith("good\t2") for line in out), out  # listed with its commit time, as before

    # a command that needs the run: one line, exit 2
    for command in (["runs", "show", "bad"], ["predict", "bad", "X.npy", "--out", "o.npy"]):
        status, _, err = lowdens(capsys, *command, "--store", "runs")
        assert status == 2 and _one_error_line(err).startswith("lowdens: error: Run 'bad' is damaged ("), err
        assert reason in _one_error_line(err)
    status, _, err = lowdens(capsys, "fit", "X.npy", "--update-from", "bad", "--store", "runs")
    assert status == 2 and "Run 'bad' is damaged" in _one_error_line(err), err

    # a fit on the same input (the one the copied runs record, absolute since issue 35): the damaged run is skipped
    # (with a warning), the good one is its previous run
    same_input = str(fitted_store / "X.npy")
    status, out, err = lowdens(capsys, "fit", same_input, "--n-clusters", "2", "--run-id", "later", "--store", "runs")
    assert status == 0, err
    assert any(line.startswith("lowdens: warning: Skipping the damaged run 'bad'") for line in err), err
    assert RunsStore("runs").get("later").attrs["metrics"]["stability"]["previous_run"] == "good"
    assert lowdens(capsys, "runs", "show", "good", "--store", "runs")[0] == 0
    assert _hashes(here / "runs" / "good") == good  # no effect on other runs

    # the damaged run id is committed: refitted with --replace only (before, with schema 99 even that failed)
    status, _, err = lowdens(capsys, "fit", "X.npy", "--n-clusters", "2", "--run-id", "bad", "--store", "runs")
    assert status == 2 and "--replace" in _one_error_line(err), err
    status, _, err = lowdens(
        capsys, "fit", "X.npy", "--n-clusters", "2", "--run-id", "bad", "--replace", "--store", "runs"
    )
    assert status == 0, err
    assert RunsStore("runs").damaged() == [] and RunsStore("runs").get("bad").stable_ids.tolist() == [0, 1]


def test_attributes_changed_after_the_commit_are_damage(fitted_store, here, capsys):
    """A zarr.json edited after the commit, still valid and consistent (other cluster ids), reads as damaged: the
    marker records the attributes' SHA-256. Before: read as the run."""
    shutil.copytree(fitted_store / "runs", here / "runs")
    _edit_attrs(lambda a: a.__setitem__("stable_ids", [1, 0]))(_attempt(here / "runs", "good"))
    (bad,) = RunsStore("runs").damaged()
    assert bad.run_id == "good" and bad.error.endswith("changed after the commit)"), bad


def test_a_run_committed_without_a_tree_by_the_store_api_is_still_a_run(tmp_path):
    """The store keeps runs of any attributes: no tree is damage only where the run had one (or its ids)."""
    store = RunsStore(str(tmp_path / "runs"))
    with store.attempt("plain") as attempt:
        attempt.set_attrs(input={"path": "a.zarr"}, metrics={})
        attempt.commit()
    assert [run.run_id for run in store.runs()] == ["plain"] and store.damaged() == []


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


# ------------------------------------------------------------------------------------------------ item 16
def _other(n_columns: int = 13) -> np.ndarray:
    return np.random.default_rng(5).normal(size=(200, n_columns)).astype("f4")


def test_a_committed_run_id_is_refused_without_replace(here, capsys):
    """Before: 'lowdens fit other.npy --run-id night-1' replaced the committed night-1 without a word."""
    np.save("X.npy", _blobs())
    np.save("other.npy", _other())
    assert lowdens(capsys, "fit", "X.npy", "--n-clusters", "2", "--run-id", "night-1")[0] == 0
    before = _hashes(here / "lowdens-runs")
    status, _, err = lowdens(capsys, "fit", "other.npy", "--n-clusters", "2", "--run-id", "night-1")
    assert status == 2 and _one_error_line(err) == (
        "lowdens: error: run 'night-1' is already committed in the runs store ./lowdens-runs; --replace replaces it "
        "(or choose another --run-id)."
    ), err
    assert _hashes(here / "lowdens-runs") == before
    status, _, err = lowdens(capsys, "fit", "other.npy", "--n-clusters", "2", "--run-id", "night-1", "--force")
    assert status == 2 and "--force goes with --replace" in _one_error_line(err), err
    status, _, err = lowdens(capsys, "fit", "other.npy", "--n-clusters", "2", "--run-id", "night-1", "--replace")
    assert status == 0, err
    assert RunsStore("lowdens-runs").get("night-1").tree.n_features == 13


def test_a_parent_run_is_refused_even_with_replace_unless_force(here, capsys):
    """Before: replacing night-1, which night-2 names as its parent, broke a later '--update-from night-1' ('was
    fitted on 13 columns')."""
    X = _blobs()
    np.save("X1.npy", X[::2])
    np.save("X2.npy", X[1::2])
    np.save("other.npy", _other())
    assert lowdens(capsys, "fit", "X1.npy", "--n-clusters", "2", "--run-id", "night-1")[0] == 0
    assert lowdens(capsys, "fit", "X2.npy", "--update-from", "night-1", "--run-id", "night-2")[0] == 0
    before = _hashes(here / "lowdens-runs" / "night-1")
    status, _, err = lowdens(capsys, "fit", "other.npy", "--run-id", "night-1", "--replace")
    assert status == 2 and _one_error_line(err) == (
        "lowdens: error: run 'night-1' is the parent of run(s) night-2, which updated it: replacing it would leave "
        "them naming a parent they were not updated from; add --force to replace it all the same (or choose another "
        "--run-id)."
    ), err
    assert _hashes(here / "lowdens-runs" / "night-1") == before
    status, out, err = lowdens(capsys, "fit", "X2.npy", "--update-from", "night-1", "--run-id", "night-2b")
    assert status == 0 and out[0].startswith("night-2b\t"), err
    status, _, err = lowdens(capsys, "fit", "other.npy", "--run-id", "night-1", "--replace", "--force")
    assert status == 0, err
    assert RunsStore("lowdens-runs").get("night-1").tree.n_features == 13


def test_a_retry_of_an_attempt_that_never_committed_reuses_its_id(here, capsys, monkeypatch):
    np.save("X.npy", _blobs())
    write_labels = job.write_labels

    def failing(*args):
        raise RuntimeError("the labels' writer failed")

    monkeypatch.setattr(job, "write_labels", failing)
    status, _, err = lowdens(capsys, "fit", "X.npy", "--n-clusters", "2", "--run-id", "night-1")
    assert status == 1 and "the labels' writer failed" in _one_error_line(err), err
    monkeypatch.setattr(job, "write_labels", write_labels)
    status, out, err = lowdens(capsys, "fit", "X.npy", "--n-clusters", "2", "--run-id", "night-1")
    assert status == 0 and out[0].startswith("night-1\t2 clusters"), err


def test_an_attempt_that_may_not_replace_loses_at_its_commit(tmp_path):
    """A run committed at the id after the check (before the attempt opened): the commit refuses, and says so
    again when retried (Prefect's task retries); the committed run stays."""
    store = RunsStore(str(tmp_path / "runs"))
    with store.attempt("x") as attempt:
        attempt.set_attrs(metrics={"n": 1})
        first = attempt.commit()
    with store.attempt("x", replace=False) as attempt:
        attempt.set_attrs(metrics={"n": 2})
        for _ in range(2):
            with pytest.raises(ValueError, match=r"Run 'x' was committed \(attempt-.*\) before this attempt started"):
                attempt.commit()
    assert store.get("x").url == first.url and store.get("x").attrs["metrics"] == {"n": 1}
    assert store.committed("x") and not store.committed("y") and store.children("x") == []


# ------------------------------------------------------------------------------------------------ item 8
@pytest.fixture(scope="module")
def parent_store(tmp_path_factory):
    """A runs store holding 'parent' (a fit of X1.npy), and X2.npy, new rows for an update of it."""
    root = tmp_path_factory.mktemp("parent")
    X = _blobs(200)
    np.save(root / "X1.npy", X[::2])
    np.save(root / "X2.npy", X[1::2])
    cwd = os.getcwd()
    os.chdir(root)
    try:
        job.run_job("X1.npy", n_clusters=2, store="runs", run_id="parent")
    finally:
        os.chdir(cwd)
    return root


def _raise(*args, **kwargs):
    raise RuntimeError("injected fault")


def _fault_read_input(monkeypatch):
    from lowdens_pipelines import inputs

    monkeypatch.setattr(inputs, "read_input", _raise)


def _fault_load_parent(monkeypatch):
    monkeypatch.setattr(job, "update_parent", _raise)


def _fault_read_parent_summary(monkeypatch):
    monkeypatch.setattr(job, "read_summary", _raise)


def _fault_partial_fit(monkeypatch):
    from lowdens_dask import MDHClustering

    partial_fit = MDHClustering.partial_fit

    def failing(self, *args, **kwargs):
        partial_fit(self, *args, **kwargs)
        raise RuntimeError("injected fault after partial_fit")

    monkeypatch.setattr(MDHClustering, "partial_fit", failing)


def _fault_write_summary(monkeypatch):
    monkeypatch.setattr(job, "write_summary", _raise)


def _fault_write_labels(monkeypatch):
    write = job.write_run_labels

    def failing(labels, url, *args):
        write(labels, url, *args)  # the labels are written whole, then the step fails
        raise RuntimeError("injected fault after the labels")

    monkeypatch.setattr(job, "write_run_labels", failing)


def _fault_metrics(monkeypatch):
    monkeypatch.setattr(job, "compute_metrics", _raise)


def _fault_write_tree(monkeypatch):
    from lowdens_pipelines.runs import TREE_FILE, Attempt

    def failing(self, **attrs):
        self.store.fs.pipe_file(f"{self.path}/{TREE_FILE}", attrs["tree"].to_json().encode())
        raise RuntimeError("injected fault after tree.json")

    monkeypatch.setattr(Attempt, "set_attrs", failing)


def _fault_claim(monkeypatch):
    from lowdens_pipelines.runs import Attempt

    monkeypatch.setattr(Attempt, "_claim", _raise)


def _fault_commit_marker(monkeypatch):
    from lowdens_pipelines import runs

    put = runs._put

    def failing(fs, path, data):
        if path.endswith("/COMMITTED"):
            raise OSError("injected fault writing the commit marker")
        put(fs, path, data)

    monkeypatch.setattr(runs, "_put", failing)


FAULTS = {
    "read-input": _fault_read_input,
    "load-parent": _fault_load_parent,
    "read-parent-summary": _fault_read_parent_summary,
    "partial-fit": _fault_partial_fit,
    "write-summary": _fault_write_summary,
    "write-labels": _fault_write_labels,
    "write-metrics": _fault_metrics,
    "write-tree": _fault_write_tree,
    "claim": _fault_claim,
    "commit-marker": _fault_commit_marker,
}


@pytest.mark.parametrize("step", list(FAULTS))
def test_a_failed_update_changes_nothing_in_the_runs_store_and_a_retry_succeeds(
    parent_store, here, capsys, monkeypatch, step
):
    shutil.copytree(parent_store / "runs", here / "runs")
    for name in ("X1.npy", "X2.npy"):
        shutil.copy(parent_store / name, here / name)
    before = _hashes(here / "runs")
    update = ("fit", "X2.npy", "--update-from", "parent", "--run-id", "child", "--store", "runs")
    with monkeypatch.context() as patch:
        FAULTS[step](patch)
        status, _, err = lowdens(capsys, *update)
    assert status in (1, 2) and "injected fault" in _one_error_line(err), err
    assert _hashes(here / "runs") == before  # the parent byte for byte, and nothing else
    store = RunsStore("runs")
    assert [run.run_id for run in store.runs()] == ["parent"] and store.damaged() == []
    with pytest.raises(KeyError, match="No committed run 'child'"):
        store.get("child")
    status, out, err = lowdens(capsys, *update)  # the retry: the same id, no --replace
    assert status == 0 and out[0].startswith("child\t"), err
    assert RunsStore("runs").get("child").parent == "parent"
    assert _hashes(here / "runs" / "parent") == {k[len("parent/") :]: v for k, v in before.items()}


def test_an_update_whose_attempt_cannot_be_cleaned_up_leaves_no_run_and_a_retry_succeeds(
    parent_store, here, capsys, monkeypatch
):
    """The commit marker fails and the clean-up fails too (the store went away; or the process was killed): the
    attempt's folder, with its claim, stays behind, invisible; the parent is unchanged and a retry commits."""
    from lowdens_pipelines.runs import Attempt

    shutil.copytree(parent_store / "runs", here / "runs")
    shutil.copy(parent_store / "X2.npy", here / "X2.npy")
    parent = _hashes(here / "runs" / "parent")
    update = ("fit", "X2.npy", "--update-from", "parent", "--run-id", "child", "--store", "runs")
    with monkeypatch.context() as patch:
        _fault_commit_marker(patch)
        patch.setattr(Attempt, "discard", lambda self: None)
        assert lowdens(capsys, *update)[0] == 2
    (left,) = (here / "runs" / "child").glob("attempt-*")
    assert (left / "CLAIM").exists() and not (left / "COMMITTED").exists()
    assert [run.run_id for run in RunsStore("runs").runs()] == ["parent"]
    status, out, err = lowdens(capsys, *update)
    assert status == 0 and out[0].startswith("child\t"), err
    assert RunsStore("runs").get("child").parent == "parent" and _hashes(here / "runs" / "parent") == parent


# ------------------------------------------------------------------------------------------------ the flow
@pytest.mark.slow
def test_the_flow_retries_a_commit_that_failed_and_reuses_the_run_id(here, monkeypatch):
    """Prefect's retries of the persist task (a transient failure before the commit marker): the attempt that
    never committed commits on the retry, under its run id; a second flow run at that id replaces the run (the
    flow's default, as before)."""
    from lowdens_pipelines.flows import recluster
    from lowdens_pipelines.runs import Attempt

    np.save("X.npy", _blobs())
    claim, failures = Attempt._claim, []

    def flaky(self):
        if not failures:
            failures.append(self.name)
            raise OSError("transient: the store did not answer")
        claim(self)

    monkeypatch.setattr(Attempt, "_claim", flaky)
    local = {"cluster_kwargs": {"n_workers": 1, "threads_per_worker": 1, "dashboard_address": ":0"}}
    assert recluster("X.npy", n_clusters=2, store="runs", run_id="night-1", cluster=local) == "night-1"
    assert failures and RunsStore("runs").get("night-1").url.endswith(failures[0])
    assert recluster("X.npy", n_clusters=2, store="runs", run_id="night-1", cluster=local) == "night-1"
    assert [run.run_id for run in RunsStore("runs").runs()] == ["night-1"]
    assert len(list((here / "runs" / "night-1").iterdir())) == 1
    with pytest.raises(job.RunIdTaken, match="already committed"):  # as lowdens fit without --replace
        recluster("X.npy", n_clusters=2, store="runs", run_id="night-1", cluster=local, replace=False)


# ------------------------------------------------------------------------------------------------ item 11
@pytest.mark.parametrize("rows", [1, 50], ids=["one row", "identical rows"])
def test_an_update_batch_of_one_row_or_of_identical_rows_is_merged(here, capsys, rows):
    """Issue 34, item 11 (the CLI): '--update-from' with a batch of one row was refused ('1 row(s) without NaN or
    inf; at least 2 are needed'); a batch of identical rows gets merged as in the library."""
    np.save("X.npy", _blobs())
    np.save("batch.npy", np.repeat(_blobs()[:1], rows, axis=0))
    assert lowdens(capsys, "fit", "X.npy", "--run-id", "night-1")[0] == 0
    status, out, err = lowdens(capsys, "fit", "batch.npy", "--run-id", "night-2", "--update-from", "night-1")
    assert status == 0 and out[0].startswith("night-2\t"), err
    night = RunsStore("lowdens-runs").get("night-2")
    assert night.parent == "night-1" and night.tree.update == 1
