"""The SVM-relabel splitter: one SVM-relabel split of a leaf's points (Winters-Hilt & Merat; spec
``shared/research/seed-svm.md``; the algorithm is :func:`lowdens_dask.pursuit.svm_relabel.svm_relabel_split`),
for the grower (:mod:`lowdens_dask.growth.grower`)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from ..backend import InMemoryData
from ..pursuit.significance import SplitTest, half_indices, is_significant, mean_difference_test
from ..pursuit.svm_relabel import svm_relabel_split
from ..tree.rules import KernelExpansionRule
from .splitter import Candidate, Cut, SplitterBase


class RelabelSplitter(SplitterBase):
    """SVM-relabel splits of points in memory (rows, or summaries with their per-dimension ``spread``): a leaf is
    :class:`~lowdens_dask.backend.InMemoryData` of its points; the labelling is found on the points standardised
    (``Z``, with ``mean`` and ``scale``) and its rule routes the original rows. With ``test`` (``"auto"``) it is
    found on a random half and tested on the other along the sides' mean difference."""

    method = "svm-relabel"

    def __init__(self, X, weights, Z, spread, mean, scale, params: dict, test: SplitTest | None, seeds):
        self.X, self.weights, self.Z, self.spread, self.mean, self.scale = X, weights, Z, spread, mean, scale
        self.params, self.test, self.seeds = params, test, seeds
        self.tested = test is not None

    def find(self, node: int, data, start=None) -> Candidate | None:
        rows = data.index
        fit = rows if self.test is None else rows[half_indices(len(rows), self.test.seed, node)[0]]
        w = self.weights[fit]
        within = 0.0 if self.spread is None else self.Z.shape[1] * float(w @ self.spread[fit] / w.sum())
        split = svm_relabel_split(
            self.Z[fit], w, spread=within, random_state=int(self.seeds.randint(2**31 - 1)), **self.params
        )
        if split is None:
            return None
        support = split.support if self.mean is None else split.support * self.scale + self.mean
        rule = KernelExpansionRule(support, split.coef, split.intercept, "rbf", split.gamma, self.scale)
        stats = {
            "fval": split.sse,
            "sse": split.sse,
            "sse_null_threshold": split.null_threshold,
            "sse_null_mean": split.null_mean,
            "sse_null_p_value": split.p_value,
            "converged": float(split.converged),
            "n_points": split.n_points,
            "n_support": len(split.coef),
            "n_svm_fits": split.n_fits,
            "n_relabel_runs": split.n_runs,
            "n_successful": split.n_successful,
        }
        if self.test is not None:  # found on one half, tested on the other along the sides' mean difference
            held = rows[half_indices(len(rows), self.test.seed, node)[1]]
            spread = None if self.spread is None else self.spread[held]
            test_rows = InMemoryData(self.X[held], self.weights[held], spread)
            stats.update(mean_difference_test(self.X[fit], w, rule.side(self.X[fit]), test_rows))
        params = {"gamma": split.gamma, "C": float(self.params["C"])}
        return Candidate(rule, params, stats, is_significant(stats, self.test), split, split.n_fits)

    def cut(self, node: int, data, candidate: Candidate, forced: bool) -> Cut | None:
        side = candidate.rule.side(self.X[data.index])
        parts = (data.take(~side), data.take(side))
        sizes = tuple(part.total_weight for part in parts)
        if min(sizes) <= 0:  # rounding moved every point of one side across f = 0
            return None
        return Cut(candidate.rule, parts, sizes, candidate.params, candidate.stats)
