"""Maximal separation clustering (MSC): the numerics of one bi-partition in distance-feature space.

Chen & Bi, "Clustering by maximizing sum-of-squared separation distance" (the MSC paper), as specified in
``shared/research/seed-msc.md``. A row x is mapped to its distances to the support rows,
d(x) = [m(x, s_1), ..., m(x, s_r)] (eq. 2.1); the split is f(x) = w·d(x) >= 0 with the w that maximises the
sum of squared separation distances wᵀD²w (eq. 2.4) under ‖w‖ = 1 and the balance constraint αᵀDw = 0
(Definition 2.1), i.e. the top eigenvector of D² in the null space of αᵀD (Theorem 2.1).

Weighted rows (frequency counts c, e.g. merged duplicates or microclusters) are the problem on the rows
repeated c times: a duplicated coordinate of w only spends norm, so the optimum is MSC on
D̃ = C^½ D C^½ with w = C^½ v (v the unit eigenvector); integer weights and repeated rows give the same split.

Two solvers:

- :func:`msc_exact`: D of the (distinct) rows, formed once in row blocks; the constrained top eigenvector of
  P D̃² P (P the projector onto the null space of the constraint) by Lanczos on the operator
  z -> P D̃ D̃ P z, never forming D² or the null-space basis (seed-msc §3.2), or by a dense eigensolver for small
  problems. For α₃ the Perron vector is an eigenvector of D̃, so the solution is the eigenvector of P D̃ P of
  largest |λ| (§2.9: the most negative eigenvalue of D when D has one positive eigenvalue).
- :func:`msc_landmarks`: features F = m(X, L) to r landmarks (not in the paper; seed-msc §8.3). The objective
  Σ c_i (wᵀd(x_i))² = wᵀ(FᵀCF)w and every balance constraint need only the r×r moment G = FᵀCF and the
  r-vector FᵀC1 (one pass over row blocks or chunks, :func:`landmark_moments`). The weight vectors become
  α₁ = 1 per row, α₂ ∝ the row sums of F (total dissimilarity to the landmarks) and α₃ ∝ the top left
  singular vector of C^½F (the Perron vector of F Fᵀ; with the landmarks = all rows, FFᵀ = D², whose
  eigenvectors are D's); the constraint vectors are then FᵀC1, G1 and the top eigenvector of G. With the
  landmarks all distinct rows, weighted as the rows (``landmark_weights``), it is the exact solution.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import eigh
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from .._warnings import warn

#: Distances between rows (``metric``): the metric of the Gaussian kernel exp(-‖x-y‖²/σ²) (eq. 2.3), or ‖x-y‖.
METRICS = ("gaussian", "euclidean")
#: Balance weights α (§2.6): α₁ uniform, α₂ ∝ De (total dissimilarity), α₃ the Perron vector of D.
WEIGHTS = ("alpha1", "alpha2", "alpha3")
#: Rows per block of distances held at once (a block is BLOCK_ROWS × r floats).
BLOCK_ROWS = 2048
#: Up to this many rows :func:`msc_exact` solves with a dense eigendecomposition (faster and exact there).
DENSE_MAX = 500
#: An eigenvalue of D above this fraction of the Perron eigenvalue counts as positive (§2.2 caveat, §3.6).
CND_RTOL = 1e-8
#: Lanczos steps of the matrix-free check for a second positive eigenvalue of D (a lower bound: it proves one).
CND_STEPS = 30
#: Rows sampled for the median heuristic of σ² (all pairs of at most this many distinct rows).
MEDIAN_ROWS = 2000


class MSCSolution(NamedTuple):
    """One MSC bi-partition (Theorem 2.1)."""

    coef: np.ndarray  #: w over the support rows: f(x) = Σ_j coef_j m(x, s_j)
    f: np.ndarray  #: f at the rows the split was fitted on (signed distances, eq. 2.2)
    separation: float  #: Σ_i c_i f(x_i)² with f from ``coef``: the sum-of-squared separation distance (eq. 2.4)
    eigengap: float  #: relative gap between the top two eigenvalues of the constrained problem (NaN if unknown)
    n_positive: int  #: positive eigenvalues of D (1 for a conditionally negative definite D; -1 if not checked)


# ---------------------------------------------------------------------------------------------------- features
def _squared_distances(A: np.ndarray, B: np.ndarray, b2: np.ndarray | None = None) -> np.ndarray:
    """‖a_i - b_j‖² as |a|² + |b|² - 2a·b (one product, updated in place), clipped at 0."""
    if b2 is None:
        b2 = np.einsum("ij,ij->i", B, B)
    r2 = A @ B.T
    r2 *= -2.0
    r2 += np.einsum("ij,ij->i", A, A)[:, None]
    r2 += b2[None, :]
    np.maximum(r2, 0.0, out=r2)
    return r2


def _metric_of_squared(r2: np.ndarray, metric: str, gamma: float) -> np.ndarray:
    """m from squared Euclidean distances, in place: sqrt(2 - 2 exp(-γ r²)) (eq. 2.3, K(x,x) = 1) or sqrt(r²)."""
    if metric == "gaussian":
        r2 *= -gamma
        np.expm1(r2, out=r2)
        r2 *= -2.0
        np.maximum(r2, 0.0, out=r2)
    elif metric != "euclidean":
        raise ValueError(f"metric must be one of {METRICS}; got {metric!r}.")
    return np.sqrt(r2, out=r2)


def distance_features(
    X: np.ndarray, S: np.ndarray, *, metric: str = "gaussian", gamma: float = 1.0, block_rows: int = BLOCK_ROWS
) -> np.ndarray:
    """The distance feature map d(x) = [m(x, s_1), ..., m(x, s_r)] of every row of X (eq. 2.1), shape (n, r).

    ``gamma`` is 1/σ² of the Gaussian kernel exp(-‖x-y‖²/σ²); the radicand is clipped at 0 (§2.3). Computed in
    blocks of ``block_rows`` rows.
    """
    X = np.asarray(X, dtype=np.float64)
    S = np.asarray(S, dtype=np.float64)
    s2 = np.einsum("ij,ij->i", S, S)
    out = np.empty((X.shape[0], S.shape[0]))
    for start in range(0, X.shape[0], block_rows):
        stop = min(start + block_rows, X.shape[0])
        out[start:stop] = _metric_of_squared(_squared_distances(X[start:stop], S, s2), metric, gamma)
    return out


def distance_matrix(
    X: np.ndarray, *, metric: str = "gaussian", gamma: float = 1.0, dtype=np.float64, block_rows: int = BLOCK_ROWS
) -> np.ndarray:
    """D = [m(x_i, x_j)] (eq. 2.2), exactly symmetric with a zero diagonal, computed block by block (each
    block above the diagonal once, mirrored below); ``dtype`` float32 halves the memory."""
    X = np.asarray(X, dtype=np.float64)
    X = X - X.mean(axis=0)  # distances are shift-invariant; centring avoids cancellation in |x|² + |y|² - 2x·y
    n = X.shape[0]
    x2 = np.einsum("ij,ij->i", X, X)
    D = np.empty((n, n), dtype=dtype)
    for i in range(0, n, block_rows):
        rows = slice(i, min(i + block_rows, n))
        for j in range(i, n, block_rows):
            cols = slice(j, min(j + block_rows, n))
            block = _metric_of_squared(_squared_distances(X[rows], X[cols], x2[cols]), metric, gamma)
            D[rows, cols] = block
            if j != i:
                D[cols, rows] = block.T
        sub = D[rows, rows]
        sub[...] = 0.5 * (sub + sub.T)
        np.fill_diagonal(sub, 0.0)
    return D


def median_sigma2(X: np.ndarray, weights: np.ndarray | None = None, *, max_rows: int = MEDIAN_ROWS, seed=0) -> float:
    """The median heuristic for σ²: the weighted median of ‖x_i - x_j‖² over pairs of distinct rows (i < j,
    pair weight c_i c_j, so repeated rows and integer weights agree), over at most ``max_rows`` rows drawn
    with probability ∝ c (all rows when there are fewer). Not in the paper (which selects σ² on labels)."""
    X = np.asarray(X, dtype=np.float64)
    c = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    keep = c > 0
    X, c = X[keep], c[keep]
    if X.shape[0] > max_rows:
        rows = np.random.default_rng(seed).choice(X.shape[0], max_rows, replace=False, p=c / c.sum())
        X, c = X[np.sort(rows)], np.ones(max_rows)
    X = X - X.mean(axis=0)
    iu = np.triu_indices(X.shape[0], k=1)
    r2 = _squared_distances(X, X)[iu]
    w = (c[:, None] * c[None, :])[iu]
    positive = r2 > 0
    r2, w = r2[positive], w[positive]
    if r2.size == 0:
        return float("nan")
    order = np.argsort(r2, kind="stable")
    r2, cum = r2[order], np.cumsum(w[order])
    return float(r2[np.searchsorted(cum, 0.5 * cum[-1])])


# ---------------------------------------------------------------------------------------- weights and criteria
def weight_vector(D: np.ndarray, weight: str = "alpha3") -> np.ndarray:
    """The balance weights of §2.6 for a distance matrix D, normalised to sum 1: α₁ = e/n, α₂ = De/(eᵀDe),
    α₃ = the Perron vector of D (its top eigenvector, positive)."""
    n = D.shape[0]
    if weight == "alpha1":
        return np.full(n, 1.0 / n)
    if weight == "alpha2":
        De = D.sum(axis=1)
        return De / De.sum()
    if weight == "alpha3":
        p = np.abs(eigh(D, subset_by_index=(n - 1, n - 1))[1][:, 0])
        return p / p.sum()
    raise ValueError(f"weight must be one of {WEIGHTS}; got {weight!r}.")


def count_positive_eigenvalues(D: np.ndarray, rtol: float = CND_RTOL) -> int:
    """Eigenvalues of the symmetric D above ``rtol`` times the largest one. A Euclidean or Gaussian-kernel distance
    matrix of distinct points has exactly one (it is conditionally negative definite); other metrics may have
    more (seed-msc §2.2 caveat: the 4-cycle has a zero eigenvalue, K₂,₃ two positive ones)."""
    lam = np.linalg.eigvalsh(D)
    return int(np.sum(lam > rtol * max(lam[-1], 0.0)))


def warn_if_not_cnd(n_positive: int, n: int) -> None:
    """The §3.6 warning: D with more than one positive eigenvalue is not conditionally negative definite."""
    if n_positive > 1:
        warn(
            f"MSC: the distance matrix of the {n} rows has {n_positive} positive eigenvalues, so it is not "
            "conditionally negative definite (the metric is not Euclidean-embeddable, seed-msc §2.2): the split is "
            "still the maximal separation hyperplane (Theorem 2.1), but not every bi-partition is separable and "
            "the α₃ solution uses the general rule argmax_(k>=2) λ_k²."
        )


def disparity_cut(D: np.ndarray, side: np.ndarray, beta: np.ndarray | None = None, weights=None) -> float:
    """The disparity cut (eq. 3.7) of the bi-partition A = {side}, B = {not side}:
    2 cut_β(A,B) - (|B|_β/|A|_β) cut_β(A,A) - (|A|_β/|B|_β) cut_β(B,B), with cut_β(A,B) = Σ_(i∈A, j∈B) β_i β_j d_ij
    over ordered pairs and |A|_β = Σ_(i∈A) β_i², β normalised to ‖β‖ = 1 (default uniform). ``weights`` are row
    multiplicities: a row of weight c counts as c rows (each with its β). NaN when a side is empty."""
    side = np.asarray(side, dtype=bool)
    n = D.shape[0]
    c = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    b = np.ones(n) if beta is None else np.asarray(beta, dtype=np.float64)
    b = b / np.sqrt(np.sum(c * b**2))
    mass = c * b
    a_in, a_out = np.where(side, mass, 0.0), np.where(side, 0.0, mass)
    size_a, size_b = float(np.sum(c * b**2 * side)), float(np.sum(c * b**2 * ~side))
    if size_a == 0 or size_b == 0:
        return float("nan")
    Da = np.asarray(D @ a_in.astype(D.dtype), dtype=np.float64)  # (a float32 D is not copied)
    Db = np.asarray(D @ a_out.astype(D.dtype), dtype=np.float64)
    cut_ab, cut_aa, cut_bb = float(a_out @ Da), float(a_in @ Da), float(a_out @ Db)
    return 2.0 * cut_ab - size_b / size_a * cut_aa - size_a / size_b * cut_bb


def orientation(f: np.ndarray, weights: np.ndarray) -> float:
    """The sign convention of §2.8 [impl], invariant to the order of the rows: +1 or -1 so that the side
    f >= 0 (child 1) is the lighter one; with equal weights, the row of largest |f| is on side f >= 0."""
    above = float(weights[f >= 0].sum())
    below = float(weights[f < 0].sum())
    if above != below:
        return 1.0 if above < below else -1.0
    if f.size == 0:
        return 1.0
    return 1.0 if f[np.argmax(np.abs(f))] >= 0 else -1.0


# ----------------------------------------------------------------------------------------------------- solvers
def _check_weight(weight: str) -> None:
    if weight not in WEIGHTS:
        raise ValueError(f"weight must be one of {WEIGHTS}; got {weight!r}.")


def _unit(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v)
    if not norm > 0:
        raise ValueError("MSC: the balance constraint αᵀD is zero (all distances are zero).")
    return v / norm


def _constrained_top_dense(A: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Top eigenvector of P A P, P = I - ĝĝᵀ (Theorem 2.1 in projector form); its eigenvalue and the relative gap."""
    g = _unit(g)
    Ag = A @ g
    M = A - np.outer(g, Ag) - np.outer(Ag, g) + (g @ Ag) * np.outer(g, g)
    n = M.shape[0]
    lam, V = eigh(0.5 * (M + M.T), subset_by_index=(max(n - 2, 0), n - 1))
    v = V[:, -1] - g * (g @ V[:, -1])
    gap = (lam[-1] - lam[-2]) / lam[-1] if lam.size > 1 and lam[-1] > 0 else float("nan")
    return _unit(v), float(lam[-1]), float(gap)


