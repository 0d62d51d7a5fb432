"""SVM-relabel clustering (Winters-Hilt & Merat; spec shared/research/seed-svm.md) and support vector clustering
(Ben-Hur et al. 2001): the kernel-SSE validator and its random-labelling null, the relabelling fixed point, the
collapse guard, annealing on raw Iris, the tree (recursive splits, routing, JSON, Dask input), bad input."""

import warnings

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.datasets import load_iris, make_circles
from sklearn.metrics import adjusted_rand_score
from sklearn.svm import SVC
from tolerances import EPS, SAFETY

from lowdens_dask import (
    METHODS,
    ClusterTree,
    SupportVectorClustering,
    SVMRelabelClustering,
)
from lowdens_dask.pursuit.svm_relabel import (
    SVMRelabeler,
    kernel_sse,
    null_p_value,
    null_threshold,
    random_label_null,
    random_labels,
    rbf_gamma,
    rbf_kernel,
    svm_relabel_split,
)
from lowdens_dask.tree.rules import KernelExpansionRule

#: Fewer annealing steps where the data are easy (the default is 40, spec §9).
QUICK = {"n_anneal_steps": 6, "n_null": 200}


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, (y == 0).astype(int)


def blobs(n_per=40, seed=0, centres=((0.0, 0.0), (8.0, 0.0), (0.0, 8.0))):
    rng = np.random.default_rng(seed)
    X = np.vstack([np.asarray(c) + rng.normal(size=(n_per, len(c))) for c in centres])
    return X, np.repeat(np.arange(len(centres)), n_per)


def double_sum_sse(K, labels, w):
    """J = sum_c [sum_(x in c) w_x K_xx - (1/W_c) sum_(x, x' in c) w_x w_x' K_xx'] by explicit loops (§5.2)."""
    total = 0.0
    for c in set(labels.tolist()):
        members = [i for i in range(len(labels)) if labels[i] == c]
        Wc = sum(w[i] for i in members)
        total += sum(w[i] * K[i, i] for i in members)
        total -= sum(w[i] * w[j] * K[i, j] for i in members for j in members) / Wc
    return total


# ------------------------------------------------------------------------------------------ validators


def sse_atol(K, w):
    """Tolerance of a kernel SSE, sum_i w_i K_ii - sum_c (1 / W_c) sum_(i, j in c) w_i w_j K_ij, summed in another
    order: its n^2 terms are at most twice sum_i w_i K_ii in all, and the two parts cancel (tests/tolerances.py)."""
    return SAFETY * K.size * EPS * 2 * float(np.sum(w * np.abs(np.diag(K))))


def test_kernel_sse_equals_the_double_sum_and_the_input_space_sse():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    labels = rng.integers(0, 3, size=30)
    w = rng.uniform(0.5, 2.0, size=30)
    K = rbf_kernel(X, 0.3)
    np.testing.assert_allclose(K, np.exp(-0.3 * ((X[:, None] - X[None]) ** 2).sum(-1)), rtol=1e-12)
    # sum_i w_i K_ii less the clusters' double sums: their terms cancel, so within the rounding of all of them
    assert kernel_sse(K, labels, w) == pytest.approx(double_sum_sse(K, labels, w), rel=1e-12, abs=sse_atol(K, w))
    ones = np.ones(30)
    assert kernel_sse(K, labels) == pytest.approx(double_sum_sse(K, labels, ones), rel=1e-12, abs=sse_atol(K, ones))
    # the linear kernel gives the input-space SSE, sum_c sum_(x in c) |x - m_c|^2
    direct = sum(((X[labels == c] - X[labels == c].mean(0)) ** 2).sum() for c in range(3))
    assert kernel_sse(X @ X.T, labels) == pytest.approx(direct, rel=1e-10)


def test_null_threshold_is_a_quantile_of_random_labellings():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(25, 2))
    w = rng.uniform(0.5, 2.0, size=25)
    K = rbf_kernel(X, rbf_gamma(X, w))
    null = random_label_null(K, w, 300, np.random.default_rng(7))
    B = random_labels(25, 300, np.random.default_rng(7))  # the same fair-coin labellings
    direct = np.array([double_sum_sse(K, b.astype(int), w) for b in B])
    np.testing.assert_allclose(null, direct, rtol=1e-10, atol=sse_atol(K, w))
    assert null_threshold(null, 0.05) == pytest.approx(np.quantile(direct, 0.05), rel=1e-12, abs=sse_atol(K, w))
    assert null_p_value(null, direct.min() - 1) == pytest.approx(1 / 301)
    assert null_p_value(null, np.inf) == 1.0


