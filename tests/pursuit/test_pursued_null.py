"""Choosing K on all of a node's rows (issue 33): the effective dimension against the covariance's eigenvalues,
the pursued null's p-values, the choice among the starts, the summary's sample of rows (merged as a uniform
sample, tested on in summary mode), and the mode rule that fits input of memory size on its rows."""

import dask.array as da
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import lowdens_dask as ld
from lowdens_dask.backend import InMemoryData
from lowdens_dask.backend.cluster_summary import SAMPLE_ROWS, ClusterSummary
from lowdens_dask.datasets import load_dataset
from lowdens_dask.pursuit import Hyperplane, significance
from lowdens_dask.pursuit.significance import SplitTest, participation_ratio, pursued_pvalue
from lowdens_dask.growth.hyperplane_splitter import _combine


def _ratio(C: np.ndarray) -> float:
    lam = np.linalg.eigvalsh(C)
    return lam.sum() ** 2 / (lam**2).sum()


def test_participation_ratio_is_that_of_the_covariance_eigenvalues():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 6)) * [5, 3, 1, 1, 0.5, 0.1]
    w = rng.integers(1, 4, 300).astype(float)
    assert participation_ratio(InMemoryData(X, w)) == pytest.approx(_ratio(np.cov(X.T, aweights=w, bias=True)))
    wide = rng.standard_normal((10, 40))  # fewer rows than features: the Gram matrix's side
    assert participation_ratio(InMemoryData(wide)) == pytest.approx(_ratio(np.cov(wide.T, bias=True)))
    spread = rng.random(300)  # a summary: each microcluster's spread adds to every variance
    C = np.cov(X.T, aweights=w, bias=True) + np.eye(6) * (w @ spread / w.sum())
    assert participation_ratio(InMemoryData(X, w, spread)) == pytest.approx(_ratio(C))
    assert participation_ratio(InMemoryData(rng.standard_normal((5000, 4)))) == pytest.approx(4, rel=0.05)


@pytest.mark.parametrize("method", ["mdh", "ncut", "mc", "pddp", "depddp", "ipddp"])
def test_pursued_pvalue_is_a_tail_probability(method):
    stats = np.linspace(0.0, 3.0, 61)
    for n, d_eff in [(20, 1.0), (500, 3.5), (3000, 20.0), (10**6, 200.0)]:
        p = np.array([pursued_pvalue(method, t, n, d_eff) for t in stats])
        assert p[0] == 1.0 and np.all((p >= 0) & (p <= 1)) and np.all(np.diff(p) <= 1e-12)
        assert p[-1] < 0.01 or d_eff > 64  # beyond the table's dimensions the null is extrapolated upwards
    if method in ("mdh", "ncut", "mc"):  # a pursuit has more directions to choose from: a larger null
        assert pursued_pvalue(method, 0.7, 1000, 20.0) >= pursued_pvalue(method, 0.7, 1000, 2.0)
    with pytest.raises(ValueError, match="No pursued null"):
        pursued_pvalue("no-such-index", 1.0, 100, 2.0)


def _hp(score: float, p: float, valid: bool = True) -> Hyperplane:
    return Hyperplane(np.array([1.0, 0.0]), 0.0, valid, {"relative_depth": score, "p_value": p}, {})


def test_a_start_whose_split_is_significant_is_chosen_over_a_better_scored_one():
    test = SplitTest(0.01, 0)
    best, other = _hp(0.9, 0.5), _hp(0.2, 0.001)
    chosen = _combine([best, other], "mdh", test)
    assert chosen.valid and chosen.stats["p_value"] == 0.001
    neither = _combine([best, _hp(0.2, 0.3)], "mdh", test)
    assert not neither.valid and neither.stats["relative_depth"] == 0.9  # the best one, not valid
    assert _combine([best, _hp(0.95, 0.001, valid=False)], "mdh", test).valid is False


@pytest.mark.parametrize("name", ["MDHClustering", "NCutClustering"])
@pytest.mark.parametrize("shape", ["gaussian", "uniform"])
def test_one_cluster_on_all_rows(name, shape):
    rng = np.random.default_rng(1)
    found = []
    for _ in range(30):
        X = rng.standard_normal((300, 3)) if shape == "gaussian" else rng.random((300, 2))
        found.append(getattr(ld, name)(n_clusters="auto", random_state=0).fit(X).n_clusters_)
    assert sum(k == 1 for k in found) >= 28, found


