"""Variance-ratio split and weighted 2-means kernels against independent numpy / scikit-learn references."""

import math

import numpy as np
import pytest
from sklearn.cluster import KMeans
from tolerances import sum_rtol

from lowdens_dask.indices.variance_ratio import (
    two_means_direction,
    variance_ratio_split,
    weighted_two_means,
)

# ----------------------------------------------------------------------------------------------------
# Reference: every admissible split by direct (non-cumulative) formulas.


def _divisor(total):
    return total - 1.0 if total > 1.0 else total


def vr_of_partition(p, w, left):
    """VR of the partition ``left`` (boolean mask, original order) by direct formulas."""
    total = w.sum()
    m = np.sum(w * p) / total
    v = np.sum(w * (p - m) ** 2) / _divisor(total)
    wl, wr = w[left].sum(), w[~left].sum()
    ml = np.sum(w[left] * p[left]) / wl
    mr = np.sum(w[~left] * p[~left]) / wr
    b = wl / total * (ml - m) ** 2 + wr / total * (mr - m) ** 2
    return b / max(v - b, 1e-300)


def reference_split(p, w, min_size):
    """``(value, b, weight_below, grad, candidates)``; candidates lists ``(vr, b)`` of every admissible
    split. Zero-weight rows are dropped before sorting (they do not bound a gap)."""
    keep = np.flatnonzero(w > 0)
    grad = np.zeros(p.shape[0])
    if keep.size < 2:
        return -np.inf, np.nan, 0.0, grad, []
    ps, ws = p[keep], w[keep]
    total = ws.sum()
    m = np.sum(ws * ps) / total
    den = _divisor(total)
    v = np.sum(ws * (ps - m) ** 2) / den
    srt = np.sort(np.unique(ps))
    cands = []
    for lo, hi in zip(srt[:-1], srt[1:]):
        left = ps <= lo
        wl, wr = ws[left].sum(), ws[~left].sum()
        if wl < min_size or wr < min_size:
            continue
        ml = np.sum(ws[left] * ps[left]) / wl
        mr = np.sum(ws[~left] * ps[~left]) / wr
        bb = wl / total * (ml - m) ** 2 + wr / total * (mr - m) ** 2
        vr = bb / max(v - bb, 1e-300)
        cands.append((vr, 0.5 * (lo + hi), wl, ml, mr, bb))
    if not cands:
        return -np.inf, np.nan, 0.0, grad, []
    vr, b, wl, ml, mr, bb = cands[int(np.argmax([c[0] for c in cands]))]
    side_mean = np.where(ps < b, ml, mr)
    d_b = 2.0 / total * ws * (side_mean - m)
    d_v = 2.0 * ws * (ps - m) / den
    grad[keep] = (d_b * v - bb * d_v) / (v - bb) ** 2
    return vr, b, wl, grad, [(c[0], c[1]) for c in cands]


def vr_rtol(p, w, value):
    """Relative tolerance of a variance ratio B / (V - B) summed in another order (the kernel's loops reassociate
    their sums, so their order depends on the machine's SIMD width): B and V are each within the rounding of a sum of
    positive terms, and the ratio amplifies it by 3 + 2 B / (V - B) (tests/tolerances.py)."""
    mean = np.average(p, weights=w)
    return (3.0 + 2.0 * value) * sum_rtol(w * (p - mean) ** 2)


def finite_difference(p, w, b, h):
    """Central differences of VR at the fixed partition ``p < b``."""
    left = p < b
    g = np.zeros(p.shape[0])
    for i in np.flatnonzero(w > 0):
        q = p.copy()
        q[i] = p[i] + h
        up = vr_of_partition(q, w, left)
        q[i] = p[i] - h
        down = vr_of_partition(q, w, left)
        g[i] = (up - down) / (2 * h)
    return g


def run_kernel(p, w, min_size):
    p0, w0 = p.copy(), w.copy()
    grad = np.full(p.shape[0], np.nan)
    value, b, below = variance_ratio_split(p, w, float(min_size), grad)
    np.testing.assert_array_equal(p, p0)
    np.testing.assert_array_equal(w, w0)
    return value, b, below, grad


