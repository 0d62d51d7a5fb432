"""Spectral connectivity of projected data: λ₂ of the graph Laplacian of weighted points and its exact
gradient with respect to the projection matrix (the objective of SCPP and LMSC; the pursuit is in
:mod:`lowdens_dask.pursuit.spectral`).

Hofmeyr, Pavlidis & Eckley, "Minimum spectral connectivity projection pursuit" (arXiv:1509.01546), following
``shared/research/seed-spectral.md``:

- the kernel k(x) = (x/α + 1)^α e^{−x} (eq. 30) on distances between transformed projections, scaled by σ;
- the balancing transform T_Δ (eqs. 22-25): the identity on Δ_i = [−βσ_i, βσ_i] (σ_i the weighted standard
  deviation of the i-th projected coordinate of centred data) and a contraction with slope about δ outside;
- weighted points (microclusters with counts n_j, §7, Lemma 6): the K×K problem has exactly the λ₂ of the
  data with each centre repeated n_j times (tested against that N×N Laplacian);
- the gradient of §5.2, with the errata of spec §15 (the sign of the exponent in eq. 37, the squared
  coefficient in eq. 36, and the factor n_j n_k kept in the normalised case), and the dependence of σ_i on
  the projection through the transform's Jacobian (eqs. 34-35), which is diagonal plus rank one.

The authors' R package SCPP (spec Appendix C) differs in three places, each a parameter here: the Gaussian
kernel exp(−r²/2) (``similarity="gaussian"``), Δ from the covariance of the node's rows, σ_i = √(V_iᵀ Σ V_i)
(``covariance=Σ``), and the standard Laplacian divided by N (``standard_scale=1/N``).

Everything is plain numpy: one dense K×K eigenproblem per evaluation (K is a few hundred microclusters), solved by
LAPACK's dsyevr called directly (:func:`smallest_eigenpairs`).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from scipy.linalg import LinAlgError
from scipy.linalg.lapack import dsyevr, dsyevr_lwork

from ..kernels.spectral import (
    balance_columns,
    eigenvalue_gradient_from_slopes,
    laplacian_from_similarities,
    similarity_matrix,
)

LAPLACIANS = ("standard", "normalized")
SIMILARITIES = ("paper", "gaussian")


class Transformed(NamedTuple):
    """T_Δ applied to one projected coordinate, with what its Jacobian needs."""

    t: np.ndarray  #: transformed values
    slope: np.ndarray  #: h_m = dt/dz at each value
    kappa: np.ndarray  #: κ_m: the Jacobian is diag(h) + κ gᵀ
    g: np.ndarray  #: g_k = dσ_i/dp_k (zero when σ_i is given, as with the covariance form)
    sd: float  #: σ_i


def balancing_transform(
    p: np.ndarray, n: np.ndarray, beta: float, delta: float, sd: float | None = None
) -> Transformed:
    """T_Δ on one coordinate of centred weighted projections ``p`` (weights ``n``), Δ = [−βσ, βσ] (eqs. 23, 25).

    σ is the weighted standard deviation of ``p`` unless ``sd`` is given. The slope outside Δ is
    δ(1−δ)(dist + c*)^{−δ} with c* = (δ(1−δ))^{1/δ}; β = inf is the identity."""
    total = n.sum()
    if not math.isfinite(beta):
        ones = np.ones_like(p)
        return Transformed(p.copy(), ones, np.zeros_like(p), np.zeros_like(p), math.nan)
    given = sd is not None
    if not given:
        sd = math.sqrt(float(n @ (p * p)) / total)
    lo, hi = -beta * sd, beta * sd
    c_star = math.exp(math.log(delta * (1 - delta)) / delta)  # underflows to 0 for small δ, as the spec allows
    offset = delta * c_star ** (1 - delta)
    below, above = p < lo, p > hi
    t = p - lo
    slope = np.ones_like(p)
    gap = lo - p[below] + c_star
    t[below] = -delta * gap ** (1 - delta) + offset
    slope[below] = delta * (1 - delta) * gap**-delta
    gap = p[above] - hi + c_star
    t[above] = delta * gap ** (1 - delta) - offset + (hi - lo)
    slope[above] = delta * (1 - delta) * gap**-delta
    kappa = np.full_like(p, beta)
    kappa[below] = beta * slope[below]
    kappa[above] = 2 * beta - beta * slope[above]
    g = n * p / (total * sd) if sd > 0 and not given else np.zeros_like(p)
    return Transformed(t, slope, kappa, g, sd)


@functools.cache
def _syevr_workspace(K: int) -> tuple[int, int]:
    """LAPACK dsyevr's optimal ``(lwork, liwork)`` for a K×K matrix (its workspace query, as scipy's ``eigh`` makes
    on every call)."""
    work, iwork, info = dsyevr_lwork(K, lower=1)
    if info != 0:
        raise LinAlgError(f"dsyevr's workspace query failed (info={info}).")
    return int(work), int(iwork)


def smallest_eigenpairs(M: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``count`` smallest eigenvalues (ascending) and unit eigenvectors of the symmetric ``M`` (lower triangle
    read), overwriting ``M`` when it is Fortran-ordered float64.

    The call ``scipy.linalg.eigh(M, subset_by_index=[0, count - 1], driver="evr")`` makes (LAPACK dsyevr, range
    "I", the same optimal workspace), so the same numbers, without its per-call checks and workspace query: about
    0.4 ms of the 2.5 ms one K = 200 eigenproblem takes."""
    K = M.shape[0]
    lwork, liwork = _syevr_workspace(K)
    w, Z, m, _, info = dsyevr(
        M, compute_v=1, range="I", lower=1, il=1, iu=count, lwork=lwork, liwork=liwork, overwrite_a=1
    )
    if info != 0 or m != count:
        raise LinAlgError(f"LAPACK dsyevr failed on a {K}×{K} Laplacian (info={info}, {m} of {count} eigenvalues).")
    return w[:count], Z[:, :count]