def _projector(g: np.ndarray):
    g = _unit(g)

    def project(Z):
        return Z - np.outer(g, g @ Z) if Z.ndim == 2 else Z - g * (g @ Z)

    return project


def _eigsh(op: LinearOperator, k: int, which: str, v0: np.ndarray, tol: float):
    """ARPACK's eigenpairs, largest first; a partial result (with a warning) if it does not converge."""
    n = op.shape[0]
    ncv = min(n, max(2 * k + 1, 40))
    try:
        lam, V = eigsh(op, k=k, which=which, v0=v0, tol=tol, ncv=ncv, maxiter=max(1000, 20 * n))
    except ArpackNoConvergence as exc:
        if exc.eigenvalues.size == 0:
            raise
        warn(f"MSC: the eigensolver did not converge ({exc}); using its last iterate.")
        lam, V = exc.eigenvalues, exc.eigenvectors
    key = np.abs(lam) if which == "LM" else lam
    order = np.argsort(key)[::-1]
    return lam[order], V[:, order]


def _ritz_values(op, v0: np.ndarray, steps: int) -> np.ndarray:
    """Ritz values of the symmetric ``op`` on the Krylov space of ``v0`` (``steps`` products, fully
    re-orthogonalised): each lies inside the spectrum, so the largest is a lower bound of the largest eigenvalue."""
    n = v0.shape[0]
    steps = min(steps, n)
    Q = np.zeros((n, steps))
    AQ = np.zeros((n, steps))
    q = v0 / np.linalg.norm(v0)
    for j in range(steps):
        Q[:, j] = q
        AQ[:, j] = op(q)
        w = AQ[:, j] - Q[:, : j + 1] @ (Q[:, : j + 1].T @ AQ[:, j])
        w -= Q[:, : j + 1] @ (Q[:, : j + 1].T @ w)
        norm = np.linalg.norm(w)
        if norm < 1e-12 * np.linalg.norm(AQ[:, j]):
            Q, AQ = Q[:, : j + 1], AQ[:, : j + 1]
            break
        q = w / norm
    T = Q.T @ AQ
    return np.linalg.eigvalsh(0.5 * (T + T.T))


