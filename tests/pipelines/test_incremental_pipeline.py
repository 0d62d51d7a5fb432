"""Update runs (issue 24, pipelines): every run keeps its summary, ``lowdens fit --update-from`` and ``run_job``
update a committed run with new rows and commit a new run that names its parent and keeps its cluster ids, a
failed update leaves the parent as it was and no run behind, a series (``lowdens serve --incremental``) updates
its latest run and refits every N runs. These run the job in this process (no Prefect, no Dask cluster); the
flow's updates, a worker lost during one, and serving on a Prefect server are in test_flow_runs.py and
test_prefect_server.py."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import blobs as _blobs
from cli_helpers import lowdens
from cli_helpers import one_error_line as _one_error_line
from lowdens_pipelines import RunsStore, job
from lowdens_pipelines.cli import main
from sklearn.metrics import adjusted_rand_score

#: Five well-separated components in 8 dimensions (the issue's CLI acceptance).
CENTRES = 10.0 * np.eye(8)[:5]


def night(n: int, seed: int, centres=CENTRES) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, len(centres), size=n)
    return (centres[y] + rng.normal(size=(n, centres.shape[1]))).astype("f4"), y


@pytest.fixture
def in_here(tmp_path, monkeypatch):
    """The test's folder as the working directory, and no Prefect API: the command runs the job itself."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    return tmp_path


def files_of(run) -> dict[str, bytes]:
    """Every file of a run's committed attempt, by path inside it: what must not change."""
    root = Path(run.url)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------------------------------- the CLI
