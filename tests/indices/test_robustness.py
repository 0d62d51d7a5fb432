"""Regression tests for the numerical defects of issue 9 (reproducers from the reliability probe)."""

import warnings

import dask.array as da
import numpy as np
import pytest

from lowdens_dask import MDH, DePDDPClustering, MDHClustering
from lowdens_dask.backend.chunked import ChunkedNode
from lowdens_dask.indices import density_passes
from lowdens_dask.indices.density import relative_depth_from_logs
from lowdens_dask.kernels.kde import MAX_BINNED_RADIUS, binned_kde_grid, binned_radius


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def test_huge_column_scale_does_not_exhaust_memory():
    """Defect 2: the b-search grid of a narrow interval was binned with 8 h / spacing cells (MemoryError)."""
    MDH().fit(np.array([[-7.247867802283125e11, 0, 0, 0], [0, 0, 0, 0]]))
    rng = np.random.default_rng(0)
    for scale in (1e9, 1e12):
        X = np.vstack([rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + [8, 0]])
        X[:, 0] *= scale
        model = MDH().fit(X)
        np.testing.assert_array_equal(np.bincount(model.labels_), [100, 100])


def test_narrow_grid_is_summed_exactly_in_memory_and_over_chunks():
    """A grid much finer than h is summed exactly, with the same numbers over chunks as in memory."""
    rng = np.random.default_rng(1)
    p = rng.normal(scale=1e6, size=300)
    h, a, delta, m = 4e5, -1e-2, 1e-2, 3
    assert binned_radius(h, delta) > MAX_BINNED_RADIUS
    direct = np.array([np.exp(-((a + j * delta - p) ** 2) / (2 * h * h)).sum() for j in range(m)])
    np.testing.assert_allclose(binned_kde_grid(p, np.ones_like(p), h, a, delta, m), direct, rtol=1e-12)
    proj = ChunkedNode(da.from_array(p[:, None], chunks=(70, 1))).projections(np.ones((1, 1)))
    (chunked,), _ = density_passes.binned_kdes(proj, h, [(0, a, delta, m)])
    np.testing.assert_allclose(chunked, direct, rtol=1e-12)


def test_relative_depth_saturates_instead_of_overflowing():
    """Defect 3: math.exp overflowed when the density at b underflows far below the modes'."""
    assert relative_depth_from_logs(-2000.0, 0.0, 5.0) == pytest.approx(np.exp(700.0) - 1.0)
    X = np.random.default_rng(1).normal(size=(50, 2))
    w = np.ones(50)
    w[0] = 1e6
    assert DePDDPClustering(n_clusters=4).fit(X, sample_weight=w).n_clusters_ == 4
    w[0] = 1e9
    model = MDHClustering(n_clusters=4).fit(X, sample_weight=w)
    assert model.n_clusters_ == len(np.unique(model.labels_))


def test_no_split_with_an_empty_side():
    """Defect 5: n_clusters_ must equal the distinct labels; every leaf holds rows."""
    X = np.array(
        [
            [float.fromhex("0x1.dcd65p+29"), -3.5, float.fromhex("0x1.12e0be826d695p-28")],
            [float.fromhex("0x1.dcd65p+29"), -3.5, float.fromhex("0x1.13271ce872210p-28")],
        ]
    )
    model = MDHClustering(n_clusters=8, random_state=0).fit(X)
    assert model.n_clusters_ == len(np.unique(model.labels_))
    assert all(leaf.size > 0 for leaf in model.tree_.leaves())


def test_a_split_whose_rows_leave_a_side_empty_is_not_made(monkeypatch):
    """The grower checks the sides on the rows themselves: if rounding of x @ v (features of very different
    scales) leaves a side below min_size although the index accepted the split, the leaf is not split."""
    from lowdens_dask.backend import InMemoryData

    def everything_left(self, v, b):
        return self, self.take(np.zeros(self.n_samples, dtype=bool))

    X = np.vstack([np.random.default_rng(2).normal(size=(60, 2)) + [c, 0] for c in (0, 9, 18)])
    monkeypatch.setattr(InMemoryData, "partition", everything_left)
    model = MDHClustering(n_clusters=3, force_n_clusters=False).fit(X)
    assert model.n_clusters_ == 1 and model.tree_.root.is_leaf


