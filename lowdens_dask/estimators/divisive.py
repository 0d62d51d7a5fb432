"""Divisive clustering by recursive bi-partition: MDHClustering (PPCI's mddc), PDDP and DePDDP."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import numbers

import numpy as np

from .._warnings import warn
from ..backend import InMemoryData
from ..backend.cluster_summary import ClusterSummary
from ..backend.memory import merge_near_copies
from ..backend.workers import task_slots
from ..growth.grower import Growth, GrowthRules, History, grow
from ..growth.hyperplane_splitter import HyperplaneSplitter
from ..pursuit import Hyperplane
from ..pursuit.significance import SplitTest
from ..tree import ClusterTree
from ._fit import TreeClustering, summary_clause
from ._params import max_node_bytes, param
from ._validation import single_threaded_blas
from .hyperplane import FramedGrowth, sample_in_frame
from .progress import progress_bar


class _DivisiveClustering(FramedGrowth, TreeClustering):
    """Grow a ClusterTree by repeatedly splitting the leaf with the largest split index
    (:func:`lowdens_dask.growth.grower.grow`).

    Each node is re-centred and its split (PCs, bandwidth or scale) recomputed from its own rows. A leaf
    whose split is not valid is split only by ``force_n_clusters``. With ``leaf_order="size"`` a leaf's
    split is computed only when it is the largest splittable leaf, which gives the same tree as computing
    every leaf eagerly.

    ``labels_`` is a numpy array for in-memory input, and a Dask array for Dask or zarr input (backed by
    ``labels_store`` when given), as in dask-ml. ``tree_`` is the fitted tree itself: editing it (prune,
    split) changes what ``predict`` returns, while ``labels_`` and ``n_clusters_`` keep describing the fit
    (recompute them with ``tree_.predict(X)`` and ``tree_.n_leaves``).
    """

    _method: str
    #: Split indices by name: ``(node, data, hyperplane) -> number``, larger first.
    _split_indices: dict
    _updatable = True
    _predict_dtype = [np.float64, np.float32]  # float32 routed as it is

    def _index_params(self) -> dict:
        raise NotImplementedError

    # ------------------------------------------------------------------ growing
    def _grow(self, data, frame, parallel: int, refine) -> Growth:
        """Grow a one-leaf tree on ``data`` (in ``frame``): :func:`~lowdens_dask.growth.grower.grow`."""
        rules = self._rules()
        splitter = self._splitter(frame, rules.test, data, parallel=parallel, refine=refine)
        tree = ClusterTree(data.n_features, self._method, self._tree_params(), root_size=data.total_weight)
        rows = data if data.chunked else None if refine is None else refine.rows
        passes = None if rows is None else (lambda: rows.counter.total)
        bar = progress_bar(type(self).__name__, rules.n_clusters, passes, draw=rows is not None)
        try:
            return grow(tree, data, splitter, rules, progress=bar)
        finally:
            if bar is not None:
                bar.close()

    def _grow_update(self, summary: ClusterSummary, old_weights: np.ndarray) -> Growth:
        """Grow ``tree_`` on the merged summary by the rules of a fit (:meth:`_rules`)."""
        frame, Z, spread = self._in_frame(summary.means, summary.weights, summary.spread)
        # rows seen again, or nearly (a batch that repeats the fitted rows), are tested once, as a fit tests them
        rows, weights, _ = merge_near_copies(summary.sample, summary.sample_row_weights())
        sample = sample_in_frame(rows, frame, weights)
        points = InMemoryData(Z, summary.weights, spread, sample=sample)
        rules = self._rules()
        splitter = self._splitter(frame, rules.test, points, parallel=task_slots(), original=summary.means)
        history = History(summary.means, np.asarray(summary.spread, dtype=np.float64), old_weights, rows)
        with single_threaded_blas():
            return grow(self.tree_, points, splitter, rules, history=history)

    def _target(self):
        """(leaves to grow to, the held-out test of n_clusters="auto" or None)."""
        return growth_target(self)

    def _rules(self) -> GrowthRules:
        """How the tree grows, in :meth:`fit` and :meth:`partial_fit` alike."""
        target, test = self._target()
        told = isinstance(self.n_clusters, numbers.Integral)
        return GrowthRules(
            target,
            self._leaf_order,
            lazy=index_name(param(self, "leaf_order")) == "size",
            force=bool(self.force_n_clusters) and told,
            merge=not told,
            test=test,
        )

    def _splitter(self, frame, test, data, *, parallel=0, refine=None, original=None):
        return HyperplaneSplitter(
            self._method, self._index_params(), self._least_side(data.total_weight), frame, test, parallel=parallel,
            refine=refine, max_node_bytes=max_node_bytes(self) if data.chunked else 0.0,
            least_cluster=self._least_cluster(data.total_weight),
        )  # fmt: skip

    def _least_cluster(self, total: float) -> float:
        """The least weight of a cluster: ``min_size``, and ``min_cluster_size`` (a share of the ``total`` rows
        fitted, or a number of rows). A split must be substantial as well as significant, so that a large sample
        keeps the clusters of the population it was drawn from, not the clumps of its rows, which a consistent test
        resolves at any size; far rows in groups lighter than this are no cluster (the splitter sets them aside)."""
        size = self.min_cluster_size
        return max(self.min_size, size * total if size < 1 else size)

    def _least_side(self, total: float) -> float:
        """The least weight each side of a split holds: with ``n_clusters="auto"`` :meth:`_least_cluster`, else
        ``min_size`` (a told K ranks the substantial splits first: :func:`~lowdens_dask.growth.grower.grow`)."""
        if not (isinstance(self.n_clusters, str) and self.n_clusters == "auto"):
            return self.min_size
        return self._least_cluster(total)

    def _tree_params(self) -> dict:
        """The parameters the tree records."""
        return {**self._index_params(), "min_size": self.min_size}

    def _leaf_order(self, node, data, hp: Hyperplane | None) -> float:
        if callable(param(self, "leaf_order")):
            return float(param(self, "leaf_order")(data.X, hp))
        return self._split_indices[index_name(param(self, "leaf_order"))](node, data, hp)

    def _fitted_attributes(self, growth) -> dict:
        """No attributes of its own; the warnings of a growth that fell short of ``n_clusters``."""
        if growth.n_forced:
            warn(
                f"{growth.n_forced} of the {growth.n_leaves - 1} splits were forced to reach n_clusters="
                f"{self.n_clusters}: no leaf had a valid {self._method} split (they are marked forced in tree_; "
                "force_n_clusters=False stops at the last valid split)."
            )
        if isinstance(self.n_clusters, numbers.Integral) and growth.n_leaves < self.n_clusters:
            warn(
                f"Only {growth.n_leaves} clusters could be formed (n_clusters={self.n_clusters}): no remaining leaf "
                + ("can be split further." if self.force_n_clusters else f"has a valid {self._method} split.")
                + summary_clause(growth)
            )
        return {}


#: A ``split_index`` name with this suffix orders the leaves by that index alone, as PPCI does (``"size-only"`` is
#: ``mddc``'s order), not significant splits first.
ALONE = "-only"


def index_name(leaf_order) -> str | None:
    """The name of the split index ``leaf_order`` names (without :data:`ALONE`); None for a callable."""
    return leaf_order.removesuffix(ALONE) if isinstance(leaf_order, str) else None


def growth_target(est) -> tuple[int | None, SplitTest | None]:
    """The number of leaves to grow to (None: while a valid split exists) and the test of a split (its seed from
    ``random_state``, 0 when None): for ``n_clusters="auto"`` the test each split must pass; for an integer
    ``n_clusters`` the test that ranks the leaves, significant splits first (the one split decision of both: a fit
    told the K that ``"auto"`` finds makes ``"auto"``'s splits), unless ``leaf_order`` ends in :data:`ALONE` or is
    a callable (the user's own order)."""
    seed = int(est.random_state) if isinstance(est.random_state, numbers.Integral) else 0
    test = SplitTest(float(est.significance_level), seed)
    if isinstance(est.n_clusters, str):  # "auto"
        return est.max_clusters, test
    if est.n_clusters is None:
        return est.max_clusters, None
    alone = index_name(param(est, "leaf_order")) != param(
        est, "leaf_order"
    )  # "<name>-only", or a callable: the user's order
    return est.n_clusters, None if alone else test._replace(required=False)


def _size(node, data, hp) -> float:
    return node.size


def _lowest_density(node, data, hp) -> float:
    return 1.0 / hp.fval if hp.fval > 0 else math.inf


def _relative_depth(node, data, hp) -> float:
    return hp.relative_depth


def _scatter(node, data, hp) -> float:
    return data.total_scatter()
