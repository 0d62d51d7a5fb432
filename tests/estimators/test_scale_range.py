"""Issue 34, item 13: data whose scale under- or overflows the variance.

PDDP on two clusters scaled by 1e-170 found one cluster, with a warning that every column's spread was "within
rounding error" (the variances, about 1e-340, were 0); MDH on data scaled by 1e155 reported a bandwidth of 3e-145
"outside [1e-100, 1e100]" (the variances were inf). Every method computes in X's units, and its squares of squared
distances over- or underflow float64 at such scales, so X's scale is checked once, before any work, against
``SCALE_RANGE``: one ValueError that names the scale and the factor that brings X into range, for every estimator
and every mode. Within the range the answer is that of the data at scale 1, and column statistics are taken of
columns divided by powers of two (exact), so a column of scale 1e-170 beside others is z-scored, not dropped."""

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.metrics import adjusted_rand_score

import lowdens_dask
from lowdens_dask import (
    MCClustering,
    MDHClustering,
    NCutClustering,
    PDDPClustering,
    SCPPClustering,
)
from lowdens_dask.backend.frame import SCALE_RANGE, check_value_range, column_moments, constant_columns

#: Every estimator lowdens_dask exports.
ESTIMATORS = sorted(
    name
    for name in lowdens_dask.__all__
    if isinstance(getattr(lowdens_dask, name), type) and issubclass(getattr(lowdens_dask, name), BaseEstimator)
)
#: The reproducers' scales: variances of 1e-340 (0 in float64) and 1e310 (inf).
EXTREME = [1e-170, 1e155]
REFUSED = r"X's (values reach [0-9.]+e\+1[0-9]{2} \(its largest \|x\|\)|columns vary by at most [0-9.]+e-1[0-9]{2} ).*Rescale X"


def two_clusters(n_per=200, seed=0):
    """The reproducers' data: N(0, 1) and N(10, 1) in 3-D, 200 rows each."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0.0, 1.0, (n_per, 3)), rng.normal(10.0, 1.0, (n_per, 3))])
    return X, np.repeat([0, 1], n_per)


def make(name, **params):
    est = getattr(lowdens_dask, name)()
    given = est.get_params()
    if "n_clusters" in given and name != "MDHClassifier":
        params.setdefault("n_clusters", "auto")
    if "random_state" in given:
        params.setdefault("random_state", 0)
    return est.set_params(**params)


def fit(est, X, y):
    """``est.fit`` on X (and, for the semi-supervised classifier, labels for one row in ten)."""
    if isinstance(est, lowdens_dask.MDHClassifier):
        return est.fit(X, np.where(np.arange(len(y)) % 10 == 0, y, -1))
    return est.fit(X)


def labels(est):
    found = getattr(est, "labels_", None)
    found = getattr(est, "transduction_", None) if found is None else found
    return None if found is None else np.asarray(getattr(found, "compute", lambda: found)())


def same_partition(a, b) -> bool:
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("scale", EXTREME)
@pytest.mark.parametrize("name", ESTIMATORS)
def test_extreme_scale_is_one_error_in_memory(name, scale):
    """Before: PDDP at 1e-170 fitted one cluster with a 'within rounding error' warning, MDH at 1e155 raised about a
    bandwidth of 3e-145, MCProjection at 1e155 'array must not contain infs or NaNs', MSC and the SVMs fitted one
    cluster, MDHClassifier hung at 1e90. Now one ValueError naming X's scale, and no warning before it."""
    X, y = two_clusters()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match=REFUSED):
            fit(make(name), X * scale, y)
    assert [str(w.message) for w in seen] == []


def chunked_modes(name):
    """The ways an estimator fits a Dask array: its modes (exact where it has one on chunks), or one fit."""
    est = getattr(lowdens_dask, name)()
    if name == "SupportVectorClustering":
        return []  # in memory only
    if "mode" not in est.get_params():
        return [None]  # the projections: passes over the chunks
    if name == "MDHClassifier" or not getattr(est, "_exact_on_chunks", True):
        return ["summary"]
    return ["exact", "summary"]


CHUNKED = [(name, mode) for name in ESTIMATORS for mode in chunked_modes(name)]


