"""The minimum-density index on projections held in chunks: each step is a map over the chunks and a
tree reduction (exact distributed mode).

The steps are those of :mod:`lowdens_dask.indices.density` (moments, binned grid, candidate brackets,
safeguarded Newton on exact kernel sums, gradient weights), split at the points where a sum over all
rows is needed. The shared numba pieces make every step compute what the in-memory index computes, up
to the order of floating-point summation, so exact mode gives the in-memory hyperplanes whatever the
chunking. Several directions (the restarts of a node) are handled in each pass.

``proj`` is a data-layer projection set (:class:`~lowdens_dask.backend.chunked.Projections`):
``proj.reduce(fn, combine, *args)`` combines ``fn(P, w, *args)`` over chunks, where P (k, rows) holds
one row of projections per direction, and ``proj.backproject(fn, *args)`` returns ``X.T @ G.T`` for the
per-row weights ``G = fn(P, w, *args)``.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

import numpy as np

from ..kernels.kde import (
    MAX_BINNED_RADIUS,
    UNDERFLOW,
    binned_radius,
    convolve_binned,
    kernel_terms,
    linear_binning,
    projection_gradient_weights,
)
from .density import (
    MAX_NEWTON,
    b_candidates,
    b_search_grid,
    gradient_coefficients,
    log_f_from_sums,
    minimum_brackets,
    mode_brackets,
    newton_update,
    penalty_coefficient,
    projection_grid,
)

# ---------------------------------------------------------------- chunk functions (run on workers)


def _chunk_moments(P: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per direction: total weight, mean, sum of squared deviations, min and max (points of positive weight)."""
    out = np.empty((P.shape[0], 5))
    total = w.sum()
    pos = w > 0
    for j, p in enumerate(P):
        mean = (w @ p) / total if total > 0 else 0.0
        d = p - mean
        out[j] = (total, mean, w @ (d * d), p[pos].min(initial=np.inf), p[pos].max(initial=-np.inf))
    return out


def _combine_moments(*parts: np.ndarray) -> np.ndarray:
    """Chan et al.'s pairwise update of (total, mean, M2), with min and max."""
    out = parts[0].copy()
    for q in parts[1:]:
        n_a, n_b = out[:, 0], q[:, 0]
        n = n_a + n_b
        safe = np.where(n > 0, n, 1.0)
        delta = q[:, 1] - out[:, 1]
        out[:, 1] = out[:, 1] + delta * n_b / safe
        out[:, 2] = out[:, 2] + q[:, 2] + delta * delta * n_a * n_b / safe
        out[:, 0] = n
        out[:, 3] = np.minimum(out[:, 3], q[:, 3])
        out[:, 4] = np.maximum(out[:, 4], q[:, 4])
    return out


def _chunk_binned(P, w, cols, starts, deltas, sizes, below_cols, below_at) -> np.ndarray:
    """Linear-binning counts on one grid per requested direction, then the weight below each point."""
    out = np.zeros(int(np.sum(sizes)) + len(below_cols))
    pos = 0
    for col, start, delta, size in zip(cols, starts, deltas, sizes):
        linear_binning(P[col], w, start, delta, out[pos : pos + size])
        pos += size
    for q, (col, b) in enumerate(zip(below_cols, below_at)):
        out[pos + q] = w[P[col] < b].sum()
    return out


def _chunk_kernel_sums(P, w, cols, points, h, shifts) -> np.ndarray:
    """Kernel sums (S0, S1, S2, D) at each (direction, point), see ``kernels.kde.kernel_terms``."""
    out = np.empty((len(cols), 4))
    kbuf = np.empty(P.shape[1])
    for q, (col, b, shift) in enumerate(zip(cols, points, shifts)):
        out[q] = kernel_terms(P[col], w, b, h, shift, kbuf)
    return out


def _combine_kernel_sums(*parts: np.ndarray) -> np.ndarray:
    out = parts[0].copy()
    for q in parts[1:]:
        out[:, :3] += q[:, :3]
        out[:, 3] = np.minimum(out[:, 3], q[:, 3])
    return out


def _chunk_gradient_weights(P, w, h, coefs) -> np.ndarray:
    """d log f_CL / d p_i per direction; ``coefs`` rows are (b, shift, mean, a_kde, c_mean, c_std)."""
    G = np.empty_like(P)
    kbuf = np.empty(P.shape[1])
    for j, (b, shift, mean, a_kde, c_mean, c_std) in enumerate(coefs):
        kernel_terms(P[j], w, b, h, shift, kbuf)
        projection_gradient_weights(P[j], w, kbuf, b, mean, a_kde, c_mean, c_std, G[j])
    return G


