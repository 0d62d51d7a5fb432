"""Numba kernels for one-dimensional Gaussian kernel density work on projections.

Everything here is chunk-local and allocation-light: the projection-index layer calls these kernels
once or a few times per objective evaluation. Each kernel has an independent numpy/scipy reference
in ``tests/test_kernels.py``.

Notation: ``p`` are projections (1-D, float64), ``w`` non-negative per-point weights, ``h`` the
bandwidth, and the Gaussian kernel is ``K(u) = exp(-u**2 / (2 h**2))`` (unnormalised; callers divide
by ``W h sqrt(2 pi)`` where ``W = sum(w)``).
"""

# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
from numba import njit

SQRT_2PI = math.sqrt(2.0 * math.pi)
#: Kernel sums at or below this are treated as underflowed and recomputed with a log-domain shift.
UNDERFLOW = 1e-200
#: Binned kernel sums are truncated at this many bandwidths.
BINNED_RADIUS = 8.0
#: Grids whose kernel reaches more cells than this each side (spacing below h / 512, which only a narrow
#: search interval gives, with a handful of grid points) are summed exactly instead of binned: binning
#: would allocate 8 h / spacing cells (a MemoryError for data whose scale is far above eta).
MAX_BINNED_RADIUS = 4096


@njit(cache=True, nogil=True)
def weighted_moments(p, w):
    """Total weight, weighted mean and standard deviation (divisor ``W - 1``) of ``p``.

    ``W - 1`` is the frequency-weight analogue of the n-1 divisor of MDH's sigma_v (seed-mdh §1).
    Returns ``(W, mean, std, min, max)`` where min/max run over points of positive weight.
    """
    n = p.shape[0]
    total = 0.0
    s = 0.0
    lo = np.inf
    hi = -np.inf
    for i in range(n):
        wi = w[i]
        if wi > 0.0:
            total += wi
            s += wi * p[i]
            lo = min(lo, p[i])
            hi = max(hi, p[i])
    mean = s / total
    ss = 0.0
    for i in range(n):
        d = p[i] - mean
        ss += w[i] * d * d
    denom = total - 1.0 if total > 1.0 else total
    return total, mean, math.sqrt(ss / denom), lo, hi


@njit(cache=True, nogil=True)
def binned_radius(h, delta):
    """Cells each side of a grid point that the truncated kernel (8 h) reaches, at most ``MAX_BINNED_RADIUS + 1``
    (a grid that fine is summed exactly; the cap keeps the float-to-int conversion in range when h dwarfs the
    grid, where it wrapped to a negative count)."""
    cells = BINNED_RADIUS * h / delta
    return math.ceil(cells) if cells <= MAX_BINNED_RADIUS else MAX_BINNED_RADIUS + 1


@njit(cache=True, nogil=True)
def linear_binning(p, w, start, delta, counts):
    """Add each weight to the two nearest cells of the grid ``start + j * delta`` (j < len(counts)),
    in proportion to proximity (linear binning). Points off the grid are ignored."""
    big = counts.shape[0]
    inv = 1.0 / delta
    for i in range(p.shape[0]):
        t = (p[i] - start) * inv
        if t < 0.0 or t > big - 1:
            continue
        j = int(t)
        f = t - j
        counts[j] += w[i] * (1.0 - f)
        if j + 1 < big:
            counts[j + 1] += w[i] * f
    return counts


@njit(cache=True, nogil=True)
def convolve_binned(counts, h, delta, r):
    """Kernel sums at the ``len(counts) - 2 r`` inner cells of a binned grid (kernel truncated at r cells)."""
    m = counts.shape[0] - 2 * r
    kern = np.empty(r + 1)
    c = 0.5 * (delta / h) ** 2
    for k in range(r + 1):
        kern[k] = math.exp(-c * k * k)
    out = np.empty(m)
    for j in range(m):
        jj = j + r
        s = counts[jj]
        for k in range(1, r + 1):
            s += kern[k] * (counts[jj - k] + counts[jj + k])
        out[j] = s
    return out


@njit(cache=True, nogil=True)
def binned_kde_grid(p, w, h, x0, delta, m):
    """Unnormalised Gaussian kernel sums at the grid ``x0 + j * delta`` (j < m), by linear binning.

    The points are linearly binned onto the grid extended by ``ceil(8 h / delta)`` cells on each side,
    then convolved with the kernel truncated at 8 h. Points farther out are ignored; their
    contribution is below exp(-32) of a single kernel peak. Chunked data bin each chunk with
    :func:`linear_binning`, add the counts and convolve once.
    Returns ``sum_i w_i K(x_j - p_i)`` approximately, for each grid point j.
    """
    r = binned_radius(h, delta)
    if r > MAX_BINNED_RADIUS:  # a grid much finer than h (a narrow search interval): sum exactly
        return direct_kde_grid(p, w, h, x0, delta, m)
    counts = linear_binning(p, w, x0 - r * delta, delta, np.zeros(m + 2 * r))
    return convolve_binned(counts, h, delta, r)


