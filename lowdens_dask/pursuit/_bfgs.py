"""A small BFGS with Armijo backtracking, tuned for cheap re-entry across continuation stages."""

# SPDX-License-Identifier: BSD-3-Clause

from collections.abc import Callable

import numpy as np

ARMIJO_C1 = 1e-4
BACKTRACK = 0.2
MAX_BACKTRACKS = 30
#: Length of the first step, relative to |x|, before any curvature information exists.
FIRST_STEP = 0.1


def bfgs(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x: np.ndarray,
    f: float,
    g: np.ndarray,
    hess_inv: np.ndarray | None,
    maxiter: int,
    ftol: float,
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray | None]:
    """Minimise ``fun`` from ``x`` (with value ``f`` and gradient ``g`` already known).

    Stops after ``maxiter`` iterations or when one iteration lowers f by at most ``ftol``. The
    objective's last evaluation is always at the returned point unless a line search failed.
    ``hess_inv`` (inverse Hessian approximation) is returned so a following stage can warm-start.
    """
    n = x.size
    for _ in range(maxiter):
        gnorm = float(np.sqrt(g @ g))
        if gnorm == 0.0 or not np.isfinite(gnorm):
            break
        if hess_inv is None:
            hess_inv = np.eye(n) * (FIRST_STEP * float(np.sqrt(x @ x)) / gnorm)
        d = -(hess_inv @ g)
        slope = float(g @ d)
        if not slope < 0.0:
            hess_inv = np.eye(n) * (FIRST_STEP * float(np.sqrt(x @ x)) / gnorm)
            d = -(hess_inv @ g)
            slope = float(g @ d)
        t = 1.0
        for _ in range(MAX_BACKTRACKS):
            x_new = x + t * d
            f_new, g_new = fun(x_new)
            if f_new <= f + ARMIJO_C1 * t * slope:
                break
            t *= BACKTRACK
        else:
            return x, f, g, None
        s = x_new - x
        y = g_new - g
        sy = float(s @ y)
        if sy > 1e-12 * float(np.sqrt((s @ s) * (y @ y))):
            hy = hess_inv @ y
            yhy = float(y @ hy)
            rho = 1.0 / sy
            hess_inv = hess_inv + ((sy + yhy) * rho * rho) * np.outer(s, s) - rho * (np.outer(hy, s) + np.outer(s, hy))
        decrease = f - f_new
        x, f, g = x_new, f_new, g_new
        if decrease <= ftol:
            break
    return x, f, g, hess_inv