class Connectivity(NamedTuple):
    value: float  #: λ₂ + ω Σ_{a≠b} (V_aᵀV_b)²
    eigenvalue: float  #: λ₂
    gradient: np.ndarray | None  #: d value / d V, shape (d, l) (None when not asked for)
    eigenvalues: np.ndarray  #: the three smallest eigenvalues of the K×K matrix (fewer for K < 3)
    eigenvectors: np.ndarray  #: their unit eigenvectors, shape (K, 3)
    degree: np.ndarray  #: what maps the eigenvectors to the points: u/√degree (n for L, W's row sums for L_norm)
    norm: float  #: the largest diagonal entry of the K×K matrix; its eigenvalues are accurate to about eps·norm

    @property
    def eigenvector(self) -> np.ndarray:
        """u, the unit eigenvector of λ₂."""
        return self.eigenvectors[:, 1]


def spectral_connectivity(
    V: np.ndarray,
    centres: np.ndarray,
    counts: np.ndarray,
    sigma: float,
    *,
    laplacian: str = "standard",
    similarity: str = "paper",
    alpha: float = 0.1,
    beta: float = math.inf,
    delta: float = 0.01,
    omega: float = 0.0,
    covariance: np.ndarray | None = None,
    standard_scale: float = 1.0,
    gradient: bool = True,
) -> Connectivity:
    """λ₂ of the Laplacian of the weighted points ``centres`` (K×d, counts n_j, centred so that Σ n_j c_j = 0)
    projected on ``V`` (d×l) and transformed by T_Δ, with similarities k(‖t_j − t_k‖/σ), plus the penalty
    ω Σ_{a≠b}(V_aᵀV_b)² (eq. 26); and its gradient with respect to V (§5.2, errata corrected).

    ``laplacian="standard"``: L = D − A on the repeated points, i.e. M = diag(S n) − (√n √nᵀ) ∘ S (Lemma 6),
    times ``standard_scale``. ``laplacian="normalized"``: I − D^{−1/2} A D^{−1/2}, i.e. W = (n nᵀ) ∘ S,
    M = I − D_W^{−1/2} W D_W^{−1/2}. ``similarity``: "paper", k(x) = (x/α + 1)^α e^{−x} (eq. 30), or
    "gaussian", exp(−x²/2) (the R package). ``covariance``: Δ_i from σ_i = √(V_iᵀ Σ V_i) instead of the
    weighted spread of the projected points.
    """
    if laplacian not in LAPLACIANS:
        raise ValueError(f"laplacian must be one of {LAPLACIANS}; got {laplacian!r}.")
    if similarity not in SIMILARITIES:
        raise ValueError(f"similarity must be one of {SIMILARITIES}; got {similarity!r}.")
    V = np.asarray(V, dtype=np.float64)
    if V.ndim == 1:
        V = V[:, None]
    C = np.asarray(centres, dtype=np.float64)
    n = np.asarray(counts, dtype=np.float64)
    P = C @ V  # K × l
    l = V.shape[1]
    finite = math.isfinite(beta)
    if finite:  # T_Δ column by column (compiled; :func:`balancing_transform` is its reference)
        if covariance is not None:
            sds = [math.sqrt(max(float(V[:, i] @ covariance @ V[:, i]), 0.0)) for i in range(l)]
        else:
            total = n.sum()
            sds = [math.sqrt(float(n @ (P[:, i] * P[:, i])) / total) for i in range(l)]
        c_star = math.exp(math.log(delta * (1 - delta)) / delta)  # underflows to 0 for small δ, as the spec allows
        offset = delta * c_star ** (1 - delta)
        T, slope, kappa = balance_columns(P, float(beta), float(delta), np.array(sds), c_star, offset)
    else:
        T = np.ascontiguousarray(P)
    inv_sigma2 = 1.0 / sigma**2
    normalized, standard_scale = laplacian == "normalized", float(standard_scale)
    S, R = similarity_matrix(T, inv_sigma2, similarity == "gaussian", float(alpha))
    M, degree = laplacian_from_similarities(S, n, normalized, standard_scale)
    norm = float(np.abs(np.diag(M)).max())  # before the eigensolver overwrites M
    lam, U = smallest_eigenpairs(M, min(3, len(n)))
    gram = V.T @ V
    off = gram - np.diag(np.diag(gram))
    value = float(lam[1] + omega * (off**2).sum())
    if not gradient:
        return Connectivity(value, float(lam[1]), None, lam, U, degree, norm)
    u = np.ascontiguousarray(U[:, 1])
    dT = eigenvalue_gradient_from_slopes(T, n, u, float(lam[1]), degree, R, inv_sigma2, normalized, standard_scale)
    grad = np.empty_like(V)
    for i in range(l):
        dt = np.ascontiguousarray(dT[:, i]) if not finite else dT[:, i] * slope[i]
        grad[:, i] = C.T @ dt + 4 * omega * (V @ off[:, i])
        if finite:  # the dependence of Δ_i on the projection, through σ_i
            if covariance is None:
                g = n * P[:, i] / (total * sds[i]) if sds[i] > 0 else np.zeros(len(n))
                grad[:, i] += (dT[:, i] @ kappa[i]) * (C.T @ g)
            elif sds[i] > 0:
                grad[:, i] += (dT[:, i] @ kappa[i]) * (covariance @ V[:, i]) / sds[i]
    return Connectivity(value, float(lam[1]), grad, lam, U, degree, norm)


__all__ = [
    "LAPLACIANS",
    "SIMILARITIES",
    "Connectivity",
    "balancing_transform",
    "smallest_eigenpairs",
    "spectral_connectivity",
]