def mixture(rng, n):
    k = rng.integers(2, 4)
    centres = rng.normal(0, 4, size=k)
    scales = rng.uniform(0.3, 1.5, size=k)
    lab = rng.integers(0, k, size=n)
    return centres[lab] + scales[lab] * rng.normal(size=n)


def check_against_reference(p, w, min_size):
    value, b, below, grad = run_kernel(p, w, min_size)
    rv, rb, rbelow, rgrad, cands = reference_split(p, w, min_size)
    assert cands, "test case without an admissible split"
    assert value == pytest.approx(rv, rel=1e-9)
    near = [c for c in cands if c[0] >= rv * (1 - 1e-12)]
    if len(near) > 1:  # exact ties up to rounding: any of them is a maximiser
        assert any(b == pytest.approx(c[1], rel=1e-12, abs=1e-12) for c in near)
        return value, b, grad
    assert b == pytest.approx(rb, rel=1e-9, abs=1e-12)
    assert below == pytest.approx(rbelow, rel=1e-9)
    assert below == pytest.approx(w[p < b].sum(), rel=sum_rtol(w[p < b]))  # a sum in the kernel's own order
    scale = np.max(np.abs(rgrad))
    np.testing.assert_allclose(grad, rgrad, rtol=1e-8, atol=1e-10 * scale)
    return value, b, grad


# ----------------------------------------------------------------------------------------------------
# variance_ratio_split


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("min_size", [1.0, 7.0, "frac"])
def test_split_matches_reference_integer_weights(seed, min_size):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 500))
    p = mixture(rng, n)
    w = rng.integers(0, 4, size=n).astype(float)
    if min_size == "frac":
        min_size = 0.3 * w.sum()
    check_against_reference(p, w, min_size)


@pytest.mark.parametrize("seed", range(4))
def test_split_matches_reference_with_ties(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(50, 400))
    p = np.round(mixture(rng, n), 1)  # many duplicates
    w = rng.integers(0, 3, size=n).astype(float)
    value, b, grad = check_against_reference(p, w, 2.0)
    assert not np.any(p == b) or np.all(w[p == b] == 0)  # no row with weight sits on the split


@pytest.mark.parametrize("seed", range(3))
def test_split_matches_reference_fractional_weights(seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(50, 300))
    p = mixture(rng, n)
    w = rng.uniform(0.0, 2.0, size=n) * (rng.random(n) > 0.1)
    check_against_reference(p, w, 0.5)
    check_against_reference(p, w / w.sum() * 0.8, 0.0)  # W <= 1: divisor W


@pytest.mark.parametrize("seed", range(4))
def test_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(50, 200))
    p = mixture(rng, n)
    w = rng.integers(0, 4, size=n).astype(float)
    value, b, _, grad = run_kernel(p, w, 1.0)
    fd = finite_difference(p, w, b, 1e-5 * p.std())
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7 * np.max(np.abs(fd)))
    assert value == pytest.approx(vr_of_partition(p, w, p < b), rel=vr_rtol(p, w, value))


def test_gradient_sign_and_zero_weight_rows():
    rng = np.random.default_rng(7)
    p = np.concatenate([rng.normal(-3, 1, 100), rng.normal(3, 1, 100)])
    w = np.ones(200)
    w[::10] = 0.0
    _, b, _, grad = run_kernel(p, w, 1.0)
    assert np.all(grad[w == 0] == 0.0)
    # pulling the outermost points of a side towards the other side lowers the ratio...
    assert grad[np.argmin(np.where(w > 0, p, np.inf))] > 0
    assert grad[np.argmax(np.where(w > 0, p, -np.inf))] < 0
    # ...and sliding a whole side away from the other raises it
    assert grad[(p >= b)].sum() > 0 and grad[(p < b)].sum() < 0


def test_affine_invariance():
    rng = np.random.default_rng(8)
    p = mixture(rng, 300)
    w = rng.integers(1, 4, size=300).astype(float)
    value, b, below, grad = run_kernel(p, w, 1.0)
    v2, b2, below2, grad2 = run_kernel(1e3 + 1e-2 * p, w, 1.0)
    # the offset 1e3 on a spread of 1e-2 * std(p) costs its ratio's digits in the moments' sums
    assert v2 == pytest.approx(value, rel=vr_rtol(p, w, value) * 1e3 / (1e-2 * p.std()))
    assert b2 == pytest.approx(1e3 + 1e-2 * b, rel=1e-12)
    assert below2 == below
    np.testing.assert_allclose(grad2, grad / 1e-2, rtol=1e-6, atol=1e-9 * np.max(np.abs(grad2)))


