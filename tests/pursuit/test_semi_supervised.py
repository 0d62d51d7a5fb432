"""Semi-supervised MDH (f_SSC, eq. 16 of the MDH paper) and MDHClassifier."""

import math
import time

import dask.array as da
import numpy as np
import pytest
from machine import scaled
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading

from lowdens_dask import (
    METHODS,
    MDHClassifier,
)
from lowdens_dask.backend import InMemoryData
from lowdens_dask.datasets import load_dataset
from lowdens_dask.indices.semi_supervised import SemiSupervisedDensityIndex, ssc_stages
from lowdens_dask.pursuit.hyperplanes import _InMemoryObjective


def two_groups(n=400, d=5, gap=5.0, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, d))
    X[:, 1] += gap * y  # the groups differ along axis 1 only; axis 0 has the largest variance
    X[:, 0] *= 3.0
    return X, y


def some_labels(y, per_class, seed=0):
    rng = np.random.default_rng(seed)
    out = np.full(len(y), -1)
    for c in np.unique(y):
        rows = rng.choice(np.flatnonzero(y == c), per_class, replace=False)
        out[rows] = c
    return out


def f_ssc_direct(p, b, h, alpha, gamma, eta, eps, lab, ylab):
    """eq. 16 by direct sums: the Gaussian KDE at b, the alpha-interval penalty (std divisor n - 1) and the
    label penalty."""
    n = p.size
    dens = np.exp(-((b - p) ** 2) / (2 * h * h)).sum() / (n * h * math.sqrt(2 * math.pi))
    mu, sd = p.mean(), p.std(ddof=1)
    L = 1.0 / (math.sqrt(2 * math.pi) * math.exp(0.5) * h * h)
    r = max(0.0, mu - alpha * sd - b, b - mu - alpha * sd)
    label = gamma * np.sum(np.maximum(0.0, -ylab * (p[lab] - b)) ** (1 + eps))
    return dens + L / eta**eps * r ** (1 + eps) + label


def test_stages_follow_the_paper():
    assert ssc_stages((0.1, 0.5, 0.9), (0.1, 1, 10)) == ((0.1, 0.1), (0.5, 0.1), (0.9, 0.1), (0.9, 1.0), (0.9, 10.0))


@pytest.mark.parametrize("case", ["interior", "penalty", "labels-far"])
def test_value_and_split_point_are_the_global_minimum_of_eq16(case):
    """The index's b minimises f_SSC over a fine grid computed by direct sums, and its value is log f_SSC(b)."""
    rng = np.random.default_rng(1)
    p = np.concatenate([rng.normal(-2, 1, 150), rng.normal(2.5, 1, 100)])
    labels = np.zeros(p.size)
    lab = np.array([0, 1, 2, 200, 201])
    labels[lab] = [-1, -1, -1, 1, 1]
    alpha, gamma = {"interior": (0.9, 1.0), "penalty": (0.05, 0.1), "labels-far": (0.9, 10.0)}[case]
    if case == "labels-far":  # a labelled row of class +1 deep inside the left group pulls b leftwards
        labels[5] = 1
        lab = np.append(lab, 5)
    index = SemiSupervisedDensityIndex(0.4, labels)
    split = index.evaluate(p, np.ones(p.size), (alpha, gamma))
    args = (0.4, alpha, gamma, index.eta, index.eps, lab, labels[lab])
    grid = np.linspace(p.min() - 1, p.max() + 1, 20001)
    best = min(f_ssc_direct(p, b, *args) for b in grid)
    at_b = f_ssc_direct(p, split.b, *args)
    assert split.value == pytest.approx(math.log(at_b), rel=1e-9)
    assert at_b <= best * (1 + 1e-7)
    assert split.stats["label_penalty"] >= 0 and split.stats["fval"] > 0


