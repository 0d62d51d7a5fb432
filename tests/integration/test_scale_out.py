"""Summary mode on Dask arrays and zarr stores, on a real 2-process LocalCluster."""

import logging
import threading

import dask
import dask.array as da
import numpy as np
import pytest
import zarr
from distributed import Client, LocalCluster
from sklearn.metrics import adjusted_rand_score
from tolerances import argmin_atol

from lowdens_dask import PDDPClustering, MDHClustering
from lowdens_dask.backend import as_dask_array
from lowdens_dask.datasets import load_dataset
from lowdens_dask.growth import hyperplane_splitter as hyperplanes


def mixture(n=30_000, k=4, d=6, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6.0, size=(k, d))
    y = rng.integers(0, k, size=n)
    X = (centres[y] + rng.normal(size=(n, d))).astype(np.float32)
    return X, y


@pytest.fixture
def client(dask_client):
    """A client of the session's two-process LocalCluster (tests/conftest.py), the default while the test runs."""
    return dask_client


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    X, y = mixture()
    path = tmp_path_factory.mktemp("zarr") / "data.zarr"
    group = zarr.open_group(str(path), mode="w")
    group.create_array("X", data=X, chunks=(3000, X.shape[1]))
    return path, X, y


@pytest.mark.distributed
@pytest.mark.slow
def test_fit_from_zarr_path_writes_chunk_aligned_labels(client, store, tmp_path):
    path, X, y = store
    labels_path = tmp_path / "labels.zarr"
    model = MDHClustering(n_clusters=4, random_state=0, labels_store=str(labels_path), mode="summary").fit(f"{path}/X")
    written = zarr.open_array(str(labels_path), mode="r")
    assert written.shape == (len(X),) and written.chunks == (3000,)
    labels = np.asarray(written[:])
    assert adjusted_rand_score(y, labels) > 0.99
    assert model.n_microclusters_ <= len(X) / 20
    assert model.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(model.tree_.predict(X), labels)
    lazy = model.predict(f"{path}/X")
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), labels)


def test_group_needs_an_array_name(store):
    path, _, _ = store
    arr = as_dask_array(str(path))  # a group with a single array: that array
    assert arr.shape == (30_000, 6)
    zarr.open_group(str(path), mode="a").create_array("other", shape=(10, 6), dtype="f4")
    try:
        with pytest.raises(ValueError, match="several arrays"):
            as_dask_array(str(path))
        assert as_dask_array(str(path), array_name="X").shape == (30_000, 6)
    finally:
        del zarr.open_group(str(path), mode="a")["other"]


def test_row_chunks_follow_shards(tmp_path):
    X, _ = mixture(n=10_000)
    arr = zarr.create_array(str(tmp_path / "sharded.zarr"), data=X, chunks=(500, 6), shards=(2500, 6))
    assert as_dask_array(arr).chunks[0] == (2500,) * 4


@pytest.mark.distributed
def test_nonfinite_rows_raise_or_are_set_aside(client):
    X, y = mixture(n=12_000)
    X[[5, 700, 11_999], [0, 3, 5]] = [np.nan, np.inf, -np.inf]
    dX = da.from_array(X, chunks=(2000, 6))
    with pytest.raises(ValueError, match="3 of 12000 rows with NaN or infinite"):
        MDHClustering(n_clusters=4, random_state=0).fit(dX)
    model = MDHClustering(n_clusters=4, random_state=0, nonfinite="skip").fit(dX)
    labels = model.labels_.compute()
    assert model.n_nonfinite_ == 3
    np.testing.assert_array_equal(labels[[5, 700, 11_999]], -1)
    keep = labels >= 0
    assert adjusted_rand_score(y[keep], labels[keep]) > 0.99


def test_dask_array_without_a_cluster_uses_local_threads():
    X, y = mixture(n=8_000, seed=1)
    with dask.config.set(scheduler="threads"):
        model = PDDPClustering(n_clusters=4, random_state=0).fit(da.from_array(X, chunks=(1000, 6)))
        labels = model.labels_
        assert isinstance(labels, da.Array) and labels.chunks[0] == (1000,) * 8
        assert adjusted_rand_score(y, labels.compute()) > 0.9


def test_summary_mode_is_reproducible_given_random_state():
    X, _ = mixture(n=6_000, seed=2)
    a = MDHClustering(n_clusters=4, mode="summary", random_state=3).fit(X)
    b = MDHClustering(n_clusters=4, mode="summary", random_state=3).fit(X)
    assert [(n.id, n.size) for n in a.tree_] == [(n.id, n.size) for n in b.tree_]
    for na, nb in zip(a.tree_, b.tree_):  # equal up to BLAS rounding, which may differ between processes
        if not na.is_leaf:  # and the pursuit stops at ftol: directions agree to sqrt(ftol) (tests/tolerances.py)
            np.testing.assert_allclose(na.v, nb.v, atol=argmin_atol(a.tol))
    np.testing.assert_array_equal(a.labels_, b.labels_)


