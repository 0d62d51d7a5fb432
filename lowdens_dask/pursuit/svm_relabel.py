"""SVM-external clustering (the "SVM-Relabeler") with restart and simulated-annealing stabilisation, its kernel-SSE
validator and random-labelling null, and SVM-internal clustering (Ben-Hur et al. support vector clustering).

Winters-Hilt & Merat, "Unsupervised clustering using supervised support vector machines", as specified in
``shared/research/seed-svm.md`` (cited as §n below). scikit-learn's ``SVC`` (libsvm) is the binary soft-margin
SVM of §3 and ``OneClassSVM`` the sphere of §6; both on a precomputed Gaussian kernel
K(x, x') = exp(-gamma |x - x'|^2).

One split (:func:`svm_relabel_split`): duplicate points are merged (their weights summed) and, above
``max_points``, the points are replaced by weighted k-means centres, so the SVM sees at most ``max_points``
distinct points in a canonical (sorted) order: the result does not depend on the row order, and a row of
weight k equals k repeated rows. Weights are rescaled to mean 1 and multiply C (scikit-learn's
``sample_weight``). A relabelling run (§4.3) trains the SVM on the current labels and flips the
``relabel_fraction`` most confidently misclassified points until none is misclassified; the state it ends in
is the SVM's own partition sign(f), so the split routed by the decision function is the state scored. Runs
are stabilised by restarts (§4.4, best kernel SSE) or by simulated annealing over converged states (§4.6:
Metropolis on the kernel SSE, geometric cooling, perturbation boosted while the SSE is stuck). No class may
fall below ``min_cluster_fraction`` of the weight (the guard against collapse to one class, §10).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import numbers
import warnings
from typing import NamedTuple

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import cdist, pdist
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NearestNeighbors
from sklearn.svm import SVC, OneClassSVM

#: Gaussian kernel widths by name (see :func:`rbf_gamma`).
GAMMA_RULES = ("auto", "median")
#: Cooling schedules of the annealing (§4.6).
SCHEDULES = ("geometric", "paper_literal")
#: Perturbation rules of the annealing (§4.6): "variable" boosts the flip probability while the SSE is stuck.
PERTURBATIONS = ("variable", "constant")
#: Random labellings drawn per block when the null distribution is computed (bounds the memory).
NULL_BLOCK = 512
#: Attempts at drawing a labelling that satisfies the minimum class weight before giving up.
LABEL_TRIES = 20


# ------------------------------------------------------------------------------------------ kernel and validators


def rbf_gamma(X: np.ndarray, weights: np.ndarray | None = None, rule="auto", spread: float = 0.0) -> float:
    """Width gamma of K = exp(-gamma |x - x'|^2) from the points (a data-driven choice; the paper's sigma = 0.5
    fits any labelling of raw Iris, §9.1).

    "auto": gamma = 1 / (2 s^2) with s^2 the total (weighted) variance, the sum of the per-feature variances plus
    ``spread`` (the summaries' within variance summed over the features): gamma = 1 / E|x - x'|^2, so the mean
    squared distance has kernel value 1/e (sigma = s; 2.14 on raw Iris, where the spec validated sigma = 2).
    "median": gamma = 1 / median(|x - x'|^2) over pairs of distinct points (weighted by w_i w_j).
    A positive number is returned as it is. Returns 1.0 when the points do not vary.
    """
    if isinstance(rule, numbers.Real) and not isinstance(rule, bool):
        return float(rule)
    X = np.asarray(X, dtype=np.float64)
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    if rule == "auto":
        mean = w @ X / w.sum()
        s2 = float(w @ ((X - mean) ** 2).sum(axis=1) / w.sum()) + float(spread)
    elif rule == "median":
        if X.shape[0] < 2:
            return 1.0
        d2 = pdist(X, "sqeuclidean")
        i, j = np.triu_indices(X.shape[0], 1)
        pw = w[i] * w[j]
        order = np.argsort(d2, kind="stable")
        cum = np.cumsum(pw[order])
        s2 = 0.5 * float(d2[order][np.searchsorted(cum, 0.5 * cum[-1])])
    else:
        raise ValueError(f"gamma must be one of {GAMMA_RULES} or a positive number; got {rule!r}.")
    return 1.0 / (2.0 * s2) if s2 > 0 and math.isfinite(s2) else 1.0


def rbf_kernel(X: np.ndarray, gamma: float, Y: np.ndarray | None = None) -> np.ndarray:
    """K_ij = exp(-gamma |x_i - y_j|^2) (§2, Gaussian; squared distances of differences, not of inner products)."""
    X = np.asarray(X, dtype=np.float64)
    Y = X if Y is None else np.asarray(Y, dtype=np.float64)
    return np.exp(-gamma * cdist(X, Y, "sqeuclidean"))


def kernel_sse(K: np.ndarray, labels, weights=None) -> float:
    """Kernel-space SSE (§5.2): J = sum_c [sum_(x in c) w_x K(x,x) - (1/W_c) sum_(x,x' in c) w_x w_x' K(x,x')],
    with W_c the weight of cluster c (unit weights: the paper's J_e). Any number of clusters; zero-weight
    clusters contribute nothing."""
    K = np.asarray(K, dtype=np.float64)
    labels = np.asarray(labels)
    w = np.ones(K.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    total = float(w @ np.diag(K))
    for c in np.unique(labels):
        wc = np.where(labels == c, w, 0.0)
        Wc = wc.sum()
        if Wc > 0:
            total -= float(wc @ K @ wc) / Wc
    return total


def random_labels(n_points: int, n_labellings: int, rng: np.random.Generator) -> np.ndarray:
    """Fair-coin labellings (§4.5): a boolean array (n_labellings, n_points), True for cluster +1."""
    return rng.random((n_labellings, n_points)) < 0.5


def random_label_null(K: np.ndarray, weights, n_labellings: int, rng: np.random.Generator) -> np.ndarray:
    """Kernel SSE of ``n_labellings`` fair-coin two-class labellings of the points (§4.5), in the order
    :func:`random_labels` draws them from ``rng`` (blocks of ``NULL_BLOCK``)."""
    K = np.asarray(K, dtype=np.float64)
    w = np.ones(K.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    Kw = K @ w
    total, trace = float(w @ Kw), float(w @ np.diag(K))
    out = np.empty(n_labellings)
    for start in range(0, n_labellings, NULL_BLOCK):
        B = random_labels(K.shape[0], min(NULL_BLOCK, n_labellings - start), rng)
        M = B * w
        W1 = M.sum(axis=1)
        W0 = w.sum() - W1
        S1 = np.einsum("ij,ij->i", M @ K, M)
        S0 = total - 2.0 * (M @ Kw) + S1  # (w - m)' K (w - m)
        with np.errstate(divide="ignore", invalid="ignore"):
            sse = trace - np.where(W1 > 0, S1 / W1, 0.0) - np.where(W0 > 0, S0 / W0, 0.0)
        out[start : start + len(B)] = sse
    return out


def null_threshold(null: np.ndarray, alpha: float) -> float:
    """The SSE below which a split is better than the fraction ``alpha`` of random labellings (§4.5; the spec's
    p-value form of the paper's threshold 170.5): the empirical alpha-quantile of the null."""
    return float(np.quantile(null, alpha))


def null_p_value(null: np.ndarray, sse: float) -> float:
    """Empirical lower-tail p-value of an SSE under the random-labelling null (small SSE: compact clusters)."""
    return float((1 + np.count_nonzero(null <= sse)) / (1 + len(null)))


# ------------------------------------------------------------------------------------------ the relabeller


class RelabelResult(NamedTuple):
    """A relabelling run's end state: ``labels`` (+1/-1) equal the SVM's own partition sign(f) (f >= 0 is +1)."""

    labels: np.ndarray
    sse: float  #: kernel SSE of ``labels`` (inf when a class is below the minimum weight)
    model: SVC | None  #: the SVM whose decision function gives ``labels``
    converged: bool  #: no point misclassified by the SVM trained on ``labels``
    n_iter: int  #: SVM fits of the run
    valid: bool  #: both classes hold at least the minimum weight


class SVMRelabeler:
    """The SVM-Relabeler of §4 on a precomputed kernel matrix ``K`` of weighted points (weights multiply C).

    ``relabel`` is one run (§4.3); ``restarts`` and ``anneal`` the two stabilisations (§4.4, §4.6). Every state
    keeps both classes at or above ``min_weight`` (the collapse guard): flips that would take a class below it
    are not made, and end states below it are invalid (SSE inf, never accepted).
    """

    def __init__(
        self,
        K: np.ndarray,
        weights=None,
        *,
        C: float = 1.5,
        relabel_fraction: float = 0.15,
        max_iter: int = 100,
        patience: int = 10,
        min_weight: float = 0.0,
        tol: float = 1e-3,
    ):
        self.K = np.ascontiguousarray(K, dtype=np.float64)
        n = self.K.shape[0]
        self.w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
        self.C, self.relabel_fraction = float(C), float(relabel_fraction)
        self.max_iter, self.patience = int(max_iter), int(patience)
        self.min_weight, self.tol = float(min_weight), float(tol)
        self.n_fits = 0
        self.run_sses: list[float] = []  #: end-state SSE of every relabelling run

    # -------------------------------------------------------------- pieces
    def sse(self, y: np.ndarray) -> float:
        return kernel_sse(self.K, y, self.w)

    def valid(self, y: np.ndarray) -> bool:
        plus = float(self.w[y > 0].sum())
        return bool(min(plus, float(self.w.sum()) - plus) >= self.min_weight and np.any(y > 0) and np.any(y < 0))

    def svm(self, y: np.ndarray) -> tuple[SVC, np.ndarray]:
        """Train the soft-margin SVM (§3) on labels y; returns it and f on the points (f >= 0 is class +1)."""
        model = SVC(kernel="precomputed", C=self.C, tol=self.tol)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # libsvm runs without an iteration limit
            model.fit(self.K, y, sample_weight=self.w)
        self.n_fits += 1
        f = self.K[:, model.support_] @ model.dual_coef_[0] + model.intercept_[0]
        return model, f

    def labels(self, rng: np.random.Generator, start: np.ndarray | None = None, p: float = 0.5) -> np.ndarray | None:
        """Fair-coin labels (``start`` None), or ``start`` with each label flipped with probability p (the
        perturbation of §4.6); redrawn until both classes hold ``min_weight`` (None after LABEL_TRIES draws)."""
        n = self.K.shape[0]
        for _ in range(LABEL_TRIES):
            flip = rng.random(n) < p
            y = np.where(flip, -1, 1).astype(np.int8) if start is None else np.where(flip, -start, start)
            if self.valid(y):
                return y.astype(np.int8)
        return None

    # -------------------------------------------------------------- one run (§4.3)
    def relabel(self, y0: np.ndarray) -> RelabelResult:
        """Train, flip the ceil(rho m) most negative confidences c_i = y_i f_i of the m misclassified points,
        retrain; stop when none is misclassified, after ``patience`` fits without a lower SSE, at ``max_iter``
        fits, or when the guard allows no flip. Ends in the last SVM's partition sign(f)."""
        result = self._relabel(np.array(y0, dtype=np.int8))
        self.run_sses.append(result.sse)
        return result

    def _relabel(self, y: np.ndarray) -> RelabelResult:
        best, stall = math.inf, 0
        W = float(self.w.sum())
        model, f, n_iter = None, None, 0
        for n_iter in range(1, self.max_iter + 1):
            model, f = self.svm(y)
            pred = np.where(f >= 0, 1, -1).astype(np.int8)
            wrong = np.flatnonzero(pred != y)
            if wrong.size == 0:
                ok = self.valid(y)
                return RelabelResult(y, self.sse(y) if ok else math.inf, model, True, n_iter, ok)
            k = math.ceil(self.relabel_fraction * wrong.size)
            flips = wrong[np.argsort(y[wrong] * f[wrong], kind="stable")[:k]]
            # the guard: flips out of a class stop before its weight would fall below min_weight
            keep = np.ones(flips.size, dtype=bool)
            for c in (1, -1):
                mine = y[flips] == c
                lost = np.cumsum(np.where(mine, self.w[flips], 0.0))
                have = float(self.w[y == c].sum())
                keep &= ~mine | (have - lost >= self.min_weight)
            flips = flips[keep]
            if flips.size == 0:
                break
            y[flips] = -y[flips]
            if not (np.any(y > 0) and np.any(y < 0)):  # min_weight 0 still keeps two classes
                y[flips] = -y[flips]
                break
            sse = self.sse(y)
            if sse < best - 1e-12 * max(1.0, W):
                best, stall = sse, 0
            else:
                stall += 1
                if stall >= self.patience:
                    break
        # not converged: the state is the last SVM's partition (what its decision function routes)
        y = np.where(f >= 0, 1, -1).astype(np.int8)
        ok = self.valid(y)
        return RelabelResult(y, self.sse(y) if ok else math.inf, model, False, n_iter, ok)

    def start(self, rng: np.random.Generator) -> RelabelResult | None:
        """A run from fair-coin labels; None when no valid labelling could be drawn."""
        y0 = self.labels(rng)
        return None if y0 is None else self.relabel(y0)

    # -------------------------------------------------------------- stabilisation
    def restarts(self, n_restarts: int, rng: np.random.Generator) -> tuple[RelabelResult | None, list[float]]:
        """Random-restart hill climbing (§4.4): ``n_restarts`` runs from fair-coin labels, the lowest SSE kept
        (more runs, up to ``LABEL_TRIES``, while none has ended valid). Returns the best valid end state (None
        if none) and every run's SSE."""
        best, sses = None, []
        for run in range(n_restarts + LABEL_TRIES):
            if run >= n_restarts and best is not None:
                break
            state = self.start(rng)
            if state is None:
                continue
            sses.append(state.sse)
            if state.valid and (best is None or state.sse < best.sse):
                best = state
        return best, sses

    def anneal(
        self,
        rng: np.random.Generator,
        *,
        n_steps: int = 40,
        t0: float = 10.0,
        beta: float = 0.96,
        p0: float = 0.10,
        boost: float = 0.10,
        p_max: float = 0.5,
        perturbation: str = "variable",
        schedule: str = "geometric",
    ) -> tuple[RelabelResult | None, list[float]]:
        """Simulated annealing over converged relabelling states (§4.6): perturb the current state (each label
        flipped with probability p, p = min(p_max, p0 + boost * stall) for "variable", p0 for "constant", stall
        counting the steps the SSE stayed the same or the move was rejected), re-run the relabeller, accept by
        Metropolis exp(-dSSE / T); T <- beta T ("geometric") or T <- beta^k T ("paper_literal"). Returns the
        lowest-SSE state seen and the current SSE after each step."""
        state = None
        for _ in range(LABEL_TRIES):
            state = self.start(rng)
            if state is None or state.valid:
                break
        if state is None or not state.valid:
            return None, []
        best, T, stall, trace = state, float(t0), 0, [state.sse]
        for k in range(n_steps):
            p = min(p_max, p0 + boost * stall) if perturbation == "variable" else p0
            y = self.labels(rng, state.labels, p)
            new = None if y is None else self.relabel(y)
            if new is None or not new.valid:
                stall += 1
            elif abs(new.sse - state.sse) <= 1e-9 * max(1.0, abs(state.sse)):
                stall += 1  # "SSE remained constant"
            elif new.sse < state.sse or rng.random() < math.exp(-(new.sse - state.sse) / max(T, 1e-300)):
                state, stall = new, 0
            else:
                stall += 1
            if state.sse < best.sse:
                best = state
            trace.append(state.sse)
            T = beta * T if schedule == "geometric" else beta**k * T
        return best, trace


# ------------------------------------------------------------------------------------------ one split


class SVMRelabelSplit(NamedTuple):
    """A two-class split: f(x) = sum_j coef_j exp(-gamma |x - support_j|^2) + intercept, class +1 (child 1)
    where f >= 0, in the coordinates of the points it was fitted on."""

    support: np.ndarray
    coef: np.ndarray
    intercept: float
    gamma: float
    labels: np.ndarray  #: +1/-1 of the SVM's training points
    sse: float  #: kernel SSE of the split on the SVM's training points (§5.2)
    null_threshold: float  #: alpha-quantile of the random-labelling SSE null (§4.5)
    null_mean: float
    p_value: float  #: empirical lower-tail p-value of ``sse`` under the null
    converged: bool  #: the kept state is a relabelling fixed point (no point misclassified)
    n_points: int  #: distinct weighted points the SVM was trained on
    n_fits: int  #: SVM fits
    n_runs: int  #: relabelling runs
    n_successful: int  #: runs whose SSE is below the null threshold
    sse_trace: tuple  #: annealing: the current SSE after each step; restarts: each run's SSE

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """f(x) for rows in the coordinates of the fit."""
        return rbf_kernel(X, self.gamma, self.support) @ self.coef + self.intercept

    def side(self, X: np.ndarray) -> np.ndarray:
        """True (class +1, child 1) where f(x) >= 0."""
        return self.decision_function(X) >= 0


def distinct_points(
    X: np.ndarray, weights: np.ndarray, max_points: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positive-weight points with duplicates merged (weights summed), sorted lexicographically, and above
    ``max_points`` replaced by weighted k-means centres (weights: the members' total). Returns the points,
    their weights and their within variance summed over the features (0 for merged duplicates)."""
    keep = weights > 0
    U, inverse = np.unique(X[keep], axis=0, return_inverse=True)
    w = np.bincount(inverse.ravel(), weights=weights[keep], minlength=U.shape[0])
    spread = np.zeros(U.shape[0])
    if U.shape[0] > max_points:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            km = KMeans(max_points, n_init=1, max_iter=50, random_state=seed).fit(U, sample_weight=w)
        lab = km.labels_
        cw = np.bincount(lab, weights=w, minlength=max_points)
        sq = ((U - km.cluster_centers_[lab]) ** 2).sum(axis=1)
        within = np.bincount(lab, weights=w * sq, minlength=max_points)
        nz = cw > 0
        order = np.lexsort(km.cluster_centers_[nz].T[::-1])
        U, w, spread = km.cluster_centers_[nz][order], cw[nz][order], (within[nz] / cw[nz])[order]
    return U, w, spread


def svm_relabel_split(
    X: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    gamma="auto",
    spread: float = 0.0,
    C: float = 1.5,
    relabel_fraction: float = 0.15,
    max_iter: int = 100,
    patience: int = 10,
    annealing: bool = True,
    perturbation: str = "variable",
    n_anneal_steps: int = 40,
    t0: float = 10.0,
    beta: float = 0.96,
    schedule: str = "geometric",
    p0: float = 0.10,
    boost: float = 0.10,
    p_max: float = 0.5,
    n_restarts: int = 1,
    min_cluster_fraction: float = 0.05,
    max_points: int = 500,
    n_null: int = 5000,
    null_alpha: float = 1e-3,
    random_state: int | None = None,
) -> SVMRelabelSplit | None:
    """Bi-partition the weighted points X by the SVM-Relabeler (§4) on a Gaussian kernel; None when no
    labelling keeps both classes at ``min_cluster_fraction`` of the weight (e.g. one distinct point).

    ``annealing`` runs ``n_restarts`` annealing chains (§4.6), otherwise ``n_restarts`` plain runs (§4.4; one run
    is the unstabilised relabeller); the lowest kernel SSE wins. ``spread`` (the rows' within variance of
    summaries, summed over features) widens the "auto" gamma. See :class:`SVMRelabeler` for the rest.
    """
    X = np.asarray(X, dtype=np.float64)
    weights = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    rng = np.random.default_rng(random_state)
    U, w, within = distinct_points(X, weights, max_points, int(rng.integers(2**31 - 1)))
    if U.shape[0] < 2:
        return None
    w = w / w.mean()  # C is per point of unit weight; weights are relative
    g = rbf_gamma(U, w, gamma, spread + float(w @ within / w.sum()))
    center = w @ U / w.sum()
    K = rbf_kernel(U - center, g)
    relabeler = SVMRelabeler(
        K,
        w,
        C=C,
        relabel_fraction=relabel_fraction,
        max_iter=max_iter,
        patience=patience,
        min_weight=min_cluster_fraction * float(w.sum()),
    )
    best, trace = None, []
    for _ in range(n_restarts if annealing else 1):
        if annealing:
            state, chain = relabeler.anneal(
                rng,
                n_steps=n_anneal_steps,
                t0=t0,
                beta=beta,
                p0=p0,
                boost=boost,
                p_max=p_max,
                perturbation=perturbation,
                schedule=schedule,
            )
        else:
            state, chain = relabeler.restarts(n_restarts, rng)
        trace.extend(chain)
        if state is not None and (best is None or state.sse < best.sse):
            best = state
    if best is None:
        return None
    null = random_label_null(K, w, n_null, rng)
    threshold = null_threshold(null, null_alpha)
    model = best.model
    sv = model.support_
    return SVMRelabelSplit(
        support=U[sv],
        coef=model.dual_coef_[0].copy(),
        intercept=float(model.intercept_[0]),
        gamma=g,
        labels=best.labels,
        sse=best.sse,
        null_threshold=threshold,
        null_mean=float(null.mean()),
        p_value=null_p_value(null, best.sse),
        converged=best.converged,
        n_points=U.shape[0],
        n_fits=relabeler.n_fits,
        n_runs=len(relabeler.run_sses),
        n_successful=int(np.count_nonzero(np.asarray(relabeler.run_sses) < threshold)),
        sse_trace=tuple(float(s) for s in trace),
    )


# ------------------------------------------------------------------------------------------ SVM-internal (§6)


class SupportVectorClusters(NamedTuple):
    labels: np.ndarray  #: cluster of each input point (-1: outside the sphere, when not attached)
    n_clusters: int
    inside: np.ndarray  #: the point lies in the sphere: R(x) <= R
    gamma: float
    nu: float


def support_vector_clusters(
    X: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    gamma="auto",
    bsv_fraction: float | None = None,
    n_segment_points: int = 20,
    n_neighbors: int | None = None,
    outliers: str = "nearest",
    tol: float = 1e-5,
) -> SupportVectorClusters:
    """Support vector clustering (Ben-Hur, Horn, Siegelmann & Vapnik, JMLR 2001; spec §6).

    The minimal enclosing sphere in the Gaussian feature space (SVDD dual: max sum_j beta_j K_jj - beta' K beta,
    0 <= beta_j <= C, sum beta = 1) is solved as scikit-learn's ``OneClassSVM`` with nu = p = 1/(N C)
    (``bsv_fraction``; with K_jj = 1 the two duals are the same problem, and R(x) <= R is OCSVM's
    decision_function(x) >= 0). Points i, j are adjacent when every one of ``n_segment_points`` points
    x_i + l (x_j - x_i), l in [0, 1], lies in the sphere (all pairs, or the ``n_neighbors`` nearest neighbours
    of each point); clusters are the connected components among the points in the sphere. Points outside it
    (bounded SVs) are labelled -1 (``outliers="label"``) or given the cluster of the nearest point in the
    sphere (``"nearest"``). Weights multiply each beta's bound (duplicates merged first).
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    keep = weights > 0
    U, inverse = np.unique(X[keep], axis=0, return_inverse=True)
    inverse = inverse.ravel()
    w = np.bincount(inverse, weights=weights[keep], minlength=U.shape[0])
    w = w / w.mean()
    m = U.shape[0]
    g = rbf_gamma(U, w, gamma)
    nu = min(1.0, max(1.0 / m, 1.0 / m if bsv_fraction is None else float(bsv_fraction)))
    center = w @ U / w.sum()
    U0 = U - center
    if m == 1:
        labels_u, inside = np.zeros(1, dtype=np.int64), np.ones(1, dtype=bool)
    else:
        K = rbf_kernel(U0, g)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            sphere = OneClassSVM(kernel="precomputed", nu=nu, tol=1e-6).fit(K, sample_weight=w)
        sv, coef, offset = U0[sphere.support_], sphere.dual_coef_[0], float(sphere.intercept_[0])
        scale = max(float(np.abs(coef).sum()), 1e-300)

        def inside_sphere(P: np.ndarray) -> np.ndarray:  # R(x) <= R, i.e. OCSVM's decision_function >= 0
            return (rbf_kernel(P, g, sv) @ coef + offset) / scale >= -tol

        inside = inside_sphere(U0)
        idx = np.flatnonzero(inside)
        if n_neighbors is None or n_neighbors >= idx.size - 1:
            ii, jj = np.triu_indices(idx.size, 1)
            pairs_i, pairs_j = idx[ii], idx[jj]
        else:
            nbrs = NearestNeighbors(n_neighbors=n_neighbors).fit(U0[idx]).kneighbors(return_distance=False)
            pairs_i = np.repeat(idx, nbrs.shape[1])
            pairs_j = idx[nbrs.ravel()]
        lam = np.linspace(0.0, 1.0, n_segment_points)[1:-1]  # the end points are in the sphere
        adjacent = np.ones(pairs_i.size, dtype=bool)
        block = max(1, 20000 // max(1, lam.size))
        for s in range(0, pairs_i.size, block):
            a, b = U0[pairs_i[s : s + block]], U0[pairs_j[s : s + block]]
            P = a[:, None, :] + lam[None, :, None] * (b - a)[:, None, :]
            ok = inside_sphere(P.reshape(-1, U0.shape[1])).reshape(len(a), lam.size)
            adjacent[s : s + block] = ok.all(axis=1)
        A = coo_matrix((np.ones(int(adjacent.sum())), (pairs_i[adjacent], pairs_j[adjacent])), shape=(m, m)).tocsr()
        _, comp = connected_components(A, directed=False)
        # components of the points in the sphere, numbered by their first point (canonical order)
        labels_u = np.full(m, -1, dtype=np.int64)
        if idx.size:
            _, first, relabel = np.unique(comp[idx], return_index=True, return_inverse=True)
            rank = np.argsort(np.argsort(first))
            labels_u[idx] = rank[relabel.ravel()]
            if outliers == "nearest" and idx.size < m:
                out = np.flatnonzero(~inside)
                nearest = NearestNeighbors(n_neighbors=1).fit(U0[idx]).kneighbors(U0[out], return_distance=False)
                labels_u[out] = labels_u[idx[nearest[:, 0]]]
    labels = np.full(n, -1, dtype=np.int64)
    labels[keep] = labels_u[inverse]
    if not keep.all():  # zero-weight rows: the cluster of the nearest positive-weight point
        nearest = NearestNeighbors(n_neighbors=1).fit(U).kneighbors(X[~keep], return_distance=False)
        labels[~keep] = labels_u[nearest[:, 0]]
    in_rows = np.zeros(n, dtype=bool)
    in_rows[keep] = inside[inverse]
    n_clusters = int(labels_u.max()) + 1 if np.any(labels_u >= 0) else 0
    return SupportVectorClusters(labels, n_clusters, in_rows, g, nu)
