"""Issue 22 ("Reliability, second round"), points 10, 12, 13, 14, 17 (input) and 18: chunked and in-memory fits
that agree, zarr stores read as zarr means them, and fits that fail instead of waiting."""

import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import zarr
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import (
    IPDDP,
    MSC,
    PDDP,
    ClusterTree,
    DePDDP,
    MCClustering,
    MDHClustering,
    NCutClustering,
    SCPPClustering,
)
from lowdens_dask.backend import INTEGRITY_ATTRIBUTE, WorkerMemoryError, as_dask_array, write_integrity_manifest
from lowdens_dask.growth.grower import merge_unreached_leaves
from lowdens_dask.tree import HyperplaneRule


def _rounding_level_rows(n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Column 0 varies only in its last bits (1.0, 1.0 + 1 ulp, 1.0 + 2 ulp); column 1 holds three groups 0/1/2.
    Above SMALL_INPUT_ROWS, so that exact mode on a Dask array passes over its chunks."""
    groups = np.repeat([0, 1, 2], n // 3)
    ulps = 1.0 + (np.arange(n) % 3) * np.finfo(np.float64).eps
    return np.column_stack([ulps, groups.astype(np.float64)]), groups


@pytest.mark.parametrize("cls", [PDDP, MDHClustering, MCClustering, NCutClustering])
def test_point13_rounding_level_column_is_constant(cls):
    """Issue 22, point 13: a column whose spread is at rounding level is treated as constant (with a warning), so
    standardize=True finds the three groups, and exact mode on column chunks gives the in-memory labels."""
    X, groups = _rounding_level_rows()
    with pytest.warns(UserWarning, match=r"1 column\(s\) whose spread is within rounding error .*indices \[0\]"):
        memory = cls(n_clusters=3, standardize=True, random_state=0).fit(X)
    assert memory.n_clusters_ == 3 and adjusted_rand_score(groups, memory.labels_) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        exact = cls(n_clusters=3, standardize=True, random_state=0, mode="exact").fit(da.from_array(X, chunks=(300, 1)))
    np.testing.assert_array_equal(exact.labels_.compute(), memory.labels_)


def test_point13_scpp_in_memory_sets_the_rounding_level_column_aside():
    """Issue 22, point 13, for SCPP's in-memory path (its exact mode builds microclusters per node, so it is
    compared with the groups, not label for label): standardize=True finds the three groups."""
    X, groups = _rounding_level_rows()
    with pytest.warns(UserWarning, match="within rounding error"):
        memory = SCPPClustering(n_clusters=3, standardize=True, random_state=0).fit(X)
    assert adjusted_rand_score(groups, memory.labels_) == 1.0


def test_point13_unscaled_rounding_level_column_agrees_with_exact_mode():
    """Issue 22, point 13: without standardisation, a column 1e9 ± 1.6e-5 beside three groups: MCClustering's
    in-memory and exact fits agree label for label and find the groups."""
    rng = np.random.default_rng(0)
    groups = np.repeat([0, 1, 2], 100)
    X = np.column_stack([1e9 + rng.choice([-1.6e-5, 0.0, 1.6e-5], 300), groups + 0.05 * rng.normal(size=300)])
    with pytest.warns(UserWarning, match="within rounding error"):
        memory = MCClustering(n_clusters=3, random_state=0).fit(X)
    assert adjusted_rand_score(groups, memory.labels_) > 0.9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        exact = MCClustering(n_clusters=3, random_state=0, mode="exact").fit(da.from_array(X, chunks=(97, 2)))
    np.testing.assert_array_equal(exact.labels_.compute(), memory.labels_)


def test_point10_msc_predicts_the_same_on_dask_and_in_memory():
    """Issue 22, point 10: MSC(standardize=True) routes a row the same way in memory, in a Dask chunk and in labels_
    (one float64 computation per row); rows that differ only in their last bits are one cluster."""
    rng = np.random.default_rng(3)
    last_bits = 1.0 + rng.integers(0, 8, (300, 8)) * np.finfo(np.float64).eps
    blobs = np.vstack([rng.normal(size=(150, 8)), rng.normal(size=(150, 8)) + 2.0])
    for X in (last_bits, blobs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # one cluster only, for the rows that differ in last bits
            model = MSC(standardize=True, random_state=0).fit(X)
        in_memory = model.predict(X)
        np.testing.assert_array_equal(model.predict(da.from_array(X, chunks=(37, 8))).compute(), in_memory)
        np.testing.assert_array_equal(model.labels_, in_memory)
        f = model.decision_function(X)
        np.testing.assert_array_equal(model.decision_function(da.from_array(X, chunks=(37, 8))).compute(), f)
        np.testing.assert_array_equal(np.concatenate([model.decision_function(X[i : i + 1]) for i in range(300)]), f)
    with pytest.warns(UserWarning, match="Only 1 clusters could be formed"):
        assert np.unique(MSC(standardize=True, random_state=0).fit(last_bits).labels_).size == 1


def test_point12_fill_value_chunk_is_not_damage(tmp_path):
    """Issue 22, point 12: zarr does not write a chunk of fill values (rows 40-49 all zero); without a manifest it
    reads as zeros, as zarr means it. A lowdens integrity manifest (written by labels_store, or by
    write_integrity_manifest) lists it as unwritten, and a chunk deleted after that is still refused."""
    X = np.random.default_rng(0).normal(size=(90, 3)) + 20.0
    X[40:50] = 0.0
    path = tmp_path / "X.zarr"
    zarr.create_array(str(path), data=X, chunks=(10, 3))
    assert not (path / "c" / "4" / "0").exists()  # zarr left it unwritten
    np.testing.assert_array_equal(as_dask_array(str(path)).compute(), X)
    model = PDDP(n_clusters=2, labels_store=str(tmp_path / "labels.zarr")).fit(str(path))
    assert sorted(np.bincount(model.labels_.compute())) == [10, 80]  # the zero rows are a cluster of their own
    manifest = zarr.open_array(str(tmp_path / "labels.zarr"), mode="r").attrs[INTEGRITY_ATTRIBUTE]
    assert manifest["shape"] == [90] and manifest["chunks"] == [10]
    assert write_integrity_manifest(str(path))["unwritten"] == [[4, 0]]
    np.testing.assert_array_equal(as_dask_array(str(path)).compute(), X)  # the unwritten chunk is known
    (path / "c" / "7" / "0").unlink()
    with pytest.raises(ValueError, match=r"is damaged: 1 of 9 row chunks missing: 7 \(rows 70-79\)"):
        PDDP(n_clusters=2).fit(str(path))


def test_point17_truncated_input_metadata_names_the_damaged_store(tmp_path):
    """Issue 22, point 17 (input): a truncated zarr.json of an input array, of its group, or of an array in a group
    is a ValueError that names the store and says it is damaged, not the bare JSON decoder message."""
    X = np.random.default_rng(0).normal(size=(300, 3))
    zarr.create_array(str(tmp_path / "a.zarr"), data=X, chunks=(100, 3))
    zarr.open_group(str(tmp_path / "g.zarr"), mode="w").create_array("X", data=X, chunks=(100, 3))
    for meta, target in [
        ("a.zarr/zarr.json", "a.zarr"),
        ("g.zarr/zarr.json", "g.zarr"),
        ("g.zarr/X/zarr.json", "g.zarr/X"),
    ]:
        text = (tmp_path / meta).read_bytes()
        (tmp_path / meta).write_bytes(text[: len(text) // 2])
        with pytest.raises(ValueError, match="is damaged") as err:
            MDHClustering(n_clusters=2).fit(str(tmp_path / target))
        assert str(tmp_path / target.split("/")[0]) in str(err.value) and "zarr.json" in str(err.value)
        (tmp_path / meta).write_bytes(text)


@pytest.mark.parametrize(
    "cls", [MDHClustering, PDDP, NCutClustering, SCPPClustering, DePDDP, IPDDP, MCClustering], ids=lambda c: c.__name__
)
def test_point14_summary_mode_reports_only_leaves_that_rows_reach(cls, tmp_path_factory):
    """Issue 22, point 14: two tight groups in 17-row zarr chunks, n_clusters=3, summary mode: n_clusters_ equals the
    number of distinct labels (chunks that small gave one microcluster each, some averaging both groups)."""
    path = tmp_path_factory.getbasetemp() / "two-groups-17-row-chunks.zarr"
    if not path.exists():
        rng = np.random.default_rng(0)
        X = np.vstack([rng.normal(size=(150, 2)) * 0.1, rng.normal(size=(150, 2)) * 0.1 + [10.0, 0.0]])
        zarr.create_array(str(path), data=X, chunks=(17, 2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)  # dePDDP warns of a forced split
        model = cls(n_clusters=3, random_state=0).fit(str(path))
    labels = model.labels_.compute()
    assert np.unique(labels).tolist() == list(range(model.n_clusters_))
    # the chunks are summarised in groups: no microcluster between the groups, no split to undo
    assert model.n_clusters_ == 3 and not [w for w in caught if "no row reaches" in str(w.message)]


def test_point14_a_leaf_no_row_reaches_is_merged_back():
    """Issue 22, point 14: a leaf that no microcluster's representative row reaches is merged back into its parent
    (the sibling's split takes the parent's place), with a warning; labels stay 0..n_clusters_-1."""
    tree = ClusterTree(1, "pddp")
    tree.add_rule_split(0, "pddp", HyperplaneRule([1.0], 0.0), (10, 20), {}, {})
    tree.add_rule_split(2, "pddp", HyperplaneRule([1.0], 5.0), (5, 15), {}, {})
    tree.add_rule_split(4, "pddp", HyperplaneRule([1.0], 9.0), (7, 8), {}, {})
    with pytest.warns(UserWarning, match=r"1 split\(s\) made a cluster that no row reaches"):
        assert merge_unreached_leaves(tree, np.array([[-1.0], [8.0], [10.0]])) == 1  # none in [0, 5)
    assert tree.n_leaves == 3
    assert tree.predict(np.array([[-1.0], [2.0], [8.0], [10.0]])).tolist() == [0, 1, 1, 2]
    assert tree.nodes[2].rule == HyperplaneRule([1.0], 9.0) and tree.nodes[5].depth == 2


@pytest.mark.slow
def test_point18_workers_too_small_fail_instead_of_waiting():
    """Issue 22, point 18: workers whose start-up footprint is above their pause threshold get a WorkerMemoryError
    naming the limit and the footprint, at once; and a pass whose workers all stay paused, with no task running,
    is cancelled after lowdens.worker-paused-timeout instead of waiting forever."""
    import psutil
    from distributed import Client, LocalCluster
    from distributed.core import Status

    X = da.from_array(np.random.default_rng(0).normal(size=(400, 3)), chunks=(100, 3))
    footprint = psutil.Process().memory_info().rss  # in-process workers measure this process
    small = {"n_workers": 2, "threads_per_worker": 1, "processes": False, "dashboard_address": ":0"}
    with LocalCluster(memory_limit=int(footprint / 2), **small) as cluster, Client(cluster):
        with pytest.raises(WorkerMemoryError, match=r"memory_limit=.* start-up footprint .* is already") as err:
            MDHClustering(n_clusters=2, random_state=0).fit(X)
        assert "pauses it at 80%" in str(err.value)
    with LocalCluster(memory_limit=0, **small) as cluster, Client(cluster) as client:
        client.run(lambda dask_worker: setattr(dask_worker, "status", Status.paused))
        timeout = dask.config.set({"lowdens.worker-paused-timeout": "2s"})
        with timeout, pytest.raises(WorkerMemoryError, match="paused for memory, with no task running"):
            PDDP(n_clusters=2, mode="exact").fit(X)


def test_a_pass_that_waits_leaves_no_results_on_the_cluster():
    """A pass on a distributed client (``backend.workers.compute``) that outlasts one look at the workers releases
    its results once gathered, as ``dask.compute`` does: a later fit of the same keys must run its tasks again (the
    worker-loss tests kill a worker at one of them)."""
    import time

    import dask
    from distributed import Client, LocalCluster

    from lowdens_dask.backend.workers import POLL_SECONDS, compute

    slow = dask.delayed(lambda: time.sleep(POLL_SECONDS * 1.5) or 1)()
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    with cluster, Client(cluster) as client:
        assert compute(slow) == (1,)

        def tasks_held():
            return client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))

        deadline = time.monotonic() + 5.0
        while tasks_held() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tasks_held() == 0
