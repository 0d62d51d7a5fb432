"""The semi-supervised minimum density index f_SSC of MDP² (Pavlidis, Hofmeyr & Tasoulis, JMLR 2016, §2.4 and
§5.2.1):

    f_SSC(v, b) = f_CL(v, b) + gamma * sum_{i labelled} max(0, -y_i (v.x_i - b))**(1 + eps)      (eq. 16)

with f_CL the penalised density integral of eq. 10 over *all* rows (labelled and unlabelled, eq. 14) and
y_i in {-1, +1}. The index value is ``log phi_SSC(v) = log min_b f_SSC(v, b)`` (eq. 17; the log has the same
minimisers and keeps the value scale-free, as for MDH); its stages are (alpha, gamma) pairs: gamma = 0.1 while
alpha rises through the clustering schedule, then gamma = 1 and 10 at the last alpha (§5.2.1).

The labels travel with the rows: ``labels`` is aligned with the node's rows, y_i times the row's label weight
(0 for unlabelled rows), so that a row's label term reaches the direction's gradient through ``X.T @ d index / d p``
like its density term. The label weight is normally the row's weight (a row of weight 2 is two labelled rows); a
labelled row may have density weight 0 and label weight 1 (summary mode appends the labelled rows to the
microclusters that already count them in the density).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

import numpy as np

from ..kernels.kde import SQRT_2PI, binned_kde_grid, kernel_sums, projection_gradient_weights, weighted_moments
from .base import ProjectionIndex, Split
from .density import (
    CANDIDATE_MARGIN,
    GRID_STEP,
    MAX_CANDIDATES,
    MAX_GRID,
    _grid_extrema,
    newton_update,
    penalty_coefficient,
)
from .minimum_density import DEFAULT_ALPHAS, MinimumDensityIndex, node_bandwidth

#: The label weights of the paper's schedule: 0.1 while alpha rises, then 1 and 10 at the last alpha (§5.2.1).
DEFAULT_GAMMAS = (0.1, 1.0, 10.0)
#: Newton steps per refined candidate.
MAX_NEWTON = 100


def ssc_stages(alphas, gammas) -> tuple[tuple[float, float], ...]:
    """The (alpha, gamma) continuation: every alpha with the first gamma, then the last alpha with each later
    gamma (§5.2.1, steps 2-3)."""
    alphas, gammas = tuple(float(a) for a in alphas), tuple(float(g) for g in gammas)
    return tuple((a, gammas[0]) for a in alphas) + tuple((alphas[-1], g) for g in gammas[1:])


class SemiSupervisedDensityIndex(MinimumDensityIndex):
    """f_SSC (eq. 16) as a projection index: value ``log min_b f_SSC``, split point b, d value / d p.

    Not registered in :data:`~lowdens_dask.indices.INDICES`: it needs labels, so it is the index of a classifier
    (:class:`~lowdens_dask.MDHClassifier`), not of a clustering method. Statistics: ``fval`` (the projected
    density I(v, b), eq. 3), ``objective`` (f_SSC at b) and ``label_penalty`` (its label term).

    Parameters
    ----------
    bandwidth : float
        Kernel bandwidth h.
    labels : ndarray of shape (n_rows,)
        y_i (+1 / -1) times the label weight for the labelled rows, 0 for the others, aligned with the node's rows.
    eta, eps : float
        Penalty accuracy and smoothness (eqs. 10 and 16).
    alphas, gammas : sequence of float
        The schedules (see :func:`ssc_stages`).
    """

    name = "mdh-ssc"
    setup_params = ("bandwidth", "labels", "alphas", "gammas", "eta", "eps")

    def __init__(self, bandwidth, labels, eta=1e-2, eps=1.0 - 1e-6, alphas=DEFAULT_ALPHAS, gammas=DEFAULT_GAMMAS):
        super().__init__(bandwidth, eta, eps, alphas)
        labels = np.asarray(labels, dtype=np.float64)
        self.labelled = np.flatnonzero(labels)
        self.y = np.sign(labels[self.labelled])
        self.label_weight = np.abs(labels[self.labelled])
        self.stages = ssc_stages(alphas, gammas)

    @classmethod
    def for_node(
        cls, data, vals, vecs, *, min_size=1, bandwidth=None, labels=None, alphas=DEFAULT_ALPHAS,
        gammas=DEFAULT_GAMMAS, eta=1e-2, eps=1.0 - 1e-6,
    ):  # fmt: skip
        if labels is None or len(labels) != data.n_samples:
            raise ValueError(f"labels must be given for each of the {data.n_samples} rows.")
        return cls(node_bandwidth(bandwidth, data, math.sqrt(vals[0])), labels, eta, eps, alphas, gammas)

    # ------------------------------------------------------------------ f_SSC in b
    def _label_terms(self, p_lab: np.ndarray, b: float, gamma: float):
        """The label penalty, its b-derivatives, and t = max(0, -y (p - b)) per labelled row."""
        t = np.maximum(-self.y * (p_lab - b), 0.0)
        e, lw = self.eps, self.label_weight
        value = gamma * float(lw @ t ** (1.0 + e))
        d1 = gamma * (1.0 + e) * float(lw @ (t**e * self.y))
        active = t > 0
        d2 = gamma * (1.0 + e) * e * float(lw[active] @ t[active] ** (e - 1.0))
        return value, d1, d2, t

    def _at(self, p, w, total, lo, hi, coef, b, gamma, p_lab, kbuf):
        """f_SSC(b) with its first two b-derivatives and the parts the gradient needs."""
        h2 = self.h * self.h
        shift, s0, s1, s2 = kernel_sums(p, w, b, self.h, kbuf)
        log_i = math.log(s0) - shift - math.log(total * self.h * SQRT_2PI)
        dens = math.exp(log_i)
        # ratios first: s0 * h2 * h2 underflows to 0 for a small bandwidth
        f, d1, d2 = dens, -dens * ((s1 / s0) / h2), dens * ((s2 / s0) / h2 / h2 - 1.0 / h2)
        side = r = 0.0
        if b > hi or b < lo:
            side = 1.0 if b > hi else -1.0
            r = b - hi if b > hi else lo - b
            f += coef * r ** (1.0 + self.eps)
            d1 += side * coef * (1.0 + self.eps) * r**self.eps
            d2 += coef * (1.0 + self.eps) * self.eps * r ** (self.eps - 1.0)
        lab, l1, l2, t = self._label_terms(p_lab, b, gamma)
        return f + lab, d1 + l1, d2 + l2, (log_i, s0, side, r, lab, t)

    def evaluate(self, p: np.ndarray, w: np.ndarray, stage, grad_out: np.ndarray | None = None) -> Split:
        """The global minimiser b of f_SSC (grid of spacing h/8 over the penalty interval widened to the labelled
        projections, then safeguarded Newton from the best grid minima); ``grad_out`` gets d log f_SSC / d p."""
        alpha, gamma = stage
        total, mean, std, _, _ = weighted_moments(p, w)
        lo, hi = mean - alpha * std, mean + alpha * std
        coef = penalty_coefficient(self.h, self.eta, self.eps)
        p_lab = p[self.labelled]
        a = min(lo - self.eta, float(p_lab.min()) if p_lab.size else math.inf)
        c = max(hi + self.eta, float(p_lab.max()) if p_lab.size else -math.inf)
        m = int(min(max((c - a) / (GRID_STEP * self.h) + 2, 3), MAX_GRID))
        grid = np.linspace(a, c, m)
        delta = grid[1] - grid[0]
        vals = binned_kde_grid(p, w, self.h, a, delta, m) / (total * self.h * SQRT_2PI)
        r = np.maximum(np.maximum(lo - grid, grid - hi), 0.0)
        vals = vals + coef * r ** (1.0 + self.eps)
        if p_lab.size:
            t = np.maximum(-self.y[:, None] * (p_lab[:, None] - grid[None, :]), 0.0)
            vals = vals + gamma * (self.label_weight @ t ** (1.0 + self.eps))
        starts, stops = _grid_extrema(vals, False)
        order = np.argsort(vals[starts])[:MAX_CANDIDATES]
        kbuf = np.empty_like(p)
        best = None
        for q in order:
            j0, j1 = starts[q], stops[q]
            if best is not None and vals[j0] > vals[starts[order[0]]] * (1.0 + CANDIDATE_MARGIN):
                break
            xa, xc = a + max(j0 - 2, 0) * delta, a + min(j1 + 2, m - 1) * delta
            b = a + 0.5 * (j0 + j1) * delta
            res = self._at(p, w, total, lo, hi, coef, b, gamma, p_lab, kbuf)
            for _ in range(MAX_NEWTON):
                bn, xa, xc, done = newton_update(res[1], res[2], xa, xc, b, self.h)
                if done:
                    break
                b = bn
                res = self._at(p, w, total, lo, hi, coef, b, gamma, p_lab, kbuf)
            if best is None or res[0] < best[1][0]:
                best = (b, res)
        b, (f, _, _, (log_i, s0, side, r, lab, t)) = best
        # f_SSC is 0 only where the density underflows and the penalty and label terms vanish: then it is the density
        log_f = math.log(f) if f > 0 else log_i
        if grad_out is not None:
            self._at(p, w, total, lo, hi, coef, b, gamma, p_lab, kbuf)  # kbuf at the chosen b
            h2 = self.h * self.h
            a_kde = math.exp(log_i - log_f) / h2 / s0
            c_mean = c_std = 0.0
            if side != 0.0:  # (1 + eps) coef r^eps / f, the penalty's share of f in the log domain
                k = (1.0 + self.eps) * math.exp(math.log(coef) + (1.0 + self.eps) * math.log(r) - log_f) / r
                c_mean = -side * k / total
                c_std = -alpha * k / ((total - 1.0 if total > 1.0 else total) * std) if std > 0 else 0.0
            projection_gradient_weights(p, w, kbuf, b, mean, a_kde, c_mean, c_std, grad_out)
            if lab > 0:  # (no label term otherwise: every t is 0)
                grad_out[self.labelled] -= gamma * (1.0 + self.eps) * self.label_weight * t**self.eps * self.y / f
        stats = {"fval": math.exp(log_i), "objective": f, "label_penalty": lab}
        return Split(float(b), log_f, stats, detail=(lo, hi, None))

    def evaluate_chunked(self, proj, stages, gradient):
        """The rows' labels are aligned with the in-memory rows only: chunked rows go through summary mode."""
        raise NotImplementedError("The semi-supervised index is evaluated on rows in memory (or summaries).")

    def stage_done(self, split: Split) -> bool:
        """Every stage's split is a candidate: the output is the final stage's (spec §5.9, step 4)."""
        return ProjectionIndex.stage_done(self, split)

    def accept(self, p, w, split, min_size):
        """Both sides hold ``min_size``; no relative-depth test (the labels may place b off a density minimum)."""
        return ProjectionIndex.accept(self, p, w, split, min_size)

    @classmethod
    def score(cls, stats: dict) -> float:
        return -stats["objective"]

    def stage_record(self, stage) -> dict:
        return {"alpha": float(stage[0]), "gamma": float(stage[1])}
