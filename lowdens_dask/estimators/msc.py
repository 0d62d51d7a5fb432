"""Maximal separation clustering (MSC): one bi-partition (``MSC``) and recursive splitting of the largest cluster
(``MSCClustering``) by the maximal sum-of-squared separation hyperplane in distance-feature space.

Chen & Bi, "Clustering by maximizing sum-of-squared separation distance"; spec ``shared/research/seed-msc.md``.
The numerics are :mod:`lowdens_dask.pursuit.msc`. Each split is stored on the :class:`~lowdens_dask.ClusterTree`
as a :class:`~lowdens_dask.tree.KernelExpansionRule`, f(x) = Σ_j coef_j m(x, s_j) >= 0 -> child 1, with the
support rows s_j (the node's distinct rows for the exact solver, its landmarks otherwise), so trees persist
as JSON and route Dask chunks like every other tree.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
import numbers

import dask
import dask.array as da
import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from .._warnings import warn
from ..backend import InMemoryData, as_dask_array
from ..backend.frame import CONSTANT_SCALE, check_value_range, column_moments, constant_columns
from ..backend.passes import PassCounter, map_reduce
from ..pursuit.msc import (
    METRICS,
    WEIGHTS,
    disparity_cut,
    distance_features,
    distance_matrix,
    landmark_moments,
    median_sigma2,
    msc_exact,
    msc_landmarks,
    orientation,
    solve_moments,
)
from ..pursuit.significance import SplitTest, half_indices, is_significant, mean_difference_test
from ..tree import ClusterTree, KernelExpansionRule, leaf_labels_from_json
from ..growth.grower import Growth, GrowthRules, grow
from ..growth.splitter import Candidate, Cut, SplitterBase
from ._fit import TreeClustering, summary_clause
from ._params import init_with, is_chunked_input, scale_out
from ._summary_pass import check_enough_rows, check_nonfinite
from ._validation import (
    check_n_clusters_auto,
    check_positive_int,
    single_threaded_blas,
    standardisation,
)
from .divisive import growth_target

#: ``solver="auto"`` solves exactly up to this many distinct rows in a node (D of 5,000 rows is 200 MB) and with
#: landmarks above.
EXACT_AUTO_MAX = 5000
#: Above this many rows the exact solver holds D in float32 (1.6 GB at 20,000 rows instead of 3.2 GB; the split
#: is the same up to rows whose |f| is within ~1e-7 of 0).
FLOAT32_ABOVE = 8192
#: The largest node ``solver="exact"`` accepts (D in float32: 10 GB).
EXACT_MAX = 50_000
SOLVERS = ("auto", "exact", "landmarks")
KERNELS = {"gaussian": "rbf-distance", "euclidean": "euclidean"}

_PARAMETERS_DOC = """
    weight : {{"alpha3", "alpha1", "alpha2"}}, default="alpha3"
        The balance weight α of the constraint αᵀDw = 0 (§2.6): "alpha1" uniform (MSC1), "alpha2" ∝ De, each
        row's total dissimilarity (MSC2), "alpha3" the Perron vector of D (MSC3). The default is the paper's best on
        its artificial data (Table 1) and the cheapest: w* is then the eigenvector of D's most negative eigenvalue
        (§2.9), and the split is the spectral relaxation of the maximal disparity cut (Lemma 3.1).
    sigma2 : float or None, default=None
        σ² of the Gaussian kernel exp(-‖x-y‖²/σ²) whose metric sqrt(2 - 2K) is the distance (eq. 2.3; the paper's
        parametrisation, Tables 1-4). None: the median heuristic, σ² = the weighted median of the squared distances
        between the node's distinct rows (at most 2,000 of them), recomputed at every node; on the paper's
        blob-in-ring data it is about 16, where the error is near the paper's best (about 4.5%). With ``standardize``,
        σ² is in units of the z-scored columns. Ignored by "euclidean".
    metric : {{"gaussian", "euclidean"}}, default="gaussian"
        m(x, y): the Gaussian-kernel metric (all the paper's vector experiments) or ‖x - y‖ (Schoenberg: also
        conditionally negative definite).
    solver : {{"auto", "exact", "landmarks"}}, default="auto"
        "exact": D of the node's distinct rows and matrix-free Lanczos (never D², §3.2), O(m²) memory;
        "landmarks": distances to ``n_landmarks`` rows drawn at random (probability ∝ weight), one pass for the
        r×r moments, O(m r) time and an O(r) rule. "auto" is exact up to 5,000 distinct rows in the node (float32 D
        above 8,192 rows when asked for explicitly). Dask and zarr input always use landmarks.
    n_landmarks : int, default=500
        r, the landmarks of the landmark solver. With as many as the node's distinct rows, all of them are used,
        weighted as the rows, which is the exact solution.
    standardize : bool, default=False
        z-score the columns of each node first (weighted; the paper does not).
    mode : {{"auto", "exact", "summary"}}, default="auto"
        In-memory input is fitted on its rows. Dask arrays and zarr stores: "auto" and "exact" fit every split
        by the landmark solver over the node's rows (two passes per split: count and sample landmarks, then the
        r×r moments; the landmarks are a uniform sample of the node's rows, σ² the median heuristic on them) and
        label the rows in a final lazy pass; "summary" fits on the scale-out engine's weighted
        microclusters (one pass) as rows in memory. Small Dask or zarr input (at most 256 rows,
        ``SMALL_INPUT_ROWS`` in :mod:`lowdens_dask.estimators._summary_pass`) is read into memory in one pass
        and fitted on its rows in every mode, as a numpy array would be; ``labels_`` stays a Dask array.
    rows_per_microcluster, max_microclusters, nonfinite, storage_options, labels_store
        As for :class:`~lowdens_dask.MDHClustering` (NaN/inf rows of chunked input: "raise", or "skip" to label
        them -1).
    random_state : int or None, default=None
        Seeds the landmarks, the median heuristic's sample above 2,000 rows and Lanczos' start vectors.
