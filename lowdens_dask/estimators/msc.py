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

import dask.array as da
import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from .._warnings import warn
from ..backend import InMemoryData, as_dask_array
from ..backend.frame import check_value_range
from ..backend.passes import PassCounter
from ..growth.grower import Growth, GrowthRules, grow
from ..growth.msc_splitter import ChunkedGrowth, ChunkedSplitter, RowsSplitter
from ..pursuit.significance import SplitTest
from ..tree import ClusterTree, KernelExpansionRule
from ._constraints import PARAMETER_CONSTRAINTS
from ._fit import TreeClustering, summary_clause
from ._params import is_chunked_input, random_state_of
from ._summary_pass import check_enough_rows, check_nonfinite
from ._validation import (
    single_threaded_blas,
)
from .divisive import growth_target

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
        Seeds the landmarks, the median heuristic's sample above 2,000 rows and Lanczos' start vectors; None
        means seed 0, as in every estimator (a fit is reproducible).
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
        splitter = RowsSplitter(self, U, c, test, np.random.default_rng(random_state_of(self.random_state)))
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
        its landmarks after each split, and one for the moments of the leaf to split (:class:`ChunkedGrowth`).
        Its landmark passes count each row once: ``weights`` are refused."""
        if weights is not None:
            raise ValueError(
                f"{type(self).__name__}: sample_weight is not supported in exact mode on Dask or zarr input (the "
                "landmark passes count each row once); fit with mode='summary', or with the rows in memory."
            )
        growth = ChunkedGrowth(self, arr)
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
            grown = grow(tree, info[0], ChunkedSplitter(growth, tree, info), GrowthRules(self._n_clusters(), lazy=True))
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

    _parameter_constraints = PARAMETER_CONSTRAINTS["MSCClustering"]

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        weight="alpha3",
        sigma2=None,
        metric="gaussian",
        solver="auto",
        n_landmarks=500,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
    ):
        self.n_clusters = n_clusters
        self.max_clusters = max_clusters
        self.significance_level = significance_level
        self.weight = weight
        self.sigma2 = sigma2
        self.metric = metric
        self.solver = solver
        self.n_landmarks = n_landmarks
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store


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

    _parameter_constraints = PARAMETER_CONSTRAINTS["MSC"]

    def __init__(
        self,
        *,
        weight="alpha3",
        sigma2=None,
        metric="gaussian",
        solver="auto",
        n_landmarks=500,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
    ):
        self.weight = weight
        self.sigma2 = sigma2
        self.metric = metric
        self.solver = solver
        self.n_landmarks = n_landmarks
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store

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