def _operator(n: int, fn) -> LinearOperator:
    return LinearOperator((n, n), matvec=fn, matmat=fn, dtype=np.float64)


def msc_exact(
    D: np.ndarray,
    weights: np.ndarray | None = None,
    weight: str = "alpha3",
    *,
    check_cnd: bool = True,
    dense_max: int = DENSE_MAX,
    tol: float = 1e-10,
    random_state: int | None = 0,
) -> MSCSolution:
    """The MSC split of n distinct rows from their distance matrix D (Definition 2.1, Theorem 2.1).

    ``weights`` are row multiplicities c > 0 (default 1): MSC on D̃ = C^½DC^½ (module docstring), applied as
    z -> C^½(D(C^½z)) so D is neither copied nor changed. The support of the solution is the n rows themselves.
    Up to ``dense_max`` rows the eigenproblems are solved densely; above, by Lanczos on the matrix-free operator
    z -> P D̃ (D̃ (P z)) (α₁, α₂; P projects out the constraint vector D̃α̃) or z -> P D̃ P z (α₃; P projects out
    the Perron vector, §2.9), so the memory is D alone. ``check_cnd`` counts the positive eigenvalues of D and
    warns when there are more than one (§3.6); above ``dense_max`` rows the count is a lower bound, from
    ``CND_STEPS`` Lanczos steps on D̃ with the Perron vector projected out (the eigenvalues of D next to 0 are
    too clustered for Lanczos to converge to the second largest one). D may be float32 (products in float32).
    """
    _check_weight(weight)
    n = D.shape[0]
    if D.ndim != 2 or D.shape != (n, n):
        raise ValueError(f"MSC: D must be a square matrix; got shape {D.shape}.")
    if n < 2:
        raise ValueError(f"MSC: at least 2 distinct rows are needed; got {n}.")
    c = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if c.shape != (n,) or not np.all(c > 0) or not np.all(np.isfinite(c)):
        raise ValueError("MSC: the weights must be finite and positive, one per row of D.")
    s = np.sqrt(c / c.max())
    n_positive = -1
    if n <= max(dense_max, 3):
        Dt = np.asarray(D, dtype=np.float64) * s[:, None] * s[None, :]
        lam = eigh(Dt, eigvals_only=True) if check_cnd or weight == "alpha3" else None
        if check_cnd:
            n_positive = int(np.sum(lam > CND_RTOL * max(lam[-1], 0.0)))
        if weight == "alpha3":  # §2.9: w* = u_k, k = argmax_(k>=2) λ_k² (the most negative λ when D is CND)
            sq = lam[:-1] ** 2
            order = np.argsort(sq)[::-1]
            v = eigh(Dt, subset_by_index=(order[0], order[0]))[1][:, 0]
            gap = (sq[order[0]] - sq[order[1]]) / sq[order[0]] if n > 2 and sq[order[0]] > 0 else float("nan")
        else:
            A = Dt @ Dt
            g = Dt @ s if weight == "alpha1" else A @ s  # D̃ c^½ (α₁) and D̃² c^½ (α₂)
            v, _, gap = _constrained_top_dense(A, g)
        f = Dt @ v
    else:
        rng = np.random.default_rng(random_state)
        s_d = s.astype(D.dtype)

        def matvec(Z):
            Z = np.asarray(Z, dtype=D.dtype)
            if Z.ndim == 1:
                return np.asarray(s_d * (D @ (s_d * Z)), dtype=np.float64)
            return np.asarray(s_d[:, None] * (D @ (s_d[:, None] * Z)), dtype=np.float64)

        lam_top, P_top = _eigsh(_operator(n, matvec), 1, "LA", rng.normal(size=n), tol)
        p = P_top[:, 0] * np.sign(P_top[:, 0].sum() or 1.0)
        if check_cnd:  # a Ritz value of P D̃ P above the tolerance proves a second positive eigenvalue
            project = _projector(p)
            ritz = _ritz_values(lambda Z: project(matvec(project(Z))), project(rng.normal(size=n)), CND_STEPS)
            n_positive = 1 + int(np.sum(ritz > CND_RTOL * lam_top[0]))
        if weight == "alpha3":
            project = _projector(p)

            def op(Z):
                return project(matvec(project(Z)))

            lam, V = _eigsh(_operator(n, op), 2, "LM", project(rng.normal(size=n)), tol)
            v = V[:, 0]
            gap = (lam[0] ** 2 - lam[1] ** 2) / lam[0] ** 2 if lam[0] != 0 else float("nan")
        else:
            g = matvec(s)
            if weight == "alpha2":
                g = matvec(g)
            project = _projector(g)

            def op(Z):
                return project(matvec(matvec(project(Z))))

            lam, V = _eigsh(_operator(n, op), 2, "LA", project(rng.normal(size=n)), tol)
            v = V[:, 0]
            gap = (lam[0] - lam[1]) / lam[0] if lam[0] > 0 else float("nan")
        f = matvec(v)
    if check_cnd:
        warn_if_not_cnd(n_positive, n)
    v = _unit(v)
    f_true = f / s  # f at the rows: D C^½ v = C^-½ D̃ v
    separation = float(np.sum(c * f_true**2))
    return MSCSolution(s * v, f_true, separation, float(gap), n_positive)


