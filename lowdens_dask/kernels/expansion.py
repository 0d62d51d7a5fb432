"""Kernel expansions f(x) = sum_j coef_j k(|x - s_j|^2) + intercept, row by row (the split rule of MSC and of
SVM-relabel, :class:`~lowdens_dask.tree.KernelExpansionRule`).

Each row's value is computed from that row alone, by the same loops in the same order, whatever else is in the
block: a row gets the same f(x), bit for bit, in memory, in a Dask chunk of any size, and alone. The squared
distances are sums of squared differences, never ``|x|^2 + |s|^2 - 2 x.s`` (whose matrix product rounds
differently with the block's shape, and which loses every digit when x and s agree in their leading ones).
"""

# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from numba import njit

#: ``kind`` codes of :func:`expansion_values`, by kernel name.
KINDS = {"rbf": 0, "rbf-distance": 1, "euclidean": 2}


@njit(cache=True, nogil=True)
def expansion_values(X, inv_scale, ST, coef, intercept, kind, gamma, out):
    """f for each row of X (IN, (n, d) float64), into ``out`` (OUT, (n,)).

    ``ST`` (IN, (d, m)): the support rows divided by the scale, transposed (a row's m squared distances are
    accumulated column by column, contiguously); ``inv_scale`` (IN, (d,)): 1 / scale; ``kind``: 0 for
    exp(-gamma r2), 1 for sqrt(2 - 2 exp(-gamma r2)), 2 for sqrt(r2) (:data:`KINDS`)."""
    n, d = X.shape
    m = ST.shape[1]
    r2 = np.empty(m)
    for i in range(n):
        r2[:] = 0.0
        for c in range(d):
            xc = X[i, c] * inv_scale[c]
            for j in range(m):
                t = xc - ST[c, j]
                r2[j] += t * t
        f = 0.0
        for j in range(m):
            if kind == 0:
                k = np.exp(-gamma * r2[j])
            elif kind == 1:
                k = np.sqrt(max(2.0 - 2.0 * np.exp(-gamma * r2[j]), 0.0))
            else:
                k = np.sqrt(r2[j])
            f += coef[j] * k
        out[i] = f + intercept
    return out


def expansion_values_reference(X, inv_scale, S, coef, intercept, kind, gamma):
    """The numpy twin of :func:`expansion_values` (support rows ``S`` (m, d) already divided by the scale)."""
    Z = X * inv_scale
    r2 = ((Z[:, None, :] - S[None, :, :]) ** 2).sum(axis=2)
    if kind == 0:
        K = np.exp(-gamma * r2)
    elif kind == 1:
        K = np.sqrt(np.maximum(2.0 - 2.0 * np.exp(-gamma * r2), 0.0))
    else:
        K = np.sqrt(r2)
    return K @ coef + intercept
