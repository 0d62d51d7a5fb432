"""The splitter of spectral bi-partitions (SCPP, LMSC): a leaf's split is found on the leaf's own points by
:func:`lowdens_dask.pursuit.spectral.spectral_split` (scale, principal components, microclusters and β search
recomputed per leaf); :func:`~lowdens_dask.growth.grower.grow` splits the largest leaf (the paper's §10 and the R
package's ``SCPP_cluster``), or the least connected one.

The points are rows in memory, the scale-out engine's summaries weighted by their row counts (summary
mode), or microclusters built by a pass over the leaf's own rows (exact mode on chunks). A split's rule is a
hyperplane when the projection is one-dimensional and the two sides' projected centres do not interleave (the
threshold halfway across the gap, which routes exactly as the nearest projected centre), and otherwise the
nearest projected centre (:class:`~lowdens_dask.tree.rules.NearestCentreRule`).

With ``test`` (``n_clusters="auto"``), a leaf's split is found on a random half of its points and is valid only if
the other half's dip test along the direction between the two sides' projected centres is significant
(:mod:`lowdens_dask.pursuit.significance`).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from ..backend import InMemoryData
from ..backend.frame import Frame
from ..pursuit.significance import (
    SplitTest,
    halves,
    has_pursued_null,
    held_out_test,
    is_significant,
    null_applies,
    required,
    tests_on_rows,
)
from ..pursuit.spectral import SpectralSplit, spectral_split
from ..tree.cluster_tree import Node
from ..tree.rules import HyperplaneRule, NearestCentreRule, SplitRule
from .splitter import Candidate, Cut, SplitterBase


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


def _test_direction(split: SpectralSplit) -> np.ndarray:
    """The unit direction (in the points' coordinates) from side 0's projected centres to side 1's."""
    u = split.V @ (split.centres[split.sides].mean(axis=0) - split.centres[~split.sides].mean(axis=0))
    norm = float(np.linalg.norm(u))
    return u / norm if norm > 0 else split.V[:, 0]


class SpectralSplitter(SplitterBase):
    """Finds, tests and makes spectral splits (module docstring): points in ``frame``, rules in the original
    coordinates. In memory a leaf is :class:`~lowdens_dask.backend.InMemoryData` and ``original`` holds its points'
    original coordinates (by :attr:`~lowdens_dask.backend.InMemoryData.index`); ``spread`` is the points'
    within-variance per dimension. On chunked rows (``rows_per_microcluster`` and ``max_per_chunk`` given) a leaf
    is a ``ChunkedNode`` whose points are chunk-local k-means microclusters of its own rows (one pass), which the
    split reduces to its ``n_microclusters``; two more passes count the sides' rows. Each leaf's split draws its
    microclusters' seed from ``random_state`` in the order the leaves are searched. A node's split is re-pursued
    from its current projection (``v0``, when it has the projection's dimension)."""

    def __init__(
        self,
        method: str,
        params: dict,
        min_side: float,
        frame: Frame = Frame(),
        test: SplitTest | None = None,
        *,
        original: np.ndarray | None = None,
        spread: float = 0.0,
        random_state: int | np.random.Generator | None = None,
        rows_per_microcluster: float | None = None,
        max_per_chunk: int | None = None,
    ):
        self.method, self.params, self.min_side, self.frame, self.test = method, params, min_side, frame, test
        self.tested = required(test) is not None
        self.original, self.spread = original, spread
        self.rng = np.random.default_rng(random_state)
        self.rows_per_microcluster, self.max_per_chunk = rows_per_microcluster, max_per_chunk

    def begin(self, root) -> None:
        if self.test is not None and not root.chunked and self.spread == 0:  # as HyperplaneSplitter.begin
            self.test = self.test.with_grid(InMemoryData(root.X))

    def _points(self, data, seed: int):
        """``(points, weights, spread, rows to test a split on or None)``: on chunked rows, microclusters of the
        node's rows and a sample of them; in memory, the rows themselves (summaries: no rows)."""
        if data.chunked:
            summary = data.summarise(self.rows_per_microcluster, self.max_per_chunk, seed)
            points = summary.data()
            return points.X, points.weights, points.within_variance, InMemoryData(summary.sample)
        return data.X, data.weights, self.spread, InMemoryData(data.X, data.weights) if self.spread == 0 else None

    def _in_frame(self, V: np.ndarray) -> np.ndarray:
        """Directions of the original coordinates as directions of the frame (unit columns)."""
        if self.frame.mean is None:
            return V
        V = V * self.frame.scale[:, None]
        return V / np.linalg.norm(V, axis=0)

    def find(self, node: int, data, start: Node | None = None) -> Candidate | None:
        seed = int(self.rng.integers(2**31 - 1))
        X, weights, spread, rows = self._points(data, seed)
        positive = X[weights > 0]
        if len(positive) < 2 or np.ptp(positive, axis=0).max() == 0:
            return None
        v0 = None
        if start is not None:
            V = start.rule.V if isinstance(start.rule, NearestCentreRule) else start.rule.v[:, None]
            v0 = self._in_frame(V) if V.shape[1] == self.params.get("n_components", 2) else None
        test = {}
        on_rows = self.test is not None and rows is not None and has_pursued_null(self.method)
        d_eff = null_applies(self.method, rows, self.test) if on_rows else None  # None: sample splitting
        if self.test is None or d_eff is not None or not self.test.required:  # a ranking test needs the null
            split = spectral_split(
                X, weights, min_side=self.min_side, spread=spread, random_state=seed, v0=v0, **self.params
            )
            if d_eff is not None:  # tested on all of the node's rows against the pursued null
                test = tests_on_rows(self.method, rows, [_test_direction(split)], self.test, d_eff)[0]
        else:
            points = InMemoryData(X, weights, None if spread == 0 else np.full(len(X), spread))
            fit, held = halves(points, self.test.seed, node, self.test.record_step)
            if len(fit.X[fit.weights > 0]) < 2:
                return None
            split = spectral_split(
                fit.X, fit.weights, min_side=self.min_side / 2, spread=spread, random_state=seed, v0=v0, **self.params
            )
            test = held_out_test(held, _test_direction(split))
        stats = {"fval": split.value, "eigenvalue": split.eigenvalue, "balanced": float(split.balanced), **test}
        original = split_rule(split, self.frame)
        parts = sizes = None
        valid = is_significant(stats, required(self.test))
        if valid:  # the sides now: a split that leaves one empty is not valid
            parts, sizes = self._split(data, split_rule(split), original)
            valid = min(sizes) > 0
        return Candidate(original, split.params, stats, valid, (split, parts, sizes), split.n_evaluations)

    def _split(self, data, rule: SplitRule, original: SplitRule):
        if data.chunked:
            parts = data.partition_by(rule)
        else:  # routed in the original coordinates, as ``ClusterTree.predict`` routes them
            above = original.side(self.original[data.index])
            parts = (data.take(~above), data.take(above))
        return parts, tuple(float(part.total_weight) for part in parts)

    def cut(self, node: int, data, candidate: Candidate, forced: bool) -> Cut | None:
        _, parts, sizes = candidate.found
        return Cut(candidate.rule, parts, sizes, candidate.params, candidate.stats)

    def rule_test(self, node: int, data, rule: SplitRule) -> dict:
        if isinstance(rule, HyperplaneRule):
            u = rule.v
        else:  # from side 0's projected centres to side 1's
            u = rule.V @ (rule.centres[rule.sides].mean(axis=0) - rule.centres[~rule.sides].mean(axis=0))
        u = self._in_frame(u[:, None])[:, 0]
        if not data.chunked and self.spread == 0 and has_pursued_null(self.method):
            rows, test = InMemoryData(data.X, data.weights), self.test or SplitTest(0.0, 0)
            d_eff = null_applies(self.method, rows, test)
            if d_eff is not None:
                return tests_on_rows(self.method, rows, [u], test, d_eff)[0]
        test = self.test or SplitTest(0.0, 0)
        return held_out_test(halves(data, test.seed, node, test.record_step)[1], u)


def least_connected(node: Node, data, found) -> float:
    """The ``"fval"`` rank of spectral splits: the lowest λ₂ first."""
    return -found[0].eigenvalue
