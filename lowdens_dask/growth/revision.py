"""How far an existing split has moved, when new rows have come (:func:`~lowdens_dask.growth.grower.grow` on a
grown tree): the measures that decide whether a split is kept as it is or re-pursued.

A node's current hyperplane is **kept** while it still lies in low density: the density at its threshold (along
its normal, as a share of the highest density there) exceeds the re-pursued split's by at most
:data:`KEEP_DENSITY`, so an index that jumps between equally good gaps (dePDDP's lowest minimum, iPDDP's widest
gap) keeps its split, and one that now cuts a mode (a new component arrived across it) does not, however few
of the node's rows the re-pursued split would reroute. A rule with no threshold (SCPP's nearest projected centre)
is kept while the re-pursued split reroutes at most :data:`KEEP_REROUTED` of the node's weight, or its dip is
within :data:`KEEP_DIP_LOSS` of the re-pursued one's.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

import numpy as np

from ..tree.rules import HyperplaneRule, NearestCentreRule, SplitRule

#: A re-pursued split that sends at most this share of its node's weight to the other side than the current
#: rule (one without a threshold) does leaves the current rule in place ("kept").
KEEP_REROUTED = 0.005
#: A current hyperplane is kept while the density at its threshold (as a share of the highest density along its
#: normal) exceeds the re-pursued one's by at most this: it still lies in low density.
KEEP_DENSITY = 0.05
#: A current rule without a threshold (nearest projected centre) is kept while the dip along it is at least
#: this much less than along the re-pursued rule's.
KEEP_DIP_LOSS = 0.1
#: Points of the projection where :func:`_density_share` looks for the highest density.
DENSITY_GRID = 128


def oriented(rule: SplitRule, X: np.ndarray, w: np.ndarray, current: np.ndarray) -> SplitRule:
    """``rule`` with its sides swapped when it sends most of the weight to the other side than the current rule
    does (a re-pursuit may return the normal -v): children keep their points, and so their ids."""
    if w[rule.side(X) != current].sum() <= 0.5 * w.sum():
        return rule
    if isinstance(rule, HyperplaneRule):
        return HyperplaneRule(-rule.v, -rule.b)
    if isinstance(rule, NearestCentreRule):
        return NearestCentreRule(rule.V, rule.centres, ~rule.sides)
    return rule


def still_low(old: SplitRule, new: SplitRule, X: np.ndarray, w: np.ndarray, spread: np.ndarray) -> bool:
    """Whether the current hyperplane still lies in low density: the density of the node's points projected on
    its normal, at its threshold, as a share of that projection's highest density, exceeds the re-pursued
    split's share by at most KEEP_DENSITY."""
    if not isinstance(new, HyperplaneRule):
        return False
    return density_share(old, X, w, spread) <= density_share(new, X, w, spread) + KEEP_DENSITY


def density_share(rule: HyperplaneRule, X: np.ndarray, w: np.ndarray, spread: np.ndarray) -> float:
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


def movement(old: SplitRule, new: SplitRule, X: np.ndarray, w: np.ndarray, old_side: np.ndarray) -> dict:
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
