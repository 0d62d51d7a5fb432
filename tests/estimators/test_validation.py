"""The estimators' checks of their input and parameters (estimators/_validation.py, _params.py, _constraints.py):
documented ranges refused with a ValueError that names the parameter, by check_params and fit alike; NaN and inf
rows, strings and zarr groups handled as documented."""

import dask
import dask.array as da
import numpy as np
import pytest
import zarr

from lowdens_dask import (
    LMSC,
    MDH,
    SCPP,
    DePDDPClustering,
    LMSCClustering,
    MDHClassifier,
    MDHClustering,
    MDHProjection,
    SCPPClustering,
    check_params,
)


def two_groups(n=150, d=13, gap=4.0, seed=0):
    """Two Gaussian groups ``gap`` apart along every axis."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(size=(n // 2, d)), rng.normal(size=(n - n // 2, d)) + gap])


def one_row_carries_the_total(n, rest):
    """Weights where the first row carries (about) the total and every other row weighs ``rest``."""
    w = np.full(n, rest)
    w[0] = float(n)
    return w


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_bandwidth_range():
    """Issue 22, point 15: bandwidth=1e-300 divided by zero and 1e300 asked for a grid of negative size; both are now outside the
    documented range [1e-100, 1e100] (check_params agrees with fit), and the range's ends fit."""
    X, y = two_groups(n=60, d=4), np.r_[0, 1, np.full(58, -1)]
    y[59] = 1
    for h in (1e-300, 1e300):
        for model in (MDH(bandwidth=h), MDHClustering(n_clusters=2, bandwidth=h), MDHProjection(bandwidth=h),
                      DePDDPClustering(n_clusters=2, bandwidth=h), MDHClassifier(bandwidth=h)):  # fmt: skip
            with pytest.raises(ValueError, match=r"bandwidth must be .* number in \[1e-100, 1e\+100\]"):
                check_params(model)
            with pytest.raises(ValueError, match=r"bandwidth must be .* number in \[1e-100, 1e\+100\]"):
                model.fit(X, y) if isinstance(model, MDHClassifier) else model.fit(X)
    for h in (1e-100, 1e100):
        assert MDH(bandwidth=h, maxiter=5).fit(X).labels_.shape == (60,)
        assert MDHClassifier(bandwidth=h, maxiter=5).fit(X, y).transduction_.shape == (60,)
    # Silverman's rule on data of that scale: X's scale is refused first (issue 34, item 13: SCALE_RANGE)
    with pytest.raises(ValueError, match=r"X's columns vary by at most .*e-120 .*Rescale X"):
        MDH().fit(X * 1e-120)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_weights_far_apart():
    """Issue 22, point 15: One row carrying the total and the others at 1e-200 divided by zero (MDH family, SCPP); such weights are
    refused with a message about sample_weight, and weights within the factor 1e150 fit."""
    X = two_groups(n=60, d=4)
    tiny = one_row_carries_the_total(60, 1e-200)
    for model in (MDH(), MDHProjection(), SCPP(), SCPPClustering(n_clusters=3)):
        with pytest.raises(ValueError, match="sample_weight: 59 positive weight"):
            model.fit(X, sample_weight=tiny)
    legal = one_row_carries_the_total(60, 1e-140)
    legal[30] = 60.0  # a row of weight in each group
    for model in (MDHProjection(maxiter=5), SCPPClustering(n_clusters=3, random_state=0), LMSC(random_state=0)):
        model.fit(X, sample_weight=legal)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_scale_multiplier_and_microclusters():
    """Issue 22, point 15: scale_multiplier=1e-300 divided by zero, 1e300 overflowed, n_centres=1 indexed past λ₁: the legal
    ranges ([1e-100, 1e100]; at least 2) exclude them with a ValueError from check_params and fit alike."""
    X = two_groups(n=60, d=4)
    bad = [
        (SCPP(scale_multiplier=1e-300), r"scale_multiplier must be a number in \[1e-100, 1e\+100\]"),
        (LMSC(scale_multiplier=1e300), r"scale_multiplier must be a number in \[1e-100, 1e\+100\]"),
        (SCPPClustering(n_clusters=3, n_centres=1, centres_above=10), "n_centres must be an integer"),
        (LMSCClustering(n_clusters=3, n_centres=1, centres_above=10), "n_centres must be an integer"),
    ]
    for model, message in bad:
        with pytest.raises(ValueError, match=message):
            check_params(model)
        with pytest.raises(ValueError, match=message):
            model.fit(X)
    for model in (
        SCPP(scale_multiplier=1e-100, random_state=0),
        SCPP(scale_multiplier=1e100, maxiter=5, random_state=0),
        SCPPClustering(n_clusters=3, n_centres=2, centres_above=10, random_state=0),
    ):
        assert model.fit(X).labels_.shape == (60,)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("mode", ["summary", "exact"])
