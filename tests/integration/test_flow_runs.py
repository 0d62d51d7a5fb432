"""The recluster flow's runs (issue 10): continuity of cluster ids between runs, a worker killed in the middle of
a fit, and a failed run that leaves the store as it was. Prefect runs without a server (its ephemeral mode);
the flows share one real two-worker Dask cluster through its address."""

import os

import numpy as np
import pytest
import zarr

pytestmark = [pytest.mark.prefect, pytest.mark.distributed]

CENTRES = 8 * np.eye(6)[:4]


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=3, threads_per_worker=1, dashboard_address=":0") as cluster:
        yield cluster


def mixture(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, len(CENTRES), size=n)
    return (rng.normal(size=(n, CENTRES.shape[1])) + CENTRES[y]).astype("f4"), y


def write(path, X, chunk=2_000):
    zarr.create_array(path, data=X, chunks=(chunk, X.shape[1]), overwrite=True)
    return path


def run_flow(cluster, path, store, run_id, **kwargs):
    from lowdens_pipelines.flows import recluster

    kwargs.setdefault("n_clusters", 4)
    return recluster(path, store=store, run_id=run_id, cluster={"address": cluster.scheduler_address}, **kwargs)


def clusters_of(labels, y):
    """The run's id of each true component (its majority label)."""
    return [int(np.bincount(labels[y == k]).argmax()) for k in range(len(CENTRES))]


