"""Numba kernels against independent numpy/scipy formulas on random inputs."""

import math

import numpy as np
import pytest
from scipy.special import logsumexp
from tolerances import assert_within, rows_atol, sum_atol

from lowdens_dask.indices.density import (
    adjacent_modes,
    lowest_density_minimum,
    minimise_penalised_density,
    penalty_coefficient,
)
from lowdens_dask.kernels.kde import binned_kde_grid, kernel_sums, projection_gradient_weights, weighted_moments
from lowdens_dask.pursuit._bfgs import LBFGSMemory

SQRT_2PI = math.sqrt(2 * math.pi)


def direct_sums(p, w, x, h):
    """sum_i w_i exp(-(x_j - p_i)^2 / 2h^2) for each x_j, by brute force."""
    return (w[None, :] * np.exp(-((np.atleast_1d(x)[:, None] - p[None, :]) ** 2) / (2 * h * h))).sum(axis=1)


def mixture(rng, n=800):
    return np.concatenate([rng.normal(-2, 0.7, n // 2), rng.normal(1.5, 1.0, n - n // 2)])


@pytest.mark.parametrize("seed", range(4))
def test_weighted_moments_match_numpy_frequency_weights(seed):
    rng = np.random.default_rng(seed)
    p = rng.normal(size=300) * rng.uniform(0.1, 10)
    w = rng.integers(0, 4, size=300).astype(float)
    total, mean, std, lo, hi = weighted_moments(p, w)
    assert total == pytest.approx(w.sum())
    # p has mean about 0: its weighted sum cancels, so the tolerance is the sum's rounding, not relative to it
    assert mean == pytest.approx(np.average(p, weights=w), rel=1e-12, abs=sum_atol(w * p) / w.sum())
    assert std == pytest.approx(math.sqrt(np.cov(p, fweights=w.astype(int))), rel=1e-10)
    assert (lo, hi) == (p[w > 0].min(), p[w > 0].max())


@pytest.mark.parametrize("seed", range(4))
def test_binned_grid_matches_direct_sum(seed):
    rng = np.random.default_rng(seed)
    p = mixture(rng)
    w = rng.uniform(0.5, 2.0, size=p.size)
    h = 0.3
    x0, delta, m = -3.0, h / 8, 200
    grid = x0 + delta * np.arange(m)
    approx = binned_kde_grid(p, w, h, x0, delta, m)
    exact = direct_sums(p, w, grid, h)
    assert np.max(np.abs(approx - exact)) <= 2e-3 * exact.max()


@pytest.mark.parametrize("seed", range(4))
def test_kernel_sums_match_direct_sums(seed):
    rng = np.random.default_rng(seed)
    p = mixture(rng)
    w = rng.uniform(0.0, 2.0, size=p.size)
    h, b = 0.4, rng.normal()
    kbuf = np.empty_like(p)
    shift, s0, s1, s2 = kernel_sums(p, w, b, h, kbuf)
    u = b - p
    k = w * np.exp(-(u**2) / (2 * h * h))
    assert shift == 0.0
    terms = [k, k * u, k * u * u]  # S1's terms change sign: each sum within its own rounding
    assert_within([s0, s1, s2], [t.sum() for t in terms], rtol=1e-10, atol=[sum_atol(t) for t in terms])
    np.testing.assert_allclose(kbuf, k, rtol=1e-12, atol=0)


def test_kernel_sums_log_domain_when_plain_sum_underflows():
    """Far from every point the plain sum underflows; the shifted sum still gives log I exactly."""
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.uniform(-3, -1, 50), rng.uniform(1, 3, 50)])
    w = np.ones_like(p)
    h, b = 0.02, 0.1
    assert direct_sums(p, w, b, h)[0] == 0.0  # the naive sum is exactly zero
    shift, s0, s1, _ = kernel_sums(p, w, b, h, np.empty_like(p))
    log_sum = math.log(s0) - shift
    assert log_sum == pytest.approx(logsumexp(-((b - p) ** 2) / (2 * h * h)), rel=1e-12)
    # d/db log I = -S1 / (S0 h^2): compare with the softmax-weighted mean offset
    weights = np.exp(-((b - p) ** 2) / (2 * h * h) - logsumexp(-((b - p) ** 2) / (2 * h * h)))
    offset = weights * (b - p)  # of both signs: within the sum's rounding
    assert -s1 / (s0 * h * h) == pytest.approx(-offset.sum() / h**2, rel=1e-9, abs=sum_atol(offset) / h**2)


def test_projection_gradient_weights_formula():
    rng = np.random.default_rng(1)
    p, w, kbuf = rng.normal(size=50), rng.uniform(size=50), rng.uniform(size=50)
    out = projection_gradient_weights(p, w, kbuf, 0.3, 0.1, 2.0, -0.5, 0.25, np.empty(50))
    np.testing.assert_allclose(out, 2.0 * kbuf * (0.3 - p) + w * (-0.5 + 0.25 * (p - 0.1)), rtol=1e-13)


def penalised_density_dense(p, w, h, alpha, eta, eps, grid):
    """f_CL on a grid by the direct formula of eq. 10."""
    total = w.sum()
    mean = np.average(p, weights=w)
    std = math.sqrt((w * (p - mean) ** 2).sum() / (total - 1))
    lo, hi = mean - alpha * std, mean + alpha * std
    dens = direct_sums(p, w, grid, h) / (total * h * SQRT_2PI)
    dist = np.maximum(0, np.maximum(lo - grid, grid - hi))
    return dens + penalty_coefficient(h, eta, eps) * dist ** (1 + eps), lo, hi, mean, std


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("alpha", [0.05, 0.4, 0.9])
def test_penalised_minimum_is_the_global_minimum(seed, alpha):
    rng = np.random.default_rng(seed)
    p = mixture(rng, 600)
    w = np.ones_like(p)
    h, eta, eps = 0.35, 1e-2, 1 - 1e-6
    total, mean, std, _, _ = weighted_moments(p, w)
    b, log_f, *_ = minimise_penalised_density(p, w, total, mean, std, h, alpha, eta, eps, np.empty_like(p))
    grid = np.linspace(mean - alpha * std - 0.5, mean + alpha * std + 0.5, 20001)
    vals, *_ = penalised_density_dense(p, w, h, alpha, eta, eps, grid)
    assert log_f <= math.log(vals.min()) + 1e-9
    assert abs(b - grid[np.argmin(vals)]) <= 2 * (grid[1] - grid[0]) + 1e-6
    assert math.exp(log_f) == pytest.approx(penalised_density_dense(p, w, h, alpha, eta, eps, np.array([b]))[0][0])


@pytest.mark.parametrize("seed", range(4))
def test_adjacent_modes_and_lowest_minimum_match_dense_grid(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.normal(-3, 0.6, 300), rng.normal(0, 0.5, 200), rng.normal(3, 0.8, 300)])
    w = np.ones_like(p)
    h = 0.3
    grid = np.linspace(p.min() - 1, p.max() + 1, 40001)
    dens = direct_sums(p, w, grid, h) / (p.size * h * SQRT_2PI)
    interior = np.arange(1, grid.size - 1)
    maxima = interior[(dens[interior] > dens[interior - 1]) & (dens[interior] >= dens[interior + 1])]
    minima = interior[(dens[interior] < dens[interior - 1]) & (dens[interior] <= dens[interior + 1])]
    b = -1.4
    log_l, x_l, log_r, x_r = adjacent_modes(p, w, float(p.size), h, b, np.empty_like(p))
    left = maxima[grid[maxima] < b][-1]
    right = maxima[grid[maxima] > b][0]
    assert x_l == pytest.approx(grid[left], abs=1e-3)
    assert x_r == pytest.approx(grid[right], abs=1e-3)
    assert math.exp(log_l) == pytest.approx(dens[left], rel=1e-6)
    assert math.exp(log_r) == pytest.approx(dens[right], rel=1e-6)
    b_min, log_min = lowest_density_minimum(p, w, float(p.size), h, np.empty_like(p))
    lowest = minima[np.argmin(dens[minima])]
    assert b_min == pytest.approx(grid[lowest], abs=1e-3)
    assert math.exp(log_min) == pytest.approx(dens[lowest], rel=1e-6)