def _sum(*parts: np.ndarray) -> np.ndarray:
    out = parts[0].copy()
    for q in parts[1:]:
        out += q
    return out


# ---------------------------------------------------------------- passes (run on the client)


def projection_moments(proj) -> np.ndarray:
    """Per direction ``(total, mean, std, min, max)`` as ``kernels.kde.weighted_moments`` (divisor W - 1)."""
    mom = proj.reduce(_chunk_moments, _combine_moments)
    total = mom[:, 0]
    denom = np.where(total > 1.0, total - 1.0, total)
    mom[:, 2] = np.sqrt(mom[:, 2] / denom)
    return mom


def binned_kdes(proj, h: float, grids, below=()):
    """Binned kernel sums on ``grids`` = [(col, a, delta, m)], and the weight below each (col, b) of ``below``.

    A grid much finer than h (radius above ``MAX_BINNED_RADIUS`` cells) is summed exactly at its points, as
    ``kernels.kde.binned_kde_grid`` does in memory.
    """
    radii = [binned_radius(h, delta) for _, _, delta, _ in grids]
    binned = [q for q, r in enumerate(radii) if r <= MAX_BINNED_RADIUS]
    sizes = [grids[q][3] + 2 * radii[q] for q in binned]
    starts = [grids[q][1] - radii[q] * grids[q][2] for q in binned]
    out = proj.reduce(
        _chunk_binned,
        _sum,
        [grids[q][0] for q in binned],
        starts,
        [grids[q][2] for q in binned],
        sizes,
        [c for c, _ in below],
        [b for _, b in below],
    )
    kdes = [None] * len(grids)
    pos = 0
    for q, size in zip(binned, sizes):
        kdes[q] = convolve_binned(out[pos : pos + size], h, grids[q][2], radii[q])
        pos += size
    for q, (col, a, delta, m) in enumerate(grids):
        if kdes[q] is None:
            sums = kernel_sums_at(proj, h, [col] * m, [a + j * delta for j in range(m)])
            kdes[q] = sums[:, 1] * np.exp(-sums[:, 0])
    return kdes, out[pos:]


def kernel_sums_at(proj, h: float, cols, points) -> np.ndarray:
    """Rows ``(shift, S0, S1, S2)`` at each (direction, point), with the log-domain shift of
    ``kernels.kde.kernel_sums`` where the plain sum underflows (a second pass for those points)."""
    cols = list(cols)
    points = list(points)
    sums = proj.reduce(_chunk_kernel_sums, _combine_kernel_sums, cols, points, h, [0.0] * len(cols))
    out = np.zeros((len(cols), 4))
    out[:, 1:] = sums[:, :3]
    low = np.flatnonzero(sums[:, 0] <= UNDERFLOW)
    if low.size:
        shifts = sums[low, 3] * (0.5 / (h * h))
        again = proj.reduce(
            _chunk_kernel_sums, _combine_kernel_sums, [cols[q] for q in low], [points[q] for q in low], h, list(shifts)
        )
        out[low, 0] = shifts
        out[low, 1:] = again[:, :3]
    return out


class _NewtonSearch:
    """The safeguarded Newton iteration of ``density._refine``, one step per pass."""

    def __init__(self, col, xa, xc, b, total, lo, hi, coef, eps, maximise):
        self.col, self.xa, self.xc, self.b = col, xa, xc, b
        self.args = (total, lo, hi, coef, eps)
        self.sgn = -1.0 if maximise else 1.0
        self.steps = 0
        self.done = False
        self.res = None

    def update(self, sums, h: float) -> None:
        total, lo, hi, coef, eps = self.args
        self.res = log_f_from_sums(sums[0], sums[1], sums[2], sums[3], total, h, self.b, lo, hi, coef, eps)
        if self.steps == MAX_NEWTON:
            self.done = True
            return
        self.steps += 1
        bn, self.xa, self.xc, self.done = newton_update(
            self.sgn * self.res[1], self.sgn * self.res[2], self.xa, self.xc, self.b, h
        )
        if not self.done:
            self.b = bn


def run_newton(proj, h: float, searches: list[_NewtonSearch]) -> None:
    """Advance all searches together, one kernel-sum pass per Newton step."""
    active = list(searches)
    while active:
        sums = kernel_sums_at(proj, h, [s.col for s in active], [s.b for s in active])
        for s, row in zip(active, sums):
            s.update(row, h)
        active = [s for s in active if not s.done]


