"""Spectral connectivity projection pursuit: one bi-partition of weighted points by the projection that
minimises λ₂ of the Laplacian of the projected (micro)clusters (SCPP), and its large-margin variant (LMSC).

Hofmeyr, Pavlidis & Eckley, "Minimum spectral connectivity projection pursuit" (arXiv:1509.01546), as
specified in ``shared/research/seed-spectral.md``; the objective and its gradient are
:func:`lowdens_dask.indices.spectral.spectral_connectivity`.

One split (§8): the node's points (rows, or summaries weighted by their row counts) are centred and, above a
threshold, replaced by k-means microclusters (§7; the R package's farthest-first initialisation, or
k-means++ seeded for repeated runs); the projection starts from the leading principal components; for
each β of the schedule (largest first) BFGS minimises λ₂ + ω·penalty over the projection, followed by the
non-smooth step (§6); the projected microclusters are bi-partitioned spectrally; the first β whose split
leaves at least ``min_side`` on each side is kept (the last one otherwise). LMSC (§9.3) halves σ after each
minimisation, re-clustering the projected points, until the projection stops changing.

Two parameter schemes (:data:`SCHEMES`): ``"package"`` (the defaults of the authors' R package SCPP,
spec Appendix C) and ``"paper"`` (the paper's §7.1). The projection is parameterised by unnormalised
columns W, V = W / ‖W‖ column-wise: the same manifold as the paper's polar angles (eq. 12), without their
singularities, so plain BFGS applies (the R package likewise runs BFGS unconstrained).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import functools
import math
import warnings
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize, nnls
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import ThreadpoolController

from ..indices.spectral import LAPLACIANS, SIMILARITIES, Connectivity, spectral_connectivity

#: Parameter schemes: the authors' R package (spec Appendix C) and the paper (§3.4, §7.1, §8).
SCHEMES = {
    "package": {
        "similarity": "gaussian",  # exp(-r^2/2)
        "scale_rule": "package",  # sqrt(mean of the eigenvalues >= 1) * (4/(3n))^(1/(4+#))
        "delta_rule": "fixed",  # δ = 0.01
        "delta_from": "covariance",  # Δ_i from sqrt(v' Cov v) of the node's rows
        "standard_per_point": True,  # the standard Laplacian divided by N
        "betas": {"standard": (1.5, 0.2), "normalized": (3.0, 0.2)},  # (start, step) down to 0.5
        "microclusters_above": 200,  # k-means when the node has more points than microclusters
        "bipartition": "package",  # weighted 2-means on the two smallest eigenvectors
        "balance_in_pursuit": True,  # the gradient is zero while the eigenvector split is unbalanced
        "min_side_rule": "package",  # n_root / n_clusters / 5
    },
    "paper": {
        "similarity": "paper",  # (x/0.1 + 1)^0.1 exp(-x), eq. 30
        "scale_rule": "paper",  # sqrt(l lambda_max) N^(-1/5)
        "delta_rule": "paper",  # δ = min(0.01, σ²)
        "delta_from": "points",  # Δ_i from the weighted spread of the projected points (eq. 25)
        "standard_per_point": False,
        "betas": {"standard": (3.0, 0.5), "normalized": (3.0, 0.5)},
        "microclusters_above": 1000,
        "bipartition": "paper",  # 2-means on the second eigenvector at the point level
        "balance_in_pursuit": False,
        "min_side_rule": "paper",  # N / (2 K)
    },
}
#: The smallest β of every schedule.
BETA_MIN = 0.5
#: λ₂ counts as simple when λ₃ − λ₂ exceeds this fraction of λ₂ (the R package's test).
SIMPLE_TOLERANCE = 1e-5
#: LMSC stops halving σ when every column moved by less than this (1 − |v_newᵀ v_old|), or after
#: ``LMSC_MAX_HALVINGS`` halvings (spec §16).
LMSC_TOLERANCE = 1e-6
LMSC_MAX_HALVINGS = 20
#: λ₂ below this fraction of the K×K matrix's largest diagonal entry is zero: a dense eigensolver is accurate to
#: about 1e−16 of it, so λ₂ and its gradient are rounding error. Laplacians are positive semi-definite, so such a
#: λ₂ is already the least possible value: the non-smooth step (which exists to lower a λ₂ tied with λ₃) stops
#: there. A σ far below the spread of the points puts every projection there: each similarity between distinct
#: points underflows to 0, the graph has no edges and λ₂ = λ₃ = 0 everywhere, never simple, and the
#: gradient-sampling steps only chased rounding noise (issue 22, point 5: 361 s for one fit).
NOISE_FLOOR = 1e-9
#: LMSC stops halving σ when λ₂ at the next σ would be below the noise floor.
LMSC_NOISE_FLOOR = NOISE_FLOOR
#: The quasi-Newton minimiser: BFGS (R's ``optim``, as the R package) up to this many parameters (d·l), and
#: limited-memory BFGS above, where the dense inverse Hessian costs more than the objective (O((d·l)²) per
#: step: 56 of 61 s on yale, d = 600), stopping on the relative decrease of the value (the objective is
#: scaled by its first value) as ``optim`` does (reltol 1e-8).
DENSE_BFGS_MAX_PARAMETERS = 256
LBFGS_OPTIONS = {"ftol": 1e-8, "gtol": 1e-5, "maxcor": 20}
#: The σ a split accepts: σ² and 1/σ² (the similarity's scale) and δ = min(0.01, σ²) stay normal float64 numbers
#: here, with room for LMSC's halvings (at most ``LMSC_MAX_HALVINGS``, a factor of about 1e6).
SIGMA_RANGE = (1e-140, 1e140)
#: Gradients sampled per non-smooth step: 2 × the number of parameters (the R package), at most this many.
MAX_GRADIENT_SAMPLES = 64


class SpectralSplit(NamedTuple):
    """One spectral bi-partition, in the coordinates of the points it was found on."""

    V: np.ndarray  #: d × l projection, unit columns
    centres: np.ndarray  #: K × l projected (micro)cluster centres, uncentred (x @ V of the centre)
    sides: np.ndarray  #: K booleans: True for the centres of side 1
    value: float  #: λ₂ + ω·penalty at the solution
    eigenvalue: float  #: λ₂
    weights: tuple[float, float]  #: weight of the points of side 0 and side 1 (by their microcluster)
    balanced: bool  #: the smaller side holds at least ``min_side``
    params: dict  #: σ, β, δ, microclusters, ... (JSON-able)
    n_evaluations: int


def scheme_settings(scheme: str) -> dict:
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {tuple(SCHEMES)}; got {scheme!r}.")
    return SCHEMES[scheme]


def beta_schedule(scheme: str, laplacian: str) -> tuple[float, ...]:
    """The scheme's β values, largest first, down to :data:`BETA_MIN`."""
    start, step = scheme_settings(scheme)["betas"][laplacian]
    count = int(math.floor((start - BETA_MIN) / step + 1e-9))
    return tuple(round(start - i * step, 10) for i in range(count + 1)) + (
        () if math.isclose(start - count * step, BETA_MIN) else (BETA_MIN,)
    )