def test_lowest_minimum_of_unimodal_sample_is_none():
    p = np.linspace(-1, 1, 201) ** 3  # one mode, heavy centre
    b, log_i = lowest_density_minimum(p, np.ones_like(p), 201.0, 0.5, np.empty_like(p))
    assert math.isnan(b) and log_i == math.inf


def test_two_loop_direction_equals_dense_bfgs_product():
    """L-BFGS's two-loop recursion gives -H g for H built by explicit BFGS updates of gamma*I."""
    rng = np.random.default_rng(3)
    n, k = 7, 5
    mem = LBFGSMemory(n, memory=10)
    pairs = []
    for _ in range(k):
        s = rng.normal(size=n)
        y = s + 0.3 * rng.normal(size=n)
        mem.push(s, y, float(s @ y))
        pairs.append((s, y))
    H = mem.gamma * np.eye(n)
    for s, y in pairs:
        rho = 1 / (s @ y)
        V = np.eye(n) - rho * np.outer(y, s)
        H = V.T @ H @ V + rho * np.outer(s, s)
    g = rng.normal(size=n)
    # k updates of a dense n x n product against the recursion: each entry within k roundings of its row's sum
    assert_within(mem.direction(g), -H @ g, rtol=1e-10, atol=k * rows_atol(np.abs(H) * np.abs(g), axis=1))


