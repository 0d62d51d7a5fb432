"""A run's metrics: the tree, each node's index statistics, timings and, with true labels, external scores."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

import dask.array as da
import numpy as np

from lowdens_dask import ClusterTree
from lowdens_dask.metrics import cluster_performance


def _finite_or_none(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def tree_metrics(tree: ClusterTree) -> dict:
    """Tree size (``n_leaves``: the number of clusters found), per internal node its size, index value (fval),
    relative depth and, for ``n_clusters="auto"``, its split's held-out dip test (``dip``, ``p_value``,
    ``n_test``); and the leaves' tests of their would-be splits (``leaf_tests``), which were not significant
    (JSON-ready)."""
    nodes = sorted(tree.nodes.values(), key=lambda n: n.id)
    splits = [
        {
            "id": node.id,
            "depth": node.depth,
            "size": node.size,
            "method": node.method,
            "forced": node.forced,
            "fval": _finite_or_none(node.stats.get("fval", math.nan)),
            "relative_depth": _finite_or_none(node.stats.get("relative_depth", math.nan)),
            **_test(node),
        }
        for node in nodes
        if not node.is_leaf
    ]
    leaf_tests = [{"id": node.id, "size": node.size, **_test(node)} for node in nodes if node.is_leaf and _test(node)]
    return {"n_leaves": tree.n_leaves, "n_nodes": len(tree.nodes), "splits": splits, "leaf_tests": leaf_tests}


def _test(node) -> dict:
    """A node's held-out dip test (n_clusters="auto"), or nothing."""
    if "dip" not in node.stats:
        return {}
    return {key: _finite_or_none(node.stats[key]) for key in ("dip", "p_value", "n_test")}


def label_metrics(labels, true_labels=None) -> dict:
    """Cluster sizes (rows labelled -1 counted apart) and, when true labels are given, ARI, V-measure,
    purity and NMI over the labelled rows (``lowdens_dask.metrics.cluster_performance``)."""
    labels = np.asarray(labels.compute() if isinstance(labels, da.Array) else labels)
    sizes = np.bincount(labels[labels >= 0]) if (labels >= 0).any() else np.zeros(0, dtype=int)
    out = {"cluster_sizes": sizes.tolist(), "n_unlabelled": int((labels < 0).sum())}
    if true_labels is not None:
        true_labels = np.asarray(true_labels)
        if true_labels.shape != labels.shape:
            raise ValueError(f"The true labels have {true_labels.shape[0]} rows; the input has {labels.shape[0]}.")
        keep = labels >= 0
        out.update(cluster_performance(true_labels[keep], labels[keep]))
    return out