@pytest.mark.parametrize(
    "p, w, min_size",
    [
        (np.full(20, 1.5), np.ones(20), 1.0),  # all equal: no gap
        (np.arange(10.0), np.r_[1.0, np.zeros(9)], 0.0),  # one row of positive weight
        (np.arange(10.0), np.zeros(10), 0.0),
        (np.arange(10.0), np.ones(10), 6.0),  # min_size above half the weight
        (np.array([0.0, 0.0, 0.0, 1.0]), np.ones(4), 2.0),  # the only gap leaves 1 on the right
        (np.empty(0), np.empty(0), 1.0),
    ],
)
def test_no_admissible_split(p, w, min_size):
    value, b, below, grad = run_kernel(p, w, min_size)
    assert value == -np.inf and math.isnan(b) and below == 0.0
    np.testing.assert_array_equal(grad, np.zeros(p.shape[0]))
    assert reference_split(p, w, min_size)[4] == []


def test_split_between_adjacent_doubles_keeps_left_points_left():
    lo = 1.0
    hi = np.nextafter(lo, 2.0)
    p = np.r_[np.full(5, lo), np.full(5, hi)]
    value, b, below, _ = run_kernel(p, np.ones(10), 1.0)
    assert below == 5.0 and np.sum(p < b) == 5 and lo < b <= hi
    assert np.isfinite(value) and value > 0


def test_two_points_and_exact_values():
    # p = (0, 1), unit weights: m = 1/2, V = 1/2, B = 1/4, VR = 1; b = 1/2.
    g = np.empty(2)
    value, b, below = variance_ratio_split(np.array([1.0, 0.0]), np.ones(2), 1.0, g)
    assert (value, b, below) == (1.0, 0.5, 1.0)
    # dB = (2/2)(m_s - m) = (+1/2, -1/2), dV = 2 (p - m) = (1, -1); dVR = (dB V - B dV) / (V - B)^2 = (0, 0)
    np.testing.assert_allclose(g, [0.0, 0.0], atol=1e-15)


def test_exact_tie_takes_the_first_split():
    # three equal, equally spaced groups: the splits after the first and after the second group tie exactly
    p = np.array([2.0, 0.0, 1.0, 2.0, 0.0, 1.0])
    value, b, below, grad = run_kernel(p, np.ones(6), 1.0)
    assert (b, below) == (0.5, 2.0)
    # m = 1, V = 4/5, B = (1/3)(1) + (2/3)(1/4) = 1/2: VR = (1/2) / (3/10) = 5/3
    assert value == pytest.approx(5.0 / 3.0, rel=1e-14)


# ----------------------------------------------------------------------------------------------------
# two_means_direction / weighted_two_means


def blobs(rng, centres, n, scale=1.0):
    lab = rng.integers(0, len(centres), size=n)
    return centres[lab] + scale * rng.normal(size=(n, centres.shape[1])), lab


def inertia_of(X, w, centres, labels):
    return float(np.sum(w * np.sum((X - centres[labels]) ** 2, axis=1)))


@pytest.mark.parametrize("seed", range(3))
def test_direction_parallel_to_true_centres(seed):
    rng = np.random.default_rng(500 + seed)
    d = 10
    mu = rng.normal(size=(2, d))
    mu[1] = mu[0] + 12.0 * rng.normal(size=d) / math.sqrt(d)
    X, _ = blobs(rng, mu, 600)
    w = rng.integers(0, 4, size=600).astype(float)
    v = two_means_direction(X, w, seed)
    assert v.shape == (d,) and np.linalg.norm(v) == pytest.approx(1.0, rel=1e-12)
    true = (mu[1] - mu[0]) / np.linalg.norm(mu[1] - mu[0])
    assert abs(v @ true) > 0.99
    assert v[np.argmax(np.abs(v))] > 0


