"""MDH's continuation from one start as one compiled call, for rows in memory.

The same steps as :func:`lowdens_dask.pursuit.hyperplanes.pursue` takes through its coroutines
(:func:`~lowdens_dask.pursuit.hyperplanes._continuation`, :func:`~lowdens_dask.pursuit._bfgs.lbfgs_steps` and
its weak Wolfe search) with :class:`~lowdens_dask.indices.minimum_density.MinimumDensityIndex` on the whole
array, in the same order and arithmetic: the objective (eq. 13, its gradient eq. 26) and L-BFGS over the
direction, warm-started through the alpha schedule (MDP², Pavlidis, Hofmeyr & Tasoulis, JMLR 2016, §5.1).
On a summary of a few thousand microclusters an evaluation costs tens of microseconds, and the coroutines'
Python per evaluation cost as much again; here only the acceptance of each finished stage (the relative depth
of eq. 30, once per alpha) is left to Python.
"""

# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
from numba import njit

from ..indices.density import log_density_gradient, minimise_penalised_density
from ..kernels.kde import weighted_moments
from ._bfgs import ARMIJO_C1, CURVATURE_C2, FIRST_STEP, MAX_LINE_SEARCH, two_loop_direction


@njit(cache=True, nogil=True)
def _objective(X, w, mean, v, h, alpha, eta, eps, p, grad_p, kbuf):
    """log f_CL at its minimiser b for the direction v (eq. 13) and its gradient in v (eq. 26).

    Returns ``(log_f, grad, u, b, log_i, lo, hi)``; ``p`` is left holding the centred projections on u."""
    norm = math.sqrt(v @ v)
    u = v / norm
    p[:] = np.dot(X, u)
    p -= mean @ u
    total, pmean, std, _, _ = weighted_moments(p, w)
    b, log_f, log_i, _shift, s0, side, r = minimise_penalised_density(p, w, total, pmean, std, h, alpha, eta, eps, kbuf)
    log_density_gradient(p, w, total, pmean, std, h, alpha, eta, eps, b, log_f, log_i, s0, side, r, kbuf, grad_p)
    xg = np.dot(grad_p, X) - mean * grad_p.sum()
    grad = (xg - u * (u @ xg)) / norm
    return log_f, grad, u, b, log_i, pmean - alpha * std, pmean + alpha * std


@njit(cache=True, nogil=True)
def mdh_continuation(X, w, mean, v, h, alphas, eta, eps, maxiter, ftol, memory):
    """MDH's pursuit from the start ``v`` through every alpha of ``alphas`` (rows X in memory, weights w, column
    means ``mean``), L-BFGS with ``memory`` curvature pairs kept across stages.

    Returns ``(U, b, log_i, done, n_evaluations)``: per stage the unit direction reached, the split point on
    the centred projections, log I(v, b) and whether b lies strictly inside [mu - alpha sigma, mu + alpha sigma]
    (the stage's split is a candidate for acceptance)."""
    n, d = X.shape
    n_stages = alphas.shape[0]
    U = np.empty((n_stages, d))
    B = np.empty(n_stages)
    LOG_I = np.empty(n_stages)
    done = np.zeros(n_stages, dtype=np.bool_)
    p = np.empty(n)
    grad_p = np.empty(n)
    kbuf = np.empty(n)
    S = np.zeros((memory, d))
    Y = np.zeros((memory, d))
    rho = np.zeros(memory)
    count = 0
    newest = -1
    gamma = 1.0
    evaluations = 0
    x = v.copy()
    for stage in range(n_stages):
        alpha = alphas[stage]
        f, g, u, b, log_i, lo, hi = _objective(X, w, mean, x, h, alpha, eta, eps, p, grad_p, kbuf)
        evaluations += 1
        for _ in range(maxiter):  # lbfgs_steps
            gnorm = math.sqrt(g @ g)
            if gnorm == 0.0 or not np.isfinite(gnorm):
                break
            if count == 0:
                dirn = g * (-FIRST_STEP * math.sqrt(x @ x) / gnorm)
            else:
                dirn = two_loop_direction(g, S, Y, rho, count, newest, gamma)
            slope = g @ dirn
            if not slope < 0.0:
                count = 0
                dirn = g * (-FIRST_STEP * math.sqrt(x @ x) / gnorm)
                slope = g @ dirn
            lo_t, hi_t, t = 0.0, np.inf, 1.0  # _weak_wolfe
            found = False
            x_new, f_new, g_new, u_new, b_new, log_i_new, lo_new, hi_new = x, np.inf, g, u, b, log_i, lo, hi
            for _ in range(MAX_LINE_SEARCH):
                x_new = x + t * dirn
                f_new, g_new, u_new, b_new, log_i_new, lo_new, hi_new = _objective(
                    X, w, mean, x_new, h, alpha, eta, eps, p, grad_p, kbuf
                )
                evaluations += 1
                if not f_new <= f + ARMIJO_C1 * t * slope:
                    hi_t = t
                elif g_new @ dirn < CURVATURE_C2 * slope:
                    lo_t = t
                else:
                    found = True
                    break
                t = 0.5 * (lo_t + hi_t) if np.isfinite(hi_t) else 2.0 * lo_t
            if not found and not f_new < f:
                count = 0
                break
            s = x_new - x
            y = g_new - g
            sy = s @ y
            if sy > 1e-12 * math.sqrt((s @ s) * (y @ y)):
                newest = (newest + 1) % memory
                S[newest] = s
                Y[newest] = y
                rho[newest] = 1.0 / sy
                count = min(count + 1, memory)
                gamma = sy / (y @ y)
            decrease = f - f_new
            x, f, g, u, b, log_i, lo, hi = x_new, f_new, g_new, u_new, b_new, log_i_new, lo_new, hi_new
            if decrease <= ftol:
                break
        U[stage] = u
        B[stage] = b
        LOG_I[stage] = log_i
        done[stage] = lo < b < hi
    return U, B, LOG_I, done, evaluations