"""

_ATTRIBUTES_DOC = """
    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), or dask array for Dask or zarr input
        Leaf labels of the training rows (``tree_.predict``, so they equal ``predict(X)``).
    tree_ : ClusterTree
        Splits are ``KernelExpansionRule`` objects (kernel "rbf-distance", γ = 1/σ², or "euclidean"); node
        parameters record the weight, metric, σ², solver and support size; node statistics are ``fval`` and
        ``separation`` (Σ c_i f(x_i)², eq. 2.4, with ‖w‖ = 1), ``eigengap`` (relative gap of the top two
        eigenvalues: near 0, w* is not unique, §3.6), ``disparity_cut`` (eq. 3.7, uniform β; exact solver only),
        and ``n_positive_eigenvalues`` of D (1 when conditionally negative definite; exact solver only).
    n_clusters_ : int
    n_features_in_ : int
    n_nonfinite_ : int
        Dask or zarr input: rows set aside for NaN/inf.
"""


def _check_params(est) -> None:
    name = type(est).__name__
    if est.weight not in WEIGHTS:
        raise ValueError(f"{name}: weight must be one of {WEIGHTS}; got {est.weight!r}.")
    if est.metric not in METRICS:
        raise ValueError(f"{name}: metric must be one of {METRICS}; got {est.metric!r}.")
    s2 = est.sigma2
    if s2 is not None and not (
        isinstance(s2, numbers.Real) and not isinstance(s2, bool) and np.isfinite(s2) and s2 > 0
    ):
        raise ValueError(f"{name}: sigma2 must be None or a positive number; got {s2!r}.")
    if est.solver not in SOLVERS:
        raise ValueError(f"{name}: solver must be one of {SOLVERS}; got {est.solver!r}.")
    r = est.n_landmarks
    if not (isinstance(r, numbers.Integral) and not isinstance(r, bool) and r >= 2):
        raise ValueError(f"{name}: n_landmarks must be an integer >= 2; got {r!r}.")
    if est.standardize not in (True, False):
        raise ValueError(f"{name}: standardize must be True or False; got {est.standardize!r}.")


def _frame(rows: np.ndarray, weights: np.ndarray, standardize: bool, constant: np.ndarray):
    """(centre, scale) of a node's rows: the weighted mean (distances do not depend on it; it keeps the digits),
    and the standard deviation with ``standardize`` (else 1); ``CONSTANT_SCALE`` for constant columns."""
    if standardize:
        centre, scale = standardisation(rows, weights)
    else:
        centre, scale = weights @ rows / weights.sum(), np.ones(rows.shape[1])
    scale = np.where(constant, CONSTANT_SCALE, scale)
    return centre, scale


def _constant(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Columns of a node's distinct rows that are constant, or constant up to rounding (their weighted variance
    within a float64 variance's error bound, ``backend.frame.constant_columns``, with n the rows' total weight):
    they get ``CONSTANT_SCALE``, else z-scoring makes their last bits a feature of unit variance."""
    total = float(weights.sum())
    mean, var, unit = column_moments(rows, weights)  # in units where a variance neither under- nor overflows
    return (np.ptp(rows, axis=0) == 0) | constant_columns(mean, var, total, unit)


