"""Growing a :class:`ClusterTree` by spectral bi-partitions (SCPP, LMSC): split the largest leaf until there
are ``n_clusters`` (the paper's §10 and the R package's ``SCPP_cluster``), each split found on the leaf's own
points by :func:`lowdens_dask.pursuit.spectral.spectral_split` (scale, principal components, microclusters and
β search recomputed per leaf).

The points are rows in memory or, in summary mode, the scale-out engine's summaries weighted by their row
counts: one code path. A split's rule is a hyperplane when the projection is one-dimensional and the two
sides' projected microclusters do not interleave (the threshold halfway across the gap, which routes
exactly as the nearest projected centre), and otherwise the nearest projected centre
(:class:`~lowdens_dask.tree.rules.NearestCentreRule`).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..backend.frame import Frame
from ..pursuit.spectral import SpectralSplit, spectral_split
from .cluster_tree import ClusterTree
from .rules import HyperplaneRule, NearestCentreRule, SplitRule


class SpectralGrowth(NamedTuple):
    tree: ClusterTree
    n_leaves: int
    n_evaluations: int
    n_unbalanced: int  #: splits where no β of the schedule gave the balance asked for


def split_rule(split: SpectralSplit, frame: Frame = Frame()) -> SplitRule:
    """The routing rule of a spectral split found in ``frame``, in the original coordinates."""
    V, centres = split.V, split.centres
    if frame.mean is not None:  # x @ V' with V' = V / scale equals z @ V + (mean / scale) @ V
        shift = (frame.mean / frame.scale) @ V
        V = V / frame.scale[:, None]
        centres = centres + shift
    if V.shape[1] == 1:
        p, sides = centres[:, 0], split.sides
        for sign in (1.0, -1.0):
            low, high = sign * p[~sides], sign * p[sides]
            if low.max() < high.min():
                norm = float(np.linalg.norm(V[:, 0]))
                return HyperplaneRule(sign * V[:, 0] / norm, 0.5 * (low.max() + high.min()) / norm)
    return NearestCentreRule(V, centres, split.sides)


def grow_spectral_tree(
    X: np.ndarray,
    weights: np.ndarray,
    method: str,
    params: dict,
    *,
    n_clusters: int,
    min_side: float,
    frame: Frame = Frame(),
    spread: float = 0.0,
    random_state: int | None = None,
) -> SpectralGrowth:
    """Grow a tree of ``n_clusters`` leaves on the points ``X`` (weights ``weights``, in ``frame``) by
    splitting the largest leaf with :func:`spectral_split` (``params``); ``min_side`` is the balance each
    split is asked for. Leaves without two distinct points of positive weight, or whose split would leave a
    side empty, are not split."""
    tree = ClusterTree(X.shape[1], method, params, root_size=float(weights.sum()))
    leaves = {0: np.arange(X.shape[0])}
    stuck: set[int] = set()
    rng = np.random.default_rng(random_state)
    evaluations = unbalanced = 0
    original = X if frame.mean is None else X * frame.scale + frame.mean
    while len(leaves) < n_clusters:
        open_leaves = [leaf for leaf in leaves if leaf not in stuck]
        if not open_leaves:
            break
        leaf = max(open_leaves, key=lambda j: (float(weights[leaves[j]].sum()), -j))
        rows = leaves[leaf]
        weighted = rows[weights[rows] > 0]
        if len(weighted) < 2 or np.ptp(X[weighted], axis=0).max() == 0:
            stuck.add(leaf)
            continue
        split = spectral_split(
            X[rows],
            weights[rows],
            min_side=min_side,
            spread=spread,
            random_state=int(rng.integers(2**31 - 1)),
            **params,
        )
        evaluations += split.n_evaluations
        rule = split_rule(split, frame)
        above = rule.side(original[rows])
        sizes = (float(weights[rows[~above]].sum()), float(weights[rows[above]].sum()))
        if min(sizes) <= 0:
            stuck.add(leaf)
            continue
        unbalanced += not split.balanced
        stats = {"fval": split.value, "eigenvalue": split.eigenvalue, "balanced": float(split.balanced)}
        node = tree.add_rule_split(leaf, method, rule, sizes, split.params, stats)
        del leaves[leaf]
        leaves[node.children[0]] = rows[~above]
        leaves[node.children[1]] = rows[above]
    return SpectralGrowth(tree, len(leaves), evaluations, unbalanced)
