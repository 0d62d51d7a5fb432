"""Issue 22 ("Reliability, second round"), points 8, 9 and 16: a hyperplane without a valid split stays finite, and
the projection transformers stop, with a warning, at the directions the data vary along (orthonormal components)."""

# SPDX-License-Identifier: BSD-3-Clause

import dask.array as da
import numpy as np
import pytest

from lowdens_dask import MCH, MDH, MCClustering, MCProjection, MDHProjection, NCutClustering, NCutH, NCutProjection
from lowdens_dask.indices import get_index

#: 19 identical rows and one apart: the only gap between projections leaves a single row on one side.
ONE_APART = np.vstack([np.ones((19, 3)), [[2.0, 3.0, 4.0]]])
#: Two tight groups of 3 and 10 rows: no split leaves 4 rows on each side.
TWO_GROUPS = np.vstack([np.zeros((3, 2)), np.tile([[1.0, 2.0]], (10, 1))])

PROJECTIONS = [MDHProjection, NCutProjection, MCProjection]


@pytest.mark.parametrize("Estimator", [NCutH, MCH])
@pytest.mark.parametrize(
    "X,min_size,sizes", [(ONE_APART, 2, [19, 1]), (TWO_GROUPS, 4, [3, 10])], ids=["one-apart", "two-groups"]
)
def test_point08_ncuth_no_valid_split_keeps_finite_hyperplane(Estimator, X, min_size, sizes):
    with pytest.warns(UserWarning, match="No valid split was found; v_ and b_ hold the best hyperplane found"):
        est = Estimator(min_size=min_size).fit(X)
    assert np.isfinite(est.v_).all() and np.isfinite(est.b_)
    assert est.fval_ == (np.inf if Estimator is NCutH else -np.inf)  # still no valid split
    scores = est.decision_function(X)
    assert np.isfinite(scores).all()
    np.testing.assert_array_equal(est.labels_, (scores >= 0).astype(int))
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    # the would-be split goes through the only gap, as MDH's hyperplane does
    assert sorted(np.bincount(est.labels_).tolist()) == sorted(sizes)
    with pytest.warns(UserWarning):
        mdh = MDH(min_size=min_size).fit(X)
    assert sorted(np.bincount(mdh.labels_).tolist()) == sorted(sizes)
    # the divisive estimator, even forced, leaves such a node a leaf
    Divisive = NCutClustering if Estimator is NCutH else MCClustering
    with pytest.warns(UserWarning, match="Only 1 clusters could be formed"):
        tree = Divisive(n_clusters=2, min_size=min_size, force_n_clusters=True).fit(X)
    assert tree.n_clusters_ == 1 and (tree.labels_ == 0).all()


@pytest.mark.parametrize("method", ["ncut", "mc"])
def test_point08_index_without_admissible_split_gives_finite_point(method):
    index = get_index(method)(1.0, 3) if method == "ncut" else get_index(method)(3)
    # every projection equal: no gap at all; the would-be split is their common value
    split = index.evaluate(np.full(6, 0.25), np.ones(6), None, np.empty(6))
    assert not index.stage_done(split) and split.b == 0.25
    # weights 1, 10, 1, 1: every gap leaves less than min_size = 3 on a side; b lies in one of the gaps
    p, w = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 10.0, 1.0, 1.0])
    split = index.evaluate(p, w, None, np.empty(4))
    assert not index.stage_done(split) and split.b in (0.5, 1.5, 2.5)
    assert split.weight_below == w[p < split.b].sum()
    # two groups of 3 and 2 with min_size = 3: no admissible split; the would-be split is the index's best gap
    p = np.array([0.0, 0.1, 0.2, 5.0, 5.1])
    split = index.evaluate(p, np.ones(5), None, np.empty(5))
    assert not index.stage_done(split) and split.b == pytest.approx(2.6)


@pytest.mark.filterwarnings("ignore:X has 1 constant column")
@pytest.mark.parametrize("Projection", PROJECTIONS)
def test_point09_projection_stops_when_no_variance_is_left(Projection):
    x = np.arange(12.0)
    # a varying column beside a constant one; rank-1 data (NaN components from MCProjection at f0c0cdc)
    for X in (np.column_stack([x % 5, np.full(12, 5.0)]), np.column_stack([x, x, x])):
        with pytest.warns(UserWarning, match=r"found 1 of the 2 components requested: X varies along only 1 direction"):
            proj = Projection(n_components=2).fit(X)
        assert proj.n_components_ == 1 and proj.components_.shape == (1, X.shape[1]) and len(proj.stats_) == 1
        assert np.isfinite(proj.components_).all()
        T = proj.transform(X)
        assert T.shape == (12, 1) and np.isfinite(T).all()
    with pytest.raises(ValueError, match="every row of X is the same point"):
        Projection().fit(da.ones((6, 2), chunks=3))


@pytest.mark.parametrize("Projection", PROJECTIONS)
def test_point16_projection_components_orthonormal_on_rank_deficient_data(Projection):
    rng = np.random.default_rng(0)
    x = np.arange(10.0)
    cases = [
        (np.column_stack([x, x]), 1),  # [v, -v] at f0c0cdc
        (np.outer(rng.normal(size=15), rng.normal(size=5)) + 1.0, 1),
        (rng.normal(size=(15, 2)) @ rng.normal(size=(2, 6)), 2),
    ]
    for X, rank in cases:
        with pytest.warns(UserWarning, match=f"found {rank} of the {rank + 1} components"):
            proj = Projection(n_components=rank + 1).fit(X)
        C = proj.components_
        assert proj.n_components_ == rank and C.shape == (rank, X.shape[1])
        np.testing.assert_allclose(C @ C.T, np.eye(rank), atol=1e-12)
        # the components span the centred rows: projecting onto them loses nothing
        Xc = X - X.mean(axis=0)
        np.testing.assert_allclose(Xc @ C.T @ C, Xc, atol=1e-9 * np.abs(X).max())
    if Projection is MCProjection:  # chunked rows start from two PCs: the second, flat one must not win
        with pytest.warns(UserWarning, match="found 2 of the 3 components"):
            proj = Projection(n_components=3).fit(da.from_array(X, chunks=(8, -1)))
        np.testing.assert_allclose(proj.components_ @ proj.components_.T, np.eye(2), atol=1e-12)
