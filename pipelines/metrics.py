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
    """Tree size, and per internal node its size, index value (fval) and relative depth (JSON-ready)."""
    nodes = [
        {
            "id": node.id,
            "depth": node.depth,
            "size": node.size,
            "method": node.method,
            "forced": node.forced,
            "fval": _finite_or_none(node.stats.get("fval", math.nan)),
            "relative_depth": _finite_or_none(node.stats.get("relative_depth", math.nan)),
        }
        for node in sorted(tree.nodes.values(), key=lambda n: n.id)
        if not node.is_leaf
    ]
    return {"n_leaves": tree.n_leaves, "n_nodes": len(tree.nodes), "splits": nodes}


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
