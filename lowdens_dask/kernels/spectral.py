"""Compiled kernels of the spectral connectivity objective: the K×K Laplacian of weighted projected points and
the derivative of its λ₂ with respect to the transformed projections, in single O(K²·l) loops over pairs
(the numpy formulas they replace made a K×K×l array per evaluation: 3.7 of 6 ms at K = 200).

Similarities k(‖t_j − t_m‖/σ): Gaussian exp(−r²/2), or the paper's (r/α + 1)^α e^{−r} (eq. 30).
"""

# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def similarity(r2, gaussian, alpha):
    """k(r) and k'(r)/r for the squared scaled distance r² (k'(r)/r at r = 0 is the limit)."""
    if gaussian:
        s = math.exp(-0.5 * r2)
        return s, -s
    r = math.sqrt(r2)
    if alpha == 0.0:
        s = math.exp(-r)
        return s, (-s / r if r > 0 else 0.0)
    base = math.log1p(r / alpha)
    return math.exp(alpha * base - r), -math.exp((alpha - 1.0) * base - r) / alpha


@njit(cache=True, nogil=True)
def _squared_distance(T, j, m):
    r2 = 0.0
    for i in range(T.shape[1]):
        diff = T[j, i] - T[m, i]
        r2 += diff * diff
    return r2


@njit(cache=True, nogil=True)
def laplacian_matrix(T, n, inv_sigma2, gaussian, alpha, normalized, standard_scale):
    """``(M, degree)`` for transformed projections ``T`` (K×l) with weights ``n``.

    Standard: M = standard_scale · (diag(S n) − (√n √nᵀ) ∘ S), degree = n, its diagonal summed without the
    self-similarity (n_j k(0) − n_j k(0) would cancel the small similarities of well separated points). Normalised: W = (n nᵀ) ∘ S,
    degree = W 1, M = I − D^{−1/2} W D^{−1/2}. S has k(0) = 1 on its diagonal."""
    K = T.shape[0]
    S = np.empty((K, K))
    for j in range(K):
        S[j, j] = 1.0
        for m in range(j + 1, K):
            s, _ = similarity(_squared_distance(T, j, m) * inv_sigma2, gaussian, alpha)
            S[j, m] = s
            S[m, j] = s
    M = np.empty((K, K))
    degree = np.empty(K)
    if normalized:
        # M_jm = −S_jm n_j n_m / √(d_j d_m) with d_j = n_j t_j, t_j = Σ_m n_m S_jm ≥ n_j: as −S_jm r_j r_m with
        # r_j = √(n_j / t_j) ≤ 1, no product of weights (d_j d_m underflowed to 0 for weights 1e-100 of the largest)
        root = np.empty(K)
        for j in range(K):
            total = 0.0
            for m in range(K):
                total += n[m] * S[j, m]
            degree[j] = n[j] * total
            root[j] = math.sqrt(n[j] / total)
        for j in range(K):
            for m in range(K):
                M[j, m] = -S[j, m] * root[j] * root[m]
            M[j, j] += 1.0
    else:
        for j in range(K):  # the diagonal without the self-similarity, which cancels exactly
            degree[j] = n[j]
            total = 0.0
            for m in range(K):
                if m != j:
                    total += n[m] * S[j, m]
                M[j, m] = -standard_scale * math.sqrt(n[j] * n[m]) * S[j, m]
            M[j, j] = standard_scale * total
    return M, degree


@njit(cache=True, nogil=True)
def eigenvalue_gradient(T, n, u, lam, degree, inv_sigma2, gaussian, alpha, normalized, standard_scale):
    """dλ₂/dT (K×l) for the unit eigenvector ``u`` of λ₂ = ``lam`` of :func:`laplacian_matrix`'s M (spec
    §5.2 with its errata): Σ_j G_jm k'(r_jm)/r_jm (T_im − T_ij)/σ² with, at the point level a = u/√degree,
    G_jm = s n_j n_m (a_j − a_m)² (standard) or n_j n_m ((a_j − a_m)² − λ (a_j² + a_m²)) (normalised)."""
    K, l = T.shape
    # with q_j = √n_j a_j = u_j √(n_j / degree_j) and s_j = √n_j, G_jm without products of weights and of 1/degree
    # (which under- and overflowed for small weights): n_j n_m (a_j − a_m)² = (s_m q_j − s_j q_m)² and
    # n_j n_m (a_j² + a_m²) = n_m q_j² + n_j q_m²
    q = np.empty(K)
    root = np.empty(K)
    for j in range(K):
        root[j] = math.sqrt(n[j])
        q[j] = u[j] * math.sqrt(n[j] / degree[j])
    out = np.zeros((K, l))
    for j in range(K):
        for m in range(j + 1, K):
            _, slope = similarity(_squared_distance(T, j, m) * inv_sigma2, gaussian, alpha)
            gap = root[m] * q[j] - root[j] * q[m]
            if normalized:
                g = gap * gap - lam * (n[m] * q[j] * q[j] + n[j] * q[m] * q[m])
            else:
                g = standard_scale * gap * gap
            c = g * slope * inv_sigma2
            for i in range(l):
                diff = c * (T[m, i] - T[j, i])
                out[m, i] += diff
                out[j, i] -= diff
    return out
