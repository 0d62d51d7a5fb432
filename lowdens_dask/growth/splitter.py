"""The splitter contract: how :func:`~lowdens_dask.growth.grower.grow` asks a family of indices or rules for a
node's split, and how it makes one.

A splitter holds everything about its family: the index and its parameters, the frame its points are in,
the significance test of ``n_clusters="auto"`` (:class:`~lowdens_dask.pursuit.significance.SplitTest`), how it
reaches a node's rows (in memory, by passes over chunks, in Dask tasks). The grower holds none of it: it
chooses the leaves, asks :meth:`Splitter.find` for their splits, judges them by :attr:`Candidate.valid`, and
changes the tree with what :meth:`Splitter.cut` returns. Splitters: :class:`~lowdens_dask.growth.hyperplane_splitter.
HyperplaneSplitter` (every projection index), :class:`~lowdens_dask.growth.spectral_splitter.SpectralSplitter` (SCPP,
LMSC), and the MSC and SVM-relabel splitters of their estimators.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from ..tree.cluster_tree import Node
from ..tree.rules import SplitRule


class Candidate(NamedTuple):
    """A split found for a node: its rule in the tree's (original) coordinates, the pursuit's parameters and
    statistics (the significance test's included), and whether it is valid (its index accepts it and, for
    ``"auto"``, it is significant: :func:`~lowdens_dask.pursuit.significance.is_significant`)."""

    rule: SplitRule
    params: dict
    stats: dict
    valid: bool
    #: the splitter's own result (a hyperplane in its frame, a spectral split with its parts, ...), for ranking
    found: Any = None
    n_evaluations: int = 0


class Cut(NamedTuple):
    """A split as it is made: the rule (tree coordinates), the two sides' data and sizes (total weight), and the
    parameters and statistics the node records."""

    rule: SplitRule
    parts: tuple
    sizes: tuple[float, float]
    params: dict
    stats: dict
    extra: Any = None  #: what the splitter carries to its children (e.g. their chunked rows, for refine)


class Splitter(Protocol):
    """What :func:`~lowdens_dask.growth.grower.grow` needs of a splitter. ``data`` is a node's rows in the
    splitter's own form (:class:`~lowdens_dask.backend.InMemoryData` for points in memory)."""

    method: str
    #: whether a split must pass a significance test (``n_clusters="auto"``): leaves then record their would-be split
    tested: bool

    def begin(self, root: Any) -> None:
        """Start growing from ``root``'s rows (task names, pass counts)."""

    def find(self, node: int, data: Any, start: Node | None = None) -> Candidate | None:
        """The node's best split (re-pursued from ``start``'s rule when given), or None when it is too small."""

    def prefetch(self, nodes: dict[int, Any], eager: bool) -> dict[int, Candidate | None]:
        """The splits of a new split's children found at once (in Dask tasks), where that pays; may be empty."""

    def cut(self, node: int, data: Any, candidate: Candidate, forced: bool) -> Cut | None:
        """Make ``candidate`` safe to route by and split ``data`` with it; None when a side would be empty (or
        below the index's least size), or within rounding error of the other."""

    def made(self, node: int, children: tuple[int, int], cut: Cut) -> None:
        """The split was made: ``children`` are the new leaves."""

    def forced_score(self, candidate: Candidate) -> float:
        """How much ``force_n_clusters`` prefers this (invalid) split: larger first."""

    def rule_test(self, node: int, data: Any, rule: SplitRule) -> dict:
        """The test of an existing rule on the node's points, as a split found there is tested (``dip``, ``p_value``,
        ``n_test``)."""


class SplitterBase:
    """Defaults of the :class:`Splitter` hooks that most splitters need no more of."""

    method: str
    tested: bool = False
    #: the least weight of a cluster (``min_cluster_size``): a told K ranks splits whose lighter side holds less after
    #: the others (the one decision of ``"auto"`` and a told K)
    least_cluster: float = 0.0

    def begin(self, root) -> None:
        pass

    def prefetch(self, nodes: dict, eager: bool) -> dict:
        return {}

    def made(self, node: int, children: tuple[int, int], cut: Cut) -> None:
        pass

    def forced_score(self, candidate: Candidate) -> float:
        return float(candidate.stats.get("fval", 0.0))

    def rule_test(self, node: int, data, rule: SplitRule) -> dict:
        raise NotImplementedError(f"The {self.method} splitter cannot test an existing rule.")