def _rule(support, coef, metric: str, gamma: float, scale: np.ndarray) -> KernelExpansionRule:
    plain = bool(np.all(scale == 1.0))
    gamma = gamma if metric == "gaussian" else 1.0
    return KernelExpansionRule(support, coef, 0.0, KERNELS[metric], gamma, None if plain else scale)


def _split_rows(est, rows: np.ndarray, weights: np.ndarray, seed: int):
    """One MSC split of a node's distinct rows (positive weights): ``(rule, params, stats)``, or None when the
    node cannot be split (fewer than two rows with weight)."""
    c = weights / weights.max()
    keep = c > 0  # weights that underflow against the largest do not count
    if keep.sum() < 2:
        return None
    rows, c = rows[keep], c[keep]
    constant = _constant(rows, weights[keep])
    centre, scale = _frame(rows, c, est.standardize, constant)
    Z = (rows - centre) / scale
    Z[:, constant] = 0.0
    m = rows.shape[0]
    if est.metric == "gaussian":
        sigma2 = est.sigma2 if est.sigma2 is not None else median_sigma2(Z, c, seed=seed)
        if not (np.isfinite(sigma2) and sigma2 > 0):
            return None
    else:
        sigma2 = 1.0
    gamma = 1.0 / sigma2
    exact = est.solver == "exact" or (est.solver == "auto" and m <= EXACT_AUTO_MAX) or m <= est.n_landmarks
    stats = {}
    if exact and m > EXACT_MAX:
        raise ValueError(
            f"{type(est).__name__}: solver='exact' would hold the {m:,}×{m:,} distance matrix of a node "
            f"({4 * m * m / 1e9:.0f} GB in float32); above {EXACT_MAX:,} distinct rows use solver='landmarks' or 'auto'."
        )
    if exact:
        D = distance_matrix(Z, metric=est.metric, gamma=gamma, dtype=np.float32 if m > FLOAT32_ABOVE else np.float64)
        if est.solver == "landmarks":  # all rows are landmarks, weighted as the rows: the exact solution
            sol = msc_landmarks(Z, Z, c, est.weight, metric=est.metric, gamma=gamma, landmark_weights=c)
            sol = sol._replace(n_positive=-1)
        else:
            sol = msc_exact(D, c, est.weight, random_state=seed)
        support = rows
    else:
        D = None
        nonzero = int(np.count_nonzero(c))
        r = min(est.n_landmarks, nonzero)
        idx = np.sort(np.random.default_rng(seed).choice(m, r, replace=False, p=c / c.sum()))
        sol = msc_landmarks(Z, Z[idx], c, est.weight, metric=est.metric, gamma=gamma)
        support = rows[idx]
    sign = orientation(sol.f, c)
    if D is not None:
        stats["disparity_cut"] = disparity_cut(D, sign * sol.f >= 0, weights=c)
        stats["n_positive_eigenvalues"] = float(sol.n_positive)
    rule = _rule(support, sign * sol.coef, est.metric, gamma, scale)
    params = {
        "weight": est.weight,
        "metric": est.metric,
        "sigma2": float(sigma2),
        "solver": "exact" if exact and est.solver != "landmarks" else "landmarks",
        "n_support": int(support.shape[0]),
    }
    separation = sol.separation * float(weights.max())  # in the rows' own weights
    stats = {"fval": separation, "separation": separation, "eigengap": sol.eigengap, **stats}
    return rule, params, stats


