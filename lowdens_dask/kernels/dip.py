"""Hartigan's dip statistic of unimodality (Hartigan & Hartigan, Ann. Statist. 13(1), 1985) and its p-value.

The dip of a sample is the largest distance between its empirical distribution function and the unimodal
distribution function nearest to it: ``sup_x |F_n(x) - G(x)|`` minimised over continuous unimodal G. It is at
least ``1 / (2n)``, and the uniform distribution is the least favourable unimodal null (§3 of the paper), so a
p-value from the dip's distribution for uniform samples holds for every unimodal null.

:func:`dip_statistic` follows the paper's algorithm: shrink the modal interval, each time taking the
greatest convex minorant (GCM) and least concave majorant (LCM) of the empirical distribution function on it,
until the GCM and LCM are within twice the dip found so far. :func:`dip_pvalue` reads the p-value from a table of
the dip's null distribution for uniform samples (:data:`NULL_TABLE`, made by :func:`null_table`, which is
shipped as ``dip_null.npz``): ``sqrt(n) * dip`` at each tabulated n, interpolated in n.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from functools import cache
from importlib.resources import files

import numpy as np
from numba import njit

from .sorting import sorted_copy

#: The shipped table of the dip's null distribution (see :func:`null_table`).
NULL_TABLE = "dip_null.npz"


@njit(cache=True, nogil=True)
def _hull(x, lo, hi, lower, out):
    """Knots of the GCM (``lower``) or LCM of the points ``(x[i], i + 1)``, ``lo <= i <= hi``, into ``out``;
    returns their number. ``x`` is increasing (ties spread by :func:`spread_ties`)."""
    m = 0
    for i in range(lo, hi + 1):
        while m >= 2:
            a = out[m - 2]
            b = out[m - 1]
            cross = (b - a) * (x[i] - x[a]) - (i - a) * (x[b] - x[a])
            if (cross >= 0) if lower else (cross <= 0):
                m -= 1
            else:
                break
        out[m] = i
        m += 1
    return m


@njit(cache=True, nogil=True)
def _hull_at(x, knots, m, j, i):
    """The hull whose ``m`` knots (increasing) are ``knots``, piecewise linear through the points ``(x[k], k + 1)``,
    at ``x[i]``, the walk along its segments resumed at segment ``j``: ``(value, segment)``."""
    while j < m - 2 and x[knots[j + 1]] <= x[i]:
        j += 1
    a = knots[j]
    b = knots[min(j + 1, m - 1)]
    if x[b] > x[a]:
        return a + 1 + (b - a) * (x[i] - x[a]) / (x[b] - x[a]), j
    return a + 1.0, j


@njit(cache=True, nogil=True)
def _deviation(x, knots, m, lo, hi, above):
    """The largest ``rank - hull(x)`` (``above``) or ``hull(x) - rank`` over the points lo..hi (ranks i + 1)."""
    best = 0.0
    j = 0
    for i in range(lo, hi + 1):
        h, j = _hull_at(x, knots, m, j, i)
        d = (i + 1 - h) if above else (h - i - 1)
        best = max(best, d)
    return best


@njit(cache=True, nogil=True)
def dip_statistic(x):
    """The dip of the sorted sample ``x`` (IN, (n,) float64, ascending; n >= 1)."""
    n = x.shape[0]
    if n < 2 or x[0] == x[n - 1]:
        return 0.5 / n if n > 0 else 0.0
    gcm = np.empty(n, dtype=np.int64)
    lcm = np.empty(n, dtype=np.int64)
    low, high = 0, n - 1
    dip = 1.0  # twice the dip, in units of 1/n
    while high > low:
        ng = _hull(x, low, high, True, gcm)
        nl = _hull(x, low, high, False, lcm)
        # the largest vertical distance between the GCM and the LCM, at a knot of either
        dg = _distance_at_knots(x, gcm, ng, lcm, nl, True)
        dl = _distance_at_knots(x, lcm, nl, gcm, ng, False)
        if dg[0] >= dl[0]:
            d, new_low = dg[0], int(dg[1])
            new_high = high
            for k in range(nl):
                if lcm[k] >= new_low:
                    new_high = lcm[k]
                    break
        else:
            d, new_high = dl[0], int(dl[1])
            new_low = low
            for k in range(ng - 1, -1, -1):
                if gcm[k] <= new_high:
                    new_low = gcm[k]
                    break
        if d + 1.0 <= dip or (new_low == low and new_high == high):
            break
        # the dip outside the new modal interval: the ECDF against the GCM left of it, the LCM right of it
        left = _deviation(x, gcm, ng, low, new_low, True) + 1.0
        right = _deviation(x, lcm, nl, new_high, high, False) + 1.0
        dip = max(dip, left, right)
        low, high = new_low, new_high
    return dip / (2.0 * n)


@njit(cache=True, nogil=True)
def _distance_at_knots(x, knots, m, other, mo, gcm_knots):
    """(largest distance, knot index) between the hull ``other`` and the hull whose knots are ``knots``,
    measured at those knots: LCM - GCM either way."""
    best = -1.0
    where = knots[0]
    j = 0
    for k in range(m):
        i = knots[k]
        h, j = _hull_at(x, other, mo, j, i)
        d = (h - i - 1) if gcm_knots else (i + 1 - h)
        if d > best:
            best = d
            where = i
    return best, where


def spread_ties(p: np.ndarray, width: float | None = None) -> np.ndarray:
    """``p`` sorted, each run of equal values spread evenly over its half-gaps to its neighbouring values, or over
    at most ``width`` about its value (and never less than its values need to be distinct floats).

    The dip's kernel needs distinct values. Ties that stand for points near one value (a weighted row, a
    microcluster of no spread) are spread over the half-gaps (``width`` None): the dip's null is continuous, and
    such a jump of the empirical distribution would read as a departure from unimodality. Rows repeated exactly
    are point masses: spread over a ``width`` at the values' resolution, they stay one (two far apart are two
    modes)."""
    p = sorted_copy(p)
    if p.size < 2:
        return p
    first = np.flatnonzero(np.concatenate([[True], p[1:] != p[:-1]]))  # runs of equal values, in one pass
    if len(first) == len(p) or len(first) < 2:
        return p
    values, counts = p[first], np.diff(np.append(first, p.size))
    gaps = np.diff(values)
    below = np.concatenate([gaps[:1], gaps]) / 2
    above = np.concatenate([gaps, gaps[-1:]]) / 2
    if width is not None:
        least = 4.0 * counts * np.spacing(np.abs(values))  # room for ``counts`` distinct floats
        below = np.minimum(below, np.maximum(width, least) / 2)
        above = np.minimum(above, np.maximum(width, least) / 2)
    for t in np.flatnonzero(counts > 1):
        c = counts[t]
        p[first[t] : first[t] + c] = values[t] - below[t] + (np.arange(c) + 0.5) / c * (below[t] + above[t])
    return p


@cache
def _table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with np.load(files(__package__) / NULL_TABLE) as table:
        return table["n"], table["probabilities"], table["quantiles"]


def dip_pvalue(dip: float, n: int) -> float:
    """P(dip >= ``dip``) for a uniform sample of ``n`` points, from the shipped table (interpolated in
    log n between tabulated sizes; the largest size's ``sqrt(n) * dip`` beyond it). The table resolves
    p-values down to its smallest tail probability; smaller ones are returned as that bound."""
    sizes, probabilities, quantiles = _table()
    scaled = dip * np.sqrt(n)
    k = np.searchsorted(sizes, n)
    if k == 0 or k == len(sizes):
        row = quantiles[min(k, len(sizes) - 1)]
    else:
        t = (np.log(n) - np.log(sizes[k - 1])) / (np.log(sizes[k]) - np.log(sizes[k - 1]))
        row = (1 - t) * quantiles[k - 1] + t * quantiles[k]
    # quantiles are increasing in the cumulative probability; the p-value is 1 - F(scaled)
    cdf = np.interp(scaled, row, probabilities, left=0.0, right=probabilities[-1])
    return float(max(1.0 - cdf, 1.0 - probabilities[-1]))


def null_table(sizes, n_draws: int, seed: int = 0) -> dict:
    """The dip's null distribution for uniform samples: ``sqrt(n) * dip`` at a grid of cumulative
    probabilities, for each n in ``sizes``, from ``n_draws`` samples each."""
    rng = np.random.default_rng(seed)
    probabilities = np.concatenate([np.linspace(0.0, 0.9, 91), 1.0 - np.logspace(-1, np.log10(5.0 / n_draws), 60)[1:]])
    quantiles = []
    for n in sizes:
        dips = np.array([dip_statistic(np.sort(rng.random(n))) for _ in range(n_draws)])
        quantiles.append(np.quantile(dips * np.sqrt(n), probabilities))
    return {"n": np.asarray(sizes, dtype=np.int64), "probabilities": probabilities, "quantiles": np.array(quantiles)}


if __name__ == "__main__":  # python -m lowdens_dask.kernels.dip: rebuild the shipped table
    import sys

    draws = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    grid = [4, 5, 6, 7, 8, 10, 12, 15, 20, 25, 30, 40, 50, 70, 100, 150, 200, 300, 500, 700, 1000, 1500, 2000,
            3000, 5000, 7000, 10_000, 20_000, 50_000]  # fmt: skip
    np.savez_compressed(files(__package__) / NULL_TABLE, **null_table(grid, draws))