@pytest.mark.parametrize("b", [-0.3, 0.05, 0.9, 2.5])  # inside, near and outside [lo, hi] = [-0.5, 0.8]
def test_log_penalised_density_and_derivatives(b):
    """Value, first and second b-derivatives of log f_CL against the direct formula and central differences."""
    from lowdens_dask.indices.density import log_penalised_density

    rng = np.random.default_rng(5)
    p = mixture(rng, 300)
    w = rng.uniform(0.5, 1.5, size=p.size)
    h, eps, lo, hi = 0.4, 1 - 1e-6, -0.5, 0.8
    coef = penalty_coefficient(h, 1e-2, eps)
    assert coef == pytest.approx(1 / (math.sqrt(2 * math.pi * math.e) * h * h) / 1e-2**eps, rel=1e-14)

    def direct(x):
        dens = direct_sums(p, w, x, h)[0] / (w.sum() * h * SQRT_2PI)
        return math.log(dens + coef * max(0.0, lo - x, x - hi) ** (1 + eps))

    val, d1, d2, *_ = log_penalised_density(p, w, w.sum(), h, b, lo, hi, coef, eps, np.empty_like(p))
    step = 1e-4
    assert val == pytest.approx(direct(b), rel=1e-12)
    assert d1 == pytest.approx((direct(b + step) - direct(b - step)) / (2 * step), rel=1e-6, abs=1e-8)
    assert d2 == pytest.approx((direct(b + step) - 2 * direct(b) + direct(b - step)) / step**2, rel=1e-3, abs=1e-5)


def test_exp_nonpositive_matches_numpy():
    from lowdens_dask.kernels.kde import exp_nonpositive

    rng = np.random.default_rng(0)
    x = np.r_[-rng.uniform(0, 800, 20000), -rng.uniform(0, 1, 5000), 0.0, -1e-300, -708.0, -708.5, -1e4]
    ref = np.exp(x)
    ref[x < -708] = 0.0
    out = exp_nonpositive(x, np.empty_like(x))
    pos = ref > 0
    assert np.max(np.abs(out[pos] - ref[pos]) / ref[pos]) < 1e-15
    assert np.all(out[~pos] == 0.0)
    exp_nonpositive(x, x)  # in place
    np.testing.assert_array_equal(x, out)


def test_group_sums_matches_bincount():
    from lowdens_dask.kernels.summaries import group_sums

    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 4)).astype(np.float32)
    labels = rng.integers(0, 7, size=500)
    counts, sums, sq = group_sums(x, labels, 7)
    x64 = x.astype(np.float64)
    np.testing.assert_array_equal(counts, np.bincount(labels, minlength=7))
    for c in range(4):  # sums of both signs, in the kernel's (reassociated) order: each within its rounding
        atol = [sum_atol(x64[labels == g, c]) for g in range(7)]
        assert_within(sums[:, c], np.bincount(labels, weights=x64[:, c], minlength=7), atol=atol)
    np.testing.assert_allclose(sq, np.bincount(labels, weights=(x64**2).sum(axis=1), minlength=7), rtol=1e-12)


