"""The minimum-density projection index of MDP² (Pavlidis, Hofmeyr & Tasoulis, JMLR 2016).

Given projections ``p = X v`` of centred data, the index is

    phi(v) = min_b f_CL(v, b),   f_CL(v, b) = I(v, b) + (L / eta**eps) * dist(b, [mu - a s, mu + a s])**(1 + eps)

(eqs. 3, 10, 13), with I the 1-D Gaussian KDE of the projections at b and L = 1/(sqrt(2 pi e) h²).
This module works with ``log f_CL``: it has the same minimisers, is scale-free, and stays finite when
the density underflows across a wide gap (the small-bandwidth limit of §3 of the paper).

b is found as the global minimiser on ``[lo - eta, hi + eta]`` (Proposition 2 shows no minimiser lies
outside): a linearly binned KDE on a grid of spacing about h/8 brackets every local minimum, and each
promising one is polished with safeguarded Newton steps on the exact kernel sums (the paper's "grid,
then bisection", §4.1 and spec §5.4).
"""

# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
from numba import njit

from ..kernels.kde import (
    SQRT_2PI,
    binned_kde_grid,
    kernel_sums,
    linear_binning,
    projection_gradient_weights,
    weighted_moments,
)

#: Grid spacing of the binned search, in bandwidths.
GRID_STEP = 0.125
#: Largest grid for the b search and for the mode search.
MAX_GRID = 4096
#: Newton refinement stops when the step is below this many bandwidths.
B_TOL = 1e-6
#: Grid minima whose binned value is within this relative margin of the best are refined exactly.
CANDIDATE_MARGIN = 0.05
MAX_CANDIDATES = 4


@njit(cache=True, nogil=True)
def penalty_coefficient(h, eta, eps):
    """L / eta**eps with L = (e^{1/2} h² sqrt(2 pi))^{-1} (eq. 10)."""
    return 1.0 / (math.exp(0.5) * h * h * SQRT_2PI) / eta**eps


@njit(cache=True, nogil=True)
def _penalty(b, lo, hi, coef, eps):
    """Penalty value and its first two b-derivatives; side is +1 above hi, -1 below lo, else 0."""
    if b > hi:
        r = b - hi
        side = 1.0
    elif b < lo:
        r = lo - b
        side = -1.0
    else:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    val = coef * r ** (1.0 + eps)
    d1 = side * coef * (1.0 + eps) * r**eps
    d2 = coef * (1.0 + eps) * eps * r ** (eps - 1.0)
    return val, d1, d2, r, side


@njit(cache=True, nogil=True)
def log_f_from_sums(shift, s0, s1, s2, total, h, b, lo, hi, coef, eps):
    """log f_CL(b) and its first two b-derivatives from the kernel sums at b (see ``kernel_sums``).

    Returns ``(log_f, d1, d2, log_I, shift, s0, side, r)``.
    """
    h2 = h * h
    log_i = math.log(s0) - shift - math.log(total * h * SQRT_2PI)
    dlog_i = -(s1 / s0) / h2  # ratios first: s0 * h2 * h2 underflows to 0 for a small bandwidth
    d2i_over_i = (s2 / s0) / h2 / h2 - 1.0 / h2
    pval, pd1, pd2, r, side = _penalty(b, lo, hi, coef, eps)
    if side == 0.0:
        return log_i, dlog_i, d2i_over_i - dlog_i * dlog_i, log_i, shift, s0, side, r
    dens = math.exp(log_i)
    f = dens + pval
    d1 = (dens * dlog_i + pd1) / f
    d2 = (dens * d2i_over_i + pd2) / f - d1 * d1
    return math.log(f), d1, d2, log_i, shift, s0, side, r


@njit(cache=True, nogil=True)
def log_penalised_density(p, w, total, h, b, lo, hi, coef, eps, kbuf):
    """log f_CL(b) and its first two derivatives in b, from one exact pass over the projections.

    Returns ``(log_f, d1, d2, log_I, shift, s0, side, r)``; ``kbuf`` is left holding the kernel terms.
    """
    shift, s0, s1, s2 = kernel_sums(p, w, b, h, kbuf)
    return log_f_from_sums(shift, s0, s1, s2, total, h, b, lo, hi, coef, eps)


