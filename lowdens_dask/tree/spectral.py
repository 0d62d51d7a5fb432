"""Growing a :class:`ClusterTree` by spectral bi-partitions (SCPP, LMSC): split the largest leaf (the paper's
§10 and the R package's ``SCPP_cluster``), or the least connected one, until there are ``n_clusters``, each
split found on the leaf's own points by :func:`lowdens_dask.pursuit.spectral.spectral_split` (scale,
principal components, microclusters and β search recomputed per leaf).

The points are rows in memory, the scale-out engine's summaries weighted by their row counts (summary
mode), or microclusters built by a pass over the leaf's own rows (exact mode on chunks): one code path. A split's rule is a hyperplane when the projection is one-dimensional and the two
sides' projected microclusters do not interleave (the threshold halfway across the gap, which routes
exactly as the nearest projected centre), and otherwise the nearest projected centre
(:class:`~lowdens_dask.tree.rules.NearestCentreRule`).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..backend import InMemoryData
from ..backend.frame import Frame
from ..pursuit.significance import SplitTest, halves, held_out_test
from ..pursuit.spectral import SpectralSplit, spectral_split
from .cluster_tree import ClusterTree
from .rules import HyperplaneRule, NearestCentreRule, SplitRule
from .update import Candidate


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


class _RowsInMemory:
    """Leaves as index arrays into points held in memory (rows, or summary-mode summaries)."""

    def __init__(self, X: np.ndarray, weights: np.ndarray, frame: Frame, spread: float):
        self.X, self.weights, self.spread = X, weights, spread
        self.original = X if frame.mean is None else X * frame.scale + frame.mean

    def root(self):
        return np.arange(self.X.shape[0])

    def size(self, rows) -> float:
        return float(self.weights[rows].sum())

    def points(self, rows, seed: int):
        return self.X[rows], self.weights[rows], self.spread

    def split(self, rows, rule: SplitRule, original: SplitRule):
        """Routed in the original coordinates, as ``ClusterTree.predict`` routes them."""
        above = original.side(self.original[rows])
        parts = (rows[~above], rows[above])
        return parts, tuple(self.size(part) for part in parts)


class _RowsInChunks:
    """Leaves as :class:`~lowdens_dask.backend.chunked.ChunkedNode` objects (exact mode on chunked input): a
    leaf's points are microclusters of its own rows, built by a pass over them."""

    def __init__(self, root, rows_per_microcluster: float, max_per_chunk: int):
        self._root = root
        self.rows_per_microcluster, self.max_per_chunk = rows_per_microcluster, max_per_chunk

    def root(self):
        return self._root

    def size(self, node) -> float:
        return node.total_weight

    def points(self, node, seed: int):
        summary = node.summarise(self.rows_per_microcluster, self.max_per_chunk, seed)
        return summary.X, summary.weights, summary.within_variance

    def split(self, node, rule: SplitRule, original: SplitRule):
        parts = node.split_by(rule)
        return parts, tuple(part.total_weight for part in parts)


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
    split_index: str = "size",
    test: SplitTest | None = None,
) -> SpectralGrowth:
    """Grow a tree of ``n_clusters`` leaves on the points ``X`` (weights ``weights``, in ``frame``) by
    splitting, with :func:`spectral_split` (``params``), the largest leaf (``split_index="size"``) or the leaf
    whose split has the lowest λ₂ (``"fval"``: every leaf's split is computed); ``min_side`` is the balance
    each split is asked for. Leaves without two distinct points of positive weight, or whose split would leave a
    side empty, are not split.

    With ``test`` (``n_clusters="auto"``; ``n_clusters`` is then the cap, None for none), a leaf's split is found
    on a random half of its points and made only if the other half's dip test along the direction between the
    two sides' projected centres is significant (:mod:`lowdens_dask.pursuit.significance`); every leaf records
    its test in ``stats``."""
    rows = _RowsInMemory(X, weights, frame, spread)
    return _grow(rows, X.shape[1], method, params, n_clusters, min_side, frame, random_state, split_index, test)


def grow_spectral_tree_chunked(
    root,
    method: str,
    params: dict,
    *,
    n_clusters: int,
    min_side: float,
    rows_per_microcluster: float,
    max_per_chunk: int,
    frame: Frame = Frame(),
    random_state: int | None = None,
    split_index: str = "size",
    test: SplitTest | None = None,
) -> SpectralGrowth:
    """:func:`grow_spectral_tree` over chunked rows (``root``, a ``ChunkedNode`` in ``frame``): each leaf's
    points are chunk-local k-means microclusters of its own rows (one pass), which the split reduces to its
    ``n_microclusters``; two more passes count the sides' rows."""
    rows = _RowsInChunks(root, rows_per_microcluster, max_per_chunk)
    return _grow(rows, root.n_features, method, params, n_clusters, min_side, frame, random_state, split_index, test)


def _test_direction(split: SpectralSplit) -> np.ndarray:
    """The unit direction (in the points' coordinates) from side 0's projected centres to side 1's."""
    u = split.V @ (split.centres[split.sides].mean(axis=0) - split.centres[~split.sides].mean(axis=0))
    norm = float(np.linalg.norm(u))
    return u / norm if norm > 0 else split.V[:, 0]