def test_weighted_group_sums_matches_bincount():
    from lowdens_dask.kernels.summaries import weighted_group_sums

    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 3))
    labels = rng.integers(0, 5, size=400)
    w = rng.uniform(0, 3, size=400)
    counts, sums, sq = weighted_group_sums(x, labels, 5, w)
    np.testing.assert_allclose(counts, np.bincount(labels, weights=w, minlength=5), rtol=1e-13)
    for c in range(3):
        np.testing.assert_allclose(
            sums[:, c], np.bincount(labels, weights=w * x[:, c], minlength=5), rtol=1e-12, atol=1e-12
        )
    np.testing.assert_allclose(sq, np.bincount(labels, weights=w * (x**2).sum(axis=1), minlength=5), rtol=1e-12)


def test_weighted_microclusters_stand_for_the_repeated_rows():
    """Integer weights: the microclusters hold the rows' total weight, their weighted mean and scatter, and the
    same number of microclusters as the rows repeated would get; rows of weight 0 are in none."""
    from lowdens_dask.kernels.summaries import microclusters

    rng = np.random.default_rng(2)
    x = np.vstack([rng.normal(0, 1, (300, 2)), rng.normal(8, 1, (300, 2))])
    w = rng.integers(0, 4, size=600).astype(np.float64)
    for k in (5, 40):  # 40 x 128 > total weight: Lloyd on every row; 5: on a weighted sample
        counts, means, spread, reps = microclusters(x, k, 0, representatives=True, weights=w)
        assert counts.sum() == w.sum()
        np.testing.assert_allclose(counts @ means / counts.sum(), w @ x / w.sum(), rtol=1e-12)
        total_scatter = (w * ((x - w @ x / w.sum()) ** 2).sum(axis=1)).sum()
        within_and_between = counts @ spread + counts @ ((means - w @ x / w.sum()) ** 2).sum(axis=1)
        np.testing.assert_allclose(within_and_between, total_scatter, rtol=1e-10)
        assert len(counts) == k
        zero = {tuple(r) for r in x[w == 0]}
        assert not any(tuple(r) in zero for r in reps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_finite_column_range_matches_numpy(dtype):
    from lowdens_dask.kernels.summaries import finite_column_range

    rng = np.random.default_rng(4)
    x = (rng.normal(size=(400, 6)) * 10.0 ** rng.integers(-3, 4, size=6)).astype(dtype)
    bad = [np.nan, np.inf, -np.inf, np.nan, 1e30, -1e30, np.inf]
    x[rng.choice(400, 7, replace=False), rng.integers(0, 6, size=7)] = bad
    finite = np.isfinite(x).all(axis=1)
    n_nonfinite, lo, hi = finite_column_range(x)
    assert n_nonfinite == (~finite).sum() == 5
    np.testing.assert_array_equal(lo, x[finite].min(axis=0).astype(np.float64))
    np.testing.assert_array_equal(hi, x[finite].max(axis=0).astype(np.float64))
    none = finite_column_range(np.full((3, 2), np.nan, dtype=dtype))
    assert none[0] == 3 and np.all(none[1] == np.inf) and np.all(none[2] == -np.inf)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_microclusters_are_a_consistent_partition(dtype):
    """Counts cover every row once; counts, means and spreads reproduce the first two moments of the
    chunk exactly; and the partition is a good one (small within-cluster scatter)."""
    from lowdens_dask.kernels.summaries import microclusters

    rng = np.random.default_rng(1)
    x = (rng.normal(size=(3000, 5)) + rng.integers(0, 4, size=(3000, 1)) * 5).astype(dtype)
    counts, means, spread = microclusters(x, 40, seed=0)
    x64 = x.astype(np.float64)
    assert counts.sum() == 3000 and np.all(counts > 0) and len(counts) <= 40
    np.testing.assert_allclose((counts[:, None] * means).sum(axis=0), x64.sum(axis=0), rtol=1e-9)
    second = (counts * (spread + (means**2).sum(axis=1))).sum()
    assert second == pytest.approx((x64**2).sum(), rel=1e-9)
    total_scatter = ((x64 - x64.mean(axis=0)) ** 2).sum()
    assert (counts * spread).sum() < 0.2 * total_scatter


@pytest.mark.slow
def test_microcluster_assignment_is_blocked_and_exact():
    """The nearest centre of every row, by blocks of ASSIGN_BLOCK rows, equals the direct argmin of the
    distances; a chunk task's working memory stays within a small multiple of the chunk (issue 9, memory:
    the n x k score matrix is never formed)."""
    import tracemalloc

    from lowdens_dask.kernels import summaries

    rng = np.random.default_rng(0)
    x = rng.normal(size=(int(2.5 * summaries.ASSIGN_BLOCK), 5))
    centres = rng.normal(size=(64, 5))
    direct = np.argmin(((x[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
    buf = np.empty((summaries.ASSIGN_BLOCK, 64))
    np.testing.assert_array_equal(summaries._assign(x, centres, buf), direct)

    chunk = rng.normal(size=(200_000, 16)).astype(np.float32)
    summaries.microclusters(chunk[:1000], 64, 0)  # compile first
    tracemalloc.start()
    summaries.microclusters(chunk, 64, 0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1.5 * chunk.nbytes, peak  # the n x k float32 scores alone would be 4 x chunk.nbytes


def reference_kmeanspp(x, u):
    """k-means++ seeding in numpy: squared distances to the nearest chosen row, cumulative shares."""
    x = x.astype(np.float64)
    idx = [min(int(u[0] * len(x)), len(x) - 1)]
    d2 = ((x - x[idx[0]]) ** 2).sum(axis=1)
    for j in range(1, len(u)):
        total = d2.sum()
        pick = min(int(u[j] * len(x)), len(x) - 1)
        if total > 0:
            pick = int(np.searchsorted(np.cumsum(d2), u[j] * total, side="right"))
        idx.append(pick)
        d2 = np.minimum(d2, ((x - x[pick]) ** 2).sum(axis=1))
    return np.array(idx)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kmeanspp_seeding_matches_numpy_reference(dtype):
    from lowdens_dask.kernels.summaries import kmeanspp_indices

    rng = np.random.default_rng(3)
    for n, d, k in [(2000, 5, 40), (300, 2, 300), (50, 3, 60)]:
        x = rng.normal(size=(n, d)).astype(dtype)
        x[: n // 10] = x[0]  # repeated rows: zero distances
        u = rng.random(k)
        np.testing.assert_array_equal(kmeanspp_indices(x, u), reference_kmeanspp(x, u))
    # a far, small group gets a seed: 20 rows at distance 50 among 2000
    x = np.vstack([rng.normal(size=(1980, 4)), rng.normal(size=(20, 4)) + 50]).astype(dtype)
    assert (kmeanspp_indices(x, rng.random(8)) >= 1980).any()


@pytest.mark.parametrize("kernel", ["rbf", "rbf-distance", "euclidean"])
def test_kernel_expansion_matches_numpy_reference(kernel):
    """Issue 22, point 10: the row-by-row kernel expansion equals its numpy twin, one row (and a 1-row block) too."""
    from lowdens_dask.kernels.expansion import KINDS, expansion_values, expansion_values_reference

    rng = np.random.default_rng(0)
    X, S, coef = rng.normal(size=(60, 3)), rng.normal(size=(7, 3)), rng.normal(size=7)
    inv_scale = 1.0 / np.array([0.5, 2.0, 1e300])
    S = S * inv_scale
    args = (coef, 0.25, KINDS[kernel], 0.7)
    f = expansion_values(X, inv_scale, np.ascontiguousarray(S.T), *args, np.empty(60))
    np.testing.assert_allclose(f, expansion_values_reference(X, inv_scale, S, *args), rtol=1e-12, atol=1e-12)
    assert expansion_values(X[5:6], inv_scale, np.ascontiguousarray(S.T), *args, np.empty(1))[0] == f[5]
