"""Projection indices on the projections' Gaussian kernel density: MDH's minimum density (MDP²) and
dePDDP's lowest density minimum along the first principal component.

The numba kernels are those of :mod:`.density` (whole arrays in memory) and :mod:`.density_passes` (the same
steps as chunk maps and tree reductions, for exact chunked mode).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

import numpy as np

from .._warnings import warn
from ..kernels.kde import SQRT_2PI, kernel_sums, weighted_moments
from . import density_passes as passes
from .base import Profile, ProjectionIndex, Split, gathers, register_index
from .density import (
    GRID_STEP,
    adjacent_modes,
    log_density_gradient,
    log_penalised_density,
    lowest_density_minimum,
    minimise_penalised_density,
    penalty_coefficient,
    relative_depth_from_logs,
)

#: The paper's alpha continuation: alpha_min close to 0, then 0.1 steps up to alpha_max = 0.9 (§5.1.1).
DEFAULT_ALPHAS = (0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: Fewest and most points of a plotted density profile (otherwise one per ``GRID_STEP`` bandwidths).
PROFILE_POINTS = (512, 2048)
#: What a density index's recorded ``fval`` is, beside the density a plot draws from the rows it is given.
FVAL_NOTE = (
    "recorded fval: the density at b of the points the split was fitted on (rows in memory; in summary mode, "
    "microclusters, with h widened by their spread)"
)


#: The legal bandwidths (data units). The index measures distances in bandwidths and squares them ((x - b)² / h²,
#: the penalty's 1/h², the Newton steps' 1/h⁴ as ratios): within this range they stay finite in float64 for data
#: of any ordinary scale (|x| up to about 1e50); far outside it they overflow or underflow (issue 22, point 15:
#: h = 1e-300 divided by zero, h = 1e300 asked for a grid of negative size). Data of an extreme scale can be
#: fitted with ``standardize=True``.
BANDWIDTH_RANGE = (1e-100, 1e100)


def silverman_bandwidth(sigma_pc1: float, total_weight: float) -> float:
    """h = 0.9 sigma_pc1 n^(-1/5) (Silverman's rule on the first principal component, seed-mdh §5.2)."""
    return 0.9 * sigma_pc1 * total_weight ** (-0.2)


def node_bandwidth(bandwidth, data, sigma_pc1: float) -> float:
    """The bandwidth of a node: Silverman's rule (None or "silverman"), a number, or ``bandwidth(X)``.

    For summaries, each mean stands for rows spread around it, so the rule's h is widened by their variance.
    """
    if bandwidth is None or (isinstance(bandwidth, str) and bandwidth == "silverman"):
        h = math.sqrt(silverman_bandwidth(sigma_pc1, data.total_weight) ** 2 + data.within_variance)
    elif callable(bandwidth):
        h = float(bandwidth(data.X))
    else:
        h = float(bandwidth)
    if not (h > 0 and math.isfinite(h)):
        raise ValueError(
            f"The bandwidth must be a positive finite number; got {h!r}"
            + (" (the data have zero variance along their first principal component)." if sigma_pc1 == 0 else ".")
        )
    low, high = BANDWIDTH_RANGE
    if not low <= h <= high:
        raise ValueError(
            f"The bandwidth h={h:g} lies outside [{low:g}, {high:g}], where the kernel density's arithmetic is "
            "exact in float64; rescale the data (standardize=True) or pass a bandwidth within the range."
        )
    return h


class _KernelDensityIndex(ProjectionIndex):
    """Shared by the indices built on the projections' Gaussian KDE (MDH and dePDDP): bandwidth h per node,
    log density and relative depth (eq. 30)."""

    setup_params = ("bandwidth",)

    def __init__(self, bandwidth: float):
        if not (BANDWIDTH_RANGE[0] <= bandwidth <= BANDWIDTH_RANGE[1]):
            raise ValueError(
                f"bandwidth must be a number in [{BANDWIDTH_RANGE[0]:g}, {BANDWIDTH_RANGE[1]:g}]; got {bandwidth!r}."
            )
        self.h = float(bandwidth)
        self.record = {"bandwidth": self.h}

    def log_density(self, p: np.ndarray, w: np.ndarray, x: float) -> float:
        """log of the 1-D KDE of the projections at x (eq. 3), computed in the log domain."""
        total = float(w.sum())
        shift, s0, _, _ = kernel_sums(p, w, float(x), self.h, np.empty_like(p))
        return math.log(s0) - shift - math.log(total * self.h * SQRT_2PI)

    def relative_depth(self, p: np.ndarray, w: np.ndarray, b: float) -> float:
        """Relative depth (eq. 30) with the modes adjacent to b; 0 when b does not separate two modes."""
        log_b = self.log_density(p, w, b)
        log_l, _, log_r, _ = adjacent_modes(p, w, float(w.sum()), self.h, float(b), np.empty_like(p))
        return relative_depth_from_logs(log_b, log_l, log_r)

    def _accepted(self, below: float, total: float, log_b: float, log_l: float, log_r: float, min_size: float):
        if min(below, total - below) < min_size:
            return None
        return {"fval": math.exp(log_b), "relative_depth": relative_depth_from_logs(log_b, log_l, log_r)}

    def accept(self, p, w, split, min_size):
        log_l, _, log_r, _ = adjacent_modes(p, w, float(w.sum()), self.h, float(split.b), np.empty_like(p))
        below = float(w[p < split.b].sum())
        return self._accepted(below, float(w.sum()), self.log_density(p, w, split.b), log_l, log_r, min_size)

    def accept_chunked(self, proj, splits, min_size):
        mom = np.vstack([split.detail[2] for split in splits])
        stats = passes.split_statistics(proj, mom, self.h, [split.b for split in splits])
        return [
            self._accepted(below, mom[j, 0], log_b, log_mode, log_mode, min_size)
            for j, (below, log_b, log_mode) in enumerate(stats)
        ]

    def failed_stats(self, split):
        return {"fval": split.stats["fval"], "relative_depth": 0.0}

    def _density_profile(self, p, w, b, lo=-math.inf, hi=math.inf, coef=0.0, eps=0.0):
        """A grid over the projections and b (widened by 3 h, one point per ``GRID_STEP`` h within
        ``PROFILE_POINTS``), the density at each point and at b, and f_CL (penalised outside [lo, hi]) at
        each point, by the exact kernel sums."""
        a = min(float(p.min()), b) - 3.0 * self.h
        c = max(float(p.max()), b) + 3.0 * self.h
        grid = np.linspace(a, c, int(np.clip(math.ceil((c - a) / (GRID_STEP * self.h)) + 1, *PROFILE_POINTS)))
        total, kbuf = float(w.sum()), np.empty_like(p)
        logs = np.empty((grid.size + 1, 2))  # log f_CL, log I
        for j, x in enumerate(np.append(grid, b)):
            res = log_penalised_density(p, w, total, self.h, float(x), lo, hi, coef, eps, kbuf)
            logs[j] = res[0], res[3]
        density = np.exp(logs[:, 1])
        return grid, density[:-1], float(density[-1]), np.exp(logs[:-1, 0])

    def profile(self, p, w, b, params):
        grid, density, at_b, _ = self._density_profile(p, w, b)
        return Profile(
            grid,
            {"profile": (f"kernel density (h = {self.h:.3g})", density)},
            "density",
            at_b=("density of these rows at b", at_b),
            note=f"b at the lowest interior density minimum; {FVAL_NOTE}",
        )

    @classmethod
    def score(cls, stats: dict) -> float:
        return stats["relative_depth"]

    @classmethod
    def forced_score(cls, stats: dict) -> float:
        """The lowest density at the split: every invalid split has relative depth 0. A leaf that holds a small
        cluster beyond the alpha range (a few % of its rows) has a split through a gap, far below the density
        at the best split of a leaf that holds one cluster; splitting the largest leaf instead cut a cluster
        in two (measured on the scale mixture at 10^7 rows: ARI 0.92 for 4 of 8 k-means seeds, 1.000 for all
        8 this way)."""
        return -float(stats.get("fval", math.inf))


@register_index
class MinimumDensityIndex(_KernelDensityIndex):
    """MDP² projection index (Pavlidis, Hofmeyr & Tasoulis, JMLR 2016): value, split point, derivative,
    acceptance.

    The value is log f_CL at its global minimiser b over the alpha schedule's penalty interval
    (eqs. 10-13), its derivative that of eq. 26; a stage's split is a candidate when b lies strictly
    inside [mu - alpha sigma, mu + alpha sigma], and valid when each side holds ``min_size`` and its
    relative depth (eq. 30) is positive. Among starts the largest relative depth wins. Statistics:
    ``fval`` (the projected density I(v, b), eq. 3) and ``relative_depth``.

    Parameters
    ----------
    bandwidth : float
        Kernel bandwidth h (fixed over the alpha schedule).
    eta, eps : float
        Penalty accuracy and smoothness (eq. 10); the paper uses 0.01 and 1 - 1e-6.
    alphas : sequence of float
        The continuation schedule.
    """

    name = "mdh"
    setup_params = ("bandwidth", "alphas", "eta", "eps")
    n_components = 2

    def __init__(self, bandwidth: float, eta: float = 1e-2, eps: float = 1.0 - 1e-6, alphas=DEFAULT_ALPHAS):
        super().__init__(bandwidth)
        self.eta = float(eta)
        self.eps = float(eps)
        self.stages = tuple(float(a) for a in alphas)
        self.record = {"bandwidth": self.h, "eta": self.eta, "eps": self.eps}

    @classmethod
    def for_node(cls, data, vals, vecs, *, min_size=1, bandwidth=None, alphas=DEFAULT_ALPHAS, eta=1e-2, eps=1.0 - 1e-6):
        h = node_bandwidth(bandwidth, data, math.sqrt(vals[0]))
        if eta > h:
            warn(
                f"eta={eta:g} exceeds the bandwidth h={h:.3g}: at this data scale the penalty of eq. 10 no longer "
                "keeps b near [mu - alpha sigma, mu + alpha sigma]. Rescale the data (e.g. standardize=True) or "
                "pass a smaller eta."
            )
        return cls(h, eta, eps, alphas)

    def evaluate(self, p: np.ndarray, w: np.ndarray, alpha: float, grad_out: np.ndarray | None = None) -> Split:
        """The penalised-density minimiser for these projections; ``grad_out`` (if given) gets d log f_CL / d p."""
        total, mean, std, _, _ = weighted_moments(p, w)
        kbuf = np.empty_like(p)
        b, log_f, log_i, _shift, s0, side, r = minimise_penalised_density(
            p, w, total, mean, std, self.h, alpha, self.eta, self.eps, kbuf
        )
        if grad_out is not None:
            log_density_gradient(
                p, w, total, mean, std, self.h, alpha, self.eta, self.eps, b, log_f, log_i, s0, side, r, kbuf, grad_out
            )
        return Split(b, log_f, {"fval": math.exp(log_i)}, detail=(mean - alpha * std, mean + alpha * std, None))

    def evaluate_chunked(self, proj, alphas, gradient):
        """Gathered projections (two passes over the rows: ``X @ V`` and ``X.T @ G``) when they fit
        (:data:`~lowdens_dask.indices.base.GATHER_MAX_VALUES`), else tree reductions over the projections held
        in chunks (a round trip per step of the b search)."""
        if gathers(proj):
            return super().evaluate_chunked(proj, alphas, gradient)
        mom = passes.projection_moments(proj)
        found = passes.minimise_penalised_density(proj, mom, self.h, alphas, self.eta, self.eps)
        XtG = sum_g = None
        if gradient:
            XtG, sum_g = passes.gradient(proj, mom, self.h, alphas, self.eta, self.eps, found)
        out = []
        for j, (b, log_f, log_i, *_) in enumerate(found):
            lower, upper = mom[j, 1] - alphas[j] * mom[j, 2], mom[j, 1] + alphas[j] * mom[j, 2]
            split = Split(b, log_f, {"fval": math.exp(log_i)}, detail=(lower, upper, mom[j : j + 1]))
            out.append((split, None if XtG is None else XtG[:, j], None if sum_g is None else sum_g[j]))
        return out

    def stage_done(self, split: Split) -> bool:
        """b lies strictly inside [mu - alpha sigma, mu + alpha sigma], so the penalty is inactive."""
        return split.detail[0] < split.b < split.detail[1]

    def accept(self, p, w, split, min_size):
        stats = super().accept(p, w, split, min_size)
        return stats if stats is not None and stats["relative_depth"] > 0 else None

    def accept_chunked(self, proj, splits, min_size):
        return [
            s if s is not None and s["relative_depth"] > 0 else None
            for s in super().accept_chunked(proj, splits, min_size)
        ]

    def stage_record(self, alpha) -> dict:
        return {"alpha": float(alpha)}

    @classmethod
    def significant_split(cls, p, w, params, min_size):
        """A significant direction whose minimum density hyperplane lies at the edge of the alpha interval (a small
        cluster beyond it, relative depth 0) is split at the projection's lowest interior density minimum, as dePDDP
        places its split (issue 42, item 6); None where the density has no such minimum that leaves ``min_size`` on
        each side."""
        if params.get("bandwidth") is None:  # a start that recorded no stage
            return None
        index = DensityMinimumIndex(params["bandwidth"])
        split = index.evaluate(p, w, None)
        stats = index.accept(p, w, split, min_size) if math.isfinite(split.value) else None
        return None if stats is None or not stats["relative_depth"] > 0 else (split.b, stats)

    def profile(self, p, w, b, params):
        """The density, and f_CL outside the interval ``mean -/+ alpha sd`` of ``p`` (the recorded alpha; no
        interval without one), shaded."""
        alpha = params.get("alpha")
        if alpha is None:
            grid, density, at_b, _ = self._density_profile(p, w, b)
            curves, spans, note = {}, {}, f"no alpha recorded: interval not drawn; {FVAL_NOTE}"
        else:
            _, mean, sd, _, _ = weighted_moments(p, w)
            lo, hi = mean - float(alpha) * sd, mean + float(alpha) * sd
            coef = float(penalty_coefficient(self.h, self.eta, self.eps))
            grid, density, at_b, f_cl = self._density_profile(p, w, b, lo, hi, coef, self.eps)
            outside = np.where((grid < lo) | (grid > hi), f_cl, np.nan)
            curves = {"penalised": ("f_CL outside the interval", outside)}
            spans = {"alpha-interval": (f"mean \u00b1 \u03b1 sd, \u03b1 = {float(alpha):.3g}", (lo, hi))}
            note = FVAL_NOTE
        return Profile(
            grid,
            {"profile": (f"kernel density (h = {self.h:.3g})", density), **curves},
            "density",
            at_b=("density of these rows at b", at_b),
            spans=spans,
            note=note,
        )

    @classmethod
    def polish_params(cls, params: dict) -> dict:
        return {"alphas": (params["alpha"],)}


@register_index
class DensityMinimumIndex(_KernelDensityIndex):
    """dePDDP (Tasoulis, Tasoulis & Plagianakos, Pattern Recognit. 43(11), 2010): the first principal
    direction, split at the lowest interior minimum of its Gaussian KDE (bandwidth as MDH's).

    A unimodal projection gives no valid split; its would-be split is then the mean (PDDP's), so that a
    forced split (``force_n_clusters``) is still possible. Statistics: ``fval`` (the density at b, nan
    without a minimum) and ``relative_depth``.
    """

    name = "depddp"
    fixed_direction = True

    @classmethod
    def for_node(cls, data, vals, vecs, *, min_size=1, bandwidth=None):
        return cls(node_bandwidth(bandwidth, data, math.sqrt(vals[0])))

    def _split(self, b: float, log_i: float, moments=None) -> Split:
        if not math.isfinite(b):
            return Split(0.0, math.inf, {"fval": math.nan}, detail=(None, None, moments))
        return Split(float(b), log_i, {"fval": math.exp(log_i)}, detail=(None, None, moments))

    def evaluate(self, p, w, stage, grad_out=None):
        b, log_i = lowest_density_minimum(p, w, float(w.sum()), self.h, np.empty_like(p))
        return self._split(b, log_i)

    def evaluate_chunked(self, proj, stages, gradient):
        mom = passes.projection_moments(proj)
        out = []
        for j in range(len(stages)):
            b, log_i = passes.lowest_density_minimum(proj, mom, self.h, j)
            out.append((self._split(b, log_i, mom[j : j + 1]), None, None))
        return out

    def stage_done(self, split: Split) -> bool:
        return math.isfinite(split.value)
