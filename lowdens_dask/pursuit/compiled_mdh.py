"""MDH's continuation from one start as one compiled call, for rows in memory.

The same steps as :func:`lowdens_dask.pursuit.hyperplanes.pursue` takes through its coroutines
(:func:`~lowdens_dask.pursuit.hyperplanes._continuation`, :func:`~lowdens_dask.pursuit._bfgs.lbfgs_steps` and
its weak Wolfe search) with :class:`~lowdens_dask.indices.minimum_density.MinimumDensityIndex` on the whole
array, in the same order and the same arithmetic up to rounding: the objective (eq. 13, its gradient eq. 26) and
L-BFGS over the direction, warm-started through the alpha schedule (MDP², Pavlidis, Hofmeyr & Tasoulis, JMLR 2016,
§5.1). The kernel sums are taken on the window of b and the projections' moments from the scatter matrix (issue 44);
on a node of more than twice ``hyperplanes.CONTINUATION_SAMPLE_ROWS`` the stages before the last run on a sample of
its rows.
On a summary of a few thousand microclusters an evaluation costs tens of microseconds, and the coroutines'
Python per evaluation cost as much again; here only the acceptance of each finished stage (the relative depth
of eq. 30, once per alpha) is left to Python.
"""

# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
from numba import njit

from ..indices.density import gradient_coefficients, minimise_penalised_density_windowed
from ..kernels.kde import weighted_moments
from ._bfgs import ARMIJO_C1, CURVATURE_C2, FIRST_STEP, MAX_LINE_SEARCH, two_loop_direction


def scatter_moments(X: np.ndarray, w: np.ndarray, mean: np.ndarray) -> tuple:
    """``(total, xbar - mean, S)`` of the rows X with weights w for :func:`_objective`, in float64; S is the weighted
    scatter matrix ``sum_i w_i (x_i - xbar)(x_i - xbar)^T``, or an empty matrix when the rows are fewer than
    ``SCATTER_ROWS_PER_COLUMN`` times the columns (then S u costs more than the pass over the rows it saves)."""
    total = float(w[w > 0].sum())
    dbar = (w @ X - total * mean) / total
    if X.shape[0] < SCATTER_ROWS_PER_COLUMN * X.shape[1]:
        return total, dbar, np.empty((0, 0))
    Y = X - (mean + dbar)
    return total, dbar, (Y * w[:, None]).T @ Y


#: Rows per column above which the projections' moments and the penalty's gradient come from the scatter matrix.
SCATTER_ROWS_PER_COLUMN = 4


@njit(cache=True, nogil=True)
def _project(X, u, offset, p):
    """``p_i = x_i . u - offset`` in float64 whatever X's float type (float32 rows are read as they are: half the
    memory traffic of a float64 copy, the same products)."""
    n, d = X.shape
    for i in range(n):
        acc = 0.0
        for k in range(d):
            acc += X[i, k] * u[k]
        p[i] = acc - offset


@njit(cache=True, nogil=True)
def _objective(X, w, mean, moments, v, h, alpha, eta, eps, p, work, fine):
    """log f_CL at its minimiser b for the direction v (eq. 13) and its gradient in v (eq. 26).

    ``moments = (total, xbar - mean, S)``: the total weight, the weighted column means less ``mean`` and the weighted
    scatter matrix ``S = sum_i w_i (x_i - xbar)(x_i - xbar)^T``, so that the projections' mean and standard deviation
    and the penalty's share of the gradient (through them) come from d x d products instead of passes over the rows;
    the kernel's share is summed over the window of b (:func:`minimise_penalised_density_windowed`).
    Returns ``(log_f, grad, u, b, log_i, lo, hi)``; ``p`` is left holding the centred projections on u."""
    total, dbar, S = moments
    idx, pw, ww, kbuf = work
    norm = math.sqrt(v @ v)
    u = v / norm
    _project(X, u, mean @ u, p)
    scatter = S.shape[0] > 0
    if scatter:
        Su = S @ u
        pmean = dbar @ u
        std = math.sqrt(max(u @ Su, 0.0) / (total - 1.0 if total > 1.0 else total))
    else:
        _, pmean, std, _, _ = weighted_moments(p, w)
    b, log_f, log_i, _shift, s0, side, r, count = minimise_penalised_density_windowed(
        p, w, total, pmean, std, h, alpha, eta, eps, idx, pw, ww, kbuf, fine
    )
    a_kde, c_mean, c_std = gradient_coefficients(total, std, h, alpha, eta, eps, log_f, log_i, s0, side, r)
    # the penalty's share, sum_i w_i (c_mean + c_std (p_i - pmean)) (x_i - mean), then the kernel's
    if scatter:
        xg = (c_mean * total) * dbar + c_std * Su
    else:
        xg = np.zeros(mean.shape[0])
        if c_mean != 0.0 or c_std != 0.0:
            for i in range(p.shape[0]):
                g = w[i] * (c_mean + c_std * (p[i] - pmean))
                for k in range(xg.shape[0]):
                    xg[k] += g * (X[i, k] - mean[k])
    n_kernel = count if count >= 0 else p.shape[0]
    for c in range(n_kernel):
        i = idx[c] if count >= 0 else c
        g = a_kde * kbuf[c] * (b - p[i])
        if g != 0.0:
            for k in range(xg.shape[0]):
                xg[k] += g * (X[i, k] - mean[k])
    grad = (xg - u * (u @ xg)) / norm
    return log_f, grad, u, b, log_i, pmean - alpha * std, pmean + alpha * std


@njit(cache=True, nogil=True)
def mdh_continuation(X, w, moments, sample, n_sample_stages, fine, mean, v, h, alphas, eta, eps, maxiter, ftol, memory):
    """MDH's pursuit from the start ``v`` through every alpha of ``alphas`` (rows X in memory, weights w, column
    means ``mean``, ``moments`` from :func:`scatter_moments`), L-BFGS with ``memory`` curvature pairs kept across
    stages. The first ``n_sample_stages`` stages are taken on ``sample = (X_s, w_s, moments_s)``, a sample of the
    rows, the others on every row; ``fine``: b's Newton steps on a fine binned grid (:func:`_refine_windowed`).

    Returns ``(U, b, log_i, done, n_evaluations)``: per stage the unit direction reached, the split point on
    the centred projections, log I(v, b) and whether b lies strictly inside [mu - alpha sigma, mu + alpha sigma]
    (the stage's split is a candidate for acceptance)."""
    n, d = X.shape
    work = (np.empty(n, np.int64), np.empty(n), np.empty(n), np.empty(n))
    n_stages = alphas.shape[0]
    U = np.empty((n_stages, d))
    B = np.empty(n_stages)
    LOG_I = np.empty(n_stages)
    done = np.zeros(n_stages, dtype=np.bool_)
    p = np.empty(n)
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
        if stage < n_sample_stages:
            Xa, wa, ma = sample
        else:
            Xa, wa, ma = X, w, moments
        pa = p[: Xa.shape[0]]
        f, g, u, b, log_i, lo, hi = _objective(Xa, wa, mean, ma, x, h, alpha, eta, eps, pa, work, fine)
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
                    Xa, wa, mean, ma, x_new, h, alpha, eta, eps, pa, work, fine
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
