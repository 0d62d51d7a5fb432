"""The minimum normalised cut kernel against a brute-force dense numpy reference."""

import math

import numpy as np
import pytest

from lowdens_dask.indices.ncut import ncut_scale, ncut_split


def similarity(p, w, s):
    """Dense weighted similarity matrix w_i w_j exp(-|p_i - p_j| / s)."""
    return w[:, None] * w[None, :] * np.exp(-np.abs(p[:, None] - p[None, :]) / s)


def ncut_of_partition(p, w, s, left):
    """NCut of the fixed partition (left, ~left), densely."""
    sim = similarity(p, w, s)
    right = ~left
    cut = sim[np.ix_(left, right)].sum()
    return cut * (1.0 / sim[left].sum() + 1.0 / sim[right].sum())


def reference(p, w, s, min_size):
    """Brute force: NCut of every admissible split, the first minimiser, b and the gradient.

    Returns ``(value, b, weight_below, grad, ncut_by_m, left)``; value is inf when nothing is admissible.
    """
    n = p.size
    xs = np.sort(p)
    sim = similarity(p, w, s)
    ncut = np.full(n, np.inf)
    for m in range(1, n):
        if not xs[m - 1] < xs[m]:
            continue
        left = p <= xs[m - 1]
        wl, wr = w[left].sum(), w[~left].sum()
        if wl <= 0 or wr <= 0 or wl < min_size or wr < min_size:
            continue
        cut = sim[np.ix_(left, ~left)].sum()
        ncut[m] = cut * (1.0 / sim[left].sum() + 1.0 / sim[~left].sum())
    if not np.isfinite(ncut).any():
        return np.inf, np.nan, 0.0, np.zeros(n), ncut, None
    m = int(np.argmin(ncut))
    left = p <= xs[m - 1]
    right = ~left
    # D[a, b] = d sim[a, b] / d p_a; d sim[a, b] / d p_b = D[b, a].
    deriv = -np.sign(p[:, None] - p[None, :]) * sim / s

    def dsum(rows, cols):
        """Gradient of sum_{i in rows, j in cols} sim[i, j] with respect to every p_a."""
        return rows * deriv[:, cols].sum(axis=1) + cols * deriv[:, rows].sum(axis=1)

    everyone = np.ones(n, dtype=bool)
    cut = sim[np.ix_(left, right)].sum()
    vol_l, vol_r = sim[left].sum(), sim[right].sum()
    dcut, dvol_l, dvol_r = dsum(left, right), dsum(left, everyone), dsum(right, everyone)
    grad = dcut * (1 / vol_l + 1 / vol_r) - cut * (dvol_l / vol_l**2 + dvol_r / vol_r**2)
    return ncut[m], 0.5 * (xs[m - 1] + xs[m]), w[left].sum(), grad, ncut, left


def make_case(seed, n, ties=False, zeros=True):
    rng = np.random.default_rng(seed)
    k = rng.integers(2, 4)
    centres = rng.normal(0, 4, size=k)
    labels = rng.integers(0, k, size=n)
    p = centres[labels] + rng.normal(0, 1, size=n) * rng.uniform(0.3, 1.5, size=k)[labels]
    p = p * rng.uniform(0.01, 100)
    if ties:
        p = np.round(p / (0.05 * p.std())) * (0.05 * p.std())  # many exact duplicates
    w = rng.integers(0 if zeros else 1, 5, size=n).astype(float)
    return p, w


CASES = [
    # seed, n, ties, scale (in stds), min_size (as a fraction of the total weight; at least 1)
    (0, 60, False, 0.05, 0.0),
    (1, 120, False, 0.3, 0.2),
    (2, 200, False, 1.0, 0.0),
    (3, 300, False, 20.0, 0.0),
    (4, 150, False, 0.5, 0.4),
    (5, 250, True, 0.1, 0.0),
    (6, 100, True, 1.0, 0.45),
    (7, 80, True, 5.0, 0.0),
    (8, 200, False, 0.02, 0.0),
    (9, 300, True, 0.2, 0.45),
]


def setup(seed, n, ties, scale, min_frac):
    p, w = make_case(seed, n, ties)
    return p, w, scale * p.std(), max(1.0, min_frac * w.sum())


def run_kernel(p, w, s, min_size):
    grad = np.full(p.size, 123.0)
    value, b, below = ncut_split(p, w, s, min_size, grad)
    return value, b, below, grad


@pytest.mark.parametrize("case", CASES)
def test_matches_brute_force(case):
    p, w, s, min_size = setup(*case)
    if case[2]:
        assert np.unique(p).size < p.size
    value, b, below, grad = run_kernel(p, w, s, min_size)
    ref_value, ref_b, ref_below, ref_grad, ncut_by_m, _ = reference(p, w, s, min_size)
    assert np.isfinite(ref_value)
    assert value == pytest.approx(ref_value, rel=1e-9)
    # The kernel's split must be a minimiser; zero-weight points make exact plateaus, where
    # rounding may pick another member, so demand the same b only for a clear minimum.
    m = int(np.searchsorted(np.sort(p), b))
    assert ncut_by_m[m] == pytest.approx(ref_value, rel=1e-9)
    clear = np.sort(ncut_by_m)[1] > ref_value * (1 + 1e-8)
    if clear:
        assert b == ref_b
        assert below == ref_below
    assert below == w[p < b].sum()
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-10 * np.abs(ref_grad).max())
    assert np.all(grad[w == 0] == 0.0)


