"""Issue 35, item 2: runs record local paths absolute (URLs as given), so that a run reads back from any working
directory; a given path and a recorded one are compared normalised; runs recorded with relative paths read as
before. Through the ``lowdens`` command run in this process."""

import os

import numpy as np
from cli_helpers import blobs as _blobs
from cli_helpers import lowdens
from lowdens_pipelines import RunsStore


def test_plot_predict_and_update_work_from_another_working_directory(here, capsys, monkeypatch):
    """Before: ``lowdens plot RUN --store /elsewhere/runs`` from another directory failed with '... does not exist'
    (the run recorded ``night-1.npy``), and a fit of ``../work/night-1.npy`` was not matched with the run on
    ``night-1.npy`` (no continuity)."""
    work, other = here / "work", here / "other"
    work.mkdir()
    other.mkdir()
    X = _blobs()
    y = np.repeat([0, 1], len(X) // 2)
    monkeypatch.chdir(work)
    np.save("night-1.npy", X[::2])
    np.save("y.npy", y[::2])
    status, out, err = lowdens(
        capsys, "fit", "night-1.npy", "--labels", "y.npy", "--store", "runs", "--run-id", "night-1", "--n-clusters", "2"
    )
    assert status == 0, err
    store = str(work / "runs")
    recorded = RunsStore(store).get("night-1").attrs["input"]
    assert recorded["path"] == str(work / "night-1.npy") and recorded["true_labels"] == str(work / "y.npy")

    monkeypatch.chdir(other)
    status, out, err = lowdens(capsys, "plot", "night-1", "--store", store, "--out", "plots")
    assert status == 0 and out and all(os.path.exists(line) for line in out), err
    assert not any("cannot be read" in line for line in err), err  # the run's true labels, found from here too

    status, out, err = lowdens(
        capsys, "predict", "night-1", "../work/night-1.npy", "--out", "labels.npy", "--store", store
    )
    assert status == 0, err
    np.testing.assert_array_equal(np.load("labels.npy"), RunsStore(store).get("night-1").labels.compute())

    np.save("night-2.npy", X[1::2])
    status, out, err = lowdens(capsys, "fit", "night-2.npy", "--update-from", "night-1", "--store", store)
    assert status == 0, err
    (update,) = [run for run in RunsStore(store).runs() if run.parent == "night-1"]
    assert update.attrs["input"]["path"] == str(other / "night-2.npy")

    # night-1.npy by another name: the same input, so its ids are matched with night-1's (continuity)
    status, out, err = lowdens(
        capsys, "fit", "../work/./night-1.npy", "--store", store, "--run-id", "again", "--n-clusters", "2"
    )
    assert status == 0, err
    assert RunsStore(store).get("again").attrs["metrics"]["stability"]["previous_run"] == "night-1"


def test_a_run_recorded_with_a_relative_path_reads_as_before(here):
    """Runs committed before item 2 recorded the path as given: it is still the input it names from the directory
    the command runs in, however the input is named now."""
    store = RunsStore("runs")
    for run_id, path in (("old", "a.zarr"), ("other", "b.zarr")):
        with store.attempt(run_id) as attempt:
            attempt.set_attrs(params={"method": "mdh"}, metrics={"n_leaves": 2}, input={"path": path})
            attempt.commit()
    assert store.latest_on("a.zarr").run_id == "old"
    assert store.latest_on(str(here / "a.zarr")).run_id == "old" and store.latest_on("./b.zarr").run_id == "other"
    assert store.latest_on(str(here / "c.zarr")) is None


def test_urls_are_kept_as_given(here):
    from lowdens_pipelines.paths import absolute, is_relative, same_path

    for url in ("s3://bucket/X.zarr", "gs://b/x.csv", "memory://x.npy", "file:///tmp/x.npy", "simplecache::s3://b/x"):
        assert absolute(url) == url and not is_relative(url)
    assert absolute("X.zarr/") == str(here / "X.zarr") and absolute(None) is None and absolute([0, 1]) == [0, 1]
    assert is_relative("X.zarr") and not is_relative(str(here / "X.zarr"))
    assert same_path("s3://b/X.zarr/", "s3://b/X.zarr") and not same_path("s3://b/X.zarr", "X.zarr")
