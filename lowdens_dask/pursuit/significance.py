"""The significance of a split found by projection pursuit, against a one-cluster null (``n_clusters="auto"``).

A pursued hyperplane is chosen to make its projection look bimodal, so a test of unimodality on the rows that
chose it is anti-conservative. The split is therefore found on a random half of the node's rows and tested on
the other half (sample splitting, as in Cox, Biometrika 62(2), 1975, and Wasserman & Roeder's "screen and
clean", Ann. Statist. 37(5A), 2009): given the direction, the held-out half is an independent sample of the
node's distribution, so under a unimodal null (one Gaussian, one uniform cube) its projection is unimodal and
Hartigan's dip test (:mod:`lowdens_dask.kernels.dip`, calibrated on the uniform, its least favourable unimodal
null) gives a valid p-value for every index, every n and every dimension. The split made is the one tested
(exact mode on chunked rows: the split is found on every row, and the test made on the node's summary).

Summaries (microclusters with weights and spreads) are split by microcluster. The held-out half is tested as
the distribution it stands for: :data:`POINTS_PER_MICROCLUSTER` points per microcluster on average (no more than the
rows it holds; one per microcluster beyond :data:`SUMMARY_TEST_ROWS` points in all), placed in proportion to the weights (systematic sampling
in a random order), a microcluster with c points giving the quantiles (j + 1/2) / c of a normal with its mean and
spread along the direction. Measured on a 10⁶-row Gaussian in d = 32 (5,120 microclusters, MDH and NCut, four
halvings each): one point per microcluster p > 0.88, two p < 0.03 (each pair at ±0.67 σ is a comb the dip
reads), four p > 0.84, eight and sixteen p > 0.99. The p-value is read at the number of microclusters, not of
points (:func:`held_out_test`): on the 10⁷-row scale mixture, read at eight points per microcluster, NCut's
leaves of a few dozen microclusters gave p of 0.002 to 0.008 for splits that peel off a few thousand rows
(21 clusters for 16).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import ndtri

from ..kernels.dip import dip_pvalue, dip_statistic, spread_ties
from .hyperplanes import Hyperplane

#: Summary mode: the held-out half is tested as a sample of this many points per microcluster on average, or of
#: one per microcluster where that would exceed SUMMARY_TEST_ROWS points (never two or three: see the module
#: docstring), and of at most SUMMARY_TEST_ROWS points.
POINTS_PER_MICROCLUSTER = 8
SUMMARY_TEST_ROWS = 1_000_000


class SplitTest(NamedTuple):
    """How ``n_clusters="auto"`` tests a node's split: the significance level and the seed of the halves."""

    level: float
    seed: int


def half_indices(n: int, seed: int, node: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``n`` points in two random halves ``(fit, test)``, drawn from ``(seed, node)``."""
    order = np.random.default_rng([seed, node]).permutation(n)
    return np.sort(order[: n // 2]), np.sort(order[n // 2 :])


def halves(data, seed: int, node: int):
    """The node's rows (or microclusters) in two random halves: ``(fit, test)`` (:func:`half_indices`)."""
    fit, test = half_indices(data.n_samples, seed, node)
    return data.take(fit), data.take(test)


def held_out_sample(data, v: np.ndarray) -> np.ndarray:
    """The held-out rows' projections on ``v``, sorted; for weighted rows or a summary, the distribution they
    stand for (see the module docstring)."""
    p = data.project(v)
    w = data.weights
    if data.spread is None and np.all(w == 1.0):
        return np.sort(p)
    # POINTS_PER_MICROCLUSTER per summary row on average, placed systematically in proportion to the weights: a
    # summary row with c points gives its normal's quantiles (j + 1/2) / c
    per = POINTS_PER_MICROCLUSTER if POINTS_PER_MICROCLUSTER * data.n_samples <= SUMMARY_TEST_ROWS else 1
    size = int(min(max(round(data.total_weight), 2), per * data.n_samples, SUMMARY_TEST_ROWS))
    order = np.random.default_rng(0).permutation(len(w))  # no alignment with any order of the summary rows
    at = np.searchsorted(np.cumsum(w[order]), (np.arange(size) + 0.5) * (w.sum() / size), side="right")
    owner = np.sort(order[np.minimum(at, len(w) - 1)])
    counts = np.bincount(owner, minlength=len(w))
    within = np.arange(size) - (np.cumsum(counts) - counts)[owner]
    z = ndtri((within + 0.5) / counts[owner])
    sd = np.zeros_like(p) if data.spread is None else np.sqrt(np.maximum(data.spread, 0.0))
    return np.sort(p[owner] + sd[owner] * z)


def unimodality_test(sample: np.ndarray, n: int | None = None) -> dict:
    """Hartigan's dip test of unimodality on a sample (ties spread, :func:`~lowdens_dask.kernels.dip.spread_ties`),
    its p-value at ``n`` points (the sample's size by default): the statistics a node records, ``dip``,
    ``p_value`` and ``n_test``."""
    x = spread_ties(sample)
    n = x.size if n is None else int(n)
    if x.size < 4 or n < 4 or x[0] == x[-1]:
        return {"dip": 0.0, "p_value": 1.0, "n_test": float(n)}
    dip = float(dip_statistic(x))
    return {"dip": dip, "p_value": dip_pvalue(dip, n), "n_test": float(n)}


def held_out_test(data, v: np.ndarray) -> dict:
    """The dip test of the held-out rows (or summary) ``data`` along ``v``. A summary's p-value is read at its
    number of microclusters (at most its rows), its resolution, not at the size of the smooth sample of
    :func:`held_out_sample`, which would count a small leaf's few microclusters as eight times as many points
    (module docstring)."""
    summary = data.spread is not None or not np.all(data.weights == 1.0)
    n = min(max(round(data.total_weight), 2), data.n_samples) if summary else None
    return unimodality_test(held_out_sample(data, v), n)


def mean_difference_test(X: np.ndarray, weights: np.ndarray, side: np.ndarray, test_rows) -> dict:
    """The dip test of ``test_rows`` along the direction from the weighted mean of the rows ``X`` on side 0 of a
    split found on them to that of side 1 (splits that are no hyperplane: MSC, SVM-relabel)."""
    if not (weights[side].sum() > 0 and weights[~side].sum() > 0):
        return {"dip": 0.0, "p_value": 1.0, "n_test": 0.0}
    u = np.average(X[side], axis=0, weights=weights[side]) - np.average(X[~side], axis=0, weights=weights[~side])
    norm = float(np.linalg.norm(u))
    if not norm > 0:
        return {"dip": 0.0, "p_value": 1.0, "n_test": 0.0}
    return held_out_test(test_rows, u / norm)


def with_test(hp: Hyperplane, test_rows) -> Hyperplane:
    """``hp`` (found on the other half) with the dip test of ``test_rows`` along it in ``stats``."""
    return hp._replace(stats={**hp.stats, **held_out_test(test_rows, hp.v)})


def is_significant(stats: dict, test: SplitTest | None) -> bool:
    """Whether a split whose held-out test gave ``stats`` is significant: its p-value is below ``test.level``
    (always, without a test). The one place where a split is judged against the one-cluster null."""
    return test is None or stats.get("p_value", 1.0) < test.level
