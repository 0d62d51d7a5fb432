"""Issue 22 ("Reliability, second round"), points 10, 12, 13, 14, 17 (input) and 18: chunked and in-memory fits
that agree, zarr stores read as zarr means them, and fits that fail instead of waiting."""

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import MSC, MCClustering, MDHClustering, NCutClustering, PDDP


def _rounding_level_rows(n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Column 0 varies only in its last bits (1.0, 1.0 + 1 ulp, 1.0 + 2 ulp); column 1 holds three groups 0/1/2.
    Above SMALL_INPUT_ROWS, so that exact mode on a Dask array passes over its chunks."""
    groups = np.repeat([0, 1, 2], n // 3)
    ulps = 1.0 + (np.arange(n) % 3) * np.finfo(np.float64).eps
    return np.column_stack([ulps, groups.astype(np.float64)]), groups


@pytest.mark.parametrize("cls", [PDDP, MDHClustering, MCClustering, NCutClustering])
def test_point13_rounding_level_column_is_constant(cls):
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


def test_point13_unscaled_rounding_level_column_agrees_with_exact_mode():
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


def test_point10_msc_predicts_the_same_on_dask_and_in_memory():
    """Issue 22, point 10: MSC(standardize=True) routes a row the same way in memory, in a Dask chunk and in labels_
    (one float64 computation per row); rows that differ only in their last bits are one cluster."""
    rng = np.random.default_rng(3)
    last_bits = 1.0 + rng.integers(0, 8, (300, 8)) * np.finfo(np.float64).eps
    blobs = np.vstack([rng.normal(size=(150, 8)), rng.normal(size=(150, 8)) + 2.0])
    for X in (last_bits, blobs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # one cluster only, for the rows that differ in last bits
            model = MSC(standardize=True, random_state=0).fit(X)
        in_memory = model.predict(X)
        np.testing.assert_array_equal(model.predict(da.from_array(X, chunks=(37, 8))).compute(), in_memory)
        np.testing.assert_array_equal(model.labels_, in_memory)
        f = model.decision_function(X)
        np.testing.assert_array_equal(model.decision_function(da.from_array(X, chunks=(37, 8))).compute(), f)
        np.testing.assert_array_equal(np.concatenate([model.decision_function(X[i : i + 1]) for i in range(300)]), f)
    with pytest.warns(UserWarning, match="Only 1 clusters could be formed"):
        assert np.unique(MSC(standardize=True, random_state=0).fit(last_bits).labels_).size == 1