@njit(cache=True, nogil=True)
def _grid_extrema(vals, find_max):
    """Indices (start, stop) of strict local extrema of a grid, plateaus included as one run."""
    m = vals.shape[0]
    starts = np.empty(m, np.int64)
    stops = np.empty(m, np.int64)
    count = 0
    j = 0
    while j < m:
        k = j
        while k + 1 < m and vals[k + 1] == vals[j]:
            k += 1
        if find_max:
            left = j > 0 and vals[j - 1] < vals[j]
            right = k < m - 1 and vals[k + 1] < vals[k]
        else:
            left = j == 0 or vals[j - 1] > vals[j]
            right = k == m - 1 or vals[k + 1] > vals[k]
        if left and right:
            starts[count] = j
            stops[count] = k
            count += 1
        j = k + 1
    return starts[:count], stops[:count]


@njit(cache=True, nogil=True)
def newton_update(d1, d2, xa, xc, b, h):
    """One safeguarded Newton step for a zero of d1 (derivative d2) in the bracket [xa, xc] around b.

    Returns ``(b_next, xa, xc, converged)``; a step that leaves the bracket is replaced by bisection.
    """
    if d1 > 0.0:
        xc = min(xc, b)
    else:
        xa = max(xa, b)
    bn = b - d1 / d2 if d2 > 0.0 else np.nan
    if not (xa < bn < xc):
        bn = 0.5 * (xa + xc)
    return bn, xa, xc, abs(bn - b) <= B_TOL * h or xc - xa <= B_TOL * h


#: Newton steps per refined point.
MAX_NEWTON = 100


@njit(cache=True, nogil=True)
def _refine(p, w, total, h, lo, hi, coef, eps, xa, xc, b, kbuf, maximise):
    """Safeguarded Newton on d/db log f over the bracket [xa, xc]; returns the last evaluated point."""
    sgn = -1.0 if maximise else 1.0
    res = log_penalised_density(p, w, total, h, b, lo, hi, coef, eps, kbuf)
    for _ in range(MAX_NEWTON):
        bn, xa, xc, done = newton_update(sgn * res[1], sgn * res[2], xa, xc, b, h)
        if done:
            break
        b = bn
        res = log_penalised_density(p, w, total, h, b, lo, hi, coef, eps, kbuf)
    return b, res


@njit(cache=True, nogil=True)
def _grid(a, c, h):
    delta = GRID_STEP * h
    m = int((c - a) / delta) + 2
    m = min(m, MAX_GRID)
    m = max(m, 3)
    return (c - a) / (m - 1), m


@njit(cache=True, nogil=True)
def b_search_grid(mean, std, h, alpha, eta):
    """Grid of the b search: ``(lo, hi, a, delta, m)`` with [lo, hi] = mean -/+ alpha std and the grid
    ``a + j delta`` (j < m) over [lo - eta, hi + eta] (Proposition 2)."""
    lo = mean - alpha * std
    hi = mean + alpha * std
    a = lo - eta
    delta, m = _grid(a, hi + eta, h)
    return lo, hi, a, delta, m


@njit(cache=True, nogil=True)
def b_candidates(kde, total, h, lo, hi, coef, eps, a, delta):
    """Brackets ``(xa, xc, b0)`` of the grid minima of f_CL worth refining, best first.

    ``kde`` holds the unnormalised binned kernel sums on the grid ``a + j delta``. Minima are ranked by
    their binned value; where the binned density underflows to an exact-zero plateau (a gap many
    bandwidths wide), by plateau width instead, widest first. At most MAX_CANDIDATES minima within
    CANDIDATE_MARGIN of the best are kept.
    """
    m = kde.shape[0]
    norm = 1.0 / (total * h * SQRT_2PI)
    vals = np.empty(m)
    for j in range(m):
        vals[j] = kde[j] * norm + _penalty(a + j * delta, lo, hi, coef, eps)[0]
    starts, stops = _grid_extrema(vals, False)
    key = vals[starts].copy()
    for q in range(key.shape[0]):
        if key[q] == 0.0:
            key[q] = -float(stops[q] - starts[q] + 1)
    order = np.argsort(key)
    vmin = vals[starts[order[0]]]
    out = np.empty((min(MAX_CANDIDATES, order.shape[0]), 3))
    count = 0
    for q in range(out.shape[0]):
        k = order[q]
        j0, j1 = starts[k], stops[k]
        if q > 0 and vals[j0] > vmin * (1.0 + CANDIDATE_MARGIN):
            break
        b0 = a + 0.5 * (j0 + j1) * delta
        if j0 == j1 and 0 < j0 < m - 1:
            fl, fm, fr = vals[j0 - 1], vals[j0], vals[j0 + 1]
            curv = fl - 2.0 * fm + fr
            if curv > 0.0:
                b0 += 0.5 * delta * (fl - fr) / curv
        out[count, 0] = a + max(j0 - 2, 0) * delta
        out[count, 1] = a + min(j1 + 2, m - 1) * delta
        out[count, 2] = b0
        count += 1
    return out[:count]