@pytest.mark.parametrize("case", CASES[::2] + CASES[5:6])
def test_gradient_matches_finite_differences(case):
    p, w, s, min_size = setup(*case)
    n = p.size
    value, b, _, grad = run_kernel(p, w, s, min_size)
    left = p < b
    assert ncut_of_partition(p, w, s, left) == pytest.approx(value, rel=1e-9)
    h = 1e-6 * s
    fd = np.empty(n)
    for i in range(n):
        up, down = p.copy(), p.copy()
        up[i] += h
        down[i] -= h
        fd[i] = (ncut_of_partition(up, w, s, left) - ncut_of_partition(down, w, s, left)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())


@pytest.mark.parametrize("case", [c for c in CASES if c[4] > 0])
def test_min_size_is_binding_and_respected(case):
    p, w, s, min_size = setup(*case)
    _, b, below, _ = run_kernel(p, w, s, min_size)
    _, b_free, _, _ = run_kernel(p, w, s, 1.0)
    assert b != b_free  # the constraint changes the answer in these cases
    assert below >= min_size and w.sum() - below >= min_size


def test_min_size_equality_is_admissible():
    p, w = np.arange(10.0), np.ones(10)
    value, b, below, _ = run_kernel(p, w, 1.0, 5.0)
    assert np.isfinite(value) and (b, below) == (4.5, 5.0)


@pytest.mark.parametrize(
    "p,w,s,expected_b",
    [
        (np.array([0.0, 10.0, 20.0]), np.ones(3), 10.0, 5.0),  # mirror-image splits
        (np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 0.0, 0.0, 1.0]), 1e20, 0.5),  # exp(-1/s) == 1
    ],
)
def test_first_minimiser_on_exact_ties(p, w, s, expected_b):
    value, b, below, _ = run_kernel(p, w, s, 1.0)
    ref_value, ref_b, _, _, ncut_by_m, _ = reference(p, w, s, 1.0)
    assert np.sum(ncut_by_m == ref_value) >= 2  # the tie is exact
    assert value == ref_value and b == ref_b == expected_b and below == 1.0


def test_large_spread_small_scale_is_finite():
    """Exponents stay <= 0: a scale tiny against the data range neither overflows nor NaNs."""
    rng = np.random.default_rng(11)
    p = np.concatenate([rng.normal(0, 1, 50), rng.normal(1e4, 1, 50)])
    w = np.ones(100)
    value, b, below, grad = run_kernel(p, w, 1e-3, 1.0)
    assert np.isfinite(value) and np.isfinite(b) and np.all(np.isfinite(grad))
    ref_value, ref_b, ref_below, ref_grad, _, _ = reference(p, w, 1e-3, 1.0)
    assert value == ref_value == 0.0  # the cut across the gap underflows, first zero split wins
    assert (b, below) == (ref_b, ref_below)


@pytest.mark.parametrize(
    "p,w,min_size",
    [
        (np.full(10, 2.5), np.ones(10), 1.0),  # all equal: no hyperplane separates them
        (np.arange(10.0), np.ones(10), 5.5),  # min_size above half the total weight
        (np.arange(10.0), np.r_[np.zeros(9), 3.0], 1.0),  # all weight on one point
        (np.array([1.0]), np.array([2.0]), 1.0),  # a single point
        (np.r_[np.zeros(5), np.ones(5)], np.r_[np.ones(5), np.zeros(5)], 0.0),  # one side weightless
    ],
)
def test_no_admissible_split(p, w, min_size):
    value, b, below, grad = run_kernel(p, w, 1.0, min_size)
    assert value == np.inf and math.isnan(b) and below == 0.0
    assert np.all(grad == 0.0)


def test_far_outlier_matches_brute_force():
    """The sort's fallback path, end to end."""
    rng = np.random.default_rng(12)
    p = np.r_[rng.normal(-2, 1, 150), rng.normal(2, 1, 150), 1e9]
    w = rng.integers(0, 4, size=p.size).astype(float)
    value, b, below, grad = run_kernel(p, w, 1.0, 1.0)
    ref_value, ref_b, ref_below, ref_grad, _, _ = reference(p, w, 1.0, 1.0)
    assert value == pytest.approx(ref_value, rel=1e-9) and (b, below) == (ref_b, ref_below)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-10 * np.abs(ref_grad).max())


def test_inputs_not_modified():
    p, w = make_case(3, 200, ties=True)
    p0, w0 = p.copy(), w.copy()
    run_kernel(p, w, 0.5 * p.std(), 2.0)
    np.testing.assert_array_equal(p, p0)
    np.testing.assert_array_equal(w, w0)


def test_scale_rule():
    assert ncut_scale(2.0, 32.0) == pytest.approx(100 * 2.0 / 2.0)
    assert ncut_scale(1.5, 5620.0) == pytest.approx(150.0 * 5620.0**-0.2, rel=1e-15)
