"""Issue 25: a summary whose size is bounded (microclusters merged on the workers down to a budget), and MDH's
continuation as one compiled call."""

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import MDHClustering
from lowdens_dask.backend import ChunkedData, InMemoryData, summary_pass
from lowdens_dask.backend.passes import chunks_read
from lowdens_dask.backend.summary_pass import MIN_PART_BUDGET, summary_blocks, summary_min_rows
from lowdens_dask.kernels.summaries import merge_microclusters
from lowdens_dask.pursuit import hyperplanes
from lowdens_dask.pursuit.hyperplanes import find_hyperplane


def moments(counts, means, spread):
    """Total count, sum of the rows and sum of their squared norms that microclusters stand for."""
    return counts.sum(), counts @ means, counts @ (spread + (means * means).sum(axis=1))


def far_group(rng, n=3000, d=8, n_far=6):
    """Microclusters of a broad blob and a few light ones of a small group far away (the last ``n_far``)."""
    means = np.concatenate([rng.normal(size=(n, d)), rng.normal(size=(n_far, d)) * 0.1 + 40.0])
    counts = np.concatenate([rng.integers(10, 30, n), np.full(n_far, 3)]).astype(float)
    spread = rng.random(n + n_far)
    return counts, means, spread


@pytest.mark.parametrize("seed", range(3))
def test_merge_keeps_counts_means_and_spread_exact(seed):
    rng = np.random.default_rng(seed)
    counts, means, spread = far_group(rng)
    merged = merge_microclusters(counts, means, spread, 100, seed)
    new_counts, new_means, new_spread, nearest = merged
    assert new_counts.size <= 100 and nearest.shape == new_counts.shape
    for a, b in zip(moments(counts, means, spread), moments(new_counts, new_means, new_spread)):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    far = np.flatnonzero(new_means.mean(axis=1) > 20)
    assert far.size >= 1  # the far group keeps microclusters of its own, with none of the blob's rows
    assert new_counts[far].sum() == counts[-6:].sum()
    assert np.all(nearest[far] >= counts.size - 6)


def test_merge_is_the_identity_within_budget():
    rng = np.random.default_rng(0)
    counts, means, spread = far_group(rng, n=50)
    out = merge_microclusters(counts, means, spread, 100, 0)
    for a, b in zip(out[:3], (counts, means, spread)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("budget", [None, 300, 600])
def test_summary_is_bounded_and_exact_in_its_moments(budget):
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(size=(60_000, 5)), rng.normal(size=(300, 5)) + 30.0]).astype(np.float32)
    X = X[rng.permutation(len(X))]
    with dask.config.set(scheduler="synchronous"):
        summary = ChunkedData(da.from_array(X, chunks=(1500, 5))).summarise(20, 64, seed=0, budget=budget)
    data = summary.summary.data()
    k = data.n_samples
    assert k <= (budget or np.inf) and (budget is not None or k > 600)
    assert summary.representatives.shape == (k, 5)
    x = X.astype(np.float64)
    expect = (len(x), x.sum(axis=0), (x * x).sum())
    for a, b in zip(moments(data.weights, data.X, data.spread * 5), expect):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert (data.X.mean(axis=1) > 20).any()  # the 0.5% group far away has microclusters of its own


def test_summarising_pass_has_one_task_per_block_and_no_rechunk():
    X = da.zeros((40_000, 4), chunks=(1000, 4))
    chunks = X.chunks[0]
    groups = summary_blocks(chunks, summary_min_rows(40_000, 20, 64, 50), 16)
    assert sum(groups) == 40_000 and len(groups) < len(chunks)
    keys = []

    def spy(*args, **kw):
        keys.extend(str(k) for k in args[0].__dask_graph__())
        return real(*args, **kw)

    real = summary_pass.compute
    with dask.config.set(scheduler="synchronous"), pytest.MonkeyPatch.context() as mp:
        mp.setattr(summary_pass, "compute", spy)
        ChunkedData(X).summarise(20, 64, budget=50)
    assert not any("rechunk" in k for k in keys)
    tasks = [k for k in keys if "lowdens-summarise" in k and "combine" not in k]
    assert len(tasks) == len(groups)


def test_budget_parameter_is_checked_and_bounds_the_fit():
    rng = np.random.default_rng(2)
    centres = rng.normal(scale=6.0, size=(4, 6))
    y = rng.integers(0, 4, 40_000)
    X = centres[y] + rng.normal(size=(40_000, 6))
    with pytest.raises(ValueError, match="max_microclusters"):
        MDHClustering(max_microclusters=1, mode="summary").fit(X)
    with dask.config.set(scheduler="synchronous"):
        est = MDHClustering(n_clusters=4, random_state=0, max_microclusters=MIN_PART_BUDGET, mode="summary").fit(
            da.from_array(X, chunks=(1000, 6))
        )
    assert est.n_microclusters_ <= MIN_PART_BUDGET
    assert adjusted_rand_score(y, est.labels_.compute()) > 0.99


