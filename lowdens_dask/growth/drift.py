"""The drift of a partition between updates: each cluster's share of the rows before an update and of the new
rows, the population stability index and a chi-square test (the update report's ``leaves`` and ``drift``)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from scipy.stats import chi2 as chi2_distribution

from ..tree.cluster_tree import ClusterTree

#: Shares below this count as this in the drift statistics (a leaf no row reached before, or now).
SHARE_FLOOR = 1e-4
#: Why an update reports no shares before it and no drift.
NO_OLD_WEIGHT = "no weight is left to the rows seen before (decay dropped every old microcluster)"


def shares(tree: ClusterTree, leaf_points: dict, old_weights: np.ndarray, new_weights: np.ndarray) -> dict:
    """Per leaf, its share of the rows before the update and of the new rows (both routed by the updated tree),
    and the partition's drift: PSI = sum (new - before) ln(new / before), and Pearson's chi-square of the new
    rows' counts against the shares before (shares floored at SHARE_FLOOR). Where no old weight is left, each
    ``share_before`` is None and ``drift`` None, with ``drift_note`` saying why."""
    labels = tree.leaf_labels()
    leaves = sorted(labels, key=labels.get)
    before = np.array([old_weights[leaf_points[leaf]].sum() for leaf in leaves])
    new = np.array([new_weights[leaf_points[leaf]].sum() for leaf in leaves])
    if not before.sum() > 0:  # nothing to compare the new rows with: no shares before are made up
        p_new = new / new.sum() if new.sum() > 0 else np.zeros(len(leaves))
        return {
            "leaves": [
                {"label": int(labels[leaf]), "node": int(leaf), "share_before": None, "share_new": float(pn)}
                for leaf, pn in zip(leaves, p_new)
            ],
            "drift": None,
            "drift_note": NO_OLD_WEIGHT,
        }
    p_before = before / before.sum()
    p_new = new / new.sum() if new.sum() > 0 else p_before
    a, b = np.maximum(p_new, SHARE_FLOOR), np.maximum(p_before, SHARE_FLOOR)
    psi = float(np.sum((a - b) * np.log(a / b)))
    expected = new.sum() * b / b.sum()
    chi2 = float(np.sum((new - expected) ** 2 / expected)) if new.sum() > 0 else 0.0
    dof = len(leaves) - 1
    return {
        "leaves": [
            {"label": int(labels[leaf]), "node": int(leaf), "share_before": float(pb), "share_new": float(pn)}
            for leaf, pb, pn in zip(leaves, p_before, p_new)
        ],
        "drift": {
            "psi": psi,
            "chi2": chi2,
            "dof": dof,
            "p_value": float(chi2_distribution.sf(chi2, dof)) if dof else 1.0,
        },
    }