def spectral_scale(eigenvalues: np.ndarray, n: float, n_components: int, rule: str) -> float:
    """σ of the similarity for a node of total weight ``n`` with covariance eigenvalues ``eigenvalues``
    (descending). ``"paper"``: √(l λ_max) N^(−1/5) (§3.4, §7.1). ``"package"``: √(mean of the r eigenvalues
    ≥ 1) · (4/(3n))^(1/(4+r)) among the 20 largest (r ≥ 1; the R package, on standardised data)."""
    eigenvalues = np.maximum(np.asarray(eigenvalues, dtype=np.float64), 0.0)
    if rule == "paper":
        return math.sqrt(n_components * eigenvalues[0]) * n ** (-0.2)
    top = eigenvalues[:20]
    r = max(int((top >= 1).sum()), 1)
    return math.sqrt(float(top[:r].mean())) * (4.0 / (3.0 * n)) ** (1.0 / (4 + r))


def microclusters(
    X: np.ndarray, weights: np.ndarray, k: int, init: str, random_state: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted k-means microclusters of the points (§7.1): ``(centres, counts, membership)``.

    ``init="farthest"``: farthest-first traversal from the weighted mean (the R package; deterministic);
    ``"k-means++"``: seeded by ``random_state``. Ten Lloyd iterations follow (R's ``kmeans`` default
    iteration limit). Centres are the weighted means of their members; empty clusters are dropped."""
    if init == "farthest":
        mean = weights @ X / weights.sum()
        nearest = ((X - mean) ** 2).sum(axis=1)
        chosen = []
        for _ in range(k):
            j = int(np.argmax(nearest))
            chosen.append(j)
            nearest = np.minimum(nearest, ((X - X[j]) ** 2).sum(axis=1))
        seeds = X[chosen]
    elif init == "k-means++":
        seeds, _ = kmeans_plusplus(X, k, sample_weight=weights, random_state=random_state)
    else:
        raise ValueError(f"microcluster_init must be 'farthest' or 'k-means++'; got {init!r}.")
    # one OpenMP thread, as in :func:`bipartition`: a few thousand points, where threads mostly wait on each other
    # (2.7 of a 16-leaf tree's 9 s on two shared cores), and whose partial sums they add in a varying order
    with warnings.catch_warnings(), _thread_pools().limit(limits=1, user_api="openmp"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        km = KMeans(k, init=seeds, n_init=1, max_iter=10, algorithm="lloyd").fit(X, sample_weight=weights)
    labels = km.labels_
    counts = np.bincount(labels, weights=weights, minlength=k)
    keep = np.flatnonzero(counts > 0)
    sums = np.zeros((k, X.shape[1]))
    np.add.at(sums, labels, X * weights[:, None])
    remap = np.full(k, -1)
    remap[keep] = np.arange(len(keep))
    return sums[keep] / counts[keep, None], counts[keep], remap[labels]


def _min_norm_in_hull(G: np.ndarray) -> np.ndarray:
    """The point of least norm in the convex hull of the rows of G (a small QP, solved as NNLS with the
    constraint Σλ = 1 as a heavily weighted row)."""
    rho = 1e3 * max(float(np.abs(G).max()), 1e-300)
    A = np.vstack([G.T, np.full((1, G.shape[0]), rho)])
    b = np.zeros(A.shape[0])
    b[-1] = rho
    lam, _ = nnls(A, b, maxiter=50 * G.shape[0])
    lam /= max(lam.sum(), 1e-300)
    return lam @ G


class _Objective:
    """λ₂ + ω·penalty as a function of the unnormalised columns W (flattened), scaled by its first value,
    with the balance rule of the R package (zero gradient while the eigenvector's sign split is unbalanced)."""

    def __init__(self, C, n, l, settings: dict, min_side: float):
        self.C, self.n, self.l = C, n, l
        self.settings = settings
        self.min_side = min_side
        self.n_evaluations = 0
        self.unit = None
        self._last = None  # (w, V, norms, connectivity) of the last evaluation

    def connectivity(self, w: np.ndarray, gradient: bool = True) -> tuple[np.ndarray, np.ndarray, Connectivity]:
        """``(V, column norms of W, connectivity)`` at the flattened W.

        The last evaluation is kept: asked again at the same W (the minimiser's solution, evaluated by its last step
        and again to test λ₂'s multiplicity), it is returned, not recomputed (the same numbers; still counted in
        ``n_evaluations``, which counts the evaluations asked for)."""
        self.n_evaluations += 1
        last = self._last
        if last is not None and (not gradient or last[3].gradient is not None) and np.array_equal(w, last[0]):
            return last[1], last[2], last[3]
        W = w.reshape(-1, self.l)
        norms = np.linalg.norm(W, axis=0)
        V = W / norms
        conn = spectral_connectivity(V, self.C, self.n, gradient=gradient, **self.settings)
        self._last = (w.copy(), V, norms, conn)
        return V, norms, conn

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        V, norms, conn = self.connectivity(w)
        if self.unit is None:
            self.unit = max(abs(conn.value), 1e-300)
        g = conn.gradient
        if self.min_side > 0:
            below = float(self.n[conn.eigenvector < 0].sum())
            if min(below, float(self.n.sum()) - below) < self.min_side:
                g = np.zeros_like(g)
        g = (g - V * (V * g).sum(axis=0)) / norms  # through V = W / ||W||
        return conn.value / self.unit, g.ravel() / self.unit


def _is_simple(conn: Connectivity) -> bool:
    lam = conn.eigenvalues
    return len(lam) < 3 or (lam[2] - lam[1]) > SIMPLE_TOLERANCE * abs(lam[1])


def minimise_connectivity(
    C: np.ndarray, n: np.ndarray, V0: np.ndarray, settings: dict, *, min_side: float, maxiter: int, rng
) -> tuple[np.ndarray, int]:
    """BFGS over the projection from ``V0`` (gradient assumed to exist), then, while λ₂ is not simple and above
    zero (:data:`NOISE_FLOOR`), the non-smooth step of the R package (spec §6): gradients sampled in a ball, the
    least-norm element of their convex hull as descent direction, Armijo backtracking, radius 0.1 shrinking to
    1e−6; at most ``maxiter`` such steps. Returns ``(V, evaluations)``."""
    V, evaluations, _ = _minimise_connectivity(C, n, V0, settings, min_side=min_side, maxiter=maxiter, rng=rng)
    return V, evaluations


def _minimise_connectivity(
    C, n, V0, settings, *, min_side, maxiter, rng
) -> tuple[np.ndarray, int, Connectivity | None]:
    """:func:`minimise_connectivity`, with the connectivity at the solution V when it was computed there (None
    otherwise), so that the caller need not compute it again."""
    l = V0.shape[1]
    objective = _Objective(C, n, l, settings, min_side)
    w = V0.ravel().copy()
    radius = 0.1
    conn = at_solution = None
    for _ in range(maxiter + 1):  # at most ``maxiter`` non-smooth steps, each followed by BFGS
        if w.size <= DENSE_BFGS_MAX_PARAMETERS:
            options = {"maxiter": maxiter, "gtol": 1e-5}
            result = minimize(objective, w, jac=True, method="BFGS", options=options)
        else:
            result = minimize(objective, w, jac=True, method="L-BFGS-B", options=LBFGS_OPTIONS | {"maxiter": maxiter})
        w = result.x
        _, _, conn = objective.connectivity(w, gradient=False)
        at_solution = w
        if _is_simple(conn) or conn.eigenvalue <= NOISE_FLOOR * conn.norm or radius < 1e-6:
            break
        while radius >= 1e-6:
            f0, g0 = objective(w)
            count = min(2 * w.size, MAX_GRADIENT_SAMPLES)
            G = [g0] + [objective(w + radius * (rng.random(w.size) - 0.5))[1] for _ in range(count)]
            direction = _min_norm_in_hull(np.asarray(G))
            norm = float(np.linalg.norm(direction))
            if norm < 1e-7:
                radius /= 10
                continue
            direction /= norm
            step = 1.0
            while objective(w - step * direction)[0] > f0 - step / 10 * norm and step >= 1e-6:
                step /= 2
            if step < 1e-6:
                radius /= 10
                continue
            w = w - step * direction
            break  # back to BFGS from the new point
        else:
            break
    W = w.reshape(-1, l)
    return W / np.linalg.norm(W, axis=0), objective.n_evaluations, conn if w is at_solution else None


@functools.cache
def _thread_pools() -> ThreadpoolController:
    """The process's thread pools, found once (``threadpool_limits`` looks for them on every call: 6 ms)."""
    return ThreadpoolController()


def bipartition(conn: Connectivity, n: np.ndarray, laplacian: str, rule: str, random_state) -> np.ndarray:
    """Sides of the (micro)clusters from the eigenvectors (spec §8): ``"package"``, weighted 2-means on the
    two smallest eigenvectors (rows normalised for the normalised Laplacian; the R package); ``"paper"``,
    weighted 2-means on the second eigenvector at the point level (u/√n, or D^{−1/2}u). 10 starts."""
    U = conn.eigenvectors
    if rule == "package":
        F = U[:, :2].copy()
        if laplacian == "normalized":
            F /= np.maximum(np.linalg.norm(F, axis=1, keepdims=True), 1e-300)
    else:
        F = (U[:, 1] / np.sqrt(conn.degree))[:, None]
        F /= max(float(np.abs(F).max()), 1e-300)  # 2-means is scale-free; 1/√degree is large for tiny weights
    if len(n) == 2:
        return np.array([False, True])
    # a few hundred points in one or two dimensions: OpenMP threads only add start-up and, on a loaded machine,
    # spinning (3x slower with two cores shared)
    with warnings.catch_warnings(), _thread_pools().limit(limits=1, user_api="openmp"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        labels = KMeans(2, n_init=10, random_state=random_state).fit(F, sample_weight=n).labels_
    sides = labels.astype(bool)
    if sides.all() or not sides.any():  # identical rows: split by the sign of the eigenvector
        sides = U[:, 1] >= 0
    return sides


def spectral_split(
    X: np.ndarray,
    weights: np.ndarray,
    *,
    n_components: int = 2,
    laplacian: str = "normalized",
    scheme: str = "package",
    omega: float = 1.0,
    similarity: str | None = None,
    scale_multiplier: float = 1.0,
    betas: tuple | None = None,
    n_microclusters: int = 200,
    microclusters_above: int | None = None,
    microcluster_init: str = "farthest",
    min_side: float = 0.0,
    large_margin: bool = False,
    v0: np.ndarray | None = None,
    maxiter: int = 100,
    spread: float = 0.0,
    random_state: int | None = None,
) -> SpectralSplit:
    """One SCPP (or, with ``large_margin``, LMSC) bi-partition of the weighted points ``X`` (spec §8, §9.3).

    ``omega`` weights Σ_{i<j}(V_iᵀV_j)² (the R package's convention; the paper's ordered-pair sum with ω
    equals this with 2ω). ``min_side``: the least weight the smaller side must hold for a β to be accepted.
    ``spread``: summaries' within-variance per dimension, added to the covariance's diagonal.
    """
    settings = scheme_settings(scheme)
    if laplacian not in LAPLACIANS:
        raise ValueError(f"laplacian must be one of {LAPLACIANS}; got {laplacian!r}.")
    similarity = similarity or settings["similarity"]
    if similarity not in SIMILARITIES:
        raise ValueError(f"similarity must be one of {SIMILARITIES}; got {similarity!r}.")
    if large_margin:
        laplacian = "standard"  # LMSC: the theory is for L (§9.3)
    rng = np.random.default_rng(random_state)
    weights = np.asarray(weights, dtype=np.float64)
    keep = weights > 0  # points of weight 0 carry nothing (and would have no degree)
    X = np.asarray(X, dtype=np.float64)[keep]
    weights = weights[keep]
    total = float(weights.sum())
    mean = weights @ X / total
    Xc = X - mean
    covariance = (Xc * weights[:, None]).T @ Xc / max(total - 1.0, 1.0) + spread * np.eye(X.shape[1])
    evals, evecs = np.linalg.eigh(covariance)
    evals, evecs = evals[::-1], evecs[:, ::-1]
    l = int(min(n_components, X.shape[1]))
    sigma = scale_multiplier * spectral_scale(evals, total, l, settings["scale_rule"])
    if not sigma > 0:
        raise ValueError("The node's rows have no spread: a spectral split needs at least two distinct rows.")
    if not SIGMA_RANGE[0] <= sigma <= SIGMA_RANGE[1]:
        raise ValueError(
            f"The similarity's scale σ = scale_multiplier × the scheme's σ = {sigma:g} lies outside "
            f"[{SIGMA_RANGE[0]:g}, {SIGMA_RANGE[1]:g}], where σ² and 1/σ² are exact in float64; choose a "
            f"scale_multiplier nearer 1 (got {scale_multiplier:g}) or rescale the data (standardize=True)."
        )
    above = settings["microclusters_above"] if microclusters_above is None else microclusters_above
    reduce = len(weights) > above
    seed = int(rng.integers(2**31 - 1))
    if reduce:
        C, counts, _ = microclusters(Xc, weights, n_microclusters, microcluster_init, seed)
    if not reduce or len(counts) < 2:  # (k-means left one non-empty cluster: λ₂ needs two points)
        C, counts = Xc, weights
    C = C - counts @ C / counts.sum()  # Σ n_j c_j = 0 exactly
    V0 = evecs[:, :l] if v0 is None else np.asarray(v0, dtype=np.float64).reshape(X.shape[1], -1)
    l = V0.shape[1]
    schedule = tuple(betas) if betas is not None else beta_schedule(scheme, laplacian)
    in_pursuit = min_side if settings["balance_in_pursuit"] else 0.0
    evaluations = 0

    def objective_settings(sig: float, beta: float) -> dict:
        delta = 0.01 if settings["delta_rule"] == "fixed" else min(0.01, sig**2)
        out = {"sigma": sig, "laplacian": laplacian, "similarity": similarity, "beta": beta, "delta": delta}
        out["omega"] = omega / 2  # the objective sums ordered pairs
        if settings["delta_from"] == "covariance":
            out["covariance"] = covariance
        if laplacian == "standard" and settings["standard_per_point"]:
            out["standard_scale"] = 1.0 / float(counts.sum())
        return out

    for beta in schedule:
        if large_margin:
            V, Cb, nb, sig, halvings, used = _large_margin(
                Xc,
                weights,
                C,
                counts,
                V0,
                sigma,
                beta,
                reduce,
                n_microclusters,
                objective_settings,
                in_pursuit,
                maxiter,
                rng,
            )
            evaluations += used
        else:
            V, used, conn = _minimise_connectivity(
                C, counts, V0, objective_settings(sigma, beta), min_side=in_pursuit, maxiter=maxiter, rng=rng
            )
            Cb, nb, sig, halvings = C, counts, sigma, 0
            evaluations += used
        if large_margin or conn is None:
            conn = spectral_connectivity(V, Cb, nb, gradient=False, **objective_settings(sig, beta))
        sides = bipartition(conn, nb, laplacian, settings["bipartition"], seed)
        first = Cb @ V[:, 0]  # side 1 is the side of larger mean first projected coordinate (not row order)
        if nb[sides] @ first[sides] * nb[~sides].sum() < nb[~sides] @ first[~sides] * nb[sides].sum():
            sides = ~sides
        side1 = float(nb[sides].sum())
        sizes = (float(nb.sum()) - side1, side1)
        balanced = min(sizes) >= min_side
        if balanced:
            break
    params = {
        "scheme": scheme,
        "laplacian": laplacian,
        "similarity": similarity,
        "sigma": float(sig),
        "beta": float(beta),
        "delta": float(objective_settings(sig, beta)["delta"]),
        "omega": float(omega),
        "n_components": int(l),
        "n_microclusters": len(nb),
    }
    if large_margin:
        params.update(large_margin=True, sigma_halvings=int(halvings))
    return SpectralSplit(V, (Cb + mean) @ V, sides, conn.value, conn.eigenvalue, sizes, balanced, params, evaluations)


def _large_margin(Xc, weights, C, counts, V0, sigma, beta, reduce, k, objective_settings, min_side, maxiter, rng):
    """LMSC (§9.3): minimise λ₂(L) and halve σ until the projection stops changing; above the
    microcluster threshold the microclusters are recomputed on the projected points at each σ (centres are
    the full-dimensional means of their members). Returns ``(V, centres, counts, σ, halvings, evaluations)``."""
    V, sig, evaluations = V0, sigma, 0
    for halving in range(LMSC_MAX_HALVINGS + 1):
        if reduce and halving > 0:
            _, _, member = microclusters(Xc @ V, weights, k, "k-means++", int(rng.integers(2**31 - 1)))
            counts = np.bincount(member, weights=weights)
            C = np.zeros((len(counts), Xc.shape[1]))
            np.add.at(C, member, Xc * weights[:, None])
            C /= counts[:, None]
            C -= counts @ C / counts.sum()
        V_new, used = minimise_connectivity(
            C, counts, V, objective_settings(sig, beta), min_side=min_side, maxiter=maxiter, rng=rng
        )
        evaluations += used
        moved = float(np.max(1.0 - np.abs((V_new * V).sum(axis=0))))
        V = V_new
        if moved < LMSC_TOLERANCE or halving == LMSC_MAX_HALVINGS:
            break
        conn = spectral_connectivity(V, C, counts, gradient=False, **objective_settings(sig / 2, beta))
        if conn.eigenvalue < LMSC_NOISE_FLOOR * conn.norm:  # at σ/2 λ₂ and its gradient are rounding error
            break
        sig /= 2
    return V, C, counts, sig, halving, evaluations


__all__ = [
    "BETA_MIN",
    "SCHEMES",
    "SpectralSplit",
    "beta_schedule",
    "bipartition",
    "microclusters",
    "minimise_connectivity",
    "spectral_scale",
    "spectral_split",
]
