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
def balance_columns(P, beta, delta, sds, c_star, offset):
    """``(T, slope, kappa)``: the balancing transform T_Δ (spec eqs. 22-25) of each column i of the projections ``P``
    (K×l) with Δ_i = [−β σ_i, β σ_i], σ_i = ``sds[i]``, and what its Jacobian needs; β finite.

    T (K×l) holds the transformed values; ``slope[i]`` (l×K) is h = dt/dp, 1 inside Δ_i and
    δ(1−δ)(dist + c*)^{−δ} outside; ``kappa[i]`` is κ (the Jacobian's rank-one part): β inside, β h below, 2β − β h
    above. ``c_star`` = (δ(1−δ))^{1/δ} and ``offset`` = δ c*^{1−δ}. The same expressions as the numpy
    :func:`lowdens_dask.indices.spectral.balancing_transform`, which is its reference, one column at a time."""
    K, l = P.shape
    T = np.empty((K, l))
    slope = np.empty((l, K))
    kappa = np.empty((l, K))
    scale = delta * (1 - delta)
    for i in range(l):
        lo = -beta * sds[i]
        hi = beta * sds[i]
        for k in range(K):
            p = P[k, i]
            if p < lo:
                gap = lo - p + c_star
                T[k, i] = -delta * gap ** (1 - delta) + offset
                h = scale * gap**-delta
                slope[i, k] = h
                kappa[i, k] = beta * h
            elif p > hi:
                gap = p - hi + c_star
                T[k, i] = delta * gap ** (1 - delta) - offset + (hi - lo)
                h = scale * gap**-delta
                slope[i, k] = h
                kappa[i, k] = 2 * beta - beta * h
            else:
                T[k, i] = p - lo
                slope[i, k] = 1.0
                kappa[i, k] = beta
    return T, slope, kappa


@njit(cache=True, nogil=True)
def similarity_matrix(T, inv_sigma2, gaussian, alpha):
    """``(S, R)`` for transformed projections ``T`` (K×l): the similarities S_jm = k(r_jm) (k(0) = 1 on the
    diagonal) and their slopes R_jm = k'(r_jm)/r_jm (diagonal unset), both symmetric, r_jm = ‖t_j − t_m‖/σ.

    One pass over the pairs serves the Laplacian (:func:`laplacian_from_similarities`) and λ₂'s derivative
    (:func:`eigenvalue_gradient_from_slopes`), which computed every exponential again."""
    K = T.shape[0]
    S = np.empty((K, K))
    R = np.empty((K, K))
    for j in range(K):
        S[j, j] = 1.0
        for m in range(j + 1, K):
            s, slope = similarity(_squared_distance(T, j, m) * inv_sigma2, gaussian, alpha)
            S[j, m] = s
            S[m, j] = s
            R[j, m] = slope
            R[m, j] = slope
    return S, R


@njit(cache=True, nogil=True)
def laplacian_matrix(T, n, inv_sigma2, gaussian, alpha, normalized, standard_scale):
    """``(M, degree)`` for transformed projections ``T`` (K×l) with weights ``n``: :func:`similarity_matrix`, then
    :func:`laplacian_from_similarities`."""
    S, _ = similarity_matrix(T, inv_sigma2, gaussian, alpha)
    return laplacian_from_similarities(S, n, normalized, standard_scale)


@njit(cache=True, nogil=True)
def laplacian_from_similarities(S, n, normalized, standard_scale):
    """``(M, degree)`` for similarities ``S`` (K×K, k(0) = 1 on the diagonal) of points with weights ``n``.

    Standard: M = standard_scale · (diag(S n) − (√n √nᵀ) ∘ S), degree = n, its diagonal summed without the
    self-similarity (n_j k(0) − n_j k(0) would cancel the small similarities of well separated points). Normalised: W = (n nᵀ) ∘ S,
    degree = W 1, M = I − D^{−1/2} W D^{−1/2}.

    M is returned in Fortran order (column-major), the layout LAPACK reads, so that the eigensolver of
    :func:`lowdens_dask.indices.spectral.spectral_connectivity` works on it in place instead of copying it (its
    entries are the same as in row-major order: M[j, m] is computed by the same expression either way)."""
    K = S.shape[0]
    F = np.empty((K, K))  # row m of F is column m of M: M = F.T, Fortran-ordered
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
        for m in range(K):
            for j in range(K):
                F[m, j] = -S[j, m] * root[j] * root[m]  # M[j, m]
        for j in range(K):
            F[j, j] += 1.0
    else:
        for m in range(K):
            for j in range(K):
                F[m, j] = -standard_scale * math.sqrt(n[j] * n[m]) * S[j, m]  # M[j, m]
        for j in range(K):  # the diagonal without the self-similarity, which cancels exactly
            degree[j] = n[j]
            total = 0.0
            for m in range(K):
                if m != j:
                    total += n[m] * S[j, m]
            F[j, j] = standard_scale * total
    return F.T, degree


@njit(cache=True, nogil=True)
def eigenvalue_gradient(T, n, u, lam, degree, inv_sigma2, gaussian, alpha, normalized, standard_scale):
    """dλ₂/dT (K×l) for the unit eigenvector ``u`` of λ₂ = ``lam`` of :func:`laplacian_matrix`'s M:
    :func:`similarity_matrix`'s slopes, then :func:`eigenvalue_gradient_from_slopes`."""
    _, R = similarity_matrix(T, inv_sigma2, gaussian, alpha)
    return eigenvalue_gradient_from_slopes(T, n, u, lam, degree, R, inv_sigma2, normalized, standard_scale)


@njit(cache=True, nogil=True)
def eigenvalue_gradient_from_slopes(T, n, u, lam, degree, R, inv_sigma2, normalized, standard_scale):
    """dλ₂/dT (K×l) for the unit eigenvector ``u`` of λ₂ = ``lam`` of the Laplacian of the points ``T`` with weights
    ``n``, given the slopes R_jm = k'(r_jm)/r_jm of :func:`similarity_matrix` (spec §5.2 with its errata):
    Σ_j G_jm k'(r_jm)/r_jm (T_im − T_ij)/σ² with, at the point level a = u/√degree,
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
            slope = R[j, m]
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
