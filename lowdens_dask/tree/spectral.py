"""The splitter of spectral bi-partitions (SCPP, LMSC): a leaf's split is found on the leaf's own points by
:func:`lowdens_dask.pursuit.spectral.spectral_split` (scale, principal components, microclusters and β search
recomputed per leaf); :func:`~lowdens_dask.tree.grower.grow` splits the largest leaf (the paper's §10 and the R
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

from typing import NamedTuple

import dask
import numpy as np
from dask.base import tokenize

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
from .cluster_tree import Node
from .rules import HyperplaneRule, NearestCentreRule, SplitRule
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


class _Search(NamedTuple):
    """A leaf's search: the points its split is pursued on, the seed and start, and how the split is tested (on
    ``rows`` against the pursued null when ``d_eff`` is given, else on the ``held`` out half, if any)."""

    X: np.ndarray
    weights: np.ndarray
    spread: float
    seed: int
    v0: np.ndarray | None
    min_side: float
    rows: InMemoryData | None = None
    d_eff: float | None = None
    held: InMemoryData | None = None


def _pursue(search: _Search, params: dict) -> SpectralSplit:
    """The search's spectral split (a plain function: it runs in a Dask task)."""
    return spectral_split(
        search.X, search.weights, min_side=search.min_side, spread=search.spread, random_state=search.seed,
        v0=search.v0, **params
    )  # fmt: skip


class SpectralSplitter(SplitterBase):
    """Finds, tests and makes spectral splits (module docstring): points in ``frame``, rules in the original
    coordinates. In memory a leaf is :class:`~lowdens_dask.backend.InMemoryData` and ``original`` holds its points'
    original coordinates (by :attr:`~lowdens_dask.backend.InMemoryData.index`); ``spread`` is the points'
    within-variance per dimension. On chunked rows (``rows_per_microcluster`` and ``max_per_chunk`` given) a leaf
    is a ``ChunkedNode`` whose points are chunk-local k-means microclusters of its own rows (one pass), which the
    split reduces to its ``n_microclusters``; two more passes count the sides' rows. Each leaf's split draws its
    microclusters' seed from ``random_state`` in the order the leaves are searched. A node's split is re-pursued
    from its current projection (``v0``, when it has the projection's dimension). With ``parallel`` (summary mode:
    the tasks the cluster runs at once), the two children of a split are searched as two Dask tasks
    (:meth:`prefetch`)."""

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
        parallel: int = 0,
    ):
        self.method, self.params, self.min_side, self.frame, self.test = method, params, min_side, frame, test
        self.tested = required(test) is not None
        self.original, self.spread = original, spread
        self.rng = np.random.default_rng(random_state)
        self.rows_per_microcluster, self.max_per_chunk = rows_per_microcluster, max_per_chunk
        self.parallel, self.token = parallel, None

    def begin(self, root) -> None:
        if self.parallel:
            self.token = tokenize(root.token, self.method, self.params, self.min_side)[:8]
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
        search = self._search(node, data, start)
        return None if search is None else self._candidate(data, search, _pursue(search, self.params))

    def prefetch(self, nodes: dict, eager: bool) -> dict:
        """Both children of a split, searched at once as two Dask tasks, where every leaf's split is needed
        (``eager``) and the cluster runs two tasks at once (``parallel``): their seeds are drawn here in the order the
        grower would search them, so that the splits are those of :meth:`find`."""
        if not eager or self.parallel < 2 or any(data.chunked for data in nodes.values()):
            return {}
        searches = {c: self._search(c, data) for c, data in nodes.items()}
        jobs = {c: search for c, search in searches.items() if search is not None}
        tasks = [  # (the task needs only the points, not the rows the split is tested on)
            dask.delayed(_pursue)(
                search._replace(rows=None, held=None), self.params, dask_key_name=f"lowdens-split-node-{c}-{self.token}"
            )
            for c, search in jobs.items()
        ]
        size = sum(search.X.nbytes for search in jobs.values())
        # the points are in the graph on purpose (as HyperplaneSplitter's tasks): no "large graph" warning for them
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": f"{size + 10 * 2**20}B"}):
            splits = dict(zip(jobs, dask.compute(*tasks)))
        return {c: None if c not in jobs else self._candidate(nodes[c], jobs[c], splits[c]) for c in nodes}

    def _search(self, node: int, data, start: Node | None = None) -> _Search | None:
        """What the leaf's search needs, its seed drawn (in the order the leaves are searched); None when the leaf's
        points cannot be split."""
        seed = int(self.rng.integers(2**31 - 1))
        X, weights, spread, rows = self._points(data, seed)
        positive = X[weights > 0]
        if len(positive) < 2 or np.ptp(positive, axis=0).max() == 0:
            return None
        v0 = None
        if start is not None:
            V = start.rule.V if isinstance(start.rule, NearestCentreRule) else start.rule.v[:, None]
            v0 = self._in_frame(V) if V.shape[1] == self.params.get("n_components", 2) else None
        on_rows = self.test is not None and rows is not None and has_pursued_null(self.method)
        d_eff = null_applies(self.method, rows, self.test) if on_rows else None  # None: sample splitting
        if self.test is None or d_eff is not None or not self.test.required:  # a ranking test needs the null
            return _Search(X, weights, spread, seed, v0, self.min_side, rows, d_eff)
        points = InMemoryData(X, weights, None if spread == 0 else np.full(len(X), spread))
        fit, held = halves(points, self.test.seed, node)
        if len(fit.X[fit.weights > 0]) < 2:
            return None
        return _Search(fit.X, fit.weights, spread, seed, v0, self.min_side / 2, held=held)

    def _candidate(self, data, search: _Search, split: SpectralSplit) -> Candidate:
        """The leaf's candidate from its search's split: tested (on the node's rows against the pursued null, or on
        the held-out half) and, if valid, its sides."""
        test = {}
        if search.d_eff is not None:  # tested on all of the node's rows against the pursued null
            test = tests_on_rows(self.method, search.rows, [_test_direction(split)], self.test, search.d_eff)[0]
        elif search.held is not None:
            test = held_out_test(search.held, _test_direction(split))
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
        seed = 0 if self.test is None else self.test.seed
        return held_out_test(halves(data, seed, node)[1], u)


def least_connected(node: Node, data, found) -> float:
    """The ``"fval"`` rank of spectral splits: the lowest λ₂ first."""
    return -found[0].eigenvalue