@pytest.mark.parametrize("seed", range(12))
def test_compiled_mdh_continuation_takes_the_coroutines_steps(seed, monkeypatch):
    """The compiled continuation against the generic one (coroutines, L-BFGS in Python, numpy products): the same
    hyperplane up to rounding, alpha and validity, on weighted points with spread."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(60, 2500)), int(rng.integers(2, 16))
    X = rng.normal(size=(n, d))
    X[: n // 3] += rng.normal(scale=3.0, size=d)
    data = InMemoryData(X, rng.integers(1, 30, n).astype(float), rng.random(n))
    compiled = find_hyperplane("mdh", data)
    monkeypatch.setattr(hyperplanes, "COMPILED_MDH", False)
    generic = find_hyperplane("mdh", data)
    np.testing.assert_allclose(compiled.v, generic.v, atol=1e-6)
    assert abs(compiled.b - generic.b) < 1e-6
    assert (compiled.valid, compiled.params) == (generic.valid, generic.params)
    np.testing.assert_allclose(compiled.relative_depth, generic.relative_depth, rtol=1e-6)


@pytest.mark.slow
def test_partial_fit_keeps_the_summary_within_budget():
    """Night after night, the kept summary stays within max_microclusters, and still counts every row."""
    rng = np.random.default_rng(3)
    centres = rng.normal(scale=6.0, size=(3, 5))
    est = MDHClustering(n_clusters=3, random_state=0, max_microclusters=MIN_PART_BUDGET)
    seen = 0
    with dask.config.set(scheduler="synchronous"):
        for _ in range(3):
            y = rng.integers(0, 3, 30_000)
            X = centres[y] + rng.normal(size=(30_000, 5))
            est.partial_fit(da.from_array(X, chunks=(1000, 5)))
            seen += len(X)
            assert est.n_microclusters_ == est.summary_.n_microclusters <= MIN_PART_BUDGET
            assert est.summary_.total_weight == pytest.approx(seen)
            assert adjusted_rand_score(y, est.labels_.compute()) > 0.99


def test_pass_tasks_read_their_chunks_themselves(tmp_path):
    """The chunk reads of a zarr store are nested in the summarising tasks (no chunk is a task result of its own),
    and the summary is the one of the same rows in memory."""
    import zarr

    rng = np.random.default_rng(4)
    X = rng.normal(size=(20_000, 3)).astype(np.float32)
    z = zarr.create_array(str(tmp_path / "x.zarr"), shape=X.shape, chunks=(2_000, 3), dtype="f4")
    z[:] = X
    keys = []

    def spy(*args, **kw):
        keys.extend(args[0].__dask_graph__())
        return real(*args, **kw)

    real = summary_pass.compute
    with dask.config.set(scheduler="synchronous"), pytest.MonkeyPatch.context() as mp:
        mp.setattr(summary_pass, "compute", spy)
        stored = ChunkedData(da.from_zarr(str(tmp_path / "x.zarr"))).summarise(20, 64, seed=0, budget=300)
    with dask.config.set(scheduler="synchronous"):
        in_memory = ChunkedData(da.from_array(X, chunks=(2_000, 3))).summarise(20, 64, seed=0, budget=300)
    assert not [k for k in keys if isinstance(k, tuple) and str(k[0]).startswith("from-zarr-")]
    assert sum(chunks_read(k) for k in keys) == 10  # every chunk read once, inside the summarising tasks
    np.testing.assert_allclose(stored.summary.means, in_memory.summary.means)
    np.testing.assert_allclose(stored.summary.weights, in_memory.summary.weights)


@pytest.mark.parametrize("seed", range(3))
def test_far_group_is_seeded_on_its_own(seed, monkeypatch):
    """The seeding alone (no Lloyd iteration after it) gives the far group a microcluster of its own: seeds drawn by
    count would miss its light microclusters."""
    from lowdens_dask.kernels import summaries

    monkeypatch.setattr(summaries, "MERGE_LLOYD_ITERATIONS", 0)
    counts, means, spread = far_group(np.random.default_rng(seed))
    new_counts, new_means, _, _ = merge_microclusters(counts, means, spread, 100, seed)
    far = np.flatnonzero(new_means.mean(axis=1) > 20)
    assert far.size >= 1 and new_counts[far].sum() == counts[-6:].sum()


def test_max_microclusters_bounds_a_summary_made_by_one_task():
    """Issue 34, item 9: with one summarising task (2,000 rows) no reduction ran, so the summary kept 64
    microclusters whatever max_microclusters said, in a fit and in partial_fit's first call."""
    X = np.random.default_rng(0).normal(size=(2000, 3))
    model = MDHClustering(mode="summary", max_microclusters=16).fit(X)
    assert model.summary_.n_microclusters == 16 and model.n_microclusters_ == 16
    nightly = MDHClustering(max_microclusters=16).partial_fit(X)
    assert nightly.summary_.n_microclusters == 16