@pytest.mark.parametrize(
    "name,k,refine,min_ari",
    [
        ("breastcancer", 2, 0, 0.93),
        ("breastcancer", 2, 5, 0.96),
        ("satellite", 6, 0, 0.89),
        ("satellite", 6, 5, 0.92),
        ("imageseg", 7, 0, 0.81),
        ("imageseg", 7, 5, 0.98),
    ],
)
def test_summary_agrees_with_exact_mode(name, k, refine, min_ari):
    """Summary mode at one microcluster per 20 rows against exact mode, pinned just below the measured
    agreement (benchmarks/results/scale.md has all ten data sets). In PPCI's leaf order ("size-only"): the default
    ranks leaves by their tests, whose p-values a summary's sample and the rows give apart near the level (satellite:
    the rows' fit rose from 0.559 to 0.669 ARI against the classes, the summary's stayed at 0.560)."""
    X, y = load_dataset(name)
    exact = MDHClustering(n_clusters=k, leaf_order="size-only").fit(X)
    summary = MDHClustering(
        n_clusters=k, mode="summary", rows_per_microcluster=20, random_state=0, refine=refine, leaf_order="size-only"
    )
    summary.fit(X)
    assert summary.n_microclusters_ <= len(X) / 20 + 1
    assert adjusted_rand_score(exact.labels_, summary.labels_) >= min_ari


def test_refined_splits_are_made_on_rows():
    """With refine, each split is polished before it is made, so node sizes count the rows it routes."""
    X, _ = load_dataset("satellite")
    model = MDHClustering(n_clusters=4, mode="summary", rows_per_microcluster=20, random_state=0, refine=5).fit(X)
    for node in model.tree_:
        if not node.is_leaf:
            left, right = (model.tree_.nodes[c] for c in node.children)
            reach = np.isin(model.tree_.apply(X), [n.id for n in model.tree_ if _under(model.tree_, n, node.id)])
            below = (X[reach] @ node.v < node.b).sum()
            assert (left.size, right.size) == (below, reach.sum() - below)


def _under(tree, node, ancestor: int) -> bool:
    while node.id != ancestor and node.parent is not None:
        node = tree.nodes[node.parent]
    return node.id == ancestor


def test_refine_moves_the_summary_hyperplane_towards_the_exact_one():
    from lowdens_dask import MDH

    X, _ = load_dataset("satellite")
    exact = MDH(standardize=True).fit(X)
    coarse = MDH(standardize=True, mode="summary", rows_per_microcluster=20, random_state=0).fit(X)
    polished = MDH(standardize=True, mode="summary", rows_per_microcluster=20, random_state=0, refine=20).fit(X)
    assert polished.relative_depth_ > 0
    assert np.linalg.norm(polished.v_ - exact.v_) < 0.5 * np.linalg.norm(coarse.v_ - exact.v_)


def test_bad_summary_parameters():
    X, _ = mixture(n=1000)
    with pytest.raises(ValueError, match="mode"):
        MDHClustering(mode="fast").fit(X)
    with pytest.raises(ValueError, match="nonfinite"):
        MDHClustering(nonfinite="drop", mode="summary").fit(X)
    with pytest.raises(ValueError, match="refine"):
        MDHClustering(refine=-1, mode="summary").fit(X)
    with pytest.raises(ValueError, match="rows_per_microcluster"):
        MDHClustering(rows_per_microcluster=0, mode="summary").fit(X)
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        MDHClustering(mode="summary").fit(X, sample_weight=-np.ones(len(X)))
    with pytest.raises(ValueError, match="sample_weight with refine=2"):
        MDHClustering(mode="summary", refine=2).fit(X, sample_weight=np.ones(len(X)))


@pytest.mark.distributed
def test_mdh_from_zarr_path(client, store):
    """A single hyperplane in summary mode, with lazy predict/decision_function on the store."""
    from lowdens_dask import MDH

    path, X, y = store
    model = MDH(random_state=0).fit(f"{path}/X")
    labels = model.labels_.compute()
    assert model.relative_depth_ > 0
    assert set(np.unique(labels)) == {0, 1}
    np.testing.assert_array_equal(model.predict(X.astype(np.float64)), labels)
    dec = model.decision_function(f"{path}/X").compute()
    np.testing.assert_array_equal(labels, (dec >= 0).astype(int))
    groups = [set(labels[y == c]) for c in range(4)]
    assert all(len(g) == 1 for g in groups)  # no true cluster is cut


