"""MDH estimator: API conventions, weights, standardisation, reproducibility, bad input."""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_wine
from tolerances import argmin_atol, sum_rtol

from lowdens_dask import MDH
from lowdens_dask.metrics import binary_v_measure, success_ratio


def two_blobs(seed=0, n=300, d=4, gap=4.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[: n // 2, 0] += gap
    y = np.r_[np.ones(n // 2), np.zeros(n - n // 2)].astype(int)
    return X, y


def zscore(X):
    X = X[:, np.ptp(X, axis=0) > 0]
    return (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)


def test_separates_two_blobs_and_predict_conventions():
    X, y = two_blobs()
    model = MDH().fit(X)
    assert abs(model.v_[0]) > 0.95
    assert model.relative_depth_ > 0
    oracle = (X[:, 0] > 2.0).astype(int)  # the Bayes rule for these two blobs
    assert binary_v_measure(y, model.labels_) >= binary_v_measure(y, oracle) - 0.02
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    np.testing.assert_array_equal(model.fit_predict(X), model.labels_)
    dec = model.decision_function(X)
    np.testing.assert_array_equal(dec, X @ model.v_ - model.b_)
    np.testing.assert_array_equal(model.labels_, (dec >= 0).astype(int))  # label 1 is v.x >= b
    assert np.linalg.norm(model.v_) == pytest.approx(1.0)
    assert model.n_features_in_ == 4
    assert model.bandwidth_ > 0 and 0 < model.alpha_ <= 0.9 and model.fval_ > 0


def test_wine_reproduces_paper_table2_entry():
    """Paper Table 2: MDP² on wine (z-scored) has SR 0.77 and V-m 0.61."""
    X, y = load_wine(return_X_y=True)
    labels = MDH().fit(zscore(X)).labels_
    assert success_ratio(y, labels) == pytest.approx(0.77, abs=0.02)
    assert binary_v_measure(y, labels) == pytest.approx(0.61, abs=0.02)


def test_fit_is_deterministic_and_clone_refits_identically():
    X, _ = two_blobs(1)
    a = MDH().fit(X)
    b = clone(a).fit(X)
    np.testing.assert_array_equal(a.v_, b.v_)
    assert a.b_ == b.b_


def test_integer_weights_equal_repeated_rows():
    """Frequency semantics: weight k is the same as k copies of the row (KDE, moments and PCs)."""
    rng = np.random.default_rng(2)
    X, _ = two_blobs(2, n=120)
    counts = rng.integers(1, 4, size=len(X))
    weighted = MDH().fit(X, sample_weight=counts.astype(float))
    repeated = MDH().fit(np.repeat(X, counts, axis=0))
    # different orders of summation, and a pursuit stopped at a relative change of ftol: the direction agrees to
    # about sqrt(ftol), b to |x| times that (tests/tolerances.py); the labels are the same
    radius = np.linalg.norm(X, axis=1).max()
    np.testing.assert_allclose(weighted.v_, repeated.v_, atol=argmin_atol(weighted.tol))
    assert weighted.b_ == pytest.approx(repeated.b_, abs=argmin_atol(weighted.tol) * radius)
    np.testing.assert_array_equal(weighted.predict(X), repeated.predict(X))
    # Silverman's rule on the first principal component's variance: weighted sums of squares against sums over
    # repeated rows (n eps each), through the top eigenvalue of a d x d covariance (d such errors at most)
    assert weighted.bandwidth_ == pytest.approx(repeated.bandwidth_, rel=X.shape[1] * sum_rtol(np.ones(counts.sum())))


def test_zero_weights_ignore_rows():
    X, _ = two_blobs(3, n=200)
    outliers = np.full((5, X.shape[1]), 50.0)
    w = np.r_[np.ones(len(X)), np.zeros(5)]
    with_zero = MDH().fit(np.vstack([X, outliers]), sample_weight=w)
    plain = MDH().fit(X)
    # the zero-weight rows add only zeros, but the sums' blocking (and so their rounding) changes with the rows
    np.testing.assert_allclose(with_zero.v_, plain.v_, atol=argmin_atol(plain.tol))


def test_standardize_reports_hyperplane_in_original_coordinates():
    X, y = two_blobs(4, gap=6.0)
    X = X * np.array([100.0, 0.01, 5.0, 1.0]) + 7.0
    model = MDH(standardize=True).fit(X)
    Z = (X - X.mean(0)) / X.std(0, ddof=1)
    manual = MDH().fit(Z)
    # z-scored by the frame and by numpy (other roundings), then pursued to ftol: the normals agree to an angle of
    # about sqrt(ftol), so the decision functions correlate to 1 - angle^2 / 2 (tests/tolerances.py)
    corr = np.corrcoef(model.decision_function(X), manual.decision_function(Z))[0, 1]
    assert abs(corr) > 1 - argmin_atol(model.tol) ** 2 * X.shape[1]
    agree = np.mean(model.labels_ == manual.labels_)
    assert agree == 1.0 or agree == 0.0
    np.testing.assert_array_equal(model.predict(X), model.labels_)


def test_user_directions_and_callable_bandwidth():
    X, _ = two_blobs(5)
    model = MDH(v0=np.eye(4)[:, [1, 0]], bandwidth=lambda Z: 0.5).fit(X)
    assert model.bandwidth_ == 0.5
    assert abs(model.v_[0]) > 0.95


def test_dataframe_feature_names():
    pd = pytest.importorskip("pandas")
    X, _ = two_blobs(6)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = MDH().fit(df)
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(model.predict(df), model.labels_)


def test_no_density_minimum_warns_and_reports_zero_depth():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3)) * np.array([3.0, 1.0, 1.0])  # one Gaussian: no low-density separation
    with pytest.warns(UserWarning, match="relative depth 0"):
        model = MDH().fit(X)
    assert model.relative_depth_ == 0.0


# ------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize("bad,match", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_non_finite_values_are_refused(bad, match):
    X, _ = two_blobs()
    X[3, 1] = bad
    with pytest.raises(ValueError, match=match):
        MDH().fit(X)


def test_fewer_than_two_rows_is_refused():
    with pytest.raises(ValueError, match="minimum of 2"):
        MDH().fit(np.ones((1, 3)))


def test_wrong_feature_count_at_predict():
    X, _ = two_blobs()
    model = MDH().fit(X)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])