def _grow(
    rows, n_features, method, params, n_clusters, min_side, frame, random_state, split_index, test=None
) -> SpectralGrowth:
    root = rows.root()
    tree = ClusterTree(n_features, method, params, root_size=rows.size(root))
    leaves = {0: root}
    sizes = {0: tree.root.size}
    found: dict = {}  # leaf id -> (split, rule in the original coordinates, parts, part sizes), or None
    rng = np.random.default_rng(random_state)
    evaluations = 0
    tests: dict = {}  # leaf id -> its held-out test (n_clusters="auto")
    target = np.inf if n_clusters is None else n_clusters

    def compute(leaf: int) -> None:
        nonlocal evaluations
        if leaf in found:
            return
        seed = int(rng.integers(2**31 - 1))
        X, weights, spread = rows.points(leaves[leaf], seed)
        positive = X[weights > 0]
        found[leaf] = None
        if len(positive) < 2 or np.ptp(positive, axis=0).max() == 0:
            return
        if test is None:
            split = spectral_split(X, weights, min_side=min_side, spread=spread, random_state=seed, **params)
        else:
            points = InMemoryData(X, weights, None if spread == 0 else np.full(len(X), spread))
            fit, held = halves(points, test.seed, leaf)
            if len(fit.X[fit.weights > 0]) < 2:
                return
            split = spectral_split(
                fit.X, fit.weights, min_side=min_side / 2, spread=spread, random_state=seed, **params
            )
            tests[leaf] = held_out_test(held, _test_direction(split))
        evaluations += split.n_evaluations
        original = split_rule(split, frame)
        if test is not None:
            tests[leaf]["original"] = original
            if tests[leaf]["p_value"] >= test.level:
                return
        parts, part_sizes = rows.split(leaves[leaf], split_rule(split), original)
        if min(part_sizes) > 0:
            found[leaf] = (split, original, parts, part_sizes)

    while len(leaves) < target:
        if split_index == "fval":  # every leaf's split, then the least connected one (the lowest λ₂)
            for leaf in leaves:
                compute(leaf)
            candidates = [leaf for leaf in leaves if found[leaf] is not None]
            if not candidates:
                break
            leaf = min(candidates, key=lambda j: (found[j][0].eigenvalue, j))
        else:  # the largest leaf that can be split (the paper's §10 and the R package)
            candidates = [leaf for leaf in leaves if found.get(leaf, True) is not None]
            if not candidates:
                break
            leaf = max(candidates, key=lambda j: (sizes[j], -j))
            compute(leaf)
            if found[leaf] is None:
                continue
        split, original, parts, part_sizes = found.pop(leaf)
        stats = {"fval": split.value, "eigenvalue": split.eigenvalue, "balanced": float(split.balanced)}
        stats.update(_test_stats(tests.pop(leaf, {})))
        node = tree.add_rule_split(leaf, method, original, part_sizes, split.params, stats)
        del leaves[leaf]
        for child, part, size in zip(node.children, parts, part_sizes):
            leaves[child], sizes[child] = part, size
    for leaf, record in tests.items():  # auto: the leaves' would-be splits and their tests
        if leaf in leaves:
            tree.nodes[leaf].set_rule(method, record["original"], {}, _test_stats(record))
    unbalanced = sum(1 for node in tree if not node.is_leaf and not node.stats["balanced"])
    return SpectralGrowth(tree, len(leaves), evaluations, unbalanced)


def _test_stats(record: dict) -> dict:
    return {key: record[key] for key in ("dip", "p_value", "n_test") if key in record}


class SpectralSplitter:
    """Finds and tests spectral splits for :func:`lowdens_dask.tree.update.update_tree`, as :func:`_grow` does:
    points in ``frame``, rules in the original coordinates. A node's split is re-pursued from its current
    projection (``v0``, when it has the projection's dimension)."""

    def __init__(self, method, params, min_side, frame: Frame, spread: float, test: SplitTest | None, seed: int):
        self.method, self.params, self.min_side, self.frame = method, params, min_side, frame
        self.spread, self.test, self.seed = spread, test, seed

    def _in_frame(self, V: np.ndarray) -> np.ndarray:
        """Directions of the original coordinates as directions of the frame (unit columns)."""
        if self.frame.mean is None:
            return V
        V = V * self.frame.scale[:, None]
        return V / np.linalg.norm(V, axis=0)

    def find(self, points: InMemoryData, node: int, start) -> Candidate | None:
        fit, held = (points, None) if self.test is None else halves(points, self.test.seed, node)
        positive = fit.X[fit.weights > 0]
        if len(positive) < 2 or np.ptp(positive, axis=0).max() == 0:
            return None
        v0 = None
        if start is not None:
            V = start.rule.V if isinstance(start.rule, NearestCentreRule) else start.rule.v[:, None]
            v0 = self._in_frame(V) if V.shape[1] == self.params.get("n_components", 2) else None
        split = spectral_split(
            fit.X, fit.weights, min_side=self.min_side / (1 if self.test is None else 2), spread=self.spread,
            random_state=int(np.random.default_rng([self.seed, node]).integers(2**31 - 1)), v0=v0, **self.params,
        )  # fmt: skip
        stats = {"fval": split.value, "eigenvalue": split.eigenvalue, "balanced": float(split.balanced)}
        if held is not None:
            stats.update(held_out_test(held, _test_direction(split)))
        valid = min(split.weights) > 0 and (self.test is None or stats["p_value"] < self.test.level)
        return Candidate(split_rule(split, self.frame), split.params, stats, valid)

    def held_out(self, points: InMemoryData, node: int, rule: SplitRule) -> dict:
        if isinstance(rule, HyperplaneRule):
            u = rule.v
        else:  # from side 0's projected centres to side 1's
            u = rule.V @ (rule.centres[rule.sides].mean(axis=0) - rule.centres[~rule.sides].mean(axis=0))
        return held_out_test(halves(points, self.test.seed, node)[1], self._in_frame(u[:, None])[:, 0])