@pytest.mark.parametrize("stage", [(0.9, 0.1), (0.05, 1.0), (0.9, 10.0)])
def test_gradient_matches_central_differences(stage):
    """d log phi_SSC / dv (envelope theorem, b held at its optimum) against central differences with b
    re-optimised; labelled rows on the wrong side make the label term active."""
    rng = np.random.default_rng(2)
    X, y = two_groups(n=300, seed=2)
    labels = np.zeros(len(y))
    wrong = rng.choice(len(y), 12, replace=False)
    labels[wrong] = np.where(y[wrong] == 1, -1.0, 1.0)  # deliberately contradicting the groups
    data = InMemoryData(X)
    vals, vecs = data.leading_eigenvectors(2)
    index = SemiSupervisedDensityIndex.for_node(data, vals, vecs, labels=labels)
    objective = _InMemoryObjective(data, index)
    v = vecs[:, 0] + 0.5 * vecs[:, 1] + 0.2 * rng.normal(size=X.shape[1])
    f0, grad, ev = objective.answer(("evaluate", v, stage, True), 1)
    assert ev.split.stats["label_penalty"] > 0 and np.linalg.norm(grad) > 0
    for _ in range(4):
        e = rng.normal(size=X.shape[1])
        step = 1e-6
        plus = objective.answer(("evaluate", v + step * e, stage, False), 1)[0]
        minus = objective.answer(("evaluate", v - step * e, stage, False), 1)[0]
        assert (plus - minus) / (2 * step) == pytest.approx(grad @ e, rel=1e-4, abs=1e-7)


def test_classifier_separates_the_low_density_gap_from_few_labels():
    """PC1 (axis 0) crosses both groups; two labels per class are enough to find the gap along axis 1, and
    swapping the classes flips every prediction."""
    X, y = two_groups()
    labels = some_labels(y, 2)
    model = MDHClassifier().fit(X, labels)
    assert np.mean(model.transduction_ == y) > 0.97
    assert abs(model.coef_[0, 1]) > 0.9
    np.testing.assert_array_equal(model.predict(X), model.transduction_)
    np.testing.assert_array_equal(model.decision_function(X) > 0, model.predict(X) == 1)
    swapped = np.where(labels == -1, -1, 1 - labels)
    np.testing.assert_array_equal(MDHClassifier().fit(X, swapped).predict(X), 1 - model.predict(X))
    assert model.classes_.tolist() == [0, 1] and model.coef_.shape == (1, X.shape[1])


def test_label_values_and_standardisation():
    """Any integer classes (not only 0/1); standardize=True reports the hyperplane in the original coordinates,
    equal to a fit on z-scored rows."""
    X, y = two_groups(seed=4)
    X = X * [1.0, 50.0, 0.1, 1.0, 7.0] + 3.0
    labels = np.where(some_labels(y, 3, seed=4) == -1, -1, 10 + 5 * y)
    labels = np.where(labels == -1, -1, labels)
    model = MDHClassifier(standardize=True).fit(X, labels)
    Z = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
    ref = MDHClassifier().fit(Z, labels)
    np.testing.assert_array_equal(model.predict(X), ref.predict(Z))
    assert set(np.unique(model.predict(X))) <= {10, 15}
    assert np.mean(model.predict(X) == 10 + 5 * y) > 0.97


def test_integer_weights_equal_repeated_rows():
    """A row of weight k counts as k rows in the density and, when labelled, in the label term."""
    X, y = two_groups(n=200, seed=8)
    labels = some_labels(y, 3, seed=8)
    weights = np.random.default_rng(8).integers(1, 4, size=len(y))
    weighted = MDHClassifier().fit(X, labels, sample_weight=weights)
    repeated = MDHClassifier().fit(np.repeat(X, weights, axis=0), np.repeat(labels, weights))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-2)
    np.testing.assert_array_equal(weighted.predict(X), repeated.predict(X))


def test_multiclass_is_one_versus_rest():
    rng = np.random.default_rng(5)
    centres = np.array([[0, 0], [6, 0], [3, 5]])
    y = np.arange(600) % 3
    X = np.hstack([centres[y] + rng.normal(size=(600, 2)), rng.normal(size=(600, 2))])
    model = MDHClassifier().fit(X, some_labels(y, 3, seed=5))
    assert model.coef_.shape == (3, 4) and model.decision_function(X).shape == (600, 3)
    np.testing.assert_array_equal(model.predict(X), np.argmax(model.decision_function(X), axis=1))
    assert np.mean(model.transduction_ == y) > 0.95


