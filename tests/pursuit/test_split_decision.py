"""The split decision reads records, not rows (issue 51): near-copies, uneven frequencies and far outliers change no
cluster, and a told K takes the decision of ``"auto"``, ``min_cluster_size`` included. The four estimator tests are
the fuzz round's reproducers (``shared/reproducers/fuzz5/repro_1.py`` ... ``repro_4.py``)."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import DePDDPClustering, MCClustering, MDHClustering, NCutClustering
from lowdens_dask.backend import InMemoryData
from lowdens_dask.backend.memory import RECORD_RESOLUTION, far_rows, merge_records, robust_scale
from lowdens_dask.pursuit.significance import effective_size, records


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---------------------------------------------------------------- records


def test_merge_records_merges_exact_and_near_copies_into_their_first_row():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(50, 3))
    X = np.repeat(base, 4, axis=0)
    near = X + 1e-9 * rng.normal(size=X.shape)
    for rows in (X, near):
        kept, w = merge_records(rows, np.ones(len(rows)))
        assert kept.shape == (50, 3)
        np.testing.assert_array_equal(w, np.full(50, 4.0))
        np.testing.assert_array_equal(kept, rows[::4])  # the first copy of each record, in order


def test_merge_records_keeps_distinct_rows_and_weights():
    rng = np.random.default_rng(1)
    X, w = rng.normal(size=(500, 2)), rng.uniform(0.5, 2.0, 500)
    kept, weights = merge_records(X, w)
    assert kept is X and weights is w


def test_merge_records_grid_does_not_chain_a_dense_line():
    """270,000 evenly spaced values: their spacing is a tenth of the grid step (1e-4 of the robust scale, the
    interquartile range / 1.349), so they merge in cells of about ten, never into one record."""
    x = np.arange(270_000.0)[:, None]
    step = RECORD_RESOLUTION * robust_scale(x)[0]
    assert 0.09 < 1.0 / step < 0.11
    kept, w = merge_records(x, np.ones(x.shape[0]))
    assert 24_000 <= kept.shape[0] <= 30_000
    assert w.sum() == x.shape[0] and w.max() <= 11


def test_records_read_counts_once_and_ignore_how_a_count_is_split():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 2))
    w = np.where(rng.random(300) < 0.1, rng.integers(2, 20, 300), 1).astype(float)
    assert effective_size(records(InMemoryData(X, w))) == 300
    # a row of weight w and the same row written as copies whose weights sum to w are the same records
    split = InMemoryData(np.vstack([X, np.repeat(X[:10], 3, axis=0)]), np.r_[w, np.ones(30)])
    whole = InMemoryData(X, np.r_[w[:10] + 3, w[10:]])
    for rows in (split, whole):
        tested = records(rows)
        np.testing.assert_array_equal(tested.X, X)
        assert np.all(tested.weights == 1.0)


# ---------------------------------------------------------------- far rows


def test_far_rows_are_isolated_rows_lighter_than_a_cluster():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, 10))
    far = rng.choice([-1.0, 1.0], size=(3, 10)) * 20
    rows = np.vstack([X, far])
    mask = far_rows(rows, np.ones(len(rows)), least=10)
    assert mask is not None and np.flatnonzero(mask).tolist() == [2000, 2001, 2002]
    assert far_rows(X, np.ones(len(X)), least=10) is None  # a Gaussian's own tail is no outlier
    # a tight far group at least as heavy as a cluster could be one: kept
    group = np.vstack([X, 30 + 0.01 * rng.normal(size=(12, 10))])
    assert far_rows(group, np.ones(len(group)), least=10) is None
    # ... and lighter than one, set aside
    assert far_rows(group, np.ones(len(group)), least=13).sum() == 12


# ---------------------------------------------------------------- the reproducers


@pytest.mark.parametrize("cls", [MDHClustering, NCutClustering, MCClustering])
def test_near_copies_of_one_gaussian_give_one_cluster(cls):
    """fuzz5 repro_1: every row of one Gaussian written 20 times, the copies jittered by 1e-9."""
    rng = np.random.default_rng(0)
    X = np.repeat(rng.normal(size=(300, 4)), 20, axis=0)
    X_near = X + 1e-9 * rng.normal(size=X.shape)
    assert cls(n_clusters="auto", random_state=0).fit(X).n_clusters_ == 1
    near = cls(n_clusters="auto", random_state=0).fit(X_near)
    assert near.n_clusters_ == 1
    assert near.tree_.root.stats["n_test"] == pytest.approx(300)


@pytest.mark.parametrize("cls", [MDHClustering, NCutClustering])
def test_uneven_frequencies_of_one_uniform_square_give_one_cluster(cls):
    """fuzz5 repro_2: a tenth of a uniform square's rows recorded 2-19 times, or those counts as weights."""
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(5000, 2))
    r = np.where(rng.random(5000) < 0.1, rng.integers(2, 20, size=5000), 1)
    assert cls(n_clusters="auto", random_state=0).fit(np.repeat(X, r, axis=0)).n_clusters_ == 1
    assert cls(n_clusters="auto", random_state=0).fit(X, sample_weight=r.astype(float)).n_clusters_ == 1