# ------------------------------------------------------------------------------------------ chunked input
def _chunk_leaves(x: np.ndarray, tree_json: str | None, seed: int, r: int):
    """Per leaf of the chunk's finite rows: (count, mean, M2, min, max, keys, rows) with the ``r`` rows of
    smallest random key (a uniform sample, merged across chunks by keeping the ``r`` smallest keys)."""
    finite = np.isfinite(x).all(axis=1)
    x = np.asarray(x[finite], dtype=np.float64)
    if tree_json is None and x.shape[0]:  # the first pass: values beyond SCALE_RANGE are refused before squaring
        check_value_range(x.min(axis=0), x.max(axis=0), spread=False)
    labels = np.zeros(x.shape[0], dtype=np.int64) if tree_json is None else leaf_labels_from_json(x, tree_json)
    keys = np.random.default_rng(seed).random(x.shape[0])
    out = {}
    for label in np.unique(labels):
        mask = labels == label
        rows, k = x[mask], keys[mask]
        take = np.argsort(k, kind="stable")[:r]
        mean = rows.mean(axis=0)
        out[int(label)] = (
            float(rows.shape[0]),
            mean,
            ((rows - mean) ** 2).sum(axis=0),
            rows.min(axis=0),
            rows.max(axis=0),
            k[take],
            rows[take],
        )
    return out, int(finite.size - finite.sum()), r


def _merge_leaves(*parts):
    """Merge the per-leaf summaries of chunks (Chan et al.'s pairwise update of the means and M2)."""
    out, nonfinite, r = {}, 0, parts[0][2]
    for leaves, bad, _ in parts:
        nonfinite += bad
        for label, item in leaves.items():
            if label not in out:
                out[label] = item
                continue
            n1, m1, s1, lo1, hi1, k1, x1 = out[label]
            n2, m2, s2, lo2, hi2, k2, x2 = item
            n = n1 + n2
            delta = m2 - m1
            keys, rows = np.concatenate([k1, k2]), np.concatenate([x1, x2])
            take = np.argsort(keys, kind="stable")[:r]
            out[label] = (
                n,
                m1 + delta * n2 / n,
                s1 + s2 + delta**2 * n1 * n2 / n,
                np.minimum(lo1, lo2),
                np.maximum(hi1, hi2),
                keys[take],
                rows[take],
            )
    return out, nonfinite, r


def _chunk_moments(x, tree_json, label, centre, scale, L, metric, gamma):
    finite = np.isfinite(x).all(axis=1)
    x = np.asarray(x[finite], dtype=np.float64)
    if tree_json is not None:
        x = x[leaf_labels_from_json(x, tree_json) == label]
    Z = (x - centre) / scale
    G, h, n = landmark_moments(Z, L, None, metric=metric, gamma=gamma)
    return G, h, n


def _add(*parts):
    return tuple(sum(items[1:], items[0]) for items in zip(*parts))


def _literal(value):
    return dask.delayed(value, pure=True, traverse=False)


