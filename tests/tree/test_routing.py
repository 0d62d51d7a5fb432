"""Routing rows down a tree: a row exactly on a hyperplane (v.x == b) goes to child 1 everywhere (the
tree, every estimator's predict, the chunked labelling pass and exact mode's node rows)."""

import dask.array as da
import numpy as np
import pytest
from sklearn.base import clone

from lowdens_dask import MDH, PDDPClustering, ClusterTree, DePDDPClustering, MDHClustering
from lowdens_dask.backend.chunked import ChunkedNode
from lowdens_dask.pursuit import Hyperplane


def trimodal_column(seed=0):
    """One feature, so every fitted direction is exactly [1.0] and v.x == b holds exactly for x == b."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(-6, 1, 200), rng.normal(0, 1, 200), rng.normal(6, 1, 200)])[:, None]


def subtree(tree, node_id):
    out, stack = set(), [node_id]
    while stack:
        node = tree.nodes[stack.pop()]
        out.add(node.id)
        stack.extend(node.children or ())
    return out


def test_hand_built_tree_routes_ties_to_child_1():
    e1 = np.array([0.0, 1.0, 0.0])
    tree = ClusterTree(3, method="pddp")
    tree.add_split(0, "pddp", Hyperplane(e1, 0.25, True, {}, {}), (1.0, 1.0))
    X = np.array([[5.0, 0.25, -3.0], [5.0, np.nextafter(0.25, -1.0), -3.0], [-2.0, 0.5, 1.0]])
    np.testing.assert_array_equal(tree.apply(X), [2, 1, 2])
    np.testing.assert_array_equal(tree.predict(X), [1, 0, 1])

    np.testing.assert_array_equal(tree.predict_chunked(da.from_array(X, chunks=(2, 3))).compute(), [1, 0, 1])


@pytest.mark.parametrize(
    "estimator",
    [MDHClustering(n_clusters=3), PDDPClustering(n_clusters=3), DePDDPClustering(n_clusters=3)],
    ids=["mdh", "pddp", "depddp"],
)
def test_fitted_trees_route_ties_to_child_1(estimator):
    X = trimodal_column()
    model = clone(estimator).fit(X)
    tree = model.tree_
    internal = [node for node in tree if not node.is_leaf]
    assert len(internal) == 2
    for node in internal:
        assert node.v.tolist() == [1.0]
        rows = np.array([[node.b], [np.nextafter(node.b, np.inf)], [np.nextafter(node.b, -np.inf)]])
        leaves = tree.apply(rows)
        assert leaves[0] in subtree(tree, node.children[1]) and leaves[0] == leaves[1]
        assert leaves[2] in subtree(tree, node.children[0])
        labels = model.predict(rows)
        assert labels[0] == labels[1] != labels[2]
        chunked = model.predict(da.from_array(rows, chunks=(1, 1))).compute()
        np.testing.assert_array_equal(chunked, labels)
        side_0, side_1 = ChunkedNode(da.from_array(rows, chunks=(2, 1))).partition(node.v, node.b)
        assert (side_0.n_samples, side_1.n_samples) == (1, 2)


def test_mdh_predicts_ties_as_side_1():
    X = trimodal_column()[:400]
    model = MDH().fit(X)
    assert model.v_.tolist() == [1.0] and model.relative_depth_ > 0
    rows = np.array([[model.b_], [np.nextafter(model.b_, -np.inf)]])
    np.testing.assert_array_equal(model.predict(rows), [1, 0])
    np.testing.assert_array_equal(model.predict(da.from_array(rows, chunks=(1, 1))).compute(), [1, 0])
    assert model.decision_function(rows)[0] == 0.0
