"""The sorting kernels against np.sort, on inputs that exercise each path (buckets, insertion, radix)."""

import numpy as np
import pytest

from lowdens_dask.kernels.sorting import _radix_argsort, argsort_float, sort_projections

SORT_INPUTS = {
    "mixture": lambda rng: np.r_[rng.normal(-2, 0.7, 250), rng.normal(1.5, 1.0, 250)],
    "duplicates and signed zeros": lambda rng: np.r_[np.round(rng.normal(size=300)), -0.0, 0.0, -0.0],
    "far outlier": lambda rng: np.r_[rng.normal(size=400), 1e12],  # defeats the buckets
    "geometric": lambda rng: rng.permutation(2.0 ** np.arange(-500, 500, 3)),
    "infinities": lambda rng: np.r_[rng.normal(size=50), np.inf, -np.inf],
    "crowded first bucket": lambda rng: np.r_[rng.uniform(0, 1e-3, 50), rng.uniform(0, 1, 50)],
    "descending": lambda rng: np.linspace(1, -1, 200),
    "constant": lambda rng: np.full(20, -1.5),
    "two points": lambda rng: np.array([3.0, -3.0]),
}


@pytest.mark.parametrize("name", SORT_INPUTS)
@pytest.mark.parametrize("sorter", [sort_projections, _radix_argsort])
def test_sort_projections(name, sorter):
    p = SORT_INPUTS[name](np.random.default_rng(5))
    p0 = p.copy()
    xs, order = np.empty(p.size), np.empty(p.size, dtype=np.int64)
    sorter(p, xs, order)
    np.testing.assert_array_equal(np.sort(order), np.arange(p.size))
    np.testing.assert_array_equal(xs, p[order])
    np.testing.assert_array_equal(xs, np.sort(p))
    np.testing.assert_array_equal(p, p0)


@pytest.mark.parametrize("seed", range(3))
def test_argsort_float_sorts(seed):
    rng = np.random.default_rng(400 + seed)
    for n in (5, 300, 6000):
        x = rng.normal(size=n) * 10.0 ** rng.uniform(-3, 3, size=n)
        x[: n // 7] = np.round(x[: n // 7])  # duplicates, zeros
        x[1::13] = -0.0
        x[2::17] = 1.0 + rng.integers(0, 50, size=x[2::17].size) * np.finfo(float).eps  # equal top bits
        order = argsort_float(x)
        assert np.array_equal(np.sort(order), np.arange(n))
        assert np.array_equal(x[order], np.sort(x))
    # values differing only in their low bits: the insertion fix-up exceeds its budget and hands over
    x = 1.0 + rng.permutation(3000) * np.finfo(float).eps
    assert np.array_equal(x[argsort_float(x)], np.sort(x))
    x = rng.normal(size=2000)[::2]  # a strided view
    assert np.array_equal(x[argsort_float(x)], np.sort(x))


@pytest.mark.parametrize("seed", range(5))
def test_sorted_copy_is_numpys_sort_and_leaves_its_input(seed):
    """``sorted_copy`` (the dip test's and the record grouping's sort) against ``np.sort``: random, sorted, tied,
    small and NaN-holding inputs; the input is never changed."""
    from lowdens_dask.kernels.sorting import sorted_copy

    rng = np.random.default_rng(seed)
    cases = [
        rng.standard_normal(5000),
        np.sort(rng.standard_normal(3000)),
        np.sort(rng.standard_normal(3000))[::-1],
        rng.integers(0, 7, 4000).astype(float),
        rng.standard_normal(3),
        np.append(rng.standard_normal(2000), [np.nan, -np.inf, np.inf]),
        np.array([]),
    ]
    for p in cases:
        before = p.copy()
        got = sorted_copy(p)
        np.testing.assert_array_equal(got, np.sort(p))
        np.testing.assert_array_equal(p, before)
        assert got is not p and got.dtype == np.float64