class _ChunkedGrowth:
    """Recursive MSC over row chunks: a pass that counts every leaf's rows and samples its landmarks, then a pass
    for the r×r moments of the leaf to split (landmark solver)."""

    def __init__(self, est, arr: da.Array):
        self.est, self.arr = est, arr
        self.blocks = arr.to_delayed().ravel()
        self.token = dask.base.tokenize(arr)[:10]
        self.rng = np.random.default_rng(est.random_state)
        self.passes = 0

    def leaves_pass(self, tree: ClusterTree | None):
        r = self.est.n_landmarks
        seeds = self.rng.integers(0, 2**31 - 1, size=len(self.blocks))
        text = None if tree is None else tree.to_json()
        self.passes += 1
        name = f"lowdens-msc-leaves-{self.token}-{self.passes}"
        chunks = [(b, _literal(text), int(s), r) for b, s in zip(self.blocks, seeds)]
        found, nonfinite, _ = map_reduce(name, _chunk_leaves, chunks, _merge_leaves)
        if tree is None:
            return {0: found.get(0)}, nonfinite
        ids = [leaf.id for leaf in tree.leaves()]
        return {ids[label]: item for label, item in found.items()}, nonfinite

    def moments(self, tree: ClusterTree, leaf: int, centre, scale, L, gamma):
        labels = tree.leaf_labels()
        text = None if tree.n_leaves == 1 else tree.to_json()
        self.passes += 1
        name = f"lowdens-msc-moments-{self.token}-{self.passes}"
        args = [_literal(a) for a in (text, labels[leaf], centre, scale, L)]
        chunks = [(b, *args, self.est.metric, gamma) for b in self.blocks]
        return map_reduce(name, _chunk_moments, chunks, _add)

    def find_split(self, tree: ClusterTree, leaf: int, info, seed: int):
        est = self.est
        n, mean, m2, lo, hi, _, sample = info
        sample = np.unique(sample, axis=0)
        if sample.shape[0] < 2:
            return None
        constant = (lo == hi) | constant_columns(mean, m2 / max(n - 1.0, 1.0), n)
        if est.standardize:
            scale = np.sqrt(m2 / max(n - 1.0, 1.0))
            scale[scale == 0] = 1.0
        else:
            scale = np.ones(mean.shape[0])
        scale = np.where(constant, CONSTANT_SCALE, scale)
        L = (sample - mean) / scale
        L[:, constant] = 0.0
        if est.metric == "gaussian":
            sigma2 = est.sigma2 if est.sigma2 is not None else median_sigma2(L, seed=seed)
            if not (np.isfinite(sigma2) and sigma2 > 0):
                return None
        else:
            sigma2 = 1.0
        gamma = 1.0 / sigma2
        G, h, _ = self.moments(tree, leaf, mean, scale, L, gamma)
        coef, gap = solve_moments(G, h, est.weight)
        f = distance_features(L, L, metric=est.metric, gamma=gamma) @ coef
        sign = orientation(f, np.ones(f.shape[0]))
        rule = _rule(sample, sign * coef, est.metric, gamma, scale)
        params = {
            "weight": est.weight,
            "metric": est.metric,
            "sigma2": float(sigma2),
            "solver": "landmarks",
            "n_support": int(sample.shape[0]),
        }
        separation = float(coef @ G @ coef)
        return rule, params, {"fval": separation, "separation": separation, "eigengap": gap}


