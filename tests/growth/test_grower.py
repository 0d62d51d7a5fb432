"""The grower (growth/grower.py): what it does to a tree after the growth."""

import numpy as np
import pytest

from lowdens_dask import (
    ClusterTree,
)
from lowdens_dask.growth.grower import merge_unreached_leaves
from lowdens_dask.tree import HyperplaneRule


def test_a_leaf_no_row_reaches_is_merged_back():
    """Issue 22, point 14: a leaf that no microcluster's representative row reaches is merged back into its parent
    (the sibling's split takes the parent's place), with a warning; labels stay 0..n_clusters_-1."""
    tree = ClusterTree(1, "pddp")
    tree.add_rule_split(0, "pddp", HyperplaneRule([1.0], 0.0), (10, 20), {}, {})
    tree.add_rule_split(2, "pddp", HyperplaneRule([1.0], 5.0), (5, 15), {}, {})
    tree.add_rule_split(4, "pddp", HyperplaneRule([1.0], 9.0), (7, 8), {}, {})
    with pytest.warns(UserWarning, match=r"1 split\(s\) made a cluster that no row reaches"):
        assert merge_unreached_leaves(tree, np.array([[-1.0], [8.0], [10.0]])) == 1  # none in [0, 5)
    assert tree.n_leaves == 3
    assert tree.predict(np.array([[-1.0], [2.0], [8.0], [10.0]])).tolist() == [0, 1, 1, 2]
    assert tree.nodes[2].rule == HyperplaneRule([1.0], 9.0) and tree.nodes[5].depth == 2
