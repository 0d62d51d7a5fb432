"""MDH on large nodes in memory (issue 44): the kernel sums on the window of b, the fine binned Newton steps and
their error bound, and the continuation's early stages on a sample, against independent formulas and full fits."""


import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import MDHClustering
from lowdens_dask.indices.density import (
    FINE_STEP,
    binning_error_bound,
    fine_binned_sums,
    gather_window,
    minimise_penalised_density,
    minimise_penalised_density_windowed,
)
from lowdens_dask.kernels.kde import linear_binning, weighted_moments
from lowdens_dask.pursuit import hyperplanes


def mixture(rng, n, gap=3.5):
    return np.concatenate([rng.normal(-gap / 2, 0.7, n // 2), rng.normal(gap / 2, 1.0, n - n // 2)])


def buffers(n):
    return np.empty(n, np.int64), np.empty(n), np.empty(n), np.empty(n)


@pytest.mark.parametrize("seed", range(4))
def test_fine_binned_sums_match_the_direct_formula(seed):
    rng = np.random.default_rng(seed)
    counts = rng.random(300) * (rng.random(300) < 0.7)
    g0, delta, h, b = -1.3, 0.02, 0.4, float(rng.uniform(-1, 5))
    u = b - (g0 + delta * np.arange(300))
    k = counts * np.exp(-(u**2) / (2 * h * h))
    np.testing.assert_allclose(fine_binned_sums(counts, g0, delta, b, h), [k.sum(), (k * u).sum(), (k * u * u).sum()],
                               rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("step", [FINE_STEP, 0.25])
def test_binned_kernel_sum_is_within_its_error_bound(seed, step):
    """S0 of the linearly binned points against the exact sum (numpy), at points in the gap and in the modes; the
    bound holds at the coarse spacing too, where the error is large, and is not vacuous at the fine one."""
    rng = np.random.default_rng(seed)
    p = mixture(rng, 2000)
    w = rng.integers(1, 4, p.size).astype(float)
    h = 0.3
    delta = step * h
    g0 = p.min() - delta
    counts = linear_binning(p, w, g0, delta, np.zeros(int((p.max() - g0) / delta) + 3))
    for b in rng.uniform(p.min(), p.max(), 20):
        exact = float((w * np.exp(-((b - p) ** 2) / (2 * h * h))).sum())
        binned = fine_binned_sums(counts, g0, delta, b, h)[0]
        bound = binning_error_bound(p, w, b, h, delta)
        assert abs(binned - exact) <= bound
        if step == FINE_STEP:
            assert bound <= 0.05 * exact


def test_gather_window_keeps_exactly_the_points_in_the_window():
    rng = np.random.default_rng(0)
    p, w = rng.normal(size=500), rng.random(500)
    idx, pw, ww, _ = buffers(500)
    count = gather_window(p, w, -0.3, 0.8, idx, pw, ww)
    keep = np.flatnonzero((p >= -0.3) & (p <= 0.8))
    np.testing.assert_array_equal(idx[:count], keep)
    np.testing.assert_array_equal(pw[:count], p[keep])
    np.testing.assert_array_equal(ww[:count], w[keep])


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("alpha", [0.05, 0.5, 0.9])
@pytest.mark.parametrize("gap", [3.5, 40.0])  # 40: the density underflows across the gap, refined on every point
def test_windowed_minimum_is_the_exact_one(seed, alpha, gap):
    rng = np.random.default_rng(seed)
    p = mixture(rng, 3000, gap)
    w = rng.integers(1, 4, p.size).astype(float)
    h, eta, eps = 0.3, 1e-2, 1 - 1e-6
    total, mean, std, _, _ = weighted_moments(p, w)
    exact = minimise_penalised_density(p, w, total, mean, std, h, alpha, eta, eps, np.empty_like(p))
    windowed = minimise_penalised_density_windowed(p, w, total, mean, std, h, alpha, eta, eps, *buffers(p.size), False)
    assert abs(windowed[0] - exact[0]) <= 1e-8 * h
    np.testing.assert_allclose(windowed[1:7], exact[1:], rtol=1e-9, atol=1e-12)
    fine = minimise_penalised_density_windowed(p, w, total, mean, std, h, alpha, eta, eps, *buffers(p.size), True)
    assert abs(fine[0] - exact[0]) <= 0.01 * h
    assert fine[1] >= exact[1] - 1e-9 and fine[1] == pytest.approx(exact[1], abs=1e-4)


@pytest.mark.parametrize("seed", range(3))
def test_continuation_on_a_sample_gives_the_labels_of_every_row(seed, monkeypatch):
    """Nodes above the sample size take the stages before the last on a sample and the last on every row: the same
    clusters as the continuation on every row, and the same labels fit after fit."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=5.0, size=(4, 6))
    X = centres[rng.integers(0, 4, 6000)] + rng.normal(size=(6000, 6))
    monkeypatch.setattr(hyperplanes, "CONTINUATION_SAMPLE_ROWS", None)
    every_row = MDHClustering(n_clusters=4).fit(X).labels_
    monkeypatch.setattr(hyperplanes, "CONTINUATION_SAMPLE_ROWS", 800)  # nodes above 1,600 rows
    sampled = MDHClustering(n_clusters=4).fit(X).labels_
    assert adjusted_rand_score(every_row, sampled) >= 0.999
    np.testing.assert_array_equal(sampled, MDHClustering(n_clusters=4).fit(X).labels_)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_projection_kernel_matches_numpy(dtype):
    from lowdens_dask.pursuit.compiled_mdh import _project

    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 7)).astype(dtype)
    u = rng.normal(size=7)
    p = np.empty(400)
    _project(X, u, 0.75, p)
    np.testing.assert_allclose(p, X.astype(np.float64) @ u - 0.75, rtol=1e-12, atol=1e-12)


def test_scatter_moments_match_numpy():
    from lowdens_dask.pursuit.compiled_mdh import scatter_moments

    rng = np.random.default_rng(3)
    X, w = rng.normal(size=(300, 4)) + 5.0, rng.integers(0, 4, 300).astype(float)
    mean = X.mean(axis=0)
    total, dbar, S = scatter_moments(X, w, mean)
    assert total == w.sum()
    np.testing.assert_allclose(dbar, np.average(X, axis=0, weights=w) - mean, atol=1e-12)
    np.testing.assert_allclose(S, np.cov(X.T, fweights=w.astype(int), ddof=0) * w.sum(), rtol=1e-10)
    assert scatter_moments(X[:10], w[:10], mean)[2].shape == (0, 0)  # fewer rows than 4 per column: no scatter


def test_the_last_stage_of_a_sampled_continuation_is_on_every_row(monkeypatch):
    """The hyperplane's b is the minimiser of f_CL over every row's projection (within the fine binning's error),
    not over the sample's."""
    from lowdens_dask.backend import InMemoryData

    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(3000, 4)), rng.normal(size=(3000, 4)) + 4.0]
    monkeypatch.setattr(hyperplanes, "CONTINUATION_SAMPLE_ROWS", 500)
    found = hyperplanes.find_hyperplane("mdh", InMemoryData(X))
    p, w = X @ found.v, np.ones(len(X))
    total, mean, std, _, _ = weighted_moments(p, w)
    h, eta, eps, alpha = (found.params[k] for k in ("bandwidth", "eta", "eps", "alpha"))
    b = minimise_penalised_density(p, w, total, mean, std, h, alpha, eta, eps, np.empty_like(p))[0]
    assert abs(b - found.b) <= 0.01 * h


def test_starts_on_threads_give_the_hyperplanes_of_one_thread(monkeypatch):
    """The starts' continuations run on up to ``numba.get_num_threads()`` threads: every start's direction, split and
    evaluation count are those of the same pursuit on one thread."""
    from lowdens_dask.backend import InMemoryData

    rng = np.random.default_rng(5)
    X = rng.normal(scale=4.0, size=(5, 6))[rng.integers(0, 5, 3000)] + rng.normal(size=(3000, 6))
    threads = []
    monkeypatch.setattr(hyperplanes.ThreadPoolExecutor, "__init__", _counting_init(threads))
    monkeypatch.setattr(hyperplanes, "THREADED_STARTS_MIN_ROWS", 2000)
    results = {}
    for n in (1, 3):
        monkeypatch.setattr(hyperplanes.numba, "get_num_threads", lambda n=n: n)
        results[n] = hyperplanes.find_hyperplane("mdh", InMemoryData(X), v0=np.eye(6)[:, :3])
    assert threads == [3]  # one pool, of three threads, only when three threads are allowed
    one, three = results[1], results[3]
    monkeypatch.setattr(hyperplanes, "THREADED_STARTS_MIN_ROWS", 3001)
    assert hyperplanes.find_hyperplane("mdh", InMemoryData(X), v0=np.eye(6)[:, :3]).n_evaluations == one.n_evaluations
    assert threads == [3]  # a node below the threshold: no pool
    assert one.n_evaluations == three.n_evaluations > 0
    for a, b in zip(one.per_start, three.per_start, strict=True):
        np.testing.assert_array_equal(a.v, b.v)
        assert a.b == b.b and a.valid == b.valid


def _counting_init(record):
    original = hyperplanes.ThreadPoolExecutor.__init__

    def init(self, max_workers=None, *args, **kwargs):
        record.append(max_workers)
        original(self, max_workers, *args, **kwargs)

    return init


def test_a_small_bandwidth_keeps_the_cost_of_a_large_node_bounded():
    """Issue 53 item 1 (fuzz5 repro_5): above the continuation's sample size the fine grid of b's Newton steps spanned
    the bracket at h/32 whatever its width: bandwidth=1e-7 across a gap of 12 made a 12 GB grid at 20,002 rows. The
    grid is now used only while it has fewer cells than a few per point, so the large node costs what the small
    one does and finds the same b."""
    import time

    from lowdens_dask import MDH

    rng = np.random.default_rng(0)
    fits = {}
    for n in (20_000, 20_002):
        X = np.vstack([rng.normal(size=(n // 2, 1)), rng.normal(size=(n - n // 2, 1)) + 12])
        MDH().fit(X)  # both paths compiled before they are timed
        start = time.perf_counter()
        model = MDH(bandwidth=1e-7).fit(X)
        fits[n] = (time.perf_counter() - start, model.b_)
    assert 0 < fits[20_002][1] < 12 and abs(fits[20_002][1] - fits[20_000][1]) < 1.0
    assert fits[20_002][0] < 10 * fits[20_000][0] + 2.0, fits  # 280 s (or a MemoryError) before
