"""Spectral connectivity projection pursuit: SCPP and SCPPClustering (minimum λ₂ projections), LMSC and
LMSCClustering (the large-margin variant), on the :class:`~lowdens_dask.ClusterTree`.

Hofmeyr, Pavlidis & Eckley, "Minimum spectral connectivity projection pursuit", Statistics and Computing 29
(2019) (arXiv:1509.01546); defaults of the authors' R package SCPP (``SCPP_cluster``).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np

from .._warnings import warn
from ..backend import InMemoryData
from ..backend.frame import exact_frame, rows_frame
from ..growth.grower import Growth, GrowthRules, by_size, grow
from ..growth.spectral_splitter import SpectralSplitter, least_connected
from ..pursuit.spectral import SCHEMES
from ..tree import ClusterTree, HyperplaneRule
from ._constraints import PARAMETER_CONSTRAINTS
from ._fit import summary_clause
from ._params import param, random_state_of
from ._summary_pass import MAX_MICROCLUSTERS_PER_CHUNK
from ._validation import single_threaded_blas
from .divisive import _DivisiveClustering, growth_target, index_name

#: The pursuit's keywords (:func:`lowdens_dask.pursuit.spectral.spectral_split`) -> the estimator's parameters.
_SPLIT_PARAMS = {
    **{name: name for name in ("n_components", "laplacian", "scheme", "omega", "similarity", "scale_multiplier")},
    "betas": "betas",
    "maxiter": "max_iter",
    "n_microclusters": "n_centres",
    "microclusters_above": "centres_above",
    "microcluster_init": "centre_init",
}

_PARAMETERS_DOC = """
    n_components : int, default={n_components}
        Dimension l of the projection (the paper's SCP²_o: 2 with ``omega > 0``; SCP²_c: 3 with ``omega < 0``).
    laplacian : {{"normalized", "standard"}}, default={laplacian!r}
        λ₂ of the normalised Laplacian L_norm or of the standard L (§4).
    scheme : {{"package", "paper"}}, default={scheme!r}
        Defaults for everything below that is None: "package", the R package SCPP (Gaussian kernel, scale
        √(mean of the covariance eigenvalues ≥ 1)·(4/(3n))^(1/(4+r)), Δ from the node's covariance, β from 3
        (1.5 for L) down by 0.2 to 0.5, the smaller side ≥ n/K/5, k-means centres above 200 points,
        weighted 2-means on two eigenvectors); "paper", §7.1 of the paper (kernel (x/0.1+1)^0.1 e^(−x),
        σ = √(l λ_max) N^(−1/5), δ = min(0.01, σ²), β from 3 down by 0.5, the smaller side ≥ N/(2K),
        centres above 1,000 points, 2-means on the second eigenvector).
    omega : float, default=1.0
        Weight of Σ_(i<j) (V_iᵀV_j)² (eq. 26 with unordered pairs, as the R package): > 0 for approximately
        orthogonal columns, < 0 for correlated ones.
    similarity : {{"gaussian", "paper"}} or None, default=None
        The kernel; None is the scheme's.
    scale_multiplier : float, default=1.0
        Multiplies the scheme's σ (the paper's Figs. 7-8 sensitivity study, 0.1 to 10); a number in [1e-100, 1e100],
        where σ² and 1/σ² stay finite and non-zero in float64. Far below 1 no two distinct points are similar (λ₂
        is 0 for every projection, and the pursuit stops at its start); far above 1 all are.
    betas : sequence of float or None, default=None
        The β schedule (largest first); None is the scheme's.
    n_centres : int, default=200
        k-means centres per node, the points the split's graph is built on (the paper's "microclusters", §7;
        the points themselves below the threshold); at least 2. Formerly ``n_microclusters`` (that name works
        for one release, with a FutureWarning).
    centres_above : int or None, default=None
        Use centres for nodes with more points than this; None is the scheme's (200 or 1,000). Formerly
        ``microclusters_above``.
    centre_init : {{"farthest", "k-means++"}}, default="farthest"
        Farthest-first traversal from the mean (the R package, deterministic) or k-means++ seeded by
        ``random_state`` (the paper's runs differ by their centres). Formerly ``microcluster_init``.
    min_side : float or None, default=None
        Least weight on the smaller side for a β to be accepted; None is the scheme's rule.
    max_iter : int, default=100
        BFGS iterations per minimisation (R's ``optim`` default), and at most as many non-smooth steps (spec §6)
        while λ₂ is not simple.
    standardize : bool, default=False
        z-score the columns first (the paper rescales every feature to unit variance, §7.2).
    mode : {{"auto", "exact", "summary"}}, default="auto"
        "auto" fits in-memory arrays in memory, and Dask arrays and zarr stores in summary mode: the
        scale-out engine's microclusters (one pass) are the points the whole tree is grown on, and a final
        pass labels the rows. "exact" on chunked input builds each node's points from its own rows
        (chunk-local k-means of the rows that reach the node, one pass per node, reduced to
        ``n_centres`` by weighted k-means), so deep nodes keep their resolution; two more passes per
        split count the sides' rows. Small Dask or zarr input, at most 256 rows (``SMALL_INPUT_ROWS`` in
        :mod:`lowdens_dask.estimators._summary_pass`), is read into memory in one pass and fitted on its rows in
        every mode, as the numpy array would be (its summary would have too few microclusters to place a
        split); ``labels_`` is still a Dask array.
    rows_per_microcluster, max_microclusters, nonfinite, storage_options, labels_store
        Summary mode, as for :class:`~lowdens_dask.MDHClustering`.
    random_state : int or None, default=None
        Seeds the k-means++ centres, the 2-means of the bi-partition and the summaries; None means seed 0, as in
        every estimator (a fit is reproducible).
"""

_ATTRIBUTES_DOC = """
    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), or dask array for Dask or zarr input
        Leaf labels of the training rows: each row goes to the side of its nearest projected
        centre at every split (``tree_.predict``), so ``labels_`` equals ``predict(X)``.
    tree_ : ClusterTree
        Splits are ``NearestCentreRule`` objects (or hyperplanes, for a one-dimensional projection whose
        sides do not interleave); node statistics are ``fval`` (λ₂ + penalty), ``eigenvalue`` (λ₂) and
        ``balanced``; node parameters record σ, β, δ and the number of centres.
    n_clusters_ : int
    n_evaluations_ : int
        Objective evaluations over all splits.
    n_microclusters_ : int
        Summary mode only: the number of summaries the tree was grown on (the rows, for small input).
    n_nonfinite_ : int
        Dask or zarr input: rows set aside for NaN/inf (``nonfinite="skip"``).
