"""The data and the runs store on S3, as deploy/README.md tells users to keep them (issue 22, point 19): a moto S3
server (tests/conftest.py's ``s3_server``, started once per session) configured with the standard AWS_* variables
only, and the whole ``lowdens`` path against it: fit from s3:// into an s3:// runs store in summary and exact mode,
runs list and show, predict, plot (what it reads; the drawing is tested locally), a damaged run. The two concurrent
attempts at one run id and the damaged run of the store itself run on S3 too, in tests/pipelines/test_runs_races.py (its
``store`` fixture's ``s3`` case)."""

import contextlib
import io
import json
import secrets

import dask.array as da
import numpy as np
import pytest
import zarr
from lowdens_pipelines import RunsStore
from lowdens_pipelines.cli import main
from sklearn.metrics import adjusted_rand_score


def _mixture(n_per_group: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three well-separated Gaussian groups in 4 dimensions, rows shuffled."""
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.repeat(np.arange(3), n_per_group))
    return (rng.normal(size=(y.size, 4)) + 10.0 * np.eye(3, 4)[y]).astype("f4"), y


def lowdens(*argv: str) -> tuple[int, str, str]:
    """``lowdens ARGV`` in this process (the command's main): (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def on_s3(s3_server, tmp_path_factory):
    """The mixture at s3://.../data.zarr/X (3 chunks of 300 rows), its labels beside the test, and two fits into the
    runs store s3://.../runs: 'summary', then, after a damaged run 'broken' appeared in the store, 'exact'."""
    folder = tmp_path_factory.mktemp("s3")
    root = f"{s3_server}/cli-{secrets.token_hex(4)}"
    X, y = _mixture()
    zarr.open_group(f"{root}/data.zarr", mode="w").create_array("X", data=X, chunks=(300, 4))
    np.save(folder / "y.npy", y)
    data, runs = f"{root}/data.zarr/X", f"{root}/runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.delenv("PREFECT_API_URL", raising=False)
        fit = ["fit", data, "--store", runs, "--n-clusters", "3", "--labels", "y.npy", "--run-id"]
        summary = lowdens(*fit, "summary", "--param", "mode=summary")
        # a damaged run: a copy of 'summary' whose zarr.json is cut short
        store = RunsStore(runs)
        source = store.get("summary").url
        broken = source.replace("/runs/summary/", "/runs/broken/")
        store.fs.copy(source, broken, recursive=True)
        text = store.fs.cat_file(f"{broken}/zarr.json")
        store.fs.pipe_file(f"{broken}/zarr.json", text[: len(text) // 2])
        exact = lowdens(*fit, "exact", "--param", "mode=exact")
        yield {
            "X": X,
            "y": y,
            "root": root,
            "data": data,
            "runs": runs,
            "folder": folder,
            "broken": broken,
            "fits": {"summary": summary, "exact": exact},
        }


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["summary", "exact"])
def test_fit_from_s3_into_an_s3_runs_store(on_s3, mode):
    status, out, err = on_s3["fits"][mode]
    assert status == 0, err
    run = RunsStore(on_s3["runs"]).get(mode)
    assert run.url.startswith(f"{on_s3['runs']}/{mode}/attempt-")
    assert out.startswith(f"{mode}\t3 clusters\t{on_s3['runs']}/{mode}\n")  # the run, not its attempt
    assert run.attrs["params"]["mode"] == mode and run.attrs["input"]["path"] == on_s3["data"]
    labels = run.labels.compute()
    assert labels.shape == (900,) and adjusted_rand_score(on_s3["y"], labels) >= 0.99
    assert run.attrs["metrics"]["adjusted_rand"] >= 0.99
    np.testing.assert_array_equal(labels, run.predict(on_s3["X"]))


def test_a_damaged_run_on_s3_is_listed_apart_and_skipped(on_s3):
    status, _, err = on_s3["fits"]["exact"]  # fitted after 'broken' was damaged
    broken = on_s3["broken"]
    assert status == 0, err
    assert f"lowdens: warning: Skipping the damaged run 'broken' ({broken}) for continuity: {broken}/zarr.json" in err
    run = RunsStore(on_s3["runs"]).get("exact")
    assert run.attrs["metrics"]["stability"]["previous_run"] == "summary"
    assert run.attrs["metrics"]["stability"]["ari"] >= 0.99

    status, out, err = lowdens("runs", "list", "--store", on_s3["runs"])
    assert status == 0, err
    lines = out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["run", "exact", "summary", "broken"]
    assert all(line.split("\t")[-1] == on_s3["data"] for line in lines[1:3])
    assert lines[3].startswith(f"broken\tdamaged\t{broken}/zarr.json: JSONDecodeError: ")
    status, _, err = lowdens("runs", "show", "broken", "--store", on_s3["runs"])
    assert status == 2 and err.startswith(f"lowdens: error: Run 'broken' is damaged ({broken}): ")


def test_show_predict_and_plot_a_run_on_s3(on_s3, monkeypatch):
    status, out, err = lowdens("runs", "show", "exact", "--store", on_s3["runs"])
    assert status == 0, err
    shown = json.loads(out)
    assert shown["url"].startswith(f"{on_s3['runs']}/exact/") and shown["input"]["shape"] == [900, 4]

    predicted = f"{on_s3['root']}/predicted.zarr"
    status, out, err = lowdens("predict", "exact", on_s3["data"], "--out", predicted, "--store", on_s3["runs"])
    assert status == 0 and out == f"{predicted}\t900 rows\n", err
    run = RunsStore(on_s3["runs"]).get("exact")
    np.testing.assert_array_equal(da.from_zarr(predicted).compute(), run.labels.compute())

    # plot: the run, its input and its true labels read back from where the run records them (S3 for the first
    # two); the drawing is tests/system/test_cli_plot.py's and tests/package/test_plots.py's (4 s of matplotlib here)
    import lowdens_dask.plots

    given = []

    def record(tree, X, out, *, labels=None, **kwargs):
        given.append((tree.to_json(), np.asarray(X), labels, out))
        return lowdens_dask.plots.SavedPlots()

    monkeypatch.setattr(lowdens_dask.plots, "save_plots", record)
    monkeypatch.chdir(on_s3["folder"])  # where the run's true labels are (it records them as y.npy)
    status, out, err = lowdens("plot", "exact", "--out", "plots", "--store", on_s3["runs"])
    assert status == 0 and "cannot be read" not in err, err
    [(tree, X, labels, folder)] = given
    assert tree == run.tree.to_json() and str(folder) == "plots"
    np.testing.assert_array_equal(X, on_s3["X"])
    np.testing.assert_array_equal(labels, on_s3["y"])


def test_an_unwritten_fill_value_chunk_of_the_input_on_s3_is_accepted(s3_server, tmp_path, monkeypatch):
    X, _ = _mixture(n_per_group=100, seed=1)
    X[:50] = 0.0  # rows of zarr's default fill value: a chunk zarr does not write
    data = f"{s3_server}/fill-{secrets.token_hex(4)}/data.zarr"
    array = zarr.create_array(data, data=X, chunks=(50, 4))
    assert array.nchunks_initialized == 5  # of 6: the chunk of zeros is not in the store
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    status, _, err = lowdens("fit", data, "--store", "runs", "--n-clusters", "3", "--run-id", "fill")
    assert status == 0, err
    labels = RunsStore("runs").get("fill").labels.compute()
    assert labels.shape == (300,) and len(set(labels[:50])) == 1 and labels.min() >= 0