def landmark_moments(
    X: np.ndarray,
    L: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    metric: str = "gaussian",
    gamma: float = 1.0,
    block_rows: int = BLOCK_ROWS,
) -> tuple[np.ndarray, np.ndarray, float]:
    """One pass over the rows in blocks: ``(FᵀCF, FᵀC1, Σc)`` for the landmark features F = m(X, L) and row
    weights c (default 1). Sums over row chunks add up to the moments of all rows."""
    X = np.asarray(X, dtype=np.float64)
    L = np.asarray(L, dtype=np.float64)
    c = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    r = L.shape[0]
    G, h = np.zeros((r, r)), np.zeros(r)
    l2 = np.einsum("ij,ij->i", L, L)
    for start in range(0, X.shape[0], block_rows):
        stop = min(start + block_rows, X.shape[0])
        F = _metric_of_squared(_squared_distances(X[start:stop], L, l2), metric, gamma)
        cb = c[start:stop]
        h += cb @ F
        G += (F * cb[:, None]).T @ F
    return 0.5 * (G + G.T), h, float(c.sum())


def solve_moments(
    G: np.ndarray, h: np.ndarray, weight: str = "alpha3", landmark_weights: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """The landmark MSC solution from the moments ``G = FᵀCF`` and ``h = FᵀC1`` (module docstring):
    ``(coef, eigengap)`` with f(x) = Σ_j coef_j m(x, l_j). ``landmark_weights`` ω scale the norm of w as
    wᵀΩ⁻¹w (landmarks standing for ω rows each; default 1)."""
    _check_weight(weight)
    r = G.shape[0]
    om = np.ones(r) if landmark_weights is None else np.sqrt(np.asarray(landmark_weights, dtype=np.float64))
    Gt = G * om[:, None] * om[None, :]
    if weight == "alpha1":
        g = om * h
    elif weight == "alpha2":
        g = Gt @ om  # G̃ Ω^½ 1: the row sums (FΩ1)_i as weights
    else:
        g = eigh(Gt, subset_by_index=(r - 1, r - 1))[1][:, 0]  # the Perron vector of G̃
    if r < 2:
        raise ValueError("MSC: at least 2 landmarks are needed.")
    v, _, gap = _constrained_top_dense(Gt, g)
    return om * v, gap


def msc_landmarks(
    X: np.ndarray,
    L: np.ndarray,
    weights: np.ndarray | None = None,
    weight: str = "alpha3",
    *,
    metric: str = "gaussian",
    gamma: float = 1.0,
    landmark_weights: np.ndarray | None = None,
    block_rows: int = BLOCK_ROWS,
) -> MSCSolution:
    """The MSC split of the rows of X in the distance features to the landmarks L (module docstring); the support
    of the solution is L. Two passes over X in blocks (the moments, then f)."""
    G, h, _ = landmark_moments(X, L, weights, metric=metric, gamma=gamma, block_rows=block_rows)
    coef, gap = solve_moments(G, h, weight, landmark_weights)
    f = np.empty(X.shape[0])
    for start in range(0, X.shape[0], block_rows):
        stop = min(start + block_rows, X.shape[0])
        f[start:stop] = distance_features(X[start:stop], L, metric=metric, gamma=gamma) @ coef
    return MSCSolution(coef, f, float(coef @ G @ coef), gap, -1)