@pytest.mark.distributed
@pytest.mark.slow
def test_fit_over_a_store_three_times_a_workers_memory_limit(tmp_path):
    """Issue 9: workers with memory_limit="400MB" and Dask's default memory thresholds (spill, pause,
    terminate) fit a 1.28 GB zarr store in summary mode: nothing materialises it, no worker is killed or
    deadlocked by pausing, and the client stays small. benchmarks/reliability.py memory has the table."""
    import psutil

    from lowdens_dask.testing import peak_rss_bytes

    k, d, chunk, n = 8, 16, 125_000, 20_000_000
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=6.0, size=(k, d))
    X = zarr.create_array(str(tmp_path / "big.zarr"), shape=(n, d), chunks=(chunk, d), dtype="f4")
    y = np.empty(n, dtype=np.int8)
    for start in range(0, n, chunk):
        r = np.random.default_rng([1, start])
        lab = r.integers(0, k, size=chunk)
        X[start : start + chunk] = centres[lab] + r.standard_normal((chunk, d), dtype=np.float32)
        y[start : start + chunk] = lab
    assert X.nbytes >= 3 * 400e6

    me = psutil.Process()
    client_before, peak, done = me.memory_info().rss, [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], me.memory_info().rss)
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit="400MB", dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        workers = set(client.scheduler_info()["workers"])
        model = MDHClustering(n_clusters=k, random_state=0, labels_store=str(tmp_path / "labels.zarr"), mode="summary")
        model.fit(str(tmp_path / "big.zarr"))
        worker_peaks = client.run(peak_rss_bytes)  # a library function: workers need not import this module
    done.set()
    sampler.join()
    assert set(worker_peaks) == workers  # no worker was killed and replaced
    assert max(worker_peaks.values()) < 400e6, worker_peaks  # no worker came near its limit
    assert peak[0] - client_before < 0.5e9  # the client never held the array either
    labels = zarr.open_array(str(tmp_path / "labels.zarr"), mode="r")[:]
    assert adjusted_rand_score(y, labels) > 0.99


@pytest.mark.distributed
@pytest.mark.slow
def test_tree_grows_as_named_dask_tasks_on_a_scheduler_address(store, monkeypatch, dask_cluster):
    """Works through a scheduler address; node splits (of summaries above TASK_MIN_ROWS) and chunk passes show up
    as named tasks."""
    from distributed import get_task_stream

    path, X, y = store
    with Client(dask_cluster.scheduler_address) as c:  # the session's LocalCluster (tests/conftest.py)
        with get_task_stream(c) as ts:  # a small summary: its tree grows in this process
            MDHClustering(n_clusters=4, random_state=0, mode="summary").fit(f"{path}/X")
        assert not any(str(t["key"]).startswith("lowdens-split-node-") for t in ts.data)
        monkeypatch.setattr(hyperplanes, "TASK_MIN_ROWS", 0)
        with get_task_stream(c) as ts:
            model = MDHClustering(n_clusters=4, random_state=0, mode="summary").fit(f"{path}/X")
            labels = model.labels_.compute()
    names = {str(t["key"]) for t in ts.data}
    assert any(name.startswith("lowdens-split-node-") for name in names)
    starts = {name.split("-start-")[1][0] for name in names if name.startswith("lowdens-split-node-")}
    assert starts == {"0", "1"}  # the PC1 and PC2 restarts of a node are separate tasks
    assert any("lowdens-summarise-" in name for name in names)
    assert any("lowdens-route-" in name for name in names)
    assert adjusted_rand_score(y, labels) > 0.99


@pytest.mark.parametrize("slots", [2, 8])
def test_parallel_growth_equals_serial_growth(monkeypatch, caplog, slots):
    """Splitting in tasks (summary mode, possibly on worker processes), with both children of a split at once
    when the cluster has room for them (8 task slots), builds the same tree as the lazy serial order: same
    nodes and sizes, hyperplanes equal to 1e-6 (BLAS results may differ in the last bits between processes),
    and identical labels."""
    import lowdens_dask.estimators.hyperplane as framed_growth

    monkeypatch.setattr(framed_growth, "task_slots", lambda: slots)
    monkeypatch.setattr(hyperplanes, "TASK_MIN_ROWS", 0)  # every split in tasks, as for large summaries
    X, _ = mixture(n=20_000, k=6, seed=4)
    # the lazy order of "size-only" (a ranking test finds every leaf's split)
    model = MDHClustering(n_clusters=6, mode="summary", random_state=0, leaf_order="size-only")
    with dask.config.set(scheduler="threads"), caplog.at_level(logging.INFO, logger="lowdens_dask.growth.hyperplane_splitter"):
        model.fit(X)
    computed = len([r for r in caplog.records if r.getMessage().startswith("node ")])
    both_children = 1 + 2 * (model.n_clusters_ - 2)  # the root, then both children of every split but the last
    assert (computed == both_children) if slots == 8 else (computed < both_children)
    parallel = model.tree_
    from lowdens_dask.estimators._summary_pass import as_chunked, summarise

    summary = summarise(model, as_chunked(model, X), np.random.RandomState(0).randint(2**31 - 1))
    from lowdens_dask.backend.frame import Frame

    serial = model._grow(summary.summary.data(), Frame(), 0, None).tree
    assert [(n.id, n.children, n.size) for n in parallel] == [(n.id, n.children, n.size) for n in serial]
    radius = float(np.linalg.norm(X, axis=1).max())
    for a, b in zip(parallel, serial):
        if not a.is_leaf:  # pursuits stopped at ftol, in other orders of summation (tests/tolerances.py)
            np.testing.assert_allclose(a.v, b.v, atol=argmin_atol(model.tol))
            assert a.b == pytest.approx(b.b, abs=argmin_atol(model.tol) * radius)
    np.testing.assert_array_equal(parallel.predict(X), serial.predict(X))


