"""The runs store (issue 10): committed attempts only are visible, failures leave nothing, re-runs replace."""

import json

import dask.array as da
import numpy as np
import pytest
from lowdens_pipelines import RunsStore

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