def test_dask_input_fits_on_summaries_and_labelled_rows():
    X, y = two_groups(n=6000, seed=6)
    labels = some_labels(y, 5, seed=6)
    arr = da.from_array(X, chunks=(1000, X.shape[1]))
    model = MDHClassifier(random_state=0).fit(arr, da.from_array(labels, chunks=1000))
    assert isinstance(model.transduction_, da.Array)
    assert model.n_microclusters_ < len(X) / 10
    assert np.mean(model.transduction_.compute() == y) > 0.97
    np.testing.assert_array_equal(model.predict(arr).compute(), model.predict(X))
    with pytest.raises(ValueError, match="mode='exact' is not available"):
        MDHClassifier(mode="exact").fit(arr, labels)


def test_defaults_match_label_spreading_on_breastcancer():
    """The issue's 'defaults that work' check: z-scored breastcancer, 5 labels per class, 20 random splits:
    the median error on the unlabelled rows is no higher than LabelSpreading()'s."""
    X, y = load_dataset("breastcancer")
    X = StandardScaler().fit_transform(X)
    y = (y == np.unique(y)[1]).astype(int)
    ours, theirs = [], []
    for seed in range(20):
        labels = some_labels(y, 5, seed=seed)
        unlabelled = labels == -1
        ours.append(np.mean(MDHClassifier().fit(X, labels).transduction_[unlabelled] != y[unlabelled]))
        theirs.append(np.mean(LabelSpreading().fit(X, labels).transduction_[unlabelled] != y[unlabelled]))
    assert np.median(ours) <= np.median(theirs)
    assert np.median(ours) < 0.06


def test_not_a_clustering_method():
    assert all(method.clustering is not MDHClassifier for method in METHODS.values())


@pytest.mark.parametrize(
    "params, labels, message",
    [
        ({}, None, "requires y"),
        ({}, "one-class", "at least two classes"),
        ({}, "fractional", "Unknown label type"),
        ({}, "short", "y must have shape"),
        ({"alphas": (0.5, 1.5)}, "ok", "alphas must be None or a non-empty, non-decreasing sequence of numbers in"),
        ({"gammas": (0.1, -1)}, "ok", "gammas must be"),
        ({"svm_C": 0}, "ok", "svm_C must be"),
        ({"starts": "pc1"}, "ok", "starts must be"),
        ({"eta": 2}, "ok", "eta must be a number in"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_error(params, labels, message):
    X, y = two_groups(n=60)
    ok = some_labels(y, 2)
    y_bad = {
        None: None,
        "one-class": np.where(ok == 1, -1, ok),
        "fractional": ok + 0.5,
        "short": ok[:-1],
        "ok": ok,
    }[labels]
    with pytest.raises(ValueError, match=message):
        MDHClassifier(**params).fit(X, y_bad)


def one_row_carries_the_total(n, rest):
    """Weights where the first row carries (about) the total and every other row weighs ``rest``."""
    w = np.full(n, rest)
    w[0] = float(n)
    return w


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_mdh_classifier_extreme_weights_and_C_finish():
    """Issue 22, point 6: MDHClassifier(svm_C=1e12) with label weights of 1e-300 ran for more than 300 s in liblinear; such weights
    are now refused at once, and so is an svm_C outside [1e-12, 1e12]. Within the ranges the SVM weighs the
    labelled rows relative to the largest weight, so its per-row costs never all vanish."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(50, 13)), rng.normal(size=(50, 13)) + 4, rng.normal(size=(50, 13)) - 4])
    y = np.where(rng.random(150) < 0.8, -1, np.repeat([0, 1, 2], 50))
    start = time.perf_counter()
    with pytest.raises(ValueError, match="sample_weight: 149 positive weight"):
        MDHClassifier(svm_C=1e12, random_state=0).fit(X, y, sample_weight=one_row_carries_the_total(150, 1e-300))
    for C in (1e-300, 1e300):
        with pytest.raises(ValueError, match=r"svm_C must be a number in \[1e-12, 1e\+12\]"):
            MDHClassifier(svm_C=C).fit(X, y)
    model = MDHClassifier(svm_C=1e12, maxiter=5, random_state=0)
    model.fit(X, y, sample_weight=one_row_carries_the_total(150, 1e-140))
    assert model.transduction_.shape == (150,)
    assert time.perf_counter() - start < scaled(20)