# ------------------------------------------------------------------------------------------ the relabeller


def test_relabelling_ends_in_a_fixed_point_of_the_svm(iris):
    X, _ = iris
    X = np.unique(X, axis=0)
    K = rbf_kernel(X, rbf_gamma(X))
    relabeler = SVMRelabeler(K, C=1.5, min_weight=0.05 * len(X))
    result = relabeler.relabel(relabeler.labels(np.random.default_rng(1)))
    assert result.converged and result.valid
    again = SVC(kernel="precomputed", C=1.5).fit(K, result.labels)
    np.testing.assert_array_equal(np.where(again.decision_function(K) >= 0, 1, -1), result.labels)
    assert result.sse == pytest.approx(kernel_sse(K, result.labels), rel=1e-12, abs=sse_atol(K, np.ones(len(K))))


def test_collapse_guard(iris):
    """Unguarded runs end in one class (or a handful of points) from some random labellings; with the guard such
    end states are invalid (never kept), valid ones keep the minimum weight, and a split is still found."""
    X, _ = iris
    X = np.unique(X, axis=0)
    K = rbf_kernel(X, rbf_gamma(X))
    n = len(X)
    collapsed = 0
    for seed in range(8):
        free = SVMRelabeler(K, min_weight=0.0)
        ended = free.relabel(free.labels(np.random.default_rng(seed)))
        collapsed += ended.valid is False or min((ended.labels > 0).sum(), (ended.labels < 0).sum()) < 0.05 * n
        guarded = SVMRelabeler(K, min_weight=0.05 * n)
        result = guarded.relabel(guarded.labels(np.random.default_rng(seed)))
        if result.valid:
            assert min((result.labels > 0).sum(), (result.labels < 0).sum()) >= 0.05 * n
        else:
            assert result.sse == np.inf
    assert collapsed >= 1  # measured: seeds 0, 4 and 6 end in one class
    split = svm_relabel_split(X, annealing=False, random_state=0, n_null=100)  # seed 0's first run collapses
    assert split is not None and min((split.labels > 0).sum(), (split.labels < 0).sum()) >= 0.05 * n


def test_no_labelling_above_the_minimum_weight_leaves_one_cluster():
    with pytest.warns(UserWarning, match="Only 1 clusters"):
        model = SVMRelabelClustering(random_state=0).fit([[0.0], [1.0]], sample_weight=[1.0, 100.0])
    assert model.n_clusters_ == 1 and model.tree_.n_leaves == 1
    np.testing.assert_array_equal(model.labels_, [0, 0])


