"""Limited-memory BFGS with a weak Wolfe line search, able to resume across continuation stages.

With a memory at least as long as a stage, the search directions are those of BFGS started from
the scaled identity; the memory only bounds the cost (O(m d) per iteration instead of O(d²)).
"""

# SPDX-License-Identifier: BSD-3-Clause

from typing import Any

import numpy as np
from numba import njit

ARMIJO_C1 = 1e-4
CURVATURE_C2 = 0.9
MAX_LINE_SEARCH = 30
#: Length of the first step, relative to |x|, before any curvature information exists.
FIRST_STEP = 0.1


@njit(cache=True, nogil=True)
def two_loop_direction(g, S, Y, rho, count, newest, gamma):
    """``-H g`` for the L-BFGS inverse Hessian of the ``count`` newest pairs in ring buffers S, Y.

    ``H`` is the BFGS update of ``gamma * I`` by the pairs, oldest first (Nocedal & Wright, Alg. 7.4).
    """
    m = S.shape[0]
    q = g.copy()
    a = np.empty(count)
    for k in range(count):
        j = (newest - k) % m
        a[k] = rho[j] * (S[j] @ q)
        q -= a[k] * Y[j]
    q *= gamma
    for k in range(count - 1, -1, -1):
        j = (newest - k) % m
        beta = rho[j] * (Y[j] @ q)
        q += (a[k] - beta) * S[j]
    return -q


class LBFGSMemory:
    """Curvature pairs (s, y) kept between continuation stages."""

    def __init__(self, n: int, memory: int):
        self.S = np.zeros((memory, n))
        self.Y = np.zeros((memory, n))
        self.rho = np.zeros(memory)
        self.count = 0
        self.newest = -1
        self.gamma = 1.0

    def push(self, s: np.ndarray, y: np.ndarray, sy: float) -> None:
        self.newest = (self.newest + 1) % self.S.shape[0]
        self.S[self.newest] = s
        self.Y[self.newest] = y
        self.rho[self.newest] = 1.0 / sy
        self.count = min(self.count + 1, self.S.shape[0])
        self.gamma = sy / float(y @ y)

    def direction(self, g: np.ndarray) -> np.ndarray:
        return two_loop_direction(g, self.S, self.Y, self.rho, self.count, self.newest, self.gamma)


def lbfgs_steps(x: np.ndarray, f: float, g: np.ndarray, info: Any, memory: LBFGSMemory, maxiter: int, ftol: float):
    """Minimise from ``x`` (value ``f``, gradient ``g``, evaluation record ``info``), as a coroutine.

    Yields each trial point and receives ``(f, g, info)`` for it, so that a caller can evaluate
    several independent minimisations in one batch (see ``pursuit.hyperplanes``). Updates ``memory``
    in place. Stops after ``maxiter`` iterations or when an iteration lowers f by at most ``ftol``.
    Returns ``(x, f, g, info)`` of the final point.
    """
    for _ in range(maxiter):
        with np.errstate(over="ignore"):  # a gradient of 1e200 (bandwidth 1e-100 of the data's scale) stops here
            gnorm = float(np.sqrt(g @ g))
        if gnorm == 0.0 or not np.isfinite(gnorm):
            break
        if memory.count == 0:
            d = g * (-FIRST_STEP * float(np.sqrt(x @ x)) / gnorm)
        else:
            d = memory.direction(g)
        slope = float(g @ d)
        if not slope < 0.0:  # not a descent direction: forget the curvature pairs
            memory.count = 0
            d = g * (-FIRST_STEP * float(np.sqrt(x @ x)) / gnorm)
            slope = float(g @ d)
        step = yield from _weak_wolfe(x, f, slope, d)
        if step is None:
            memory.count = 0
            break
        x_new, f_new, g_new, info_new = step
        s = x_new - x
        y = g_new - g
        sy = float(s @ y)
        if sy > 1e-12 * float(np.sqrt((s @ s) * (y @ y))):
            memory.push(s, y, sy)
        decrease = f - f_new
        x, f, g, info = x_new, f_new, g_new, info_new
        if decrease <= ftol:
            break
    return x, f, g, info


def _weak_wolfe(x, f, slope, d):
    """Bracketing line search for the weak Wolfe conditions (Lewis & Overton, Math. Program. 2013).

    Doubles the step while it is too short (curvature condition fails) and bisects once it is too long
    (sufficient decrease fails). Returns ``(x_new, f_new, g_new, info_new)`` or None if no step was found.
    """
    lo, hi, t = 0.0, np.inf, 1.0
    for _ in range(MAX_LINE_SEARCH):
        x_new = x + t * d
        f_new, g_new, info_new = yield x_new
        if not f_new <= f + ARMIJO_C1 * t * slope:
            hi = t
        elif float(g_new @ d) < CURVATURE_C2 * slope:
            lo = t
        else:
            return x_new, f_new, g_new, info_new
        t = 0.5 * (lo + hi) if np.isfinite(hi) else 2.0 * lo
    return (x_new, f_new, g_new, info_new) if f_new < f else None
