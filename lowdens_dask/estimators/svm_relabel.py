"""SVM-relabel clustering (SVM-external clustering stabilised by simulated annealing) on the
:class:`~lowdens_dask.ClusterTree`, and support vector clustering (SVM-internal; the paper's comparator).

Winters-Hilt & Merat, "Unsupervised clustering using supervised support vector machines" (spec:
``shared/research/seed-svm.md``, cited as §n); Ben-Hur, Horn, Siegelmann & Vapnik, "Support vector clustering",
JMLR 2 (2001). The algorithms are :mod:`lowdens_dask.pursuit.svm_relabel`.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from .._warnings import warn
from ..backend import InMemoryData
from ..backend.frame import standardisation
from ..growth.grower import Growth, GrowthRules, grow
from ..growth.svm_relabel_splitter import RelabelSplitter
from ..pursuit.significance import SplitTest
from ..tree import ClusterTree
from ._constraints import PARAMETER_CONSTRAINTS
from ._fit import TreeClustering, summary_clause
from ._params import random_state_of
from ._validation import (
    single_threaded_blas,
)
from .divisive import growth_target


class SVMRelabelClustering(TreeClustering):
    """Divisive clustering by SVM-relabel bi-partitions stabilised by simulated annealing (Winters-Hilt & Merat,
    spec §4; the "SVM-external" clustering of the paper).

    Each split trains scikit-learn's soft-margin ``SVC`` (Gaussian kernel) on a labelling of the leaf's points,
    flips the labels of the most confidently misclassified ones and retrains until none is misclassified
    (§4.3); simulated annealing over such fixed points (Metropolis on the kernel SSE, §5.2, with the flip
    probability boosted while the SSE is stuck: "variable perturbation", §4.6) picks the labelling. The
    split stored in ``tree_`` is that SVM's decision function (a
    :class:`~lowdens_dask.tree.rules.KernelExpansionRule`), so ``predict`` routes new rows exactly as the
    training rows were. More than two clusters: the largest leaf is split until there are ``n_clusters``
    (the paper's suggested iteration on the binary clusters, §4.1).

    Parameters
    ----------
    n_clusters : int or "auto", default=2
        Number of leaves (the paper's method is a binary split). "auto": a leaf is split only while its split is
        significant against a one-cluster null: the split is found on a random half of the leaf's points and the
        dip test of the other half along the direction between the two sides' means must reject unimodality at
        ``significance_level`` (:mod:`lowdens_dask.pursuit.significance`; the test's ``p_value`` is in the node's
        ``stats``, beside ``sse_null_p_value``, the random-labelling null of §4.5).
    max_clusters, significance_level
        As for :class:`~lowdens_dask.MDHClustering`.
    C : float, default=1.5
        SVM soft-margin constant (the paper's value for clustering, §4.1). It applies per point of unit weight:
        weights are rescaled to mean 1 and multiply C.
    gamma : {"auto", "median"} or float, default="auto"
        Kernel width in exp(-gamma |x - x'|^2), recomputed at every node. "auto": 1 / (2 s^2), s^2 the node's
        total variance (sigma = 2.14 on raw Iris; the paper's sigma = 0.5 fits any labelling of raw Iris, §9);
        "median": 1 / median |x - x'|^2.
    annealing : bool, default=True
        Simulated annealing over relabelling fixed points (§4.6). False: ``n_restarts`` plain runs, the one of
        lowest kernel SSE kept (§4.4; ``n_restarts=1`` is the unstabilised relabeller).
    perturbation : {"variable", "constant"}, default="variable"
        Flip probability min(0.5, 0.1 + 0.1 * stall) (stall: steps without an accepted change), or 0.1.
    n_restarts : int, default=1
        Independent annealing chains (or plain runs); the lowest SSE wins.
    n_anneal_steps : int, default=40
        Annealing steps (perturb, re-converge, accept) per chain.
    t0, beta, schedule : float, float, {"geometric", "paper_literal"}, defaults 10.0, 0.96, "geometric"
        Cooling (§4.6): T <- beta T, or the paper's literal T_(k+1) = beta^k T_k.
    relabel_fraction : float, default=0.15
        Fraction of the misclassified points flipped per SVM fit (the paper's relabelling factor).
    max_iter : int, default=100
        SVM fits per relabelling run.
    patience : int, default=10
        A run also stops after this many fits without a lower kernel SSE.
    min_cluster_fraction : float, default=0.05
        The collapse guard: neither side of a split may hold less than this fraction of the node's weight
        (flips that would cross it are not made; end states that cross it are rejected).
    max_points : int, default=500
        The SVM of a node sees at most this many distinct points: duplicates are merged, and above it the points
        are replaced by weighted k-means centres (an SVM costs O(n^2) memory and O(n^2)-O(n^3) time).
    n_null : int, default=5000
        Random labellings of the SSE null (§4.5).
    null_alpha : float, default=1e-3
        The null threshold is this quantile of the random labellings' SSE.
    standardize : bool, default=False
        z-score the columns first.
    mode : {"auto", "summary"}, default="auto"
        "auto" fits in-memory input on its rows (in summary mode above 20,000 rows without ``sample_weight``)
        and Dask arrays and zarr stores in summary mode: one pass builds weighted microclusters, the tree grows
        on them (each node's SVM on at most ``max_points`` of them) and a final pass routes every row. There
        is no exact mode on chunked input (an SVM needs its points in memory). Small input, at most 256 rows
        (``SMALL_INPUT_ROWS`` in :mod:`lowdens_dask.estimators._summary_pass`), is read into memory in one pass and
        fitted on its rows, as the numpy array would be (its summary would have too few microclusters to place
        a split); ``labels_`` is still a Dask array for Dask or zarr input.
    rows_per_microcluster, max_microclusters, nonfinite, storage_options, labels_store
        Summary mode, as for :class:`~lowdens_dask.MDHClustering`.
    random_state : int, RandomState or None, default=None
        Seeds the labellings, the perturbations, the null and the k-means reductions; None means seed 0, as in
        every estimator (a fit is reproducible).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), or dask array for Dask or zarr input
        ``tree_.predict(X)``: each row's side of every split is the sign of that split's decision function.
    tree_ : ClusterTree
        Splits are ``KernelExpansionRule`` objects (kernel "rbf"). Node statistics: ``sse`` (kernel SSE of the
        split on the SVM's points; also ``fval``), ``sse_null_threshold`` and ``sse_null_mean`` (random
        labellings), ``p_value`` (empirical lower tail), ``converged`` (1.0: a relabelling fixed point),
        ``n_points``, ``n_support``, ``n_svm_fits``, ``n_relabel_runs``, ``n_successful`` (runs below the null
        threshold). Node parameters record gamma and C.
    n_clusters_ : int
    n_evaluations_, n_iter_ : int
        SVM fits (relabelling iterations) over all splits.
    n_microclusters_, n_nonfinite_ : int
        Summary mode only (``n_microclusters_`` counts the rows of small input, fitted on its rows).
    n_features_in_ : int
    """

    _method = "svm-relabel"
    _auto_summary_rows = 20_000  # mode="auto": summary mode above this many rows in memory (SVC's cost)
    _exact_on_chunks = False  # chunked input is fitted in summary mode

    _parameter_constraints = PARAMETER_CONSTRAINTS["SVMRelabelClustering"]

    def __init__(
        self,
        n_clusters: int | str | None = 2,
        *,
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        C=1.5,
        gamma="auto",
        annealing=True,
        perturbation="variable",
        n_restarts=1,
        n_anneal_steps=40,
        t0=10.0,
        beta=0.96,
        schedule="geometric",
        relabel_fraction=0.15,
        max_iter: int = 100,
        patience=10,
        min_cluster_fraction=0.05,
        max_points=500,
        n_null=5000,
        null_alpha=0.001,
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
        self.C = C
        self.gamma = gamma
        self.annealing = annealing
        self.perturbation = perturbation
        self.n_restarts = n_restarts
        self.n_anneal_steps = n_anneal_steps
        self.t0 = t0
        self.beta = beta
        self.schedule = schedule
        self.relabel_fraction = relabel_fraction
        self.max_iter = max_iter
        self.patience = patience
        self.min_cluster_fraction = min_cluster_fraction
        self.max_points = max_points
        self.n_null = n_null
        self.null_alpha = null_alpha
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store

    # ------------------------------------------------------------------ parameters
    def _split_params(self) -> dict:
        return {
            "gamma": self.gamma if isinstance(self.gamma, str) else float(self.gamma),
            "C": float(self.C),
            "relabel_fraction": float(self.relabel_fraction),
            "max_iter": int(self.max_iter),
            "patience": int(self.patience),
            "annealing": bool(self.annealing),
            "perturbation": self.perturbation,
            "n_anneal_steps": int(self.n_anneal_steps),
            "t0": float(self.t0),
            "beta": float(self.beta),
            "schedule": self.schedule,
            "n_restarts": int(self.n_restarts),
            "min_cluster_fraction": float(self.min_cluster_fraction),
            "max_points": int(self.max_points),
            "n_null": int(self.n_null),
            "null_alpha": float(self.null_alpha),
        }

    # ------------------------------------------------------------------ fitting
    def _target(self) -> tuple[float, SplitTest | None]:
        """(leaves to grow to, the held-out test of n_clusters="auto" or None)."""
        if self.n_clusters != "auto":
            return self.n_clusters, None
        target, test = growth_target(self)
        return (np.inf if target is None else target), test

    def _grow_rows(
        self, X: np.ndarray, weights: np.ndarray, spread: np.ndarray | None = None, rows=None, sample=None, reach=None
    ) -> Growth:
        """Grow the tree on points in memory (rows, or summaries weighted by their row counts with their
        per-dimension ``spread``)."""
        mean, scale, Z = None, None, X
        if self.standardize:
            mean, scale = standardisation(X, weights)
            Z = (X - mean) / scale
            if spread is not None:
                spread = spread / np.mean(scale**2)
        params = self._split_params()
        tree = ClusterTree(X.shape[1], self._method, params, root_size=float(weights.sum()))
        target, test = self._target()
        splitter = RelabelSplitter(
            X, weights, Z, spread, mean, scale, params, test, check_random_state(random_state_of(self.random_state))
        )
        with single_threaded_blas():
            data = InMemoryData(X, weights, reach=reach)
            return grow(tree, data, splitter, GrowthRules(target, lazy=True, test=test))

    def _fitted_attributes(self, growth: Growth) -> dict:
        if self.n_clusters != "auto" and growth.n_leaves < self.n_clusters:
            warn(
                f"Only {growth.n_leaves} clusters could be formed (n_clusters={self.n_clusters}): no remaining leaf "
                f"has a two-class labelling with at least min_cluster_fraction={self.min_cluster_fraction:g} of its "
                "weight on each side." + summary_clause(growth)
            )
        return {"n_iter_": growth.n_evaluations}