@njit(cache=True, nogil=True)
def _b_brackets(p, w, total, mean, std, h, alpha, eta, eps):
    """The b search's penalty coefficient, constraint interval [lo, hi] and candidate brackets (binned grid)."""
    coef = penalty_coefficient(h, eta, eps)
    lo, hi, a, delta, m = b_search_grid(mean, std, h, alpha, eta)
    return coef, lo, hi, b_candidates(binned_kde_grid(p, w, h, a, delta, m), total, h, lo, hi, coef, eps, a, delta)


@njit(cache=True, nogil=True)
def minimise_penalised_density(p, w, total, mean, std, h, alpha, eta, eps, kbuf):
    """Global minimiser of f_CL over b (eqs. 10-13). Returns (b, log_f, log_I, shift, s0, side, r).

    ``kbuf`` is left holding the kernel terms at the returned b, ready for the gradient.
    """
    coef, lo, hi, cands = _b_brackets(p, w, total, mean, std, h, alpha, eta, eps)
    best_f = np.inf
    best_b = np.nan
    best = (np.inf, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    last_b = np.nan
    for q in range(cands.shape[0]):
        b, res = _refine(p, w, total, h, lo, hi, coef, eps, cands[q, 0], cands[q, 1], cands[q, 2], kbuf, False)
        last_b = b
        if res[0] < best_f:
            best_f = res[0]
            best_b = b
            best = res
    if last_b != best_b:
        best = log_penalised_density(p, w, total, h, best_b, lo, hi, coef, eps, kbuf)
    return best_b, best[0], best[3], best[4], best[5], best[6], best[7]


#: Exact kernel sums on a window: points more than ``WINDOW_RADIUS`` bandwidths from every b of a bracket are left
#: out. Each contributes at most ``exp(-R²/2) R²`` (about 8e-30) of its weight to S0, S1/h and S2/h², so while S0 of
#: the window is at least ``WINDOW_FLOOR`` times the total weight, what is left out is below 2^-53 of S0 (float64
#: rounding) and the windowed sums are the exact ones up to rounding. Below the floor (a gap many bandwidths wide,
#: where the shifted log-domain sums are needed) the bracket is refined on every point, as before.
WINDOW_RADIUS = 12.0
WINDOW_FLOOR = 1e-13


@njit(cache=True, nogil=True)
def gather_window(p, w, lo, hi, idx, pw, ww):
    """The points with ``lo <= p_i <= hi``: their indices, projections and weights in the first ``count`` entries of
    ``idx``, ``pw`` and ``ww``. Returns ``count``."""
    count = 0
    for i in range(p.shape[0]):  # without a branch: every point is written, the count moves past those inside
        x = p[i]
        idx[count] = i
        pw[count] = x
        ww[count] = w[i]
        count += np.int64((lo <= x) & (x <= hi))
    return count


#: Spacing, in bandwidths, of the fine grid on which :func:`_refine_windowed` takes its Newton steps for large nodes.
FINE_STEP = 1.0 / 32.0
#: The fine grid is used while it has at most this many cells per point of the window (or ``FINE_MIN_CELLS``);
#: wider brackets refine on the points themselves, so that the cost of a step is bounded by the window's points.
FINE_MAX_CELLS_PER_POINT = 4
FINE_MIN_CELLS = 4096


@njit(cache=True, nogil=True)
def fine_binned_sums(counts, g0, delta, b, h):
    """``(S0, S1, S2)`` at b of the points linearly binned on the grid ``g0 + j delta`` (:func:`linear_binning`):
    ``sum_j c_j (b - g_j)^k K(b - g_j)``.

    Against the exact sums each point's term is off by its kernel's linear-interpolation error, at most
    ``delta² / 8`` times the largest second derivative of ``(b - x)^k K(b - x)`` over the point's cell (the error
    bound of linear interpolation; :func:`binning_error_bound` for S0, tested against the exact sums)."""
    inv = 0.5 / (h * h)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    for j in range(counts.shape[0]):
        c = counts[j]
        if c != 0.0:
            u = b - (g0 + j * delta)
            k = c * math.exp(-u * u * inv)
            s0 += k
            s1 += k * u
            s2 += k * u * u
    return s0, s1, s2


@njit(cache=True, nogil=True)
def binning_error_bound(pw, ww, b, h, delta):
    """Bound on ``|S0_binned - S0|`` at b for the points ``pw`` (weights ``ww``) linearly binned at spacing delta:
    ``sum_i w_i delta²/8 max |K''|`` over the cell of each point, with ``K''(u) = (u²/h² - 1) K(u) / h²``, bounded on
    a cell ``[u - delta, u + delta]`` by ``(umax²/h² + 1) K(umin) / h²``."""
    bound = 0.0
    for i in range(pw.shape[0]):
        u = abs(b - pw[i])
        umin = max(u - delta, 0.0)
        umax = u + delta
        bound += ww[i] * (umax * umax / (h * h) + 1.0) * math.exp(-0.5 * umin * umin / (h * h)) / (h * h)
    return bound * delta * delta / 8.0


@njit(cache=True, nogil=True)
def _refine_windowed(p, w, total, h, lo, hi, coef, eps, xa, xc, b, idx, pw, ww, kbuf, fine):
    """:func:`_refine` (minimising) on the points within ``WINDOW_RADIUS`` bandwidths of the bracket [xa, xc].

    With ``fine``, the Newton steps take their kernel sums from the window's points linearly binned at
    ``FINE_STEP`` bandwidths (:func:`fine_binned_sums`: a cost per step of the grid's cells, not of the points),
    and only the point they converge to is evaluated exactly: b is then the minimiser of the binned density, within
    the binning error of the exact one.

    Returns ``(b, res, count)``: ``count`` points in the window (the first entries of ``idx``, ``pw``, ``ww``, and
    of ``kbuf`` with their kernel terms at b), or ``count = -1`` when a sum fell below ``WINDOW_FLOOR`` and the
    bracket was refined exactly on every point (``kbuf`` then holds every point's kernel term)."""
    reach = WINDOW_RADIUS * h
    count = gather_window(p, w, xa - reach, xc + reach, idx, pw, ww)
    floor = WINDOW_FLOOR * total
    b0, xa0, xc0 = b, xa, xc
    exact = count > 0
    delta = FINE_STEP * h
    cells = (xc - xa + 2 * reach) / delta + 3
    # the grid pays only while it has fewer cells than the window has points: a bracket many bandwidths wide (a small
    # bandwidth across a gap) takes its Newton steps on the points, so a step never costs more than the node's rows
    fine = fine and cells <= max(FINE_MAX_CELLS_PER_POINT * count, FINE_MIN_CELLS)
    if exact and fine:
        g0 = xa - reach - delta
        counts = linear_binning(pw[:count], ww[:count], g0, delta, np.zeros(int(cells)))
        for _ in range(MAX_NEWTON):
            s0, s1, s2 = fine_binned_sums(counts, g0, delta, b, h)
            if not s0 >= floor:
                exact = False
                break
            d1, d2 = log_f_from_sums(0.0, s0, s1, s2, total, h, b, lo, hi, coef, eps)[1:3]
            bn, xa, xc, done = newton_update(d1, d2, xa, xc, b, h)
            if done:
                break
            b = bn
    if exact:
        res = log_penalised_density(pw[:count], ww[:count], total, h, b, lo, hi, coef, eps, kbuf[:count])
        exact = res[4] == 0.0 and res[5] >= floor
    if exact and not fine:
        for _ in range(MAX_NEWTON):
            bn, xa, xc, done = newton_update(res[1], res[2], xa, xc, b, h)
            if done:
                break
            b = bn
            res = log_penalised_density(pw[:count], ww[:count], total, h, b, lo, hi, coef, eps, kbuf[:count])
            exact = res[4] == 0.0 and res[5] >= floor
            if not exact:
                break
    if exact:
        return b, res, count
    b, res = _refine(p, w, total, h, lo, hi, coef, eps, xa0, xc0, b0, kbuf, False)
    return b, res, -1


@njit(cache=True, nogil=True)
def minimise_penalised_density_windowed(p, w, total, mean, std, h, alpha, eta, eps, idx, pw, ww, kbuf, fine):
    """:func:`minimise_penalised_density` with each bracket refined on the points near it (``WINDOW_RADIUS``):
    the same b and log f_CL up to rounding (with ``fine``, up to the binning error of :func:`_refine_windowed`), at
    a cost per Newton step of the points near b (with ``fine``, of a grid's cells), not of all of them.

    Returns ``(b, log_f, log_I, shift, s0, side, r, count)``; the first ``count`` entries of ``idx``, ``pw``, ``ww``
    and ``kbuf`` hold the window of b and its kernel terms (``count = -1``: ``kbuf`` holds every point's).
    """
    coef, lo, hi, cands = _b_brackets(p, w, total, mean, std, h, alpha, eta, eps)
    best_f = np.inf
    best_b = np.nan
    best = (np.inf, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    count = -1
    last_best = False
    for q in range(cands.shape[0]):
        b, res, n_window = _refine_windowed(
            p, w, total, h, lo, hi, coef, eps, cands[q, 0], cands[q, 1], cands[q, 2], idx, pw, ww, kbuf, fine
        )
        last_best = res[0] < best_f
        if last_best:
            best_f, best_b, best, count = res[0], b, res, n_window
    if not last_best:  # the buffers hold a later bracket's window: refill them at the best b
        best_b, best, count = _refine_windowed(
            p, w, total, h, lo, hi, coef, eps, best_b, best_b, best_b, idx, pw, ww, kbuf, False
        )
    return best_b, best[0], best[3], best[4], best[5], best[6], best[7], count


@njit(cache=True, nogil=True)
def gradient_coefficients(total, std, h, alpha, eta, eps, log_f, log_i, s0, side, r):
    """Coefficients ``(a_kde, c_mean, c_std)`` of d log f_CL / d p_i (eq. 26, spec §5.5), for
    :func:`~lowdens_dask.kernels.kde.projection_gradient_weights`."""
    h2 = h * h
    if side == 0.0:
        return 1.0 / h2 / s0, 0.0, 0.0
    a_kde = math.exp(log_i - log_f) / h2 / s0
    # (1 + eps) coef r^eps / f_CL, with the share of the penalty in f_CL taken in the log domain (f_CL underflows
    # when the density and the penalty both do)
    k = (1.0 + eps) * math.exp(math.log(penalty_coefficient(h, eta, eps)) + (1.0 + eps) * math.log(r) - log_f) / r
    denom = total - 1.0 if total > 1.0 else total
    c_mean = -side * k / total
    c_std = -alpha * k / (denom * std) if std > 0.0 else 0.0  # sigma is not differentiable at 0
    return a_kde, c_mean, c_std


@njit(cache=True, nogil=True)
def log_density_gradient(p, w, total, mean, std, h, alpha, eta, eps, b, log_f, log_i, s0, side, r, kbuf, out):
    """d log f_CL / d p_i at fixed b (envelope theorem, eq. 26 and spec §5.5)."""
    a_kde, c_mean, c_std = gradient_coefficients(total, std, h, alpha, eta, eps, log_f, log_i, s0, side, r)
    return projection_gradient_weights(p, w, kbuf, b, mean, a_kde, c_mean, c_std, out)


@njit(cache=True, nogil=True)
def projection_grid(pmin, pmax, h):
    """Grid ``(a, delta, m)`` over [min p - h, max p + h] for the mode and minimum searches."""
    a = pmin - h
    delta, m = _grid(a, pmax + h, h)
    return a, delta, m


@njit(cache=True, nogil=True)
def mode_brackets(kde, a, delta, b):
    """Brackets ``(xa, xc, x0)`` of the binned-KDE modes nearest to b on the left (row 0) and on the
    right (row 1); a row of NaN where that side has no mode."""
    m = kde.shape[0]
    starts, stops = _grid_extrema(kde, True)
    left = -1
    right = -1
    for q in range(starts.shape[0]):
        x = a + 0.5 * (starts[q] + stops[q]) * delta
        if x < b:
            left = q
        elif right < 0:
            right = q
    out = np.full((2, 3), np.nan)
    for side in range(2):
        q = left if side == 0 else right
        if q >= 0:
            j0, j1 = starts[q], stops[q]
            out[side, 0] = a + max(j0 - 2, 0) * delta
            out[side, 1] = a + min(j1 + 2, m - 1) * delta
            out[side, 2] = a + 0.5 * (j0 + j1) * delta
    return out


@njit(cache=True, nogil=True)
def minimum_brackets(kde, a, delta):
    """Brackets ``(xa, xc, x0)`` of the interior local minima of the binned KDE, left to right."""
    m = kde.shape[0]
    starts, stops = _grid_extrema(kde, False)
    out = np.empty((starts.shape[0], 3))
    count = 0
    for q in range(starts.shape[0]):
        j0, j1 = starts[q], stops[q]
        if j0 == 0 or j1 == m - 1:
            continue
        out[count, 0] = a + (j0 - 1) * delta
        out[count, 1] = a + (j1 + 1) * delta
        out[count, 2] = a + 0.5 * (j0 + j1) * delta
        count += 1
    return out[:count]


@njit(cache=True, nogil=True)
def _projection_kde(p, w, h):
    _, _, _, pmin, pmax = weighted_moments(p, w)
    a, delta, m = projection_grid(pmin, pmax, h)
    return binned_kde_grid(p, w, h, a, delta, m), a, delta


@njit(cache=True, nogil=True)
def adjacent_modes(p, w, total, h, b, kbuf):
    """log KDE at the modes of the projected density nearest to b on each side (-inf if none).

    Modes are located on a binned grid over [min p, max p] and polished by Newton steps on the
    exact kernel sums. Returns ``(log_I_left, x_left, log_I_right, x_right)``.
    """
    kde, a, delta = _projection_kde(p, w, h)
    brackets = mode_brackets(kde, a, delta, b)
    out = np.full(4, -np.inf)
    out[1] = np.nan
    out[3] = np.nan
    for side in range(2):
        xa, xc, x0 = brackets[side]
        if np.isnan(x0):
            continue
        x, res = _refine(p, w, total, h, -np.inf, np.inf, 0.0, 0.0, xa, xc, x0, kbuf, True)
        out[2 * side] = res[3]
        out[2 * side + 1] = x
    return out[0], out[1], out[2], out[3]


@njit(cache=True, nogil=True)
def lowest_density_minimum(p, w, total, h, kbuf):
    """The lowest interior local minimum of the 1-D KDE of p: ``(b, log_I)``, or ``(nan, inf)`` if unimodal.

    Grid minima of the binned KDE over [min p, max p] are each polished by Newton steps on the
    exact kernel sums (dePDDP, Tasoulis, Tasoulis & Plagianakos 2010).
    """
    kde, a, delta = _projection_kde(p, w, h)
    brackets = minimum_brackets(kde, a, delta)
    best_b = np.nan
    best = np.inf
    for q in range(brackets.shape[0]):
        xa, xc, x0 = brackets[q]
        x, res = _refine(p, w, total, h, -np.inf, np.inf, 0.0, 0.0, xa, xc, x0, kbuf, False)
        if res[3] < best:
            best = res[3]
            best_b = x
    return best_b, best


#: log of the largest density ratio a relative depth reports (about 1e304): beyond it the depth saturates.
MAX_LOG_RATIO = 700.0


def relative_depth_from_logs(log_b: float, log_left: float, log_right: float) -> float:
    """Relative depth (eq. 30) from the log density at b and at the adjacent modes (0 if b does not
    separate two modes). A density at b below exp(-700) of the lower mode's saturates at exp(700) - 1."""
    return max(math.exp(min(min(log_left, log_right) - log_b, MAX_LOG_RATIO)) - 1.0, 0.0)
