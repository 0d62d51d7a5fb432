"""Routing rows down a :class:`~lowdens_dask.tree.ClusterTree` in one matrix product per block of rows.

The rows, in their own precision (float32 stays float32), are multiplied by one matrix holding every hyperplane
node's direction and every nearest-centre node's projection (SCPP, LMSC) at once; a compiled walk
(:func:`~lowdens_dask.kernels.routing.walk_projections`) then compares the projections with the thresholds,
and finds the nearest projected centre among the few a grid over the node's projection leaves possible. The
result is the same as routing each node's rows by its rule in float64 (``HyperplaneRule.side``,
``NearestCentreRule.side``): a row whose projection lies within the product's rounding error of a threshold,
or whose nearest centres of the two sides are that close to equidistant, and a row that reaches a split of
another kind of rule, is routed from there by the rules themselves on a float64 copy of that row alone. Ties
are rare (they need a row within about ``d * 2**-23`` of relative distance from a boundary in float32).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..kernels.routing import (
    AT_LEAF,
    LEAF,
    NONFINITE,
    OTHER_RULE,
    CentreTables,
    row_abs_sums,
    walk_projections,
)
from .rules import HyperplaneRule, NearestCentreRule

if TYPE_CHECKING:
    from .cluster_tree import ClusterTree

#: Rows routed at once: the projections of a block (rows x hyperplane nodes) stay in cache.
ROUTE_BLOCK = 32_768


class Router:
    """The hyperplanes of a tree as one matrix, and the node arrays of the compiled walk.

    Parameters
    ----------
    tree : ClusterTree
        The tree, as it is now (build a new router after editing it).
    """

    def __init__(self, tree: ClusterTree):
        self.tree = tree
        size = max(tree.nodes) + 1
        self.column = np.full(size, LEAF, dtype=np.int64)
        self.threshold = np.zeros(size)
        self.children = np.zeros((size, 2), dtype=np.int64)
        rule_of = np.full(size, -1, dtype=np.int64)
        directions, centre_rules = [], []
        for node in tree.nodes.values():
            if node.is_leaf:
                continue
            self.children[node.id] = node.children
            if isinstance(node.rule, HyperplaneRule):
                self.column[node.id] = len(directions)
                self.threshold[node.id] = node.rule.b
                directions.append(node.rule.v)
            elif isinstance(node.rule, NearestCentreRule):
                self.column[node.id] = len(directions)
                rule_of[node.id] = len(centre_rules)
                directions.extend(node.rule.V.T)
                centre_rules.append(node.rule)
            else:
                self.column[node.id] = OTHER_RULE
        d = tree.n_features
        self.V = np.ascontiguousarray(np.stack(directions, axis=1) if directions else np.zeros((d, 0)))
        self._V32 = self.V.astype(np.float32)
        self._vmax = np.abs(self.V).max(axis=0, initial=0.0)
        self.tables = _centre_tables(rule_of, centre_rules)

    def _tolerance(self, dtype: np.dtype) -> tuple[np.ndarray, float]:
        """Per column of :attr:`V`, a bound on |computed - float64 projection| per unit of ``sum_c |x_c|``, and an
        absolute slack.

        The product in ``dtype`` (directions rounded to it) errs by at most ``(d + 1) u`` times
        ``sum_c |x_c v_c|`` whatever the summation order, and the float64 rule by ``d 2**-53`` times the same;
        the bound doubles their sum, with ``|v_c| <= max |v|``. The slack covers underflow (``d`` subnormal units).
        """
        d = self.V.shape[0]
        info = np.finfo(dtype)
        factor = 2.0 * ((d + 1) * float(info.eps) / 2 + d * 2.0**-53)
        slack = 2.0 * (d + 1) * (float(info.smallest_subnormal) + 5e-324)
        return factor * self._vmax, slack

    def walk(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(node, status)`` per row of X (float32 or float64): where the compiled walk stopped, and why
        (``kernels.routing.AT_LEAF``, ``UNDECIDED`` or ``NONFINITE``)."""
        V = self._V32 if X.dtype == np.float32 else self.V
        tolerance, slack = self._tolerance(X.dtype)
        n = X.shape[0]
        node = np.empty(n, dtype=np.int64)
        status = np.empty(n, dtype=np.int8)
        abs_sums = np.empty(min(n, ROUTE_BLOCK))
        for start in range(0, n, ROUTE_BLOCK):
            block = X[start : start + ROUTE_BLOCK]
            stop = start + block.shape[0]
            sums = abs_sums[: block.shape[0]]
            row_abs_sums(block, sums)
            walk_projections(
                block @ V, sums, self.column, self.threshold, tolerance, slack, self.children, self.tables,
                node[start:stop], status[start:stop],
            )  # fmt: skip
        return node, status

    def apply(self, X, nonfinite: int | None = None) -> np.ndarray:
        """The id of the leaf each row of X reaches, as ``ClusterTree.apply``.

        Rows with NaN or inf get ``nonfinite`` when it is given, else they are routed by the rules as any
        other row.
        """
        X = as_routable(X)
        node, status = self.walk(X)
        if nonfinite is not None:
            node[status == NONFINITE] = nonfinite
            status[status == NONFINITE] = AT_LEAF
        rest = np.flatnonzero(status != AT_LEAF)
        if rest.size:
            node[rest] = self._route_by_rules(np.asarray(X[rest], dtype=np.float64), node[rest])
        return node

    def _route_by_rules(self, X: np.ndarray, start: np.ndarray) -> np.ndarray:
        """Leaf ids of rows routed node by node by the rules themselves (float64), each from its start node."""
        out = np.empty(X.shape[0], dtype=np.int64)
        stack = [(int(s), np.flatnonzero(start == s)) for s in np.unique(start)]
        while stack:
            node_id, rows = stack.pop()
            node = self.tree.nodes[node_id]
            if node.is_leaf:
                out[rows] = node_id
                continue
            above = node.rule.side(X[rows])
            stack.append((node.children[0], rows[~above]))
            stack.append((node.children[1], rows[above]))
        return out