@pytest.mark.parametrize("name", ["MDHClustering", "NCutClustering"])
def test_small_touching_clusters_are_found(name):
    """Four 3-D Gaussians 4.5 sd apart, 100 rows each: the held-out test saw 50 rows a node and found one."""
    rng = np.random.default_rng(2)
    centres = 4.5 * np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    y = np.repeat(np.arange(4), 100)
    X = centres[y] + rng.standard_normal((400, 3))
    model = getattr(ld, name)(n_clusters="auto", random_state=0).fit(X)
    assert model.n_clusters_ == 4 and adjusted_rand_score(y, model.labels_) > 0.85
    root = model.tree_.root.stats
    assert root["n_test"] == 400 and root["p_value"] < 0.01 and root["d_eff"] > 0


def test_a_node_dequantizes_the_columns_the_root_records_on_a_grid():
    """In a node where two integer columns spread less than one step, the root's grid still reads them as a
    histogram of one step: their lattice is no evidence of two clusters; with the node's own grid (None) the
    lattice along a direction mixing them reads as multimodal."""
    rng = np.random.default_rng(5)
    root = np.round(rng.normal(3.0, 2.5, size=(4000, 3))).clip(1, 10)
    node = InMemoryData(root[(root[:, 0] <= 2) & (root[:, 1] <= 3)])
    test = SplitTest(0.01, 0).with_grid(InMemoryData(root))
    assert test.grid == (1.0, 1.0, 1.0)
    along = [np.array([1.0, 0.5, 0.0]) / np.sqrt(1.25)]
    assert significance.tests_on_rows("mdh", node, along, test)[0]["p_value"] > 0.05
    assert significance.tests_on_rows("mdh", node, along, SplitTest(0.01, 0))[0]["p_value"] < 0.01


def test_ordinal_breastcancer_gives_its_two_classes():
    X, y = load_dataset("breastcancer")
    model = ld.MDHClustering(n_clusters="auto", random_state=0).fit(X)
    assert model.n_clusters_ == 2 and adjusted_rand_score(y, model.labels_) > 0.8


def test_the_summary_keeps_a_uniform_sample_of_its_rows():
    rng = np.random.default_rng(3)
    X = np.repeat(np.arange(16.0), 5000)[:, None] + rng.standard_normal((80_000, 2)) * 0.01
    model = ld.MDHClustering(n_clusters=2, mode="summary").fit(da.from_array(X, chunks=5000))
    sample = model.summary_.sample
    assert sample.shape == (min(80_000, SAMPLE_ROWS), 2)
    assert np.all(np.isin(np.round(sample[:, 0]), np.arange(16)))  # rows of X
    counts = np.bincount(np.round(sample[:, 0]).astype(int), minlength=16)
    assert counts.min() > 0.8 * counts.mean()  # every chunk in its share
    back = ClusterSummary.from_bytes(model.summary_.to_bytes())
    np.testing.assert_array_equal(back.sample, sample)


def _summary(rows: np.ndarray, keys: np.ndarray) -> ClusterSummary:
    return ClusterSummary(rows[:1], np.ones(1), np.zeros(1), len(rows), 0, rows, keys)


def test_merged_samples_keep_the_smallest_keys_and_decay_raises_old_keys():
    rng = np.random.default_rng(4)
    a, b = rng.random((SAMPLE_ROWS, 2)), rng.random((SAMPLE_ROWS, 2)) + 10
    ka, kb = rng.standard_exponential(SAMPLE_ROWS), rng.standard_exponential(SAMPLE_ROWS)
    merged = _summary(a, ka).merged(_summary(b, kb))
    keys = np.concatenate([ka, kb])
    assert np.array_equal(np.sort(merged.sample_keys), np.sort(keys)[:SAMPLE_ROWS])
    assert 0.45 < np.mean(merged.sample[:, 0] > 5) < 0.55  # half of each
    decayed = _summary(a, ka).merged(_summary(b, kb), decay=0.5)
    assert 0.6 < np.mean(decayed.sample[:, 0] > 5) < 0.73  # new rows weigh twice the old: 2/3 of the sample
    old = ClusterSummary(a[:3], np.ones(3), np.zeros(3), 3)  # a summary of an older version: no sample
    assert old.sample.shape == (0, 2) and old.data().sample is None