@pytest.mark.parametrize("scale", EXTREME)
@pytest.mark.parametrize("name, mode", CHUNKED)
def test_extreme_scale_is_one_error_on_chunks(name, mode, scale):
    """Dask input above the small-input size, in exact mode (refused in the first pass, before 'Every feature of X
    is constant' at 1e-170) and in summary mode (refused by the chunk task at 1e155, before the k-means overflows,
    and on the summary at 1e-170, where PDDP fitted one cluster)."""
    X, y = two_clusters(n_per=1000)
    arr = da.from_array(X * scale, chunks=(500, 3))
    est = make(name) if mode is None else make(name, mode=mode)
    if name == "MSCClustering" and mode == "exact":
        est.set_params(n_clusters=2)  # n_clusters="auto" needs the rows in memory or summary mode
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match=REFUSED):
            fit(est, arr, y)
    assert [str(w.message) for w in seen] == []


@pytest.mark.parametrize(
    "name, scale", [("PDDP", 1e-170), ("MDHClustering", 1e155)], ids=["PDDP-1e-170", "MDHClustering-1e155"]
)
@pytest.mark.parametrize("mode", ["memory", "exact", "summary"])
def test_issue_reproducers(name, scale, mode):
    """The issue's two reproducers, as it gives them, in memory and on a Dask array in both modes."""
    X, _ = two_clusters()
    est = getattr(lowdens_dask, name)(n_clusters="auto")
    data = X * scale
    if mode != "memory":
        X, _ = two_clusters(n_per=1000)
        data, est = da.from_array(X * scale, chunks=(500, 3)), est.set_params(mode=mode)
    said = r"columns vary by at most 1\.[0-9]+e-169 .*X \* 1e\+169" if scale < 1 else r"values reach 1\.[0-9]+e\+156 .*X / 1e\+157"
    with pytest.raises(ValueError, match=f"X's {said}"):
        est.fit(data)


@pytest.mark.slow
@pytest.mark.parametrize("name", ESTIMATORS)
def test_within_the_range_the_answer_is_that_at_scale_one(name):
    """At 1e45, inside the range, every estimator finds the partition it finds at scale 1 (the two clusters)."""
    X, y = two_clusters(n_per=60)
    if name.endswith("Projection"):  # the first direction (the later ones are as flat as MDH's eta is absolute)
        ones = make(name).fit(X).components_[0]
        np.testing.assert_allclose(np.abs(make(name).fit(X * 1e45).components_[0]), np.abs(ones), atol=1e-6)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        at_one = labels(fit(make(name), X, y))
        at_scale = labels(fit(make(name), X * 1e45, y))
    assert same_partition(at_one, at_scale)
    assert same_partition(at_one, y)


def test_the_bounds():
    low, high = SCALE_RANGE
    check_value_range(np.array([-high, 0.0]), np.array([high, low]))  # both bounds are in range
    with pytest.raises(ValueError, match=r"values reach 1\.1e\+50 .*X / 1e\+51"):
        check_value_range(np.array([0.0]), np.array([1.1 * high]))
    with pytest.raises(ValueError, match=r"vary by at most 5e-51 .*X \* 1e\+51"):
        check_value_range(np.array([1.0, 0.0]), np.array([1.0, 0.5 * low]))
    check_value_range(np.array([1.0]), np.array([1.0]))  # constant columns: the callers' own error
    check_value_range(np.array([0.0]), np.array([1e-300]), spread=False)  # an update's batch: largest |x| only


def test_partial_fit_refuses_a_batch_beyond_the_range():
    X, _ = two_clusters()
    est = lowdens_dask.MDHClustering(n_clusters=2).fit(X)
    with pytest.raises(ValueError, match=REFUSED):
        est.partial_fit(X[:100] * 1e155)
    assert est.partial_fit(X[:1] * 1e-170).n_clusters_ >= 1  # one tiny point merges; it is within rounding of 0