def test_one_column_finds_the_gap():
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(-3, 1, 200), rng.normal(3, 1, 200)][:, None]
    model = MDH().fit(x)
    assert model.v_.shape == (1,) and abs(model.v_[0]) == 1.0
    assert abs(model.b_ * model.v_[0]) < 1.0
    assert sorted(np.bincount(model.labels_)) == pytest.approx([200, 200], abs=5)


def test_constant_columns_warn_and_do_not_change_the_split():
    X, _ = two_blobs(7)
    Xc = np.column_stack([X, np.full(len(X), 3.0)])
    with pytest.warns(UserWarning, match="constant column"):
        model = MDH().fit(Xc)
    # a 5-column eigenproblem against a 4-column one rounds differently, and the pursuit stops at ftol
    np.testing.assert_allclose(model.v_[:-1], MDH().fit(X).v_, atol=argmin_atol(model.tol))
    assert abs(model.v_[-1]) < 1e-9  # by construction: the column's scale in the frame is 1e300


def test_all_constant_is_refused():
    with pytest.raises(ValueError, match="Every feature of X is constant"):
        MDH().fit(np.ones((10, 3)))


def test_duplicate_rows_are_fine():
    X, y = two_blobs(8, n=100)
    once = MDH().fit(X)
    model = MDH().fit(np.vstack([X, X, X]))
    assert model.relative_depth_ > 0  # tripled rows only shrink h (by 3^(-1/5)); the split is as good
    assert binary_v_measure(np.r_[y, y, y], model.labels_) == pytest.approx(binary_v_measure(y, once.labels_), abs=0.05)


@pytest.mark.parametrize(
    "params,match",
    [
        ({"alphas": [0.5, 0.1]}, "non-decreasing"),
        ({"alphas": [-1]}, "alphas must be None or a non-empty, non-decreasing sequence"),
        ({"eta": 0}, "eta"),
        ({"penalty_exponent": 1.5}, "penalty_exponent"),
        ({"max_iter": 0}, "max_iter"),
        ({"bandwidth": -1.0}, "bandwidth"),
        ({"min_size": 0}, "min_size"),
        ({"v0": np.zeros(4)}, "non-zero"),
        ({"v0": np.ones(3)}, "shape"),
    ],
)
def test_bad_parameters(params, match):
    X, _ = two_blobs()
    with pytest.raises(ValueError, match=match):
        MDH(**params).fit(X)


@pytest.mark.parametrize(
    "weights,match",
    [(-np.ones(300), "non-negative"), (np.ones(5), "shape"), (np.full(300, np.nan), "NaN"), (np.zeros(300), "All sample weights are zero"), (np.full(300, 0.001), "exceed 1")],
)
def test_bad_sample_weight(weights, match):
    X, _ = two_blobs()
    with pytest.raises(ValueError, match=match):
        MDH().fit(X, sample_weight=weights)


def test_input_is_not_modified():
    X, _ = two_blobs()
    X0 = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MDH(standardize=True).fit(X)
    np.testing.assert_array_equal(X, X0)
    assert not math.isnan(X.sum())


@pytest.mark.parametrize(
    "name,paper_sr,paper_vm",
    [("breastcancer", 0.91, 0.79), ("optidigits", 0.93, 0.85), ("imageseg", 0.89, 0.72), ("satellite", 0.89, 0.75)],
)
def test_table2_regression(name, paper_sr, paper_vm):
    """Paper Table 2 (MDP², z-scored data): each within 0.05 (full table: benchmarks/table2.py)."""
    from lowdens_dask.datasets import load_dataset

    X, y = load_dataset(name)
    labels = MDH().fit(zscore(X)).labels_
    assert success_ratio(y, labels) >= paper_sr - 0.05
    assert binary_v_measure(y, labels) >= paper_vm - 0.05


def test_eta_larger_than_bandwidth_warns():
    """eta is absolute (paper: 0.01); on data of tiny scale it dwarfs h and the user is told."""
    X, _ = two_blobs(9)
    with pytest.warns(UserWarning, match="exceeds the bandwidth"):
        MDH().fit(X * 1e-6)
    model = MDH(standardize=True).fit(X * 1e-6)  # the remedy
    assert model.relative_depth_ > 0