@pytest.mark.parametrize("standardize", [False, True])
def test_very_large_weights_are_refused_not_overflowed(standardize):
    """Defect 4: weights whose weighted sums of squares overflow raised ZeroDivisionError inside the
    kernels; the total weight is now bounded, with a ValueError that names it, and large weights below
    the bound fit."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)).astype(np.float32)
    X[15:] += 5
    w = np.ones(30)
    w[:3] = 1e200
    for model in (MDHClustering(n_clusters=3, standardize=standardize), DePDDPClustering(n_clusters=3, standardize=standardize)):
        with pytest.raises(ValueError, match="total sample_weight is 3e\\+200"):
            model.fit(X, sample_weight=w)
    w[:3] = 1e29
    model = MDHClustering(n_clusters=3, standardize=standardize).fit(X, sample_weight=w)
    assert model.n_clusters_ == len(np.unique(model.labels_))


def test_identical_rows_and_tiny_total_weight():
    """Found by the property tests: IPDDP ranked a leaf of identical rows by a gap it does not have
    (KeyError); a one-split estimator whose weights cannot leave min_size on each side failed with an
    AttributeError instead of saying so."""
    from lowdens_dask import IPDDPClustering

    X = np.array([[7.2861531], [6.75063056], [6.75063056], [6.75063056]])
    model = IPDDPClustering(n_clusters=3).fit(X)
    assert model.n_clusters_ == len(np.unique(model.labels_)) == 2
    w = np.array([1e-7, 2e-12, 3e-11, 1e-4, 6e-5, 2e-5, 4e-8, 0.93, 0.59, 2e-4]) * 1.2
    with pytest.raises(ValueError, match="total weight, 1.82446, is below 2 \\* min_size"):
        MDH().fit(np.arange(10.0)[:, None], sample_weight=w)


def test_a_row_at_the_split_point_stays_on_its_side_in_the_original_coordinates():
    """Found by the property tests: PDDP splits at the weighted mean, which is a row when its weight
    dominates; routing in the original coordinates rounded that row to the other side, so a leaf held no
    rows (n_clusters_ 2, one distinct label). b now sits in the middle of the gap when a row is within
    rounding of it."""
    from lowdens_dask import PDDPClustering

    X = np.array([[-0.013, 0.083, 1.203], [0.006, 0.056, -3.772]])
    model = PDDPClustering(n_clusters=2, standardize=True).fit(X, sample_weight=np.array([1.0, 2.00376421e17]))
    assert model.n_clusters_ == len(np.unique(model.labels_)) == 2


def test_variance_ratio_with_one_dominant_weight():
    """Found by the property tests: with one row weighing 1e16, the within-group sum of squares computed as
    total minus between cancelled to zero, and the variance ratio read 2.9e289."""
    from lowdens_dask.indices.variance_ratio import variance_ratio_split

    p = np.array([-107.05, -100.27, -64.03, 73.23, -117.05, -143.43, 63.99, 75.44, -95.89, 56.24])
    w = np.ones(10)
    w[5] = 1e16
    grad = np.empty(10)
    value, b, _ = variance_ratio_split(p, w, 1.0, grad)
    left = p < b
    m_l, m_r = np.average(p[left], weights=w[left]), np.average(p[~left], weights=w[~left])
    wss = (w[left] * (p[left] - m_l) ** 2).sum() + (w[~left] * (p[~left] - m_r) ** 2).sum()
    m = np.average(p, weights=w)
    between = (w[left].sum() * (m_l - m) ** 2 + w[~left].sum() * (m_r - m) ** 2) / w.sum()
    assert value == pytest.approx(between / ((wss + between) / (w.sum() - 1)), rel=1e-6)
    assert np.all(np.isfinite(grad))


def test_variance_ratio_of_two_rows_with_a_dominant_weight():
    """Found by the property tests: W - D (D = W - 1) rounded to 0 at W = 2e16, the denominator fell to the
    floor and the gradient overflowed (RuntimeWarning: invalid value, in the pursuit)."""
    from lowdens_dask import MCH

    X = np.array([[-0.01622759], [-0.01070314]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = MCH(random_state=0).fit(X, sample_weight=np.array([1.0, 2.2929160475296064e16]))
    assert sorted(model.labels_) == [0, 1]


def test_a_split_between_rows_closer_than_rounding_is_not_made():
    """Found by the property tests: two distinct rows that project within 4e-16 of each other in the
    z-scored frame were put on two sides; routed in the original coordinates both went to one leaf, so a
    leaf held no rows. Such a split is not made (the tree grows another one)."""
    rows = np.array(
        [
            [
                2.25870617e00,
                7.00763554e02,
                -1.47109356e00,
                4.29462911e00,
                -5.07425501e-01,
                -5.47578639e00,
                3.36250438e00,
                2.56331108e00,
            ],
            [
                3.60346238e00,
                6.96186069e02,
                3.86797908e00,
                -3.12626870e00,
                -1.42256274e00,
                3.46238655e00,
                3.10415723e00,
                -2.40022855e00,
            ],
            [
                3.75370431e00,
                7.00030187e02,
                4.33109507e-01,
                3.40556540e00,
                1.18759746e00,
                -1.54213288e00,
                2.36850842e00,
                1.00105863e00,
            ],
        ]
    )
    X = rows[[2, 1, 2, 0, 2, 2, 0, 2, 0, 1, 1, 0, 1, 1, 0, 0, 0, 0, 2, 2, 2, 1, 1, 0, 0, 2, 2, 2, 1, 1, 1, 1, 2, 0, 2]]
    w = np.ones(len(X))
    w[[8, 10, 29]] = np.float64(4410400790000000.0)
    model = MDHClustering(n_clusters=3, random_state=0, standardize=True).fit(X, sample_weight=w)
    assert model.n_clusters_ == len(np.unique(model.labels_)) == 3