def as_routable(X) -> np.ndarray:
    """X as a 2-D array the router multiplies as it is: float32 and float64 arrays unchanged, other numbers as
    float64."""
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    return X


def _centre_tables(rule_of: np.ndarray, rules: list[NearestCentreRule]) -> CentreTables:
    """The nearest-centre splits ``rules`` (``rule_of``: each node's index among them, or -1) as the compiled
    walk's tables, from each rule's grid (:meth:`NearestCentreRule.grid`)."""
    width = max((rule.V.shape[1] for rule in rules), default=1)
    grids = [rule.grid() for rule in rules]
    R = len(rules)
    lo, inv_width, size = np.zeros((R, width)), np.ones((R, width)), np.ones((R, width), dtype=np.int64)
    for r, grid in enumerate(grids):
        l = len(grid[0])
        lo[r, :l], inv_width[r, :l], size[r, :l] = grid[0], grid[1], grid[2]
    n_centres = np.array([len(rule.sides) for rule in rules], dtype=np.int64)
    n_cells = np.array([len(grid[3]) - 1 for grid in grids], dtype=np.int64)
    centre_ptr = np.concatenate([[0], np.cumsum(n_centres)]).astype(np.int64)
    cell_base = np.concatenate([[0], np.cumsum(n_cells)[:-1]]).astype(np.int64)
    centres = np.zeros((int(centre_ptr[-1]), width))
    for r, rule in enumerate(rules):
        centres[centre_ptr[r] : centre_ptr[r + 1], : rule.V.shape[1]] = rule.centres
    ptr = [np.zeros(1, dtype=np.int64)]
    for grid in grids:  # each grid's pointers, shifted past the candidates of the grids before it
        ptr.append(grid[3][1:] + ptr[-1][-1])
    return CentreTables(
        rule=rule_of,
        dims=np.array([rule.V.shape[1] for rule in rules], dtype=np.int64),
        centre_ptr=centre_ptr,
        centres=centres,
        sides=np.concatenate([rule.sides for rule in rules]) if rules else np.zeros(0, dtype=bool),
        lo=lo,
        inv_width=inv_width,
        size=size,
        cell_base=cell_base,
        cell_ptr=np.concatenate(ptr),
        candidates=np.concatenate([grid[4] + centre_ptr[r] for r, grid in enumerate(grids)] or [np.zeros(0, np.int64)]),
        room=np.concatenate([grid[5] for grid in grids] or [np.zeros(0)]),
        pure=np.concatenate([grid[6] for grid in grids] or [np.zeros(0, dtype=np.int8)]),
    )