def minimise_penalised_density(proj, mom: np.ndarray, h: float, alphas, eta: float, eps: float):
    """Per direction, the tuple of ``density.minimise_penalised_density``: (b, log_f, log_I, shift, s0, side, r)."""
    coef = penalty_coefficient(h, eta, eps)
    setups = [b_search_grid(mom[j, 1], mom[j, 2], h, alphas[j], eta) for j in range(len(alphas))]
    kdes, _ = binned_kdes(proj, h, [(j, a, delta, m) for j, (_, _, a, delta, m) in enumerate(setups)])
    searches = []
    for j, ((lo, hi, a, delta, _), kde) in enumerate(zip(setups, kdes)):
        for xa, xc, b0 in b_candidates(kde, mom[j, 0], h, lo, hi, coef, eps, a, delta):
            searches.append(_NewtonSearch(j, xa, xc, b0, mom[j, 0], lo, hi, coef, eps, False))
    run_newton(proj, h, searches)
    out = []
    for j in range(len(alphas)):
        best = None
        for s in searches:
            if s.col == j and (best is None or s.res[0] < best.res[0]):
                best = s
        res = best.res
        out.append((best.b, res[0], res[3], res[4], res[5], res[6], res[7]))
    return out


def gradient(proj, mom: np.ndarray, h: float, alphas, eta: float, eps: float, splits) -> tuple[np.ndarray, np.ndarray]:
    """``(X.T @ g, sum g)`` per direction, with g = d log f_CL / d p at each direction's split (eq. 26)."""
    coefs = []
    for j, (b, log_f, log_i, shift, s0, side, r) in enumerate(splits):
        a_kde, c_mean, c_std = gradient_coefficients(
            mom[j, 0], mom[j, 2], h, alphas[j], eta, eps, log_f, log_i, s0, side, r
        )
        coefs.append((b, shift, mom[j, 1], a_kde, c_mean, c_std))
    return proj.backproject(_chunk_gradient_weights, h, np.array(coefs))


def _log_density(sums: np.ndarray, total: float, h: float) -> float:
    return math.log(sums[1]) - sums[0] - math.log(total * h * math.sqrt(2.0 * math.pi))


def split_statistics(proj, mom: np.ndarray, h: float, points) -> list[tuple[float, float, float]]:
    """Per direction j and point b_j: (weight below b_j, log KDE at b_j, log KDE at the adjacent modes'
    lower one), as ``density.adjacent_modes`` and ``MinimumDensityIndex.relative_depth``."""
    grids = [(j, *projection_grid(mom[j, 3], mom[j, 4], h)) for j in range(len(points))]
    kdes, below = binned_kdes(proj, h, grids, [(j, b) for j, b in enumerate(points)])
    searches = []
    for (j, a, delta, _), kde in zip(grids, kdes):
        for xa, xc, x0 in mode_brackets(kde, a, delta, points[j]):
            if not np.isnan(x0):
                searches.append(_NewtonSearch(j, xa, xc, x0, mom[j, 0], -np.inf, np.inf, 0.0, 0.0, True))
    run_newton(proj, h, searches)
    at_b = kernel_sums_at(proj, h, range(len(points)), points)
    out = []
    for j in range(len(points)):
        mode_log = [s.res[3] for s in searches if s.col == j]
        low_mode = min(mode_log) if len(mode_log) == 2 else -np.inf
        out.append((below[j], _log_density(at_b[j], mom[j, 0], h), low_mode))
    return out


def lowest_density_minimum(proj, mom: np.ndarray, h: float, col: int = 0) -> tuple[float, float]:
    """``density.lowest_density_minimum`` for one direction: (b, log_I) or (nan, inf) if unimodal."""
    a, delta, m = projection_grid(mom[col, 3], mom[col, 4], h)
    (kde,), _ = binned_kdes(proj, h, [(col, a, delta, m)])
    searches = [
        _NewtonSearch(col, xa, xc, x0, mom[col, 0], -np.inf, np.inf, 0.0, 0.0, False)
        for xa, xc, x0 in minimum_brackets(kde, a, delta)
    ]
    run_newton(proj, h, searches)
    best_b, best = np.nan, np.inf
    for s in searches:
        if s.res[3] < best:
            best, best_b = s.res[3], s.b
    return best_b, best