def test_auto_mode_switches_to_summary_above_the_documented_size(monkeypatch):
    X, _ = mixture(n=5_000, seed=5)
    assert not hasattr(MDHClustering(n_clusters=4).fit(X), "n_microclusters_")
    monkeypatch.setattr(MDHClustering, "_auto_summary_rows", 4_000)
    model = MDHClustering(n_clusters=4, random_state=0).fit(X)
    assert model.n_microclusters_ <= 5_000 / 20 + 1
    assert isinstance(model.labels_, np.ndarray)


def test_standardize_and_baselines_in_summary_mode():
    """standardize=True scales the summary (means and spreads) and reports hyperplanes in the original
    coordinates; PDDP and DePDDP run in summary mode too."""
    from lowdens_dask import DePDDPClustering

    X, y = mixture(n=12_000, k=4, seed=6)
    X = X * np.array([100, 1, 0.01, 5, 1, 20], dtype=np.float32)
    dX = da.from_array(X, chunks=(3000, 6))
    with dask.config.set(scheduler="threads"):
        model = MDHClustering(n_clusters=4, standardize=True, random_state=0, mode="summary").fit(dX)
        labels = model.labels_.compute()
        assert adjusted_rand_score(y, labels) > 0.95
        np.testing.assert_array_equal(model.tree_.predict(X.astype(np.float64)), labels)
        for est in (PDDPClustering(n_clusters=4, random_state=0, mode="summary"), DePDDPClustering(n_clusters=4, random_state=0, mode="summary")):
            lab = est.fit(dX).labels_.compute()
            assert est.n_microclusters_ <= 12_000 / 20 and len(np.unique(lab)) == est.n_clusters_


def test_chunks_are_labelled_by_blocks_of_rows():
    """A chunk larger than LABEL_BLOCK rows is labelled block by block (bounded working memory), with the
    same labels as the tree on the whole chunk, and -1 for rows with NaN/inf in any block."""
    from lowdens_dask.backend import ChunkedData
    from lowdens_dask.backend.label_pass import LABEL_BLOCK

    X, _ = mixture(n=2 * LABEL_BLOCK + 123)
    X[[7, LABEL_BLOCK + 5, 2 * LABEL_BLOCK + 100], [0, 1, 2]] = [np.nan, np.inf, -np.inf]
    finite = np.isfinite(X).all(axis=1)
    tree = MDHClustering(n_clusters=4, random_state=0).fit(X[finite][:5000]).tree_
    calls = []

    def labeler(rows):
        calls.append(len(rows))
        return tree.predict(rows)

    with dask.config.set(scheduler="sync"):
        labels = ChunkedData(da.from_array(X, chunks=(len(X), 6))).label_rows(labeler).compute()
    assert max(calls) <= LABEL_BLOCK and len(calls) == 3
    np.testing.assert_array_equal(labels[~finite], -1)
    np.testing.assert_array_equal(labels[finite], tree.predict(X[finite]))


def test_freed_heap_kept_on_a_worker_is_bounded_by_its_memory_limit():
    """glibc keeps 256 MB of freed heap on large workers, but 1/16 of the limit on small ones: 256 MB kept on a
    400 MB worker held it over Dask's pause threshold (320 MB), and a paused worker runs no task."""
    from lowdens_dask.backend.workers import malloc_thresholds

    assert malloc_thresholds(None) == (256 * 2**20, 64 * 2**20)
    assert malloc_thresholds(16e9) == (256 * 2**20, 64 * 2**20)
    trim, mmap = malloc_thresholds(400e6)
    assert trim == 25_000_000 and mmap == 6_250_000
    assert 270e6 + trim < 0.8 * 400e6  # an idle worker's RSS (measured: 254-267 MB) plus what is kept