def test_column_moments_are_the_rows_own_statistics():
    """Dividing by powers of two is exact: in range, the statistics are those of the plain formulas, bit for bit."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 4)) * np.array([1e-30, 1.0, 3e7, 1e40]) + np.array([0.0, 5.0, -2e8, 1e41])
    w = rng.integers(1, 4, size=500).astype(float)
    mean, var, unit = column_moments(X, w)
    plain_mean = w @ X / w.sum()
    plain_var = w @ (X - plain_mean) ** 2 / (w.sum() - 1.0)
    np.testing.assert_array_equal(mean, plain_mean)
    np.testing.assert_array_equal(np.sqrt(var) * unit, np.sqrt(plain_var))
    assert np.all(np.log2(unit) == np.round(np.log2(unit)))
    np.testing.assert_array_equal(constant_columns(mean, var, w.sum(), unit), constant_columns(plain_mean, plain_var, w.sum()))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["PDDP", "MDHClustering", "MSCClustering", "SVMRelabelClustering"])
@pytest.mark.parametrize("chunked", [False, True])
def test_a_column_of_tiny_scale_is_standardized_not_dropped(name, chunked):
    """Before: a column of scale 1e-170 beside columns of scale 1 was 'within rounding error' (its variance
    underflowed) and dropped with standardize=True, so MDHClustering split a cluster (3258 / 742 rows). Now its
    variance is taken in units of a power of two: it is z-scored, and the fit is the one at scale 1 (bit for bit:
    the column is scaled by a power of two, 2^-565 = 1.7e-170, so its z-scores are the same numbers)."""
    rng = np.random.default_rng(0)
    X = np.hstack([np.r_[rng.normal(0, 1, 300), rng.normal(10, 1, 300)][:, None], rng.normal(size=(600, 2))])
    tiny = X * np.array([2.0**-565, 1.0, 1.0])
    if chunked and name in ("MSCClustering", "SVMRelabelClustering"):
        pytest.skip("fitted on chunks by landmarks or summaries, not by the frame of exact mode")
    mode = {"mode": "exact"} if chunked else {}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        reference = labels(make(name, n_clusters=2, standardize=True).fit(X))
        data = da.from_array(tiny, chunks=(150, 3)) if chunked else tiny
        found = labels(make(name, n_clusters=2, standardize=True, **mode).fit(data))
    assert not [w for w in seen if "rounding error" in str(w.message)]
    np.testing.assert_array_equal(found, reference)


def _rounding_level_rows(n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Column 0 varies only in its last bits (1.0, 1.0 + 1 ulp, 1.0 + 2 ulp); column 1 holds three groups 0/1/2.
    Above SMALL_INPUT_ROWS, so that exact mode on a Dask array passes over its chunks."""
    groups = np.repeat([0, 1, 2], n // 3)
    ulps = 1.0 + (np.arange(n) % 3) * np.finfo(np.float64).eps
    return np.column_stack([ulps, groups.astype(np.float64)]), groups


@pytest.mark.parametrize("cls", [PDDPClustering, MDHClustering, MCClustering, NCutClustering])
def test_rounding_level_column_is_constant(cls):
    """Issue 22, point 13: a column whose spread is at rounding level is treated as constant (with a warning), so
    standardize=True finds the three groups, and exact mode on column chunks gives the in-memory labels."""
    X, groups = _rounding_level_rows()
    with pytest.warns(UserWarning, match=r"1 column\(s\) whose spread is within rounding error .*indices \[0\]"):
        memory = cls(n_clusters=3, standardize=True, random_state=0).fit(X)
    assert memory.n_clusters_ == 3 and adjusted_rand_score(groups, memory.labels_) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        exact = cls(n_clusters=3, standardize=True, random_state=0, mode="exact").fit(da.from_array(X, chunks=(300, 1)))
    np.testing.assert_array_equal(exact.labels_.compute(), memory.labels_)


def test_scpp_in_memory_sets_the_rounding_level_column_aside():
    """Issue 22, point 13, for SCPP's in-memory path (its exact mode builds microclusters per node, so it is
    compared with the groups, not label for label): standardize=True finds the three groups."""
    X, groups = _rounding_level_rows()
    with pytest.warns(UserWarning, match="within rounding error"):
        memory = SCPPClustering(n_clusters=3, standardize=True, random_state=0).fit(X)
    assert adjusted_rand_score(groups, memory.labels_) == 1.0


def test_unscaled_rounding_level_column_agrees_with_exact_mode():
    """Issue 22, point 13: without standardisation, a column 1e9 ± 1.6e-5 beside three groups: MCClustering's
    in-memory and exact fits agree label for label and find the groups."""
    rng = np.random.default_rng(0)
    groups = np.repeat([0, 1, 2], 100)
    X = np.column_stack([1e9 + rng.choice([-1.6e-5, 0.0, 1.6e-5], 300), groups + 0.05 * rng.normal(size=300)])
    with pytest.warns(UserWarning, match="within rounding error"):
        memory = MCClustering(n_clusters=3, random_state=0).fit(X)
    assert adjusted_rand_score(groups, memory.labels_) > 0.9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        exact = MCClustering(n_clusters=3, random_state=0, mode="exact").fit(da.from_array(X, chunks=(97, 2)))
    np.testing.assert_array_equal(exact.labels_.compute(), memory.labels_)
