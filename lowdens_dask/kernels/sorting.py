"""Sorting kernels for the indices that need the sorted projections (NCut, variance ratio).

A bucket sort on [min, max] finished by insertion sort is O(n) for projections with a density and several
times faster than numba's ``np.argsort``; inputs that defeat it fall back to an LSD radix sort of the IEEE
bit patterns, O(n) for any input. Tested against ``np.sort`` in ``tests/test_kernels.py``.
"""

# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from numba import njit

#: Radix digits of the fallback sort: six 11-bit digits cover a 64-bit key.
_RADIX_BITS = 11
_RADIX_DIGITS = 6
#: The bucket sort hands over to the radix sort after this many insertion moves per point.
_INSERTION_BUDGET = 8


@njit(cache=True, nogil=True)
def _radix_argsort(p, xs, order):
    """Fill ``order`` with an argsort of ``p`` and ``xs`` with ``p[order]``: an LSD radix sort of the
    IEEE bit patterns (sign-adjusted so unsigned order is numeric order), O(n) for any input."""
    n = p.shape[0]
    nb = 1 << _RADIX_BITS
    mask = np.uint64(nb - 1)
    top = np.uint64(1) << np.uint64(63)
    for i in range(n):
        xs[i] = p[i]
    raw = xs.view(np.uint64)
    ka = np.empty(n, np.uint64)
    kb = np.empty(n, np.uint64)
    ia = np.empty(n, np.int64)
    ib = np.empty(n, np.int64)
    hist = np.zeros((_RADIX_DIGITS, nb), np.int64)
    for i in range(n):
        u = raw[i]
        u = ~u if u & top else u | top
        ka[i] = u
        ia[i] = i
        for d in range(_RADIX_DIGITS):
            hist[d, (u >> np.uint64(d * _RADIX_BITS)) & mask] += 1
    for d in range(_RADIX_DIGITS):
        h = hist[d]
        total = 0
        trivial = False
        for c in range(nb):
            t = h[c]
            if t == n:  # every key shares this digit: the pass would be the identity
                trivial = True
                break
            h[c] = total
            total += t
        if trivial:
            continue
        shift = np.uint64(d * _RADIX_BITS)
        for i in range(n):
            u = ka[i]
            c = (u >> shift) & mask
            j = h[c]
            h[c] = j + 1
            kb[j] = u
            ib[j] = ia[i]
        ka, kb = kb, ka
        ia, ib = ib, ia
    for k in range(n):
        order[k] = ia[k]
        xs[k] = p[ia[k]]


@njit(cache=True, nogil=True)
def sort_projections(p, xs, order):
    """Fill ``order`` with an argsort of ``p`` and ``xs`` with ``p[order]``.

    A bucket sort on ``[min, max]`` (monotone bucket index) finished by insertion sort, which is O(n)
    for projections with a density; inputs that defeat it (a far outlier, non-finite values) fall
    back to ``_radix_argsort``. Several times faster than numba's ``np.argsort``.
    """
    n = p.shape[0]
    lo = np.inf
    hi = -np.inf
    for i in range(n):
        x = p[i]
        if not (x == x):  # NaN
            _radix_argsort(p, xs, order)
            return
        lo = min(lo, x)
        hi = max(hi, x)
    span = hi - lo
    scale = n / span if span > 0.0 else 0.0
    if not (0.0 < scale < np.inf):  # all equal, infinite values or a subnormal span
        _radix_argsort(p, xs, order)
        return
    starts = np.zeros(n + 1, np.int64)
    bucket = np.empty(n, np.int64)
    for i in range(n):
        c = min(int((p[i] - lo) * scale), n - 1)  # (x - lo) * scale is monotone in x
        bucket[i] = c
        starts[c + 1] += 1
    for c in range(n):
        starts[c + 1] += starts[c]
    for i in range(n):
        c = bucket[i]
        j = starts[c]
        starts[c] = j + 1
        xs[j] = p[i]
        order[j] = i
    moves = 0
    budget = _INSERTION_BUDGET * n
    for k in range(1, n):
        x = xs[k]
        if x < xs[k - 1]:
            o = order[k]
            j = k
            while j > 0 and xs[j - 1] > x:
                xs[j] = xs[j - 1]
                order[j] = order[j - 1]
                j -= 1
            xs[j] = x
            order[j] = o
            moves += k - j
            if moves > budget:
                _radix_argsort(p, xs, order)
                return


@njit(cache=True, nogil=True)
def argsort_float(x):
    """Indices sorting the float64 array ``x`` ascending (order among equal values unspecified)."""
    n = x.shape[0]
    xs = np.empty(n)
    order = np.empty(n, np.int64)
    sort_projections(x, xs, order)
    return order


#: :func:`sorted_copy` sorts arrays of at least this many finite values with :func:`sort_projections`.
BUCKET_SORT_MIN = 1024


def sorted_copy(p) -> np.ndarray:
    """``p`` as a sorted float64 copy. Input already sorted (one pass tells) is copied, not sorted again (a split's
    test sorted the same 10^6 projections four times, 70 ms each); finite input by :func:`sort_projections`, several
    times faster than ``np.sort``; input with NaN by ``np.sort`` (NaN last)."""
    p = np.array(p, dtype=np.float64)
    if p.size < 2 or np.all(p[1:] >= p[:-1]):
        return p
    if p.size >= BUCKET_SORT_MIN and np.isfinite(p).all():
        out = np.empty_like(p)
        sort_projections(p, out, np.empty(p.size, np.int64))
        return out
    p.sort()
    return p