"""


_DIVISIVE_PARAMETERS_DOC = """    n_clusters : int or "auto", default=8
        Number of clusters (leaves). "auto": split a leaf only while its split is significant against a
        one-cluster null (as for :class:`~lowdens_dask.MDHClustering`): the split is found on a random half of the
        leaf's points and the other half's dip test along the direction between the two sides' projected
        centres must reject unimodality at ``significance_level``; the balance asked of each split is then that of
        ``max_clusters`` clusters (:data:`AUTO_BALANCE_CLUSTERS` without a cap).
    max_clusters, significance_level, decay
        As for :class:`~lowdens_dask.MDHClustering`.
    leaf_order : {"size", "fval", "size-only", "fval-only"}, default="size"
        Which leaf to split next: the largest (the paper's §10 and the R package), or the one whose split has
        the lowest λ₂ ("fval"). With an integer ``n_clusters``, leaves whose split is significant go first, as for
        :class:`~lowdens_dask.MDHClustering` (every leaf's split is then computed, about twice the work); the
        "-only" forms order by the index alone (the R package's order is "size-only"). With clusters of very
        unequal sizes "size-only" splits large clusters before it separates small ones."""

#: ``n_clusters="auto"`` without ``max_clusters``: each split is asked for the balance of this many clusters.
AUTO_BALANCE_CLUSTERS = 10


class _SpectralClustering(_DivisiveClustering):
    """What the spectral estimators share: the divisive fit (rows in memory, the scale-out engine's summaries in
    summary mode, or each node's own rows in exact mode on chunks) with the spectral tree grower
    (:mod:`lowdens_dask.growth.spectral_splitter`), and the parameter checks."""

    _large_margin = False

    def _n_clusters(self) -> int:
        return self.n_clusters

    def _split_index(self) -> str:
        return param(self, "leaf_order") if hasattr(self, "leaf_order") else "size"

    def _split_params(self) -> dict:
        params = {keyword: param(self, name) for keyword, name in _SPLIT_PARAMS.items()}
        if params["betas"] is not None:
            params["betas"] = tuple(float(b) for b in params["betas"])
        return {**params, "large_margin": self._large_margin}

    def _min_side(self, total: float) -> float:
        """The balance asked of every split (spec §8, Appendix C): from the root's size and K."""
        if self.min_side is not None:
            return float(self.min_side)
        k = self._n_clusters()
        if k == "auto":
            k = AUTO_BALANCE_CLUSTERS if self.max_clusters is None else self.max_clusters
        return total / k / 5 if SCHEMES[self.scheme]["min_side_rule"] == "package" else total / (2 * k)

    def _leaf_order(self, node, data, found) -> float:
        size = index_name(self._split_index()) == "size"
        return by_size(node, data, found) if size else least_connected(node, data, found)

    def _rules(self) -> GrowthRules:
        target, test = self._target()
        told = isinstance(self._n_clusters(), numbers.Integral)
        lazy = index_name(self._split_index()) == "size"
        return GrowthRules(target, self._leaf_order, lazy=lazy, merge=not told, test=test)

    def _tree_params(self) -> dict:
        return self._split_params()

    def _splitter(self, frame, test, data, *, parallel=0, refine=None, original=None, spread=0.0):
        if data.chunked:
            return SpectralSplitter(
                self._method, self._split_params(), self._min_side(data.total_weight), frame, test,
                random_state=random_state_of(self.random_state), rows_per_microcluster=self.rows_per_microcluster,
                max_per_chunk=MAX_MICROCLUSTERS_PER_CHUNK,
            )  # fmt: skip
        if original is not None:  # an update: the spread of the merged summary, and seeds of this update
            spread = data.within_variance
            random_state = [_seed(self.random_state), self.tree_.n_updates + 1]
        else:
            original = data.X if frame.mean is None else data.X * frame.scale + frame.mean
            random_state = random_state_of(self.random_state)
        return SpectralSplitter(
            self._method, self._split_params(), self._min_side(data.total_weight), frame, test, original=original,
            spread=spread, random_state=random_state,
        )  # fmt: skip

    def _grow_node(self, root) -> Growth:
        """Exact mode on chunked input: each leaf's points are microclusters of its own rows (a pass each)."""
        return self._grow(*exact_frame(root, self.standardize), 0, None)

    def _grow(self, data, frame, parallel: int, refine, spread: float = 0.0) -> Growth:
        rules = self._rules()
        splitter = self._splitter(frame, rules.test, data, spread=spread)
        tree = ClusterTree(data.n_features, self._method, self._tree_params(), root_size=data.total_weight)
        with single_threaded_blas():
            return grow(tree, data, splitter, rules)

    def _grow_rows(
        self, X: np.ndarray, weights: np.ndarray, spread: np.ndarray | None = None, rows=None, sample=None, reach=None
    ) -> Growth:
        # the frame exact mode fits in: standardised if asked, columns constant up to rounding set aside either way
        frame, constant = rows_frame(X, weights, self.standardize)
        Z = X if frame.mean is None else (X - frame.mean) / frame.scale
        within = 0.0 if spread is None else float(weights @ spread / weights.sum())
        if self.standardize and not constant.all():
            within /= float(np.mean(frame.scale[~constant] ** 2))
        return self._grow(InMemoryData(Z, weights, reach=reach), frame, 0, None, spread=within)

    def _target(self):
        """(leaves to grow to, the held-out test of n_clusters="auto" or None)."""
        return growth_target(self) if hasattr(self, "max_clusters") else (self._n_clusters(), None)

    def _fitted_attributes(self, growth) -> dict:
        if self._n_clusters() != "auto" and growth.n_leaves < self._n_clusters():
            warn(
                f"Only {growth.n_leaves} clusters could be formed (n_clusters={self._n_clusters()}): no remaining "
                "leaf has two distinct rows of positive weight that it can separate." + summary_clause(growth)
            )
        return {}


def _seed(random_state) -> int:
    return int(random_state) if isinstance(random_state, numbers.Integral) else 0


def _clustering_doc(summary: str, n_components: int, laplacian: str | None, scheme: str) -> str:
    params = _PARAMETERS_DOC.format(n_components=n_components, laplacian=laplacian, scheme=scheme)
    if laplacian is None:  # LMSC: the standard Laplacian only
        start = params.index("    laplacian :")
        params = params[:start] + params[params.index("    scheme :") :]
    return summary + params + _ATTRIBUTES_DOC


_ONE_SPLIT_ATTRIBUTES = """    projection_ : ndarray of shape (n_features, l)
        The projection of the split (original coordinates; one column for a hyperplane).
    eigenvalue_, fval_ : float
        λ₂, and λ₂ plus the orthogonality penalty, at the solution.
"""


class _OneSplit:
    """One bi-partition: the tree of two leaves; ``projection_`` (d×l) and ``eigenvalue_`` of its split."""

    decay = None  # not a parameter: an update of one split keeps the whole weight of the rows seen before

    def _n_clusters(self) -> int:
        return 2

    def _fitted_attributes(self, growth) -> dict:
        root = growth.tree.root
        rule = root.rule
        projection = None if rule is None else rule.v[:, None] if isinstance(rule, HyperplaneRule) else rule.V
        return {
            **super()._fitted_attributes(growth),
            "projection_": projection,
            "eigenvalue_": float(root.stats.get("eigenvalue", np.nan)),
            "fval_": float(root.stats.get("fval", np.nan)),
        }


class SCPPClustering(_SpectralClustering):
    __doc__ = _clustering_doc(
        """Divisive clustering by minimum spectral connectivity projections (SCPP; Hofmeyr, Pavlidis & Eckley,
    Statistics and Computing 2019, §7.1 and §10; the R package's ``SCPP_cluster``).

    The largest cluster is split until there are ``n_clusters``; each split minimises λ₂ of the Laplacian of
    the node's projected k-means microclusters (§4, §7) over l-dimensional projections from the leading
    principal components, for β from large to small until the split is balanced (§8), and bi-partitions
    the projected microclusters spectrally.

    Parameters
    ----------
"""
        + _DIVISIVE_PARAMETERS_DOC,
        2,
        "normalized",
        "package",
    )

    _method = "scpp"

    _parameter_constraints = PARAMETER_CONSTRAINTS["SCPPClustering"]

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        leaf_order: str | Callable = "size",
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        decay: float | None = None,
        n_components: int = 2,
        laplacian="normalized",
        scheme="package",
        omega=1.0,
        similarity=None,
        scale_multiplier=1.0,
        betas=None,
        n_centres=200,
        centres_above=None,
        centre_init="farthest",
        min_side=None,
        max_iter: int = 100,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        split_index="deprecated",  # now leaf_order (FutureWarning)
        maxiter="deprecated",  # now max_iter (FutureWarning)
        n_microclusters="deprecated",  # now n_centres (FutureWarning)
        microclusters_above="deprecated",  # now centres_above (FutureWarning)
        microcluster_init="deprecated",  # now centre_init (FutureWarning)
    ):
        self.n_clusters = n_clusters
        self.leaf_order = leaf_order
        self.max_clusters = max_clusters
        self.significance_level = significance_level
        self.decay = decay
        self.n_components = n_components
        self.laplacian = laplacian
        self.scheme = scheme
        self.omega = omega
        self.similarity = similarity
        self.scale_multiplier = scale_multiplier
        self.betas = betas
        self.n_centres = n_centres
        self.centres_above = centres_above
        self.centre_init = centre_init
        self.min_side = min_side
        self.max_iter = max_iter
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.split_index = split_index
        self.maxiter = maxiter
        self.n_microclusters = n_microclusters
        self.microclusters_above = microclusters_above
        self.microcluster_init = microcluster_init


class SCPP(_OneSplit, _SpectralClustering):
    __doc__ = (
        _clustering_doc(
            """One bi-partition by minimum spectral connectivity projection pursuit (SCPP; Hofmeyr, Pavlidis &
    Eckley, Statistics and Computing 2019, §4-§8): the projection minimising λ₂ of the Laplacian of the
    projected microclusters, and their spectral bi-partition (labels 0 and 1).

    Parameters
    ----------""",
            2,
            "normalized",
            "package",
        )
        + _ONE_SPLIT_ATTRIBUTES
    )

    _method = "scpp"

    _parameter_constraints = PARAMETER_CONSTRAINTS["SCPP"]

    def __init__(
        self,
        *,
        n_components: int = 2,
        laplacian="normalized",
        scheme="package",
        omega=1.0,
        similarity=None,
        scale_multiplier=1.0,
        betas=None,
        n_centres=200,
        centres_above=None,
        centre_init="farthest",
        min_side=None,
        max_iter: int = 100,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        maxiter="deprecated",  # now max_iter (FutureWarning)
        n_microclusters="deprecated",  # now n_centres (FutureWarning)
        microclusters_above="deprecated",  # now centres_above (FutureWarning)
        microcluster_init="deprecated",  # now centre_init (FutureWarning)
    ):
        self.n_components = n_components
        self.laplacian = laplacian
        self.scheme = scheme
        self.omega = omega
        self.similarity = similarity
        self.scale_multiplier = scale_multiplier
        self.betas = betas
        self.n_centres = n_centres
        self.centres_above = centres_above
        self.centre_init = centre_init
        self.min_side = min_side
        self.max_iter = max_iter
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.maxiter = maxiter
        self.n_microclusters = n_microclusters
        self.microclusters_above = microclusters_above
        self.microcluster_init = microcluster_init