def test_one_far_outlier_does_not_split_a_gaussian():
    """fuzz5 repro_3: one row 326 units from a 2,000 x 60 Gaussian; the root is read at the Gaussian's dimension."""
    rng = np.random.default_rng([2000, 60, 0, 1, 300])
    X = rng.normal(size=(2000, 60))
    X_out = np.vstack([X, 300 * rng.normal(size=(1, 60)) / np.sqrt(60)])
    dirty = NCutClustering(n_clusters="auto", random_state=0).fit(X_out)
    clean = NCutClustering(n_clusters="auto", random_state=0).fit(X)
    assert dirty.n_clusters_ == 1
    assert dirty.tree_.root.stats["d_eff"] == pytest.approx(clean.tree_.root.stats["d_eff"])
    assert dirty.predict(X_out[-1:])[0] == dirty.labels_[-1]  # the outlier is routed, not dropped


def test_outliers_leave_the_other_rows_clusters():
    rng = np.random.default_rng(4)
    X = np.vstack([rng.normal(size=(400, 5)), rng.normal(size=(400, 5)) + [8, 0, 0, 0, 0]])
    outliers = X.mean(0) + 20 * X.std(0) * rng.choice([-1.0, 1.0], size=(3, 5))
    clean = MDHClustering(n_clusters="auto", random_state=0).fit(X)
    dirty = MDHClustering(n_clusters="auto", random_state=0).fit(np.vstack([X, outliers]))
    assert dirty.n_clusters_ == clean.n_clusters_ == 2
    assert adjusted_rand_score(clean.labels_, dirty.labels_[:800]) == 1.0
    assert len(dirty.labels_) == 803


@pytest.mark.slow
@pytest.mark.parametrize("cls", [MDHClustering, DePDDPClustering])
def test_told_the_k_auto_finds_gives_autos_clusters_with_a_small_group(cls):
    """fuzz5 repro_4: three Gaussians and a 0.4% group (below min_cluster_size) beside the largest."""
    rng = np.random.default_rng(0)
    n = 200_000
    sizes = [int(0.6 * n), int(0.2 * n), int(0.2 * n), int(0.004 * n)]
    centres = np.array([[0, 0], [0, 14], [14, 14], [-8, 0]])
    X = np.vstack([rng.normal(size=(s, 2)) * (0.3 if j == 3 else 1) + centres[j] for j, s in enumerate(sizes)])
    auto = cls(n_clusters="auto", random_state=0).fit(X)
    assert auto.n_clusters_ == 3
    told = cls(n_clusters=3, random_state=0).fit(X)
    assert adjusted_rand_score(auto.labels_, told.labels_) > 0.999
    four = cls(n_clusters=4, random_state=0).fit(X)  # beyond auto's K the small group is cut off
    assert four.n_clusters_ == 4 and min(np.bincount(four.labels_)) == sizes[3]


@pytest.mark.parametrize("seed", range(4))
def test_merge_duplicates_matches_a_direct_grouping(seed):
    """The grouping by a sorted random projection (one argsort) against a direct one: each distinct row once, in
    order of first occurrence, with the sum of its copies' weights."""
    from lowdens_dask.backend.memory import merge_duplicates

    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(3000, 3)).astype(float)  # 64 distinct rows, many copies
    w = rng.random(3000)
    rows, weights = merge_duplicates(X, w)
    firsts = {}
    for i, row in enumerate(map(tuple, X)):
        firsts.setdefault(row, []).append(i)
    expected = sorted(firsts.values(), key=lambda idx: idx[0])
    np.testing.assert_array_equal(rows, X[[idx[0] for idx in expected]])
    np.testing.assert_allclose(weights, [w[idx].sum() for idx in expected])
    distinct = rng.standard_normal((500, 3))
    kept, same = merge_duplicates(distinct, np.ones(500))
    assert kept is distinct and same.shape == (500,)
