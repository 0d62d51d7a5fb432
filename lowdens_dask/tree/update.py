"""Updating a grown :class:`ClusterTree` to a summary that new rows were merged into (``partial_fit``).

The tree is walked from the root, each node with the microclusters that now reach it:

- every split is **re-pursued** from its own rule on the node's points (for ``n_clusters="auto"``, on the same
  random half the grower finds splits on, and tested on the other half, :mod:`lowdens_dask.pursuit.significance`).
  The current rule is **kept** as it is (so an unchanged distribution moves no hyperplane) while it still lies
  in low density and, for ``"auto"``, its held-out dip test is still significant. It lies in low density if the
  re-pursued split reroutes at most :data:`KEEP_REROUTED` of the node's weight, or if the density at its
  threshold (along its normal, as a share of the highest density there) exceeds the re-pursued split's by at
  most :data:`KEEP_DENSITY`: an index that jumps between equally good gaps (dePDDP's lowest minimum, iPDDP's
  widest gap) keeps its split. A rule with no threshold (SCPP's nearest projected centre) is kept while its
  held-out dip is within :data:`KEEP_DIP_LOSS` of the re-pursued one's. Otherwise a valid (significant)
  re-pursued rule replaces it;
- a split with neither is **merged** back: the node becomes a leaf, with the cluster id of its largest leaf;
- then every leaf's best split is searched afresh, and leaves whose split is valid (significant) are **split**,
  the largest first, and their children in turn, as the grower does. The child holding most of the leaf's
  old weight (rows seen before this update) keeps its cluster id.

With an integer ``n_clusters`` the leaves stay as they are and only the splits move. Each node's ``changed``
records the update that last changed it. :func:`update_tree` returns the report of what happened:
per node its action (with the angle a re-pursued hyperplane turned, how far its threshold moved at the node's
mean, and the share of the node's weight it reroutes), per leaf its share of the rows before the update and of
the new rows, and the drift of the whole partition (population stability index and a chi-square test of the new
rows' counts against the shares before).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
from typing import NamedTuple, Protocol

import numpy as np
from scipy.stats import chi2 as chi2_distribution

from ..backend import InMemoryData
from .cluster_tree import ClusterTree, Node
from .rules import HyperplaneRule, NearestCentreRule, SplitRule

#: A re-pursued split that sends at most this share of its node's weight to the other side than the current
#: rule does leaves the current rule in place ("kept").
KEEP_REROUTED = 0.005
#: A current hyperplane is kept while the density at its threshold (as a share of the highest density along its
#: normal) exceeds the re-pursued one's by at most this: it still lies in low density.
KEEP_DENSITY = 0.05
#: A current rule without a threshold (nearest projected centre) is kept while the held-out dip along it is at least
#: this much less than along the re-pursued rule's.
KEEP_DIP_LOSS = 0.1
#: Points of the projection where :func:`_density_share` looks for the highest density.
DENSITY_GRID = 128
#: Shares below this count as this in the drift statistics (a leaf no row reached before, or now).
SHARE_FLOOR = 1e-4


class Candidate(NamedTuple):
    """A split found for a node: its rule in the original coordinates, the pursuit's parameters and
    statistics (the held-out test's included), and whether it is valid (for ``"auto"``: significant)."""

    rule: SplitRule
    params: dict
    stats: dict
    valid: bool


class Splitter(Protocol):
    """How a family of indices finds and tests a node's split (:class:`~lowdens_dask.tree.grower.HyperplaneSplitter`,
    :class:`~lowdens_dask.tree.spectral.SpectralSplitter`); points are in the splitter's frame."""

    method: str

    def find(self, points: InMemoryData, node: int, start: Node | None) -> Candidate | None:
        """The node's split (from ``start``'s rule when given), or None when it is too small to split."""

    def held_out(self, points: InMemoryData, node: int, rule: SplitRule) -> dict:
        """The held-out test of an existing rule on the node's points (``dip``, ``p_value``, ``n_test``)."""


def update_tree(
    tree: ClusterTree,
    points: InMemoryData,
    original: np.ndarray,
    original_spread: np.ndarray,
    old_weights: np.ndarray,
    splitter: Splitter,
    *,
    grow: bool,
    max_leaves: int | None,
    level: float | None,
    min_size: float,
) -> dict:
    """Update ``tree`` in place to ``points`` (the merged summary in the splitter's frame; ``original`` and
    ``original_spread``: the same points and their spread in the tree's coordinates; ``old_weights``: each
    point's weight before the update, 0 for new ones).

    ``grow``: splits may be merged and leaves split (``n_clusters="auto"`` or None), else only splits move;
    ``max_leaves`` caps the leaves; ``level``: the held-out test's significance level (None: the index's
    validity alone). Returns the update report (module docstring)."""
    tree.stabilise_labels()
    tree.update += 1
    n_before = tree.n_leaves
    weights = points.weights
    spread = np.asarray(original_spread, dtype=np.float64)
    new_weights = np.maximum(weights - old_weights, 0.0)
    actions: list[dict] = []
    leaf_points: dict[int, np.ndarray] = {}

    def significant(stats: dict) -> bool:
        return level is None or stats.get("p_value", 1.0) < level

    def visit(node: Node, rows: np.ndarray) -> None:
        node.size = float(weights[rows].sum())
        if node.is_leaf:
            leaf_points[node.id] = rows
            return
        data = points.take(rows)
        X, w = original[rows], weights[rows]
        found = splitter.find(data, node.id, node)
        current = node.rule.side(X)
        record = {"node": node.id}
        in_low_density, stats = True, {}
        if found is not None:
            found = found._replace(rule=_oriented(found.rule, X, w, current))
            record.update(_movement(node.rule, found.rule, X, w, current))
            in_low_density = record["rerouted"] <= KEEP_REROUTED
            if not in_low_density and isinstance(node.rule, HyperplaneRule):
                in_low_density = _still_low(node.rule, found.rule, X, w, spread[rows])
            elif not in_low_density:  # a rule with no threshold: does it still separate as well as the new one?
                stats = splitter.held_out(data, node.id, node.rule)
                new = splitter.held_out(data, node.id, found.rule)
                in_low_density = stats["dip"] >= (1.0 - KEEP_DIP_LOSS) * new["dip"]
        valid = found is not None and found.valid
        if in_low_density and level is not None and not stats:  # is the current rule still significant?
            stats = splitter.held_out(data, node.id, node.rule)
        if in_low_density and significant(stats) or not (valid or grow):
            node.stats.update(stats)
            record.update(action="kept", p_value=node.stats.get("p_value"))
        elif valid:
            node.set_rule(splitter.method, found.rule, found.params, found.stats)
            node.changed = tree.update
            record.update(action="re-pursued", p_value=found.stats.get("p_value"))
            current = node.rule.side(X)
        else:  # neither the current rule nor a re-pursued one is a valid (significant) split: merge it back
            _resize(tree, node, rows, original, weights)  # the id kept is that of the now largest leaf
            tree.prune(node)
            record.update(action="merged", label=node.label, p_value=stats.get("p_value"))
            actions.append(record)
            leaf_points[node.id] = rows
            return
        actions.append(record)
        for child, side in zip(node.children, (~current, current)):
            visit(tree.nodes[child], rows[side])

    visit(tree.root, np.arange(points.n_samples))
    if grow:
        _grow_leaves(tree, points, original, old_weights, splitter, leaf_points, actions, max_leaves, min_size)
    report = {
        "update": tree.update,
        "n_clusters_before": n_before,
        "n_clusters": tree.n_leaves,
        "nodes": [{k: v for k, v in record.items() if v is not None} for record in actions],
    }
    report.update(_shares(tree, leaf_points, old_weights, new_weights))
    return report


def _resize(tree: ClusterTree, node: Node, rows: np.ndarray, original: np.ndarray, weights: np.ndarray) -> None:
    """Set the sizes of ``node``'s subtree to the weight of the points that reach each node."""
    node.size = float(weights[rows].sum())
    if not node.is_leaf:
        side = node.rule.side(original[rows])
        for child, part in zip(node.children, (rows[~side], rows[side])):
            _resize(tree, tree.nodes[child], part, original, weights)


def _grow_leaves(tree, points, original, old_weights, splitter, leaf_points, actions, max_leaves, min_size) -> None:
    """Split, largest first, every leaf whose freshly found split is valid (and its children in turn)."""
    found: dict[int, Candidate | None] = {}
    limit = math.inf if max_leaves is None else max_leaves
    n_leaves = tree.n_leaves

    def compute(leaf: int) -> None:
        rows = leaf_points[leaf]
        found[leaf] = splitter.find(points.take(rows), leaf, None) if rows.size >= 2 else None

    for leaf in list(leaf_points):
        compute(leaf)
    while n_leaves < limit:
        candidates = [leaf for leaf, c in found.items() if c is not None and c.valid]
        if not candidates:
            break
        leaf = max(candidates, key=lambda j: (tree.nodes[j].size, -j))
        candidate = found.pop(leaf)
        rows = leaf_points[leaf]
        side = candidate.rule.side(original[rows])
        sizes = [float(points.weights[rows][s].sum()) for s in (~side, side)]
        if min(sizes) < max(min_size, 1e-300):
            continue
        old = [float(old_weights[rows][s].sum()) for s in (~side, side)]
        keep = int(old[1] > old[0]) if max(old) > 0 else int(sizes[1] > sizes[0])
        label = tree.nodes[leaf].label
        node = tree.add_rule_split(
            leaf, splitter.method, candidate.rule, tuple(sizes), candidate.params, candidate.stats, keep=keep
        )
        actions.append(
            {"node": leaf, "action": "split", "label": label, "new_label": tree.nodes[node.children[1 - keep]].label,
             "p_value": candidate.stats.get("p_value")}
        )  # fmt: skip
        n_leaves += 1
        del leaf_points[leaf]
        for child, part in zip(node.children, (rows[~side], rows[side])):
            leaf_points[child] = part
            compute(child)
    for leaf, candidate in found.items():  # the leaves' would-be splits and their tests, as the grower keeps them
        if candidate is not None and leaf in tree.nodes and tree.nodes[leaf].is_leaf:
            tree.nodes[leaf].set_rule(splitter.method, candidate.rule, candidate.params, candidate.stats)


def _oriented(rule: SplitRule, X: np.ndarray, w: np.ndarray, current: np.ndarray) -> SplitRule:
    """``rule`` with its sides swapped when it sends most of the weight to the other side than the current rule
    does (a re-pursuit may return the normal -v): children keep their points, and so their ids."""
    if w[rule.side(X) != current].sum() <= 0.5 * w.sum():
        return rule
    if isinstance(rule, HyperplaneRule):
        return HyperplaneRule(-rule.v, -rule.b)
    if isinstance(rule, NearestCentreRule):
        return NearestCentreRule(rule.V, rule.centres, ~rule.sides)
    return rule


def _still_low(old: SplitRule, new: SplitRule, X: np.ndarray, w: np.ndarray, spread: np.ndarray) -> bool:
    """Whether the current hyperplane still lies in low density: the density of the node's points projected on
    its normal, at its threshold, as a share of that projection's highest density, exceeds the re-pursued
    split's share by at most KEEP_DENSITY."""
    if not isinstance(new, HyperplaneRule):
        return False
    return _density_share(old, X, w, spread) <= _density_share(new, X, w, spread) + KEEP_DENSITY


def _density_share(rule: HyperplaneRule, X: np.ndarray, w: np.ndarray, spread: np.ndarray) -> float:
    """The Gaussian KDE of the points' projections (each point a normal of its spread, widened by Silverman's
    bandwidth over the total weight) at the threshold, divided by its maximum over the projections' range."""
    p = X @ rule.v
    total = float(w.sum())
    mean = float(w @ p / total)
    sd = math.sqrt(max(float(w @ (p - mean) ** 2 / total + w @ spread / total), 1e-300))
    h2 = (0.9 * sd * max(total, 2.0) ** -0.2) ** 2
    sigma = np.sqrt(h2 + spread)
    grid = np.append(np.linspace(p.min(), p.max(), DENSITY_GRID), rule.b)
    density = np.empty(grid.size)
    for start in range(0, grid.size, 16):  # working arrays of 16 x (points) at a time
        z = (grid[start : start + 16, None] - p) / sigma
        density[start : start + 16] = (np.exp(-0.5 * z * z) / sigma) @ w
    return float(density[-1] / density.max()) if density.max() > 0 else 0.0


def _movement(old: SplitRule, new: SplitRule, X: np.ndarray, w: np.ndarray, old_side: np.ndarray) -> dict:
    """How far a re-pursued rule moved from the current one on the node's points: the share of the weight it
    reroutes, and for two hyperplanes the angle between their normals (degrees) and the change of the
    threshold at the node's weighted mean (the distance between the two planes there, in data units)."""
    total = float(w.sum())
    out = {"rerouted": float(w[new.side(X) != old_side].sum() / total) if total > 0 else 0.0}
    if isinstance(old, HyperplaneRule) and isinstance(new, HyperplaneRule):
        cosine = float(np.clip(old.v @ new.v, -1.0, 1.0))
        mean = w @ X / total if total > 0 else X.mean(axis=0)
        out["angle_degrees"] = math.degrees(math.acos(cosine))
        out["threshold_shift"] = abs(float(mean @ new.v - new.b) - float(mean @ old.v - old.b))
    return out


def _shares(tree: ClusterTree, leaf_points: dict, old_weights: np.ndarray, new_weights: np.ndarray) -> dict:
    """Per leaf, its share of the rows before the update and of the new rows (both routed by the updated tree),
    and the partition's drift: PSI = sum (new - before) ln(new / before), and Pearson's chi-square of the new
    rows' counts against the shares before (shares floored at SHARE_FLOOR)."""
    labels = tree.leaf_labels()
    leaves = sorted(labels, key=labels.get)
    before = np.array([old_weights[leaf_points[leaf]].sum() for leaf in leaves])
    new = np.array([new_weights[leaf_points[leaf]].sum() for leaf in leaves])
    p_before = before / before.sum() if before.sum() > 0 else np.full(len(leaves), 1.0 / len(leaves))
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