class _RowsSplitter(SplitterBase):
    """MSC splits of distinct rows in memory (``U``, weights ``c``): a leaf is
    :class:`~lowdens_dask.backend.InMemoryData` of its rows' positions in ``U``; with ``test`` (``"auto"``) the split
    is found on a random half and tested on the other along the sides' mean difference."""

    method = "msc"

    def __init__(self, est, U: np.ndarray, c: np.ndarray, test: SplitTest | None, rng: np.random.Generator):
        self.est, self.U, self.c, self.test, self.rng = est, U, c, test, rng
        self.tested = test is not None

    def find(self, node: int, data, start=None) -> Candidate | None:
        idx = data.index
        seed = int(self.rng.integers(2**31 - 1))
        fit = idx if self.test is None else idx[half_indices(len(idx), self.test.seed, node)[0]]
        found = _split_rows(self.est, self.U[fit], self.c[fit], seed)
        if found is None:
            return None
        rule, params, stats = found
        if self.test is not None:  # found on one half, tested on the other along the sides' mean difference
            held = idx[half_indices(len(idx), self.test.seed, node)[1]]
            U, c = self.U, self.c
            stats = {**stats, **mean_difference_test(U[fit], c[fit], rule.side(U[fit]), InMemoryData(U[held], c[held]))}
        return Candidate(rule, params, stats, is_significant(stats, self.test))

    def cut(self, node: int, data, candidate: Candidate, forced: bool) -> Cut | None:
        side = candidate.rule.side(self.U[data.index])
        if side.all() or not side.any():
            return None
        parts = (data.take(~side), data.take(side))
        return Cut(candidate.rule, parts, tuple(p.total_weight for p in parts), candidate.params, candidate.stats)


class _ChunkedSplitter(SplitterBase):
    """MSC splits of chunked rows (landmark solver, :class:`_ChunkedGrowth`): a leaf is split with the summary of its
    rows (count, moments, landmark sample) that the latest leaves pass gave (``info``); a split is made on a copy
    of the tree first, and the next leaves pass counts its sides (a side left empty: not split) and refreshes
    every leaf's summary."""

    method = "msc"

    def __init__(self, growth: _ChunkedGrowth, tree: ClusterTree, info: dict):
        self.growth, self.tree, self.info = growth, tree, info

    def find(self, node: int, data, start=None) -> Candidate | None:
        found = self.growth.find_split(self.tree, node, self.info[node], int(self.growth.rng.integers(2**31 - 1)))
        return None if found is None else Candidate(*found, True)

    def cut(self, node: int, data, candidate: Candidate, forced: bool) -> Cut | None:
        trial = copy.deepcopy(self.tree)
        children = trial.add_rule_split(node, self.method, candidate.rule, (0.0, 0.0), {}, {}).children
        info, _ = self.growth.leaves_pass(trial)
        counts = [info[child][0] if child in info else 0.0 for child in children]
        if min(counts) == 0:  # MSC left a side empty: the leaf stays a leaf
            info[node] = info.pop(children[0] if counts[0] else children[1])
            self.info = info
            return None
        self.info = info
        return Cut(candidate.rule, tuple(info[c] for c in children), tuple(counts), candidate.params, candidate.stats)


#: MSC's parameters and their defaults, shared by MSC and MSCClustering.
MSC_DEFAULTS = {
    "weight": "alpha3",
    "sigma2": None,
    "metric": "gaussian",
    "solver": "auto",
    "n_landmarks": 500,
    "standardize": False,
}