@pytest.mark.slow
def test_cluster_ids_carry_over_between_runs(cluster, tmp_path):
    from lowdens_pipelines import RunsStore

    X, y = mixture(20_000, 0)
    path = write(str(tmp_path / "X.zarr"), X)
    store = RunsStore(str(tmp_path / "runs"))
    run_flow(cluster, path, store.root, "first")
    first = store.get("first")
    assert first.attrs["stable_ids"] == [0, 1, 2, 3] and first.attrs["metrics"]["stability"] is None
    # A previous run whose ids are a permutation of the tree's labels (ids chosen by a user, or carried
    # over from older runs): a new run on the same rows must adopt them, whatever its own leaf order.
    ids = [7, 2, 0, 5]
    with store.attempt("permuted") as attempt:
        attempt.write_labels(first.labels.map_blocks(lambda b: np.asarray(ids)[b]))
        attempt.set_attrs(tree=first.tree, stable_ids=ids, input=first.attrs["input"], params=first.attrs["params"])
        attempt.commit()
    run_flow(cluster, path, store.root, "second")
    second = store.get("second")
    stability = second.attrs["metrics"]["stability"]
    assert stability["previous_run"] == "permuted" and stability["compared"] == "same rows"
    assert stability["ari"] == 1.0 and stability["same_id_fraction"] == 1.0
    assert (stability["kept"], stability["new"], stability["gone"]) == (4, 0, 0)
    assert second.attrs["stable_ids"] == ids and second.attrs["metrics"]["passes"]["continuity"] == 1.0
    np.testing.assert_array_equal(second.labels.compute(), store.get("permuted").labels.compute())
    np.testing.assert_array_equal(second.predict(X), second.labels.compute())

    # 5% of the rows replaced by new ones (the store at the same path is rewritten): the rows are routed
    # through the previous tree, and the clusters keep their ids.
    rng = np.random.default_rng(1)
    replaced = rng.choice(len(X), size=len(X) // 20, replace=False)
    X_new, y_new = X.copy(), y.copy()
    X_new[replaced], y_new[replaced] = mixture(len(replaced), 2)
    write(path, X_new)
    run_flow(cluster, path, store.root, "third")
    third = store.get("third")
    stability = third.attrs["metrics"]["stability"]
    assert stability["previous_run"] == "second"
    assert stability["compared"] == "rows routed through the previous tree"
    assert stability["ari"] > 0.99 and stability["kept"] == 4
    assert clusters_of(third.labels.compute(), y_new) == clusters_of(second.labels.compute(), y)
    assert sorted(clusters_of(third.labels.compute(), y_new)) == sorted(ids)


@pytest.mark.slow
def test_worker_killed_during_the_fit(cluster, tmp_path):
    from lowdens_pipelines import RunsStore

    from lowdens_dask.testing import kill_worker_at

    X, _ = mixture(60_000, 3)
    path = write(str(tmp_path / "X.zarr"), X, chunk=5_000)
    run_flow(cluster, path, str(tmp_path / "calm"), "calm")
    calm = RunsStore(str(tmp_path / "calm")).get("calm")
    # SIGKILL the worker that summarised the 5th chunk, unless it runs the Prefect task driving the fit
    with kill_worker_at(cluster.scheduler, "lowdens-summarise", occurrence=4, spare="fit-") as kill:
        run_flow(cluster, path, str(tmp_path / "killed"), "killed")
    assert kill.killed is not None, "no worker was killed"
    assert kill.redone, "no work was lost and redone"
    killed = RunsStore(str(tmp_path / "killed")).get("killed")
    np.testing.assert_array_equal(killed.labels.compute(), calm.labels.compute())
    # the same tree; its hyperplanes may differ in the last bits when a restarted worker redid a chunk
    for a, b in zip(killed.tree, calm.tree, strict=True):
        assert (a.id, a.size, a.children) == (b.id, b.size, b.children)
        if a.v is not None:
            np.testing.assert_allclose(a.v, b.v, atol=1e-6)
            assert abs(a.b - b.b) < 1e-6
    cluster.wait_for_workers(3, timeout=60)


@pytest.mark.slow
def test_failed_run_leaves_the_store_as_it_was(cluster, tmp_path):
    from lowdens_pipelines import RunsStore

    X, _ = mixture(40_000, 4)
    path = write(str(tmp_path / "X.zarr"), X)  # 20 chunks
    store = RunsStore(str(tmp_path / "runs"))
    run_flow(cluster, path, store.root, "nightly")
    before = store.get("nightly")
    labels_before = before.labels.compute()
    # corrupt chunk 3, which the input's fingerprint does not sample: validation passes, the fit fails
    with open(os.path.join(path, "c", "3", "0"), "wb") as chunk:
        chunk.write(b"not a zstd frame")
    from lowdens_dask.backend import ChunkReadError

    with pytest.raises(ChunkReadError, match="chunk"):
        run_flow(cluster, path, store.root, "nightly")
    with pytest.raises(ChunkReadError):
        run_flow(cluster, path, store.root, "other")
    assert [run.run_id for run in store.runs()] == ["nightly"]
    after = store.get("nightly")
    assert (after.url, after.committed_at, after.attrs) == (before.url, before.committed_at, before.attrs)
    np.testing.assert_array_equal(after.labels.compute(), labels_before)
    assert os.listdir(os.path.join(store.root, "nightly")) == [os.path.basename(before.url)]
    assert not os.path.exists(os.path.join(store.root, "other")) or os.listdir(os.path.join(store.root, "other")) == []


@pytest.mark.slow
def test_rows_with_nan_follow_the_nonfinite_policy(cluster, tmp_path):
    from lowdens_pipelines import RunsStore

    X, _ = mixture(12_000, 5)
    X[[3, 4_000, 11_999]] = np.nan
    X[7, 2] = np.inf
    path = write(str(tmp_path / "X.zarr"), X)
    store = RunsStore(str(tmp_path / "runs"))
    with pytest.raises(ValueError, match="4 of 12000 rows with NaN or infinite values"):
        run_flow(cluster, path, store.root, "strict")
    assert store.runs() == []
    run_flow(cluster, path, store.root, "skipping", params={"nonfinite": "skip"})
    run = store.get("skipping")
    labels = run.labels.compute()
    assert sorted(np.flatnonzero(labels == -1)) == [3, 7, 4_000, 11_999]
    assert run.attrs["metrics"]["n_unlabelled"] == 4 and run.attrs["metrics"]["n_nonfinite_"] == 4
    finite = np.isfinite(X).all(axis=1)
    np.testing.assert_array_equal(labels[finite], run.predict(X[finite]))


# ---------------------------------------------------------------------------------------------------- updates
def files_of(run) -> dict[str, bytes]:
    """Every file of a run's committed attempt, by path inside it."""
    from pathlib import Path

    root = Path(run.url)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def nights(cluster, tmp_path_factory):
    """Night 1 fitted (run ``n1``), and night 2's rows (60,000 in 12 chunks) to update it with."""
    from lowdens_pipelines import RunsStore

    folder = tmp_path_factory.mktemp("nights")
    X1, y1 = mixture(20_000, 10)
    X2, y2 = mixture(60_000, 11)
    night1 = write(str(folder / "night1.zarr"), X1)
    night2 = write(str(folder / "night2.zarr"), X2, chunk=5_000)
    store = RunsStore(str(folder / "runs"))
    run_flow(cluster, night1, store.root, "n1")
    return store, night2, (X1, y1), (X2, y2)


@pytest.mark.slow
def test_an_update_run_keeps_the_ids_and_names_its_parent(cluster, nights):
    store, night2, (_, y1), (X2, y2) = nights
    run_flow(cluster, night2, store.root, "n2", update_from="n1", n_clusters=None)
    first, second = store.get("n1"), store.get("n2")
    assert second.parent == "n1" and second.attrs["params"] == first.attrs["params"]  # the parent's settings
    metrics = second.attrs["metrics"]
    assert metrics["update"]["update"] == 1 and metrics["update"]["n_rows"] == 60_000
    assert metrics["stability"] is None  # the ids are the tree's own: no matching
    # one pass to summarise the new rows, one to write their labels
    assert metrics["passes"] == {"update": 1.0, "write_labels": 1.0}
    assert set(metrics["seconds"]) == {"load_and_validate", "update", "write_labels", "metrics"}
    labels = second.labels.compute()
    np.testing.assert_array_equal(second.predict(X2), labels)
    assert clusters_of(labels, y2) == clusters_of(first.labels.compute(), y1)
    assert second.tree.n_updates == 1 and second.summary.n_rows == 80_000


@pytest.mark.slow
def test_worker_killed_during_an_update(cluster, nights):
    from lowdens_dask.testing import kill_worker_at

    store, night2, _, _ = nights
    run_flow(cluster, night2, store.root, "calm-update", update_from="n1", n_clusters=None)
    # SIGKILL the worker that summarised the 5th chunk of the new rows, unless it runs the Prefect task driving it
    with kill_worker_at(cluster.scheduler, "lowdens-summarise", occurrence=4, spare="update-") as kill:
        run_flow(cluster, night2, store.root, "killed-update", update_from="n1", n_clusters=None)
    assert kill.killed is not None, "no worker was killed"
    assert kill.redone, "no work was lost and redone"
    calm, killed = store.get("calm-update"), store.get("killed-update")
    assert killed.parent == "n1"
    np.testing.assert_array_equal(killed.labels.compute(), calm.labels.compute())
    actions = [[(n["node"], n["action"]) for n in run.attrs["metrics"]["update"]["nodes"]] for run in (killed, calm)]
    assert actions[0] == actions[1]
    for a, b in zip(killed.tree, calm.tree, strict=True):
        assert (a.id, a.children, a.label) == (b.id, b.children, b.label)
    cluster.wait_for_workers(3, timeout=60)


@pytest.mark.slow
def test_a_failed_update_leaves_the_parent_as_it_was(cluster, nights, tmp_path):
    from lowdens_dask.backend import ChunkReadError

    store, _, _, (X2, _) = nights
    parent, files = store.get("n1"), files_of(store.get("n1"))
    path = write(str(tmp_path / "night2.zarr"), X2[:40_000])  # 20 chunks
    # corrupt chunk 3, which the input's fingerprint does not sample: validation passes, the update fails
    with open(os.path.join(path, "c", "3", "0"), "wb") as chunk:
        chunk.write(b"not a zstd frame")
    with pytest.raises(ChunkReadError, match="chunk"):
        run_flow(cluster, path, store.root, "broken-update", update_from="n1", n_clusters=None)
    with pytest.raises(KeyError, match="No committed run 'broken-update'"):
        store.get("broken-update")
    after = store.get("n1")
    assert (after.url, after.committed_at, after.attrs) == (parent.url, parent.committed_at, parent.attrs)
    assert files_of(after) == files