def test_a_sample_that_holds_every_row_weighs_decayed_rows_by_their_weight():
    """Two summaries of 100 rows each fit in one sample: with decay 0.5 the old rows are kept at half the weight of
    the new ones (not as a uniform sample of equals), and the weights survive the summary's bytes."""
    rng = np.random.default_rng(6)
    a, b = rng.random((100, 2)), rng.random((100, 2)) + 10
    merged = _summary(a, rng.standard_exponential(100)).merged(_summary(b, rng.standard_exponential(100)), decay=0.5)
    assert len(merged.sample) == 200
    weights = merged.sample_row_weights()
    new = merged.sample[:, 0] > 5
    np.testing.assert_allclose(weights[new], 4 / 3)
    np.testing.assert_allclose(weights[~new], 2 / 3)
    back = ClusterSummary.from_bytes(merged.to_bytes())
    np.testing.assert_array_equal(back.sample_row_weights(), weights)
    np.testing.assert_array_equal(_summary(a, rng.standard_exponential(100)).sample_row_weights(), 1.0)


def test_rows_summarised_again_join_their_sample_row():
    """A night that repeats an earlier one: its rows join the equal rows of the sample (weights summed, the smaller
    key) instead of doubling them, so a test on the sample counts each row once."""
    rng = np.random.default_rng(7)
    rows = rng.random((500, 3))
    first, again = _summary(rows, rng.standard_exponential(500)), _summary(rows, rng.standard_exponential(500))
    merged = first.merged(again)
    assert len(merged.sample) == 500
    np.testing.assert_array_equal(merged.sample_weights, 2.0)
    np.testing.assert_array_equal(np.sort(merged.sample_keys), np.sort(np.minimum(first.sample_keys, again.sample_keys)))
    fresh = _summary(rng.random((500, 3)), rng.standard_exponential(500))
    assert len(first.merged(fresh).sample) == 1000


def test_summary_mode_tests_each_split_on_the_sample_rows():
    rng = np.random.default_rng(5)
    X = np.concatenate([rng.standard_normal((3000, 3)) - 6, rng.standard_normal((3000, 3)) + 6])
    model = ld.MDHClustering(n_clusters="auto", mode="summary").fit(da.from_array(X, chunks=1000))
    assert model.fit_mode_ == "summary" and model.n_clusters_ == 2
    root = model.tree_.root.stats
    assert root["n_test"] == len(model.summary_.sample) == 6000 and root["p_value"] < 1e-3


def test_auto_mode_fits_chunked_input_of_memory_size_on_its_rows(monkeypatch):
    X = np.random.default_rng(6).standard_normal((3000, 3))
    model = ld.MDHClustering(n_clusters=2).fit(da.from_array(X, chunks=1000))
    assert model.fit_mode_ == "memory" and "read in" in model.fit_mode_reason_
    np.testing.assert_array_equal(model.labels_.compute(), ld.MDHClustering(n_clusters=2).fit(X).labels_)
    monkeypatch.setattr(ld.MDHClustering, "_auto_summary_rows", 2000)
    assert ld.MDHClustering(n_clusters=2).fit(da.from_array(X, chunks=1000)).fit_mode_ == "summary"
    assert ld.MDHClustering(n_clusters=2).fit(X).fit_mode_ == "summary"


def test_auto_mode_fits_chunked_input_over_the_read_budget_in_summary_mode_not_by_passes(monkeypatch):
    """Issue 52: past the values a fit takes in memory, auto takes summary mode (two passes), never exact mode's
    passes per evaluation; exact mode is taken when asked. Arrays follow the same rule."""
    from lowdens_dask.estimators import _params

    X = np.random.default_rng(7).standard_normal((3000, 4))
    assert ld.MDHClustering(n_clusters=2).fit(X).fit_mode_reason_ == "3,000 x 4 values, at most 5,000,000: in memory"
    monkeypatch.setattr(_params, "AUTO_MEMORY_VALUES", 3000 * 4 - 1)
    model = ld.MDHClustering(n_clusters=2).fit(da.from_array(X, chunks=1000))
    assert model.fit_mode_ == "summary" and "more than" in model.fit_mode_reason_
    asked = ld.MDHClustering(n_clusters=2, mode="exact").fit(da.from_array(X, chunks=1000))
    assert asked.fit_mode_ == "exact" and asked.fit_mode_reason_ == "mode='exact' was asked"
    assert ld.MDHClustering(n_clusters=2).fit(X).fit_mode_ == "summary"
    # weights change no choice: summary mode takes them (issue 53, item 10)
    assert ld.MDHClustering(n_clusters=2).fit(X, sample_weight=np.ones(3000)).fit_mode_ == "summary"
