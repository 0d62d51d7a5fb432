"""The ClusterTree (tree/cluster_tree.py) on its own: it predicts what the estimators predict on, and is enough to
predict with."""

import dask.array as da
import numpy as np
import pytest
import zarr

from lowdens_dask import ClusterTree, MDHClustering


def rows(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[: n // 2, 0] += 6
    return X


def test_cluster_tree_predict_takes_what_the_estimators_predict_takes(tmp_path):
    """Issue 13 (a new user's rough edges)."""
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


def test_cluster_tree_is_importable_for_prediction_only():
    """Issue 13 (a new user's rough edges)."""
    tree = ClusterTree.from_json(MDHClustering(n_clusters=2).fit(rows()).tree_.to_json())
    assert tree.predict(rows()[:5]).shape == (5,)