@pytest.mark.slow
def test_lowdens_fit_update_from_keeps_the_ids_and_finds_the_mixture(in_here, capsys):
    """The issue's CLI acceptance: two nights of 100,000 rows x 8 float32 from five well-separated components;
    night 2 updates night 1's run, with no --n-clusters; ``runs show`` names the parent, and ``predict`` of the
    update gives the mixture's five clusters with night 1's ids."""
    (X1, y1), (X2, y2) = night(100_000, 1), night(100_000, 2)
    np.save("night1.npy", X1)
    np.save("night2.npy", X2)
    assert main(["fit", "night1.npy", "--n-clusters", "auto", "--run-id", "n1"]) == 0
    assert main(["fit", "night2.npy", "--update-from", "n1", "--run-id", "n2"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[-1].startswith("n2\t5 clusters\t")
    assert "lowdens: updated run n1 (update 1 since its fit): 5 clusters before, 5 now" in err

    assert main(["runs", "show", "n2"]) == 0
    out, err = capsys.readouterr()
    shown = json.loads(out)  # stdout stays one JSON document
    assert shown["parent"] == "n1" and shown["params"]["n_clusters"] == "auto" and shown["params"]["method"] == "mdh"
    report = shown["metrics"]["update"]
    assert report["update"] == 1 and report["n_rows"] == 100_000 and len(report["leaves"]) == 5
    assert err.startswith("lowdens: run n2 is an update of run n1:\n  update 1: 100,000 new rows")
    assert "  cluster  leaf node  share before  share of the new rows" in err

    assert main(["predict", "n2", "night2.npy", "--out", "p.npy"]) == 0
    predicted = np.load("p.npy")
    assert len(np.unique(predicted)) == 5 and adjusted_rand_score(y2, predicted) >= 0.99
    # the ids are night 1's: each component's id on night 2 is the one its rows had on night 1
    store = RunsStore("lowdens-runs")
    first, second = store.get("n1").labels.compute(), store.get("n2").labels.compute()
    np.testing.assert_array_equal(second, predicted)
    for k in range(len(CENTRES)):
        assert np.bincount(second[y2 == k]).argmax() == np.bincount(first[y1 == k]).argmax()
    # the update's summary holds both nights' rows; the parent's, night 1's
    assert store.get("n2").summary.n_rows == 200_000 and store.get("n1").summary.n_rows == 100_000


def test_bad_update_requests_are_one_line_and_leave_no_run(in_here, capsys):
    X, _ = night(6_000, 3)
    np.save("X.npy", X)
    np.save("narrow.npy", X[:, :5])
    assert main(["fit", "X.npy", "--n-clusters", "5", "--run-id", "p"]) == 0
    assert main(["fit", "X.npy", "--method", "msc", "--n-clusters", "2", "--run-id", "kernel"]) == 0
    assert main(["fit", "X.npy", "--n-clusters", "5", "--run-id", "old"]) == 0
    os.remove(Path(RunsStore("lowdens-runs").get("old").url) / "summary.npz")  # a run from before summaries
    capsys.readouterr()
    refused = {
        ("--update-from", "nope"): "No committed run 'nope' in the runs store './lowdens-runs'.",
        ("--update-from", "p", "--run-id", "p"): (
            "An update is committed as a new run: its run id must differ from its parent's ('p')."
        ),
        ("--update-from", "p", "--method", "ncut"): (
            "Run 'p' was fitted with method 'mdh'; an update keeps its parent's method (got 'ncut')."
        ),
        ("--update-from", "kernel"): "Run 'kernel' cannot be updated: its method 'msc' has no partial_fit (updates "
        "need one of: mdh, pddp, depddp, ipddp, ncut, mc, scpp, lmsc).",
        ("--update-from", "old"): "Run 'old' keeps no summary of its rows (it was committed before runs kept one); "
        "fit it again to update it.",
    }
    for options, message in refused.items():
        assert main(["fit", "X.npy", *options]) == 2, options
        assert capsys.readouterr().err.splitlines() == [f"lowdens: error: {message}"], options
    assert main(["fit", "narrow.npy", "--update-from", "p"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "lowdens: error: narrow.npy has 5 columns; run 'p', which it would update, was fitted on 8."
    )
    assert sorted(run.run_id for run in RunsStore("lowdens-runs").runs()) == ["kernel", "old", "p"]
    assert RunsStore("lowdens-runs").get("kernel").summary is None  # no partial_fit: no summary kept


def test_serve_incremental_options_are_checked_first(in_here, capsys):
    np.save("X.npy", night(300, 4)[0])
    assert main(["serve", "X.npy", "--refit-every", "3"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "lowdens: error: --refit-every N goes with --incremental (without it every run is a full fit)."
    ]
    assert main(["serve", "X.npy", "--incremental", "--method", "svm-relabel"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "lowdens: error: --incremental: runs of --method svm-relabel cannot be updated (it has no partial_fit)."
    ]


# ---------------------------------------------------------------------------------------------------- run_job
@pytest.mark.slow
def test_every_fit_keeps_the_summary_an_update_starts_from(in_here):
    """A summary-mode fit keeps its own summary; an exact fit (in memory, by the in-process path) keeps one built
    from its rows; both can be updated."""
    X, y = night(20_000, 5)
    np.save("X.npy", X)
    job.run_job("X.npy", n_clusters=5, run_id="summary")
    job.run_job("X.npy", n_clusters=5, params={"mode": "exact"}, run_id="exact")
    store = RunsStore("lowdens-runs")
    for run_id in ("summary", "exact"):
        summary = store.get(run_id).summary
        assert summary.n_rows == 20_000 and summary.n_features == 8
        assert summary.total_weight == pytest.approx(20_000)
        assert 100 <= summary.n_microclusters <= 2_000, summary.n_microclusters  # microclusters, not the rows
    X2, y2 = night(20_000, 6)
    np.save("X2.npy", X2)
    job.run_job("X2.npy", update_from="exact", run_id="update")
    update = store.get("update")
    assert update.parent == "exact" and update.attrs["params"]["mode"] == "exact"  # the parent's settings
    assert update.attrs["params"]["n_clusters"] == 5  # as given (the default, "auto", is the CLI's to fill)
    assert update.summary.n_rows == 40_000
    assert adjusted_rand_score(y2, update.labels.compute()) > 0.99
    assert set(update.attrs["metrics"]["seconds"]) == {"load_and_validate", "update", "write_labels", "metrics"}


@pytest.mark.slow
def test_an_update_keeps_the_parent_runs_ids_and_never_reuses_one(in_here):
    """A run whose ids were carried over by matching (here a permutation of its tree's labels, with ids up to 11
    used before) is updated: the update's tree labels its leaves with those ids, a new cluster gets an id no run
    of the line used, and ``predict``, the labels and the tree agree."""
    centres = CENTRES[:4]
    X1, _ = night(20_000, 7, centres)
    np.save("X1.npy", X1)
    job.run_job("X1.npy", n_clusters="auto", run_id="fit")
    store = RunsStore("lowdens-runs")
    fit = store.get("fit")
    assert fit.attrs["stable_ids"] == [0, 1, 2, 3] and fit.attrs["next_id"] == 4
    ids = [7, 2, 11, 5]
    with store.attempt("permuted") as attempt:
        attempt.write_labels(fit.labels.map_blocks(lambda b: np.asarray(ids)[b]))
        attempt.write_summary(fit.summary)
        attrs = {key: fit.attrs[key] for key in ("params", "input", "metrics")}
        attempt.set_attrs(tree=fit.tree, stable_ids=ids, next_id=12, **attrs)
        attempt.commit()
    # night 2: the four components and a fifth, new one
    X2, y2 = night(20_000, 8, CENTRES)
    np.save("X2.npy", X2)
    job.run_job("X2.npy", update_from="permuted", run_id="update")
    update = store.get("update")
    labels = update.labels.compute()
    old = y2 < 4
    np.testing.assert_array_equal(labels[old], store.get("permuted").predict(X2[old]))
    (new_id,) = set(np.unique(labels[~old]))
    assert new_id == 12 and update.attrs["next_id"] == 13
    assert sorted(update.tree.leaf_labels().values()) == [2, 5, 7, 11, 12]
    assert update.attrs["stable_ids"] == list(range(13))  # the identity: the tree's labels are the ids
    np.testing.assert_array_equal(update.predict(X2), labels)
    assert update.attrs["metrics"]["cluster_sizes"][12] == (~old).sum()
    assert [node["action"] for node in update.attrs["metrics"]["update"]["nodes"]].count("split") == 1


@pytest.fixture
def parent(in_here):
    X1, _ = night(20_000, 9)
    np.save("X1.npy", X1)
    np.save("X2.npy", night(20_000, 10)[0])
    job.run_job("X1.npy", n_clusters="auto", run_id="n1")
    run = RunsStore("lowdens-runs").get("n1")
    return run, files_of(run)


def _fail_after_partial_fit(monkeypatch):
    """partial_fit runs (the estimator's tree is updated in memory), then fails."""
    from lowdens_dask import MDHClustering

    partial_fit = MDHClustering.partial_fit

    def failing(self, X, y=None, sample_weight=None):
        partial_fit(self, X)
        raise RuntimeError("failed on purpose after partial_fit")

    monkeypatch.setattr(MDHClustering, "partial_fit", failing)


def _fail_half_way_through_the_labels(monkeypatch):
    """The summary is in the attempt, the labels' first chunks are written, then a chunk fails."""
    route = job.route_to_stable_ids

    def failing(X, tree_json, stable_ids):
        def chunk(block, block_info=None):
            if block_info[0]["chunk-location"][0] == 3:
                raise RuntimeError("failed on purpose at the labels' chunk 3")
            return block

        return route(X, tree_json, stable_ids).map_blocks(chunk, dtype=np.int64)

    monkeypatch.setattr(job, "route_to_stable_ids", failing)


@pytest.mark.parametrize(
    "fail, written",
    [(_fail_after_partial_fit, set()), (_fail_half_way_through_the_labels, {"summary.npz", "labels/zarr.json"})],
)
def test_a_failed_update_leaves_the_parent_as_it_was_and_no_run(parent, monkeypatch, fail, written):
    from lowdens_pipelines.runs import Attempt

    run, before = parent
    fail(monkeypatch)
    discarded, discard = [], Attempt.discard

    def recording(self):  # what the failed attempt had written when it was discarded
        root = Path(self.url)
        discarded.append({str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()})
        discard(self)

    monkeypatch.setattr(Attempt, "discard", recording)
    with pytest.raises(RuntimeError, match="failed on purpose"):
        job.run_job("X2.npy", update_from="n1", run_id="n2")
    (files,) = discarded
    assert written <= files and "COMMITTED" not in files
    store = RunsStore("lowdens-runs")
    assert [r.run_id for r in store.runs()] == ["n1"]
    with pytest.raises(KeyError, match="No committed run 'n2'"):
        store.get("n2")
    # the attempt is deleted; a label chunk whose write was under way when another failed may land after that,
    # without a claim or a commit marker: invisible, as the runs store leaves a failed attempt it cannot delete
    assert not {p.name for p in Path("lowdens-runs").glob("n2/**/*")} & {"CLAIM", "COMMITTED"}
    after = store.get("n1")
    assert (after.url, after.committed_at, after.attrs) == (run.url, run.committed_at, run.attrs)
    assert files_of(after) == before  # every byte of the parent, its tree, summary and labels


@pytest.mark.slow
def test_a_series_updates_its_latest_run_and_refits_every_n(in_here):
    """``lowdens serve --incremental --refit-every 3``'s runs: a fit, two updates, a refit (whose ids are matched
    with the series' latest run's), an update of the refit; a run of another series is never a parent."""
    X, _ = night(20_000, 11)
    np.save("X.npy", X)
    store = RunsStore("lowdens-runs")
    job.run_job("X.npy", n_clusters="auto", series="other", refit_every=3, run_id="other-1")
    for i in range(1, 6):
        job.run_job(  # the same rows each night: allowed here (an update of the same input is refused by default)
            "X.npy", n_clusters="auto", series="nightly", refit_every=3, run_id=f"night-{i}", allow_same_input=True
        )
    runs = {i: store.get(f"night-{i}") for i in range(1, 6)}
    assert [runs[i].parent for i in range(1, 6)] == [None, "night-1", "night-2", None, "night-4"]
    assert [runs[i].tree.n_updates for i in range(1, 6)] == [0, 1, 2, 0, 1]
    assert all(runs[i].attrs["series"] == "nightly" for i in runs)
    assert runs[4].attrs["metrics"]["stability"]["previous_run"] == "night-3"
    labels = {i: runs[i].labels.compute() for i in runs}
    for i in range(2, 6):  # the same rows every night: the same ids throughout
        np.testing.assert_array_equal(labels[i], labels[1])
    with pytest.raises(ValueError, match="refit_every needs a series"):
        job.run_job("X.npy", refit_every=3)


def _hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder``, by relative path."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------- a failed update changes nothing in the runs store (issue 34, item 8)
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


# ------------------------------------------------------------------------ update batches of one row (issue 34, item 11)
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
    assert night.parent == "night-1" and night.tree.n_updates == 1
