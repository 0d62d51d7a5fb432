"""The runs store (issue 10): committed attempts only are visible, failures leave nothing, re-runs replace."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
from cli_helpers import blobs as _blobs
from cli_helpers import lowdens
from cli_helpers import one_error_line as _one_error_line
from lowdens_pipelines import RunsStore, job

from lowdens_dask import MDHClustering


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(300, 3)) + [6 * i, 0, 0] for i in range(3)])
    model = MDHClustering(n_clusters=3, random_state=0).fit(X)
    return X, model


def write(store, run_id, model, fail=False):
    with store.attempt(run_id) as attempt:
        attempt.write_labels(da.from_array(model.labels_, chunks=250))
        attempt.set_attrs(tree=model.tree_, params=model.get_params(), metrics={"n_leaves": model.n_clusters_})
        if fail:
            raise RuntimeError("failed on purpose")
        return attempt.commit()


def test_a_committed_run_reads_back(fitted, tmp_path):
    X, model = fitted
    store = RunsStore(str(tmp_path / "runs"))
    assert store.runs() == []
    run = write(store, "first", model)
    assert run.run_id == "first" and [r.run_id for r in store.runs()] == ["first"]
    np.testing.assert_array_equal(run.labels.compute(), model.labels_)
    assert run.labels.chunks == ((250, 250, 250, 150),)
    np.testing.assert_array_equal(run.tree.predict(X), model.labels_)
    assert run.attrs["params"]["n_clusters"] == 3 and run.attrs["metrics"] == {"n_leaves": 3}
    tree_file = next((tmp_path / "runs" / "first").glob("attempt-*/tree.json"))
    assert json.loads(tree_file.read_text()) == run.attrs["tree"]


def test_a_failed_attempt_is_invisible_and_keeps_the_previous_run(fitted, tmp_path):
    _, model = fitted
    store = RunsStore(str(tmp_path / "runs"))
    with pytest.raises(RuntimeError, match="on purpose"):
        write(store, "nightly", model, fail=True)
    assert store.runs() == []
    with pytest.raises(KeyError, match="No committed run 'nightly'"):
        store.get("nightly")
    first = write(store, "nightly", model)
    with pytest.raises(RuntimeError):
        write(store, "nightly", model, fail=True)
    assert store.get("nightly").url == first.url  # the previous committed attempt stays visible
    assert len(list((tmp_path / "runs" / "nightly").iterdir())) == 1  # the failed attempt left nothing


def test_rerunning_a_run_id_replaces_it(fitted, tmp_path):
    _, model = fitted
    store = RunsStore(str(tmp_path / "runs"))
    first = write(store, "daily", model)
    second = write(store, "daily", model)
    assert second.url != first.url and store.get("daily").url == second.url
    assert [r.run_id for r in store.runs()] == ["daily"]
    assert len(list((tmp_path / "runs" / "daily").iterdir())) == 1


def test_an_uncommitted_attempt_left_behind_is_ignored(fitted, tmp_path):
    """A writer killed before its marker (no cleanup ran) leaves a folder that readers ignore."""
    _, model = fitted
    store = RunsStore(str(tmp_path / "runs"))
    run = write(store, "r1", model)
    crashed = store.attempt("r1").__enter__()  # never committed nor cleaned up
    crashed.write_labels(da.zeros(10, chunks=5, dtype=int))
    assert store.get("r1").url == run.url
    orphan = store.attempt("r2").__enter__()
    orphan.set_attrs(metrics={})
    assert [r.run_id for r in store.runs()] == ["r1"]


def test_runs_are_listed_newest_first_and_ids_are_checked(fitted, tmp_path):
    _, model = fitted
    store = RunsStore(str(tmp_path / "runs"))
    for run_id in ("b", "a", "c"):
        write(store, run_id, model)
    assert [r.run_id for r in store.runs()] == ["c", "a", "b"]
    auto = write(store, None, model)
    assert store.runs()[0].run_id == auto.run_id
    for bad in ("", "../x", "a/b", "attempt-1", "x" * 200):
        with pytest.raises(ValueError, match="Invalid run id"):
            store.attempt(bad).__enter__()


def test_a_store_behind_an_fsspec_url(fitted):
    """The same through fsspec's in-memory filesystem (as for an object store)."""
    _, model = fitted
    store = RunsStore("memory://lowdens-runs-test")
    run = write(store, "m1", model)
    assert run.url.startswith("memory://")
    np.testing.assert_array_equal(store.get("m1").labels.compute(), model.labels_)
    assert [r.run_id for r in store.runs()] == ["m1"]


def test_the_latest_run_on_an_input(fitted, tmp_path):
    _, model = fitted
    store = RunsStore(str(tmp_path / "runs"))
    assert store.latest_on("a.zarr") is None
    for run_id, path in (("r1", "a.zarr"), ("r2", "b.zarr"), ("r3", "a.zarr"), ("r4", "b.zarr")):
        with store.attempt(run_id) as attempt:
            attempt.set_attrs(input={"path": path})
            attempt.commit()
    assert store.latest_on("a.zarr").run_id == "r3" and store.latest_on("b.zarr").run_id == "r4"
    assert store.latest_on("c.zarr") is None


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


# ------------------------------------------------------------------------------------- damaged runs (issue 34, item 14)
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


# -------------------------------------------------------------------------------- committed run ids (issue 34, item 16)
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
