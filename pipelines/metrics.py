"""A run's metrics: the tree, each node's index statistics, timings and, with true labels, external scores."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

import numpy as np

from lowdens_dask.tree import format_p_value

if TYPE_CHECKING:  # Dask and scikit-learn's scores are imported where they are needed
    from lowdens_dask.tree import ClusterTree  # the model only: reading a run needs no grower


def _finite_or_none(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def tree_metrics(tree: ClusterTree) -> dict:
    """Tree size (``n_leaves``: the number of clusters found), per internal node its size, index value (fval),
    relative depth and, for ``n_clusters="auto"``, its split's dip test (``dip``, ``p_value``,
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
    """A node's dip test (n_clusters="auto"), or nothing."""
    if "dip" not in node.stats:
        return {}
    return {
        key: _finite_or_none(node.stats[key]) for key in ("dip", "p_value", "n_test", "p_floor") if key in node.stats
    }


def label_metrics(labels, true_labels=None) -> dict:
    """Cluster sizes (rows labelled -1 counted apart) and, when true labels are given, ARI, V-measure,
    purity and NMI over the labelled rows (``lowdens_dask.metrics.cluster_performance``)."""
    dask_array = sys.modules.get("dask.array")  # imported by whoever holds a Dask array
    labels = np.asarray(labels.compute() if dask_array and isinstance(labels, dask_array.Array) else labels)
    sizes = np.bincount(labels[labels >= 0]) if (labels >= 0).any() else np.zeros(0, dtype=int)
    out = {"cluster_sizes": sizes.tolist(), "n_unlabelled": int((labels < 0).sum())}
    if true_labels is not None:
        true_labels = np.asarray(true_labels)
        if true_labels.shape != labels.shape:
            raise ValueError(f"The true labels have {true_labels.shape[0]} rows; the input has {labels.shape[0]}.")
        from lowdens_dask.metrics import cluster_performance

        keep = labels >= 0
        out.update(cluster_performance(true_labels[keep], labels[keep]))
    return out


def describe_update(report: dict) -> list[str]:
    """An update's report (``metrics["update"]``, ``partial_fit``'s ``update_report_``) in words, one line each:
    the new rows, the clusters before and after, the partition's drift, each node's action, and each cluster's
    share of the rows seen before and of the new rows."""
    decay = report.get("decay")
    kept = "keep their weight" if not decay else f"keep {1 - decay:.0%} of their weight"
    lines = [
        f"update {report['update']}: {report['n_rows']:,} new rows (the rows seen before {kept}); "
        f"{report['n_clusters_before']} clusters before, {report['n_clusters']} now"
    ]
    drift = report.get("drift")
    if drift:
        lines.append(
            f"drift of the partition: PSI {drift['psi']:.3g}, chi-square {drift['chi2']:.4g} on {drift['dof']} "
            f"degrees of freedom (p = {drift['p_value']:.3g})"
        )
    elif report.get("drift_note"):
        lines.append(f"no drift of the partition: {report['drift_note']}")
    lines += [f"node {node['node']}: {_action(node)}" for node in report.get("nodes", [])]
    leaves = report.get("leaves", [])
    if leaves:
        lines.append("cluster  leaf node  share before  share of the new rows")
        lines += [
            f"{leaf['label']:>7}  {leaf['node']:>9}  {_share(leaf['share_before']):>12}  {leaf['share_new']:>21.2%}"
            for leaf in leaves
        ]
    return lines


def _share(share: float | None) -> str:
    """A share as a percentage, or a dash where there is none (no old weight left)."""
    return "-" if share is None else f"{share:.2%}"


def _action(node: dict) -> str:
    """What an update did to a node, in words."""
    action = node["action"]
    if action == "re-pursued":
        moved = [f"{node['rerouted']:.1%} of its rows rerouted"] if "rerouted" in node else []
        if "angle_degrees" in node:
            moved = [f"turned {node['angle_degrees']:.1f}°", f"threshold moved {node['threshold_shift']:.3g}", *moved]
        text = "re-pursued" + (f": {', '.join(moved)}" if moved else "")
    elif action == "split" and "label" in node:
        text = f"split: cluster {node['label']} keeps its id" + (
            f", new cluster {node['new_label']}" if "new_label" in node else ""
        )
    elif action == "merged" and "label" in node:
        text = f"merged back into one leaf, cluster {node['label']}"
    else:
        text = action
    return text if node.get("p_value") is None else f"{text} (dip test {format_p_value(node)})"