@njit(cache=True, nogil=True)
def direct_kde_grid(p, w, h, x0, delta, m):
    """``sum_i w_i K(x_j - p_i)`` at the grid ``x0 + j * delta`` (j < m) by exact kernel sums."""
    out = np.empty(m)
    kbuf = np.empty(p.shape[0])
    for j in range(m):
        shift, s0, _, _ = kernel_sums(p, w, x0 + j * delta, h, kbuf)
        out[j] = s0 * math.exp(-shift)
    return out


# exp(x) = 2^k exp(r), |r| <= ln2/2, with exp(r) by its Taylor series to r^13 (truncation < 2e-16).
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_EXP_MIN = -708.0
_C = tuple(1.0 / math.factorial(k) for k in range(14))


@njit(cache=True, nogil=True)
def exp_nonpositive(x, out):
    """``out[i] = exp(x[i])`` for ``x[i] <= 0`` (0 below -708), in loops LLVM can vectorise.

    numba's scalar ``math.exp`` calls libm once per element and dominated the exact kernel sums;
    this version is about 3x faster at a relative error of a few 1e-16. ``out`` may be ``x``, but
    the loops only vectorise when it is a separate array.
    """
    n = x.shape[0]
    bits = np.empty(n, np.int64)
    c = _C
    for i in range(n):
        xi = max(x[i], _EXP_MIN)
        k = math.floor(xi * _LOG2E + 0.5)
        r = (xi - k * _LN2_HI) - k * _LN2_LO
        q = c[13]
        q = q * r + c[12]
        q = q * r + c[11]
        q = q * r + c[10]
        q = q * r + c[9]
        q = q * r + c[8]
        q = q * r + c[7]
        q = q * r + c[6]
        q = q * r + c[5]
        q = q * r + c[4]
        q = q * r + c[3]
        q = q * r + c[2]
        q = q * r + 1.0
        q = q * r + 1.0
        bits[i] = (np.int64(k) + 1023) << 52
        out[i] = q if x[i] >= _EXP_MIN else 0.0
    scale = bits.view(np.float64)
    for i in range(n):
        out[i] *= scale[i]
    return out


@njit(cache=True, nogil=True)
def kernel_terms(p, w, b, h, shift, kbuf):
    """``kbuf[i] = w_i exp(shift - (b - p_i)**2 / (2 h**2))``; returns ``(S0, S1, S2, D)`` with
    ``Sk = sum_i kbuf_i (b - p_i)**k``. When S0 underflows (<= UNDERFLOW), D is the smallest
    ``(b - p_i)**2`` over points of positive weight, else inf: a sum over chunks underflows only if
    every chunk's does, so the minimum of D over chunks is then the global one."""
    n = p.shape[0]
    inv = 0.5 / (h * h)
    expo = np.empty(n)  # a separate buffer: exp_nonpositive does not vectorise in place
    for i in range(n):
        u = b - p[i]
        expo[i] = shift - u * u * inv
    exp_nonpositive(expo, kbuf)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    for i in range(n):
        u = b - p[i]
        k = w[i] * kbuf[i]
        kbuf[i] = k
        s0 += k
        s1 += k * u
        s2 += k * u * u
    d = np.inf
    if s0 <= UNDERFLOW:
        for i in range(n):
            u = b - p[i]
            if w[i] > 0.0 and u * u < d:
                d = u * u
    return s0, s1, s2, d


@njit(cache=True, nogil=True)
def kernel_sums(p, w, b, h, kbuf):
    """Exact kernel sums at ``b``: ``(shift, S0, S1, S2)`` with ``Sk = sum_i w_i u_i**k K~_i``.

    Here ``u_i = b - p_i`` and ``K~_i = exp(shift - u_i**2 / (2 h**2))``: the terms are scaled by
    ``exp(shift)`` so that the sums do not underflow when every point is many bandwidths away from
    ``b`` (log-domain evaluation, needed for the small-bandwidth limit of seed-mdh §3). ``shift`` is 0
    unless the plain sum underflows; then it is D / (2 h²) with D the squared distance from b to the
    nearest point. ``kbuf[i]`` receives ``w_i K~_i`` for the gradient pass.
    """
    s0, s1, s2, d = kernel_terms(p, w, b, h, 0.0, kbuf)
    if s0 > UNDERFLOW:
        return 0.0, s0, s1, s2
    shift = d * (0.5 / (h * h))
    s0, s1, s2, d = kernel_terms(p, w, b, h, shift, kbuf)
    return shift, s0, s1, s2


@njit(cache=True, nogil=True)
def projection_gradient_weights(p, w, kbuf, b, mean, a_kde, c_mean, c_std, out):
    """Per-point derivative weights ``out_i = a_kde*kbuf_i*(b-p_i) + c_mean*w_i + c_std*w_i*(p_i-mean)``.

    With the coefficients chosen by the index layer this is d(index)/d(p_i): a kernel term plus
    the derivative of a penalty through the projection mean and standard deviation (seed-mdh §5.5).
    """
    for i in range(p.shape[0]):
        out[i] = a_kde * kbuf[i] * (b - p[i]) + w[i] * (c_mean + c_std * (p[i] - mean))
    return out
