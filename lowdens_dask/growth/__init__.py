"""The machine that grows and revises cluster trees, the layer above the tree model (:mod:`lowdens_dask.tree`):
the grower (:func:`grow`: the one place leaves are split, updates revise, and ids carry over), the splitters of
every method (:class:`Splitter`: hyperplane pursuits, spectral splits), the revision of splits in an update and
the drift of the clusters' shares."""

from __future__ import annotations

from ..tree.cluster_tree import ClusterTree, Node
from .grower import Growth, GrowthRules, History, grow, merge_unreached_leaves
from .splitter import Candidate, Cut, Splitter, SplitterBase


def split_leaf(tree: ClusterTree, node: int | Node, X, *, method: str | None = None, **params) -> Node:
    """Split a leaf of ``tree`` from the rows of X that reach it, as a fit splits a leaf (PPCI's tree_split):
    :meth:`ClusterTree.split <lowdens_dask.tree.ClusterTree.split>`. ``method`` and ``params`` override the tree's
    defaults (e.g. ``bandwidth``, ``alphas``). Raises ValueError if no valid split exists for the node."""
    from ..backend import InMemoryData
    from .hyperplane_splitter import HyperplaneSplitter

    node = tree._node(node)
    if not node.is_leaf:
        raise ValueError(f"Only leaves can be split; node {node.id} has children {node.children}.")
    X = tree._check_X(X)
    rows = tree.apply(X) == node.id
    if rows.sum() < 2:
        raise ValueError(
            f"{int(rows.sum())} of the {X.shape[0]} rows of X reach node {node.id}; at least 2 are needed to "
            "split it (pass the rows the tree was fitted on)."
        )
    method = method or node.method or tree.method
    merged = {**tree.params, **params} if method == tree.method else dict(params)
    min_size = merged.pop("min_size", 1)
    splitter = HyperplaneSplitter(method, merged, min_size)
    grow(tree, InMemoryData(X[rows]), splitter, GrowthRules(tree.n_leaves + 1), leaf=node.id)
    if node.is_leaf:
        raise ValueError(f"Node {node.id} ({int(rows.sum())} rows) has no valid {method} split.")
    return node


ClusterTree.leaf_splitter = staticmethod(split_leaf)

__all__ = [
    "Candidate",
    "ClusterTree",
    "Cut",
    "Growth",
    "GrowthRules",
    "History",
    "Splitter",
    "SplitterBase",
    "grow",
    "merge_unreached_leaves",
    "split_leaf",
]