def test_one_tight_cluster_with_outliers_is_not_split_off_below_the_minimum():
    """97 points in a tight cluster (no SVM at this width can halve it) and 3 outliers (3%): below the guard's 5%
    no split is made (one cluster, a warning); at 2% the outliers are split off."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(scale=0.05, size=(97, 2)), [[20.0, 20.0], [21.0, 20.0], [20.0, 21.0]]])
    with pytest.warns(UserWarning, match="min_cluster_fraction=0.05"):
        model = SVMRelabelClustering(random_state=0, **QUICK).fit(X)
    assert model.n_clusters_ == 1
    model = SVMRelabelClustering(random_state=0, min_cluster_fraction=0.02, **QUICK).fit(X)
    np.testing.assert_array_equal(
        model.labels_, model.labels_[-1] * (np.arange(100) >= 97) + model.labels_[0] * (np.arange(100) < 97)
    )
    assert model.n_clusters_ == 2


def test_restarts_keep_the_lowest_sse():
    X, _ = blobs(n_per=15)
    split = svm_relabel_split(X, annealing=False, n_restarts=5, random_state=0, n_null=100)
    finite = [s for s in split.sse_trace if np.isfinite(s)]
    assert len(split.sse_trace) >= 5 and split.sse == pytest.approx(min(finite))


# ------------------------------------------------------------------------------------------ Iris


@pytest.mark.parametrize("seed", [0, 1])
def test_default_estimator_separates_setosa_on_raw_iris(iris, seed):
    """Defaults (annealing with variable perturbation, gamma "auto"): setosa versus the rest (spec §9)."""
    X, setosa = iris
    model = SVMRelabelClustering(random_state=seed).fit(X)
    assert adjusted_rand_score(setosa, model.labels_) == 1.0
    np.testing.assert_array_equal(model.tree_.predict(X), model.labels_)
    stats = model.tree_.root.stats
    assert stats["sse"] < stats["sse_null_threshold"] < stats["sse_null_mean"]
    assert stats["converged"] == 1.0 and isinstance(model.tree_.root.rule, KernelExpansionRule)


def test_annealing_with_the_spec_settings_separates_setosa(iris):
    """sigma = 2 (gamma = 1/8), C = 1.5, rho = 0.15 (spec §9.3: 5 of 5 runs)."""
    X, setosa = iris
    split = svm_relabel_split(X, gamma=0.125, random_state=3, n_null=200)
    assert adjusted_rand_score(setosa, split.side(X)) == 1.0
    assert split.sse == pytest.approx(28.37, abs=0.01)  # the true split's SSE (149 distinct rows)


# ------------------------------------------------------------------------------------------ the tree


def test_three_clusters_by_recursive_splits_route_and_round_trip():
    X, y = blobs()
    model = SVMRelabelClustering(n_clusters=3, random_state=0, **QUICK).fit(X)
    assert model.n_clusters_ == 3 and adjusted_rand_score(y, model.labels_) == 1.0
    np.testing.assert_array_equal(model.tree_.predict(X), model.labels_)
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    restored = ClusterTree.from_json(model.tree_.to_json())
    np.testing.assert_array_equal(restored.predict(X), model.labels_)
    new = np.array([[0.2, 0.1], [7.5, 0.3], [0.1, 8.4]])
    assert len(set(model.predict(new))) == 3
    for node in model.tree_:
        if not node.is_leaf:
            assert node.method == "svm-relabel" and all(isinstance(v, float) for v in node.stats.values())
    assert METHODS["svm-relabel"].clustering is SVMRelabelClustering


def test_standardized_fit_routes_in_the_original_coordinates():
    """A gap along a feature of small scale: found after z-scoring (routing by the rule's per-feature scale), not
    before (the kernel width follows the large feature)."""
    X, y = blobs(centres=((0.0, 0.0), (8.0, 0.0)))
    X[:, 1] *= 1000
    model = SVMRelabelClustering(standardize=True, random_state=0, **QUICK).fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    np.testing.assert_array_equal(model.tree_.predict(X), model.labels_)
    assert model.tree_.root.rule.scale is not None
    raw = SVMRelabelClustering(random_state=0, **QUICK).fit(X)
    assert adjusted_rand_score(y, raw.labels_) < 0.5


def test_weights_equal_repeated_rows_and_row_order_does_not_matter():
    X, _ = blobs(n_per=12)
    w = np.random.default_rng(0).integers(0, 3, size=len(X)).astype(float)
    weighted = SVMRelabelClustering(random_state=0, **QUICK).fit(X, sample_weight=w)
    repeated = SVMRelabelClustering(random_state=0, **QUICK).fit(np.repeat(X, w.astype(int), axis=0))
    np.testing.assert_array_equal(repeated.labels_, np.repeat(weighted.labels_, w.astype(int)))
    order = np.random.default_rng(1).permutation(len(X))
    permuted = SVMRelabelClustering(random_state=0, **QUICK).fit(X[order], sample_weight=w[order])
    np.testing.assert_array_equal(permuted.labels_, weighted.labels_[order])


def test_dask_input_is_fitted_in_summary_mode():
    X, y = blobs(n_per=300, centres=((0.0, 0.0), (8.0, 0.0)))
    with dask.config.set(scheduler="threads"):
        model = SVMRelabelClustering(random_state=0, **QUICK).fit(da.from_array(X, chunks=(200, 2)))
        labels = model.labels_.compute()
    assert isinstance(model.labels_, da.Array) and model.n_microclusters_ < len(X)
    assert adjusted_rand_score(y, labels) == 1.0
    np.testing.assert_array_equal(model.predict(X), labels)


# ------------------------------------------------------------------------------------------ SVM-internal


def test_support_vector_clustering_separates_blobs_and_rings():
    X, y = blobs(n_per=50, centres=((0.0, 0.0), (10.0, 0.0)))
    model = SupportVectorClustering().fit(X)
    assert model.n_clusters_ == 2 and adjusted_rand_score(y, model.labels_) == 1.0
    Xc, yc = make_circles(n_samples=200, factor=0.3, noise=0.05, random_state=0)
    rings = SupportVectorClustering().fit(Xc)
    assert rings.n_clusters_ == 2 and adjusted_rand_score(yc, rings.labels_) == 1.0
    assert SupportVectorClustering(gamma_factor=1.0).fit(Xc).n_clusters_ == 1  # too wide a kernel: one sphere
    knn = SupportVectorClustering(n_neighbors=10).fit(Xc)
    np.testing.assert_array_equal(knn.labels_, rings.labels_)
    labelled = SupportVectorClustering(bsv_fraction=0.1, outliers="label").fit(Xc)
    assert np.any(labelled.labels_ == -1)
    np.testing.assert_array_equal(labelled.labels_ == -1, ~labelled.inside_)


# ------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "params, message",
    [
        ({"C": -1}, "SVMRelabelClustering: C must be a positive number"),
        ({"gamma": "wide"}, "SVMRelabelClustering: gamma must be 'auto', 'median' or a positive number"),
        ({"gamma": 0.0}, "SVMRelabelClustering: gamma must be 'auto', 'median' or a positive number"),
        ({"n_clusters": 0}, "SVMRelabelClustering: n_clusters must be a positive integer"),
        ({"min_cluster_fraction": 0.5}, "SVMRelabelClustering: min_cluster_fraction must be"),
        ({"relabel_fraction": 0.0}, "SVMRelabelClustering: relabel_fraction must be"),
        ({"beta": 1.5}, "SVMRelabelClustering: beta must be"),
        ({"perturbation": "random"}, "SVMRelabelClustering: perturbation must be 'variable' or 'constant'"),
        ({"schedule": "linear"}, "SVMRelabelClustering: schedule must be 'geometric' or 'paper_literal'"),
        ({"annealing": "yes"}, "SVMRelabelClustering: annealing must be True or False"),
        ({"max_points": 1}, "SVMRelabelClustering: max_points must be an integer >= 2"),
        ({"mode": "exact"}, "SVMRelabelClustering: mode must be 'auto' or 'summary'"),
    ],
)
def test_bad_parameters_are_refused(params, message):
    X, _ = blobs(n_per=5)
    with pytest.raises(ValueError, match=message):
        SVMRelabelClustering(**params).fit(X)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"bsv_fraction": 2.0}, "SupportVectorClustering: bsv_fraction must be"),
        ({"outliers": "drop"}, "SupportVectorClustering: outliers must be"),
        ({"n_segment_points": 1}, "SupportVectorClustering: n_segment_points must be an integer >= 2"),
        ({"gamma": -1.0}, "SupportVectorClustering: gamma must be"),
    ],
)
def test_bad_comparator_parameters_are_refused(params, message):
    X, _ = blobs(n_per=5)
    with pytest.raises(ValueError, match=message):
        SupportVectorClustering(**params).fit(X)


@pytest.mark.parametrize("Estimator", [SVMRelabelClustering, SupportVectorClustering])
def test_bad_data_are_refused(Estimator):
    with pytest.raises(ValueError, match="NaN|infinity"):
        Estimator().fit([[0.0, 1.0], [np.nan, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="minimum of 2"):
        Estimator().fit([[0.0, 1.0]])
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        Estimator().fit([[0.0], [1.0], [2.0]], sample_weight=[1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(ValueError, match="constant"):
            Estimator().fit([[1.0, 2.0], [1.0, 2.0]])


def test_predict_refuses_the_wrong_number_of_features():
    X, _ = blobs(n_per=8)
    model = SVMRelabelClustering(random_state=0, **QUICK).fit(X)
    with pytest.raises(ValueError, match="features"):
        model.predict(np.zeros((3, 5)))


def two_groups(n=150, d=13, gap=4.0, seed=0):
    """Two Gaussian groups ``gap`` apart along every axis."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(size=(n // 2, d)), rng.normal(size=(n - n // 2, d)) + gap])


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_svm_relabel_subnormal_weights_are_refused_by_name():
    """Issue 22, point 11: Legal but subnormal weights (most 5e-324) made NaN inside the SVM-relabel fit, reported as scikit-learn's
    "Input X contains NaN". Positive weights must lie within a factor 1e150 of each other: the error says so."""
    X = two_groups(n=60, d=3)
    w = np.full(60, 5e-324)
    w[:10] = 1.0
    with pytest.raises(ValueError, match=r"sample_weight: 50 positive weight\(s\) are below 1e-150 times"):
        SVMRelabelClustering(random_state=0, n_anneal_steps=3, n_null=50).fit(X, sample_weight=w)
    w[10:] = 0.0  # zero weights are legal: those rows carry nothing but are labelled
    model = SVMRelabelClustering(random_state=0, n_anneal_steps=3, n_null=50).fit(X, sample_weight=w)
    assert model.labels_.shape == (60,)