@pytest.mark.parametrize("seed", range(4))
def test_inertia_matches_sklearn(seed):
    rng = np.random.default_rng(600 + seed)
    d = int(rng.integers(3, 20))
    centres = rng.normal(0, 3, size=(int(rng.integers(2, 5)), d))
    n = int(rng.integers(200, 600))
    X, _ = blobs(rng, centres, n)
    X += rng.normal(0, 50)  # an offset
    w = rng.integers(0, 4, size=n).astype(float) if seed % 2 == 0 else rng.uniform(0.1, 3.0, size=n)
    km = KMeans(2, n_init=10, random_state=0).fit(X, sample_weight=w)
    centres2, labels, inertia = weighted_two_means(X, w, seed)
    assert inertia == pytest.approx(km.inertia_, rel=1e-6)
    assert inertia == pytest.approx(inertia_of(X, w, centres2, labels), rel=1e-9)
    ref = km.cluster_centers_[1] - km.cluster_centers_[0]
    v = two_means_direction(X, w, seed)
    assert abs(v @ ref) / np.linalg.norm(ref) > 1 - 1e-9
    diff = centres2[1] - centres2[0]
    np.testing.assert_allclose(v, diff / np.linalg.norm(diff) * np.sign(v @ diff), rtol=1e-9, atol=1e-12)
    # a Lloyd fixed point: every row of positive weight is nearest its own centre, centres are cluster means
    dist = ((X[:, None, :] - centres2[None]) ** 2).sum(axis=2)
    assert np.all(dist[np.arange(n), labels] <= dist.min(axis=1) + 1e-9 * dist.max())
    for k in range(2):
        sel = (labels == k) & (w > 0)
        np.testing.assert_allclose(centres2[k], np.average(X[sel], axis=0, weights=w[sel]), rtol=1e-9, atol=1e-9)


def test_integer_weights_act_as_repeated_rows():
    rng = np.random.default_rng(700)
    X, _ = blobs(rng, rng.normal(0, 3, size=(3, 6)), 300)
    w = rng.integers(0, 4, size=300)
    _, _, inertia = weighted_two_means(X, w.astype(float), 0)
    _, _, repeated = weighted_two_means(np.repeat(X, w, axis=0), None, 1)
    assert inertia == pytest.approx(repeated, rel=1e-9)


def test_two_means_is_deterministic_for_a_seed():
    rng = np.random.default_rng(800)
    X, _ = blobs(rng, rng.normal(0, 1.0, size=(4, 8)), 500)  # overlapping: restarts matter
    w = rng.uniform(0.0, 2.0, size=500)
    for seed in (0, 1, 12345):
        v1 = two_means_direction(X, w, seed)
        v2 = two_means_direction(X.copy(), w.copy(), seed)
        np.testing.assert_array_equal(v1, v2)
        a, b = weighted_two_means(X, w, seed), weighted_two_means(X, w, seed)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


def test_two_means_does_not_modify_inputs():
    rng = np.random.default_rng(900)
    X = rng.normal(size=(100, 5))
    w = rng.uniform(size=100)
    X0, w0 = X.copy(), w.copy()
    two_means_direction(X, w, 0)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(w, w0)


@pytest.mark.parametrize("extra", [False, True])
def test_identical_rows_fall_back_to_first_axis(extra):
    X = np.tile(np.array([[0.3, -1.7, 2.2, 1e3]]), (50, 1))
    w = np.ones(50)
    if extra:  # distinct rows of zero weight do not count
        X = np.vstack([X, np.random.default_rng(0).normal(size=(10, 4))])
        w = np.r_[w, np.zeros(10)]
    v = two_means_direction(X, w, 0)
    np.testing.assert_array_equal(v, [1.0, 0.0, 0.0, 0.0])
    centres, labels, inertia = weighted_two_means(X, w, 0)
    np.testing.assert_allclose(centres, np.tile(X[0], (2, 1)), rtol=1e-12)
    assert np.all(labels == 0) and inertia == pytest.approx(0.0, abs=1e-12)


def test_two_rows():
    X = np.array([[0.0, 0.0, 1.0], [0.0, -2.0, 1.0]])
    np.testing.assert_allclose(two_means_direction(X, np.ones(2), 0), [0.0, 1.0, 0.0])
    np.testing.assert_allclose(two_means_direction(X, np.array([1.0, 0.0]), 0), [1.0, 0.0, 0.0])