def test_mdh_identical_dask_rows(mode):
    """Issue 22, point 15: MDH on Dask rows that are all identical raised KeyError 'alpha'; now the in-memory ValueError."""
    X = np.tile([1.0, 2.0, 3.0], (300, 1))
    with pytest.raises(ValueError, match="Every feature of X is constant"):
        MDH().fit(X)
    with pytest.raises(ValueError, match="Every feature of X is constant"):
        MDH(mode=mode).fit(da.from_array(X, chunks=(100, 3)))


def rows(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[: n // 2, 0] += 6
    return X


@pytest.mark.parametrize("estimator", [MDHClustering(n_clusters=2, nonfinite="skip"), MDH(nonfinite="skip")])
def test_nonfinite_skip_applies_to_in_memory_input(estimator):
    """Issue 13: Rows with NaN or inf are set aside and labelled -1, as for chunked input; the others get the labels of a
    fit without them."""
    X = rows()
    bad = X.copy()
    bad[[3, 10]] = [np.nan, 1.0, 2.0], [np.inf, 0.0, 0.0]
    fitted = estimator.fit(bad)
    reference = type(estimator)(**{**estimator.get_params(), "nonfinite": "raise"}).fit(np.delete(X, [3, 10], axis=0))
    assert fitted.n_nonfinite_ == 2
    assert fitted.labels_[3] == -1 and fitted.labels_[10] == -1
    np.testing.assert_array_equal(np.delete(fitted.labels_, [3, 10]), reference.labels_)
    np.testing.assert_array_equal(fitted.predict(bad), fitted.labels_)
    with pytest.raises(ValueError, match="NaN"):
        type(estimator)(**{**estimator.get_params(), "nonfinite": "raise"}).fit(bad)


def test_alphas_above_one_are_rejected():
    """Issue 13."""
    with pytest.raises(ValueError, match=r"alphas must be None or a non-empty, non-decreasing sequence of numbers in \[0, 1\]"):
        MDH(alphas=(0.5, 1.5)).fit(rows())


def test_numeric_strings_are_not_converted_silently():
    """Issue 13."""
    X = rows().astype(object)
    X[0, 0] = "1.5"
    with pytest.raises(ValueError, match="X contains strings"):
        MDHClustering(n_clusters=2).fit(X)
    model = MDHClustering(n_clusters=2).fit(rows())
    with pytest.raises(ValueError, match="X contains strings"):
        model.predict(X)


def test_a_group_with_several_arrays_asks_for_the_path_the_estimators_take(tmp_path):
    """Issue 13: The error names a path that ``fit`` accepts (``store.zarr/X``), not ``array_name``, which no estimator
    takes; fitting the path it suggests works."""
    group = zarr.open_group(str(tmp_path / "data.zarr"), mode="w")
    group.create_array("X", data=rows(), chunks=(100, 3))
    group.create_array("y", data=np.zeros(300), chunks=(100,))
    with pytest.raises(ValueError, match="several arrays") as error:
        MDHClustering(n_clusters=2).fit(str(tmp_path / "data.zarr"))
    message = str(error.value)
    assert "array_name" not in message
    suggested = message.split("for example ")[1].strip(".'\"")
    with dask.config.set(scheduler="threads"):
        model = MDHClustering(n_clusters=2).fit(suggested)
    assert model.labels_.shape == (300,)