class _MSCBase(TreeClustering):
    _method = "msc"
    _auto_summary_rows = None  # mode="auto": in memory, whatever the rows
    _auto_chunked_mode = "exact"  # mode="auto": chunked input by landmarks, over the chunks

    def _n_clusters(self) -> int:
        return self.n_clusters

    def _check_params(self) -> None:
        _check_params(self)
        if hasattr(self, "max_clusters"):  # MSCClustering (MSC makes one split)
            check_n_clusters_auto(self, allow_none=False)
        else:
            check_positive_int(self._n_clusters(), f"{type(self).__name__}: n_clusters")

    def _target(self) -> tuple[float, SplitTest | None]:
        """(leaves to grow to, the held-out test of n_clusters="auto" or None)."""
        if self._n_clusters() != "auto":
            return self._n_clusters(), None
        target, test = growth_target(self)
        return (np.inf if target is None else target), test

    def _grow_rows(self, X: np.ndarray, weights: np.ndarray, spread=None, rows=None, sample=None, reach=None) -> Growth:
        """Grow on rows in memory: duplicates merged into weights (the paper needs distinct rows, §3.6)."""
        positive = weights > 0
        U, inverse = np.unique(X[positive], axis=0, return_inverse=True)
        c = np.bincount(inverse.ravel(), weights=weights[positive], minlength=U.shape[0])
        target, test = self._target()
        splitter = _RowsSplitter(self, U, c, test, np.random.default_rng(self.random_state))
        tree = ClusterTree(X.shape[1], self._method, {}, root_size=float(weights.sum()))
        with single_threaded_blas():
            return grow(tree, InMemoryData(U, c, reach=reach), splitter, GrowthRules(target, lazy=True, test=test))

    def _check_chunked(self) -> None:
        name = type(self).__name__
        if self._n_clusters() == "auto":
            raise ValueError(
                f"{name}: n_clusters='auto' needs the rows in memory, or mode='summary' for Dask and zarr input (the "
                "chunked growth splits each leaf on all of its rows, and leaves none out to test the split on)."
            )
        if self.solver == "exact":
            raise ValueError(
                f"{name}: solver='exact' needs the rows in memory; Dask and zarr input are fitted with landmarks "
                "(solver='auto' or 'landmarks'), or on microclusters in memory with mode='summary'."
            )

    def _grow_chunked(self, arr, weights: tuple | None = None) -> tuple[Growth, int, PassCounter]:
        """Exact mode on chunked rows: recursive MSC with landmarks, a pass that counts every leaf's rows and samples
        its landmarks after each split, and one for the moments of the leaf to split (:class:`_ChunkedGrowth`).
        Its landmark passes count each row once: ``weights`` are refused."""
        if weights is not None:
            raise ValueError(
                f"{type(self).__name__}: sample_weight is not supported in exact mode on Dask or zarr input (the "
                "landmark passes count each row once); fit with mode='summary', or with the rows in memory."
            )
        growth = _ChunkedGrowth(self, arr)
        info, nonfinite = growth.leaves_pass(None)
        total = arr.shape[0]
        if info[0] is not None:  # X's scale, from the first pass's least and largest values, before anything else
            check_value_range(info[0][3], info[0][4])
        check_nonfinite(self, nonfinite, total)
        if info[0] is None or info[0][0] < 2:
            check_enough_rows(total - nonfinite, total)
        if np.all(info[0][3] == info[0][4]):
            raise ValueError("Every feature of X is constant; there is no direction to split along.")
        tree = ClusterTree(arr.shape[1], self._method, {}, root_size=info[0][0])
        with single_threaded_blas():
            grown = grow(
                tree, info[0], _ChunkedSplitter(growth, tree, info), GrowthRules(self._n_clusters(), lazy=True)
            )
        passes = PassCounter()
        passes.add(growth.passes + 1)
        return grown, nonfinite, passes

    def _fitted_attributes(self, growth: Growth) -> dict:
        tree = growth.tree
        if self._n_clusters() != "auto" and tree.n_leaves < self._n_clusters():
            warn(
                f"Only {tree.n_leaves} clusters could be formed (n_clusters={self._n_clusters()}): no remaining leaf "
                "has two distinct rows of positive weight that MSC separates." + summary_clause(growth)
            )
        return {}


class MSCClustering(_MSCBase):
    __doc__ = (
        """Divisive maximal separation clustering (Chen & Bi, §2 and §4.3): the largest cluster is bi-partitioned
    by MSC until there are ``n_clusters`` (the paper's COREL protocol; only locally optimal, §6). Each split is
    an :class:`MSC` fitted on the cluster's own rows (its weights α and, by default, σ² recomputed), stored on the
    tree as a kernel-expansion rule, so new rows, Dask chunks and trees reloaded from JSON route the same way.

    Parameters
    ----------
    n_clusters : int or "auto", default=8
        Number of clusters (leaves). Fewer are formed, with a warning, when no leaf can be split. "auto": a leaf is
        split only while its split is significant against a one-cluster null: the split is found on a random half
        of the leaf's distinct rows, and the dip test of the other half along the direction between the two sides'
        means must reject unimodality at ``significance_level`` (:mod:`lowdens_dask.pursuit.significance`); in
        memory or with ``mode="summary"``.
    max_clusters, significance_level
        As for :class:`~lowdens_dask.MDHClustering`."""
        + _PARAMETERS_DOC
        + _ATTRIBUTES_DOC
        + """    n_passes_ : int
        Dask or zarr input: passes over the rows (two per split, one to count, one to label).
"""
    )

    __init__ = init_with(
        {"n_clusters": 8},
        {"max_clusters": None, "significance_level": 0.01, **MSC_DEFAULTS, **scale_out("refine", "max_node_bytes")},
    )


