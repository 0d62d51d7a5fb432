"""Rough edges a new user met (issue 13): each fixed, and each checked here."""

import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import zarr

from lowdens_dask import MDH, ClusterTree, MDHClustering


def rows(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[: n // 2, 0] += 6
    return X


@pytest.mark.parametrize("estimator", [MDHClustering(n_clusters=2, nonfinite="skip"), MDH(nonfinite="skip")])
def test_nonfinite_skip_applies_to_in_memory_input(estimator):
    """Rows with NaN or inf are set aside and labelled -1, as for chunked input; the others get the labels of a
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


def test_cluster_tree_predict_takes_what_the_estimators_predict_takes(tmp_path):
    X = rows()
    model = MDHClustering(n_clusters=2).fit(X)
    group = zarr.open_group(str(tmp_path / "data.zarr"), mode="w")
    group.create_array("X", data=X, chunks=(100, 3))
    path = str(tmp_path / "data.zarr" / "X")
    for source in (path, group["X"], da.from_array(X, chunks=(100, 3))):
        labels = model.tree_.predict(source)
        assert isinstance(labels, da.Array)
        np.testing.assert_array_equal(labels.compute(), model.labels_)
    np.testing.assert_array_equal(model.predict(path).compute(), model.labels_)
    with pytest.raises(ValueError, match=r"shape \(n_samples, 3\)"):
        model.tree_.predict(da.zeros((5, 4), chunks=5))


def test_alphas_above_one_are_rejected():
    with pytest.raises(ValueError, match="at most 1"):
        MDH(alphas=(0.5, 1.5)).fit(rows())


def test_numeric_strings_are_not_converted_silently():
    X = rows().astype(object)
    X[0, 0] = "1.5"
    with pytest.raises(ValueError, match="X contains strings"):
        MDHClustering(n_clusters=2).fit(X)
    model = MDHClustering(n_clusters=2).fit(rows())
    with pytest.raises(ValueError, match="X contains strings"):
        model.predict(X)


def test_warnings_point_at_the_callers_line():
    """Entry points of different depth (fit, fit_predict through scikit-learn, ClusterTree.split) all attribute
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


def test_cluster_tree_is_importable_for_prediction_only():
    tree = ClusterTree.from_json(MDHClustering(n_clusters=2).fit(rows()).tree_.to_json())
    assert tree.predict(rows()[:5]).shape == (5,)


def test_a_group_with_several_arrays_asks_for_the_path_the_estimators_take(tmp_path):
    """The error names a path that ``fit`` accepts (``store.zarr/X``), not ``array_name``, which no estimator
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
