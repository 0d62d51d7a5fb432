"""The library's warnings (lowdens_dask/_warnings.py) point at the caller's line, whatever the entry point."""

import warnings

import numpy as np
import pytest

from lowdens_dask import MDH, MDHClustering


def rows(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[: n // 2, 0] += 6
    return X


def test_warnings_point_at_the_callers_line():
    """Issue 13: Entry points of different depth (fit, fit_predict through scikit-learn, ClusterTree.split) all attribute
    the library's warnings to the line that called them."""
    X = rows()
    X = np.hstack([X, np.ones((len(X), 1))])  # a constant column: a UserWarning from the input checks
    calls = {
        "fit": lambda: MDHClustering(n_clusters=2).fit(X),
        "fit_predict": lambda: MDHClustering(n_clusters=2).fit_predict(X),
        "one split": lambda: MDH().fit(X),
        "forced": lambda: MDHClustering(n_clusters=40, min_size=5).fit(X[:, :3]),
    }
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert caught, name
        assert {w.filename for w in caught} == {__file__}, (name, [(w.filename, w.lineno) for w in caught])
    tree = MDHClustering(n_clusters=2).fit(X[:, :3]).tree_
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="no valid mdh split"):  # one Gaussian: warned, then no split
            tree.split(1, X[:, :3], eta=10.0)  # eta above the bandwidth: a warning from the index layer
    assert caught and {w.filename for w in caught} == {__file__}
    with pytest.raises(ValueError, match="at least 2 are needed"):
        tree.split(1, X[:1, :3])