class MSC(_MSCBase):
    __doc__ = (
        """One maximal separation bi-partition (Chen & Bi, Definition 2.1 and Theorem 2.1): the hyperplane
    f(x) = Σ_j w_j m(x, x_j) = 0 through the origin of distance-feature space that maximises the sum of squared
    distances of the rows to it, wᵀD²w with ‖w‖ = 1, under the balance constraint αᵀDw = 0. ``labels_`` are 1 where
    f(x) >= 0 and 0 elsewhere; the sign of w is chosen so that label 1 is the lighter side (§2.8).

    Parameters
    ----------"""
        + _PARAMETERS_DOC
        + _ATTRIBUTES_DOC
        + """    coef_ : ndarray of shape (n_support,)
        w over the support rows (eq. 2.5, scaled by the square roots of the rows' weights).
    support_ : ndarray of shape (n_support, n_features)
        The rows of the distance features: the distinct training rows (exact solver) or the landmarks.
    sigma2_ : float
        σ² used (NaN for "euclidean").
    solver_ : str
        "exact" or "landmarks".
    separation_, eigengap_, disparity_cut_ : float
        The root's ``separation``, ``eigengap`` and ``disparity_cut`` statistics (NaN where not computed).
"""
    )

    __init__ = init_with({}, {**MSC_DEFAULTS, **scale_out("refine", "max_node_bytes")})

    def _n_clusters(self) -> int:
        return 2

    def _fitted_attributes(self, growth: Growth) -> dict:
        root = growth.tree.root
        rule = root.rule
        sigma2 = root.params.get("sigma2", np.nan)
        return {
            **super()._fitted_attributes(growth),
            "coef_": None if rule is None else rule.coef,
            "support_": None if rule is None else rule.support,
            "sigma2_": float(sigma2) if self.metric == "gaussian" else float("nan"),
            "solver_": root.params.get("solver"),
            "separation_": float(root.stats.get("separation", np.nan)),
            "eigengap_": float(root.stats.get("eigengap", np.nan)),
            "disparity_cut_": float(root.stats.get("disparity_cut", np.nan)),
        }

    def decision_function(self, X):
        """f(x) = Σ_j coef_j m(x, s_j) (eq. 2.1): >= 0 for label 1; its absolute value is the distance of d(x) to
        the hyperplane in units of ‖w‖ (§2.8). Zero everywhere when the rows could not be split."""
        check_is_fitted(self)
        rule = self.tree_.root.rule if not self.tree_.root.is_leaf else None
        if is_chunked_input(X):
            arr = as_dask_array(X, storage_options=self.storage_options)
            if rule is None:
                return da.zeros(arr.shape[0], chunks=arr.chunks[0])
            return arr.map_blocks(_chunk_decision, rule.to_dict(), drop_axis=1, dtype=np.float64)
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=True)
        return np.zeros(X.shape[0]) if rule is None else rule.decision_function(X)


def _chunk_decision(x: np.ndarray, rule: dict) -> np.ndarray:
    out = np.full(x.shape[0], np.nan)
    finite = np.isfinite(x).all(axis=1)
    out[finite] = KernelExpansionRule.from_dict(rule).decision_function(x[finite])
    return out


__all__ = ["MSC", "MSCClustering"]
