"""MDH: one minimum density hyperplane as a scikit-learn estimator."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..indices import DEFAULT_ALPHAS
from ._constraints import PARAMETER_CONSTRAINTS
from ._params import param, with_scale_out_doc
from .divisive import (
    _DivisiveClustering,
    _lowest_density,
    _relative_depth,
    _size,
)
from .hyperplane import HyperplaneEstimator
from .projection import _ProjectionPursuit


class MDH(HyperplaneEstimator):
    """Minimum density hyperplane by minimum density projection pursuit (MDP²).

    Finds the hyperplane ``{x : v.x = b}`` through the lowest-density region of the data's Gaussian
    kernel density estimate, subject to ``b`` lying within ``alpha`` standard deviations of the
    projected mean (Pavlidis, Hofmeyr & Tasoulis, "Minimum Density Hyperplanes", JMLR 17(156), 2016,
    eqs. 10-13 and 26). Label 0 is ``v.x < b`` and label 1 is ``v.x >= b``.

    Parameters
    ----------
    bandwidth : None, "silverman", float or callable, default=None
        Kernel bandwidth h. None/"silverman": ``0.9 * sigma_pc1 * n**(-1/5)`` (§5.1.1); a callable is
        called with the (possibly standardised) data. A number, or what the rule or the callable gives, must lie
        in [1e-100, 1e100] (data units): the index squares distances in bandwidths and uses 1/h², which over- or
        underflow in float64 far outside it (use ``standardize=True`` for data of an extreme scale).
    alphas : sequence of float, default=None
        Increasing alpha schedule; None means (0.01, 0.1, 0.2, ..., 0.9).
    v0 : None, array of shape (n_features,) or (n_features, k), or callable, default=None
        Initial directions; None means the first two principal components. The result with the
        largest relative depth (eq. 30) is kept.
    eta : float, default=0.01
        Penalty accuracy (eq. 10).
    penalty_exponent : float, default=1 - 1e-6
        Penalty smoothness exponent (eq. 10).
    max_iter : int, default=50
        BFGS iterations per alpha stage.
    tol : float, default=1e-5
        An alpha stage ends when one BFGS iteration lowers the projection index by at most this
        relative amount.
    min_size : float, default=1
        A hyperplane is accepted only if each side holds at least this many points (total weight).
    standardize : bool, default=False
        Z-score the features before fitting; hyperplanes are reported in the original coordinates.
    mode, rows_per_microcluster, max_microclusters, refine, nonfinite, random_state, storage_options, labels_store, max_node_bytes
        Exact and summary modes for Dask arrays and zarr stores; as for :class:`~lowdens_dask.MDHClustering`.

    Attributes
    ----------
    v_ : ndarray of shape (n_features,)
        Unit normal of the hyperplane.
    b_ : float
        Offset of the hyperplane.
    labels_ : ndarray of shape (n_samples,), or dask array for Dask or zarr input
        0 for ``X @ v_ < b_``, 1 otherwise (-1 for rows set aside for NaN/inf); a Dask array backed by
        ``labels_store`` when one is given.
    stats_ : dict
        The index's statistics of the split (``fval``, ``relative_depth``).
    relative_depth_ : float
        Relative depth of the split (eq. 30); 0 means no valid minimum density hyperplane was found.
    fval_ : float
        Projected density at the hyperplane, I(v, b) (eq. 3).
    alpha_ : float
        The alpha of the accepted stage.
    bandwidth_ : float
        The bandwidth used.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has feature names.
    """

    _parameter_constraints = PARAMETER_CONSTRAINTS["MDH"]

    def __init__(
        self,
        *,
        bandwidth: float | str | Callable | None = None,
        alphas: Sequence[float] | None = None,
        v0: np.ndarray | Callable | None = None,
        eta: float = 0.01,
        penalty_exponent: float = 0.999999,
        max_iter: int = 50,
        tol: float = 1e-05,
        min_size: float = 1,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        refine: int = 0,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        max_node_bytes: float | str = "auto",
        eps="deprecated",  # now penalty_exponent (FutureWarning)
        maxiter="deprecated",  # now max_iter (FutureWarning)
        ftol="deprecated",  # now tol (FutureWarning)
    ):
        self.bandwidth = bandwidth
        self.alphas = alphas
        self.v0 = v0
        self.eta = eta
        self.penalty_exponent = penalty_exponent
        self.max_iter = max_iter
        self.tol = tol
        self.min_size = min_size
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.refine = refine
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.max_node_bytes = max_node_bytes
        self.eps = eps
        self.maxiter = maxiter
        self.ftol = ftol

    _method = "mdh"
    _no_split_warning = (
        "No starting direction led to a hyperplane through a minimum of the projected density "
        "(relative depth 0); v_ and b_ hold the last solution of the alpha schedule."
    )

    def _index_params(self) -> dict:
        return {
            "bandwidth": self.bandwidth,
            "alphas": tuple(DEFAULT_ALPHAS if self.alphas is None else self.alphas),
            "eta": self.eta,
            "eps": param(self, "penalty_exponent"),
            "maxiter": param(self, "max_iter"),
            "ftol": param(self, "tol"),
            "v0": self.v0,
        }

    def _fitted_attributes(self, growth) -> dict:
        if not growth.root.found.params:  # find_hyperplane's answer for identical rows (Dask or zarr input reach it)
            raise ValueError("Every feature of X is constant; there is no direction to split along.")
        hp = self._split(growth)
        return {
            **super()._fitted_attributes(growth),
            "relative_depth_": hp.relative_depth,
            "alpha_": hp.params["alpha"],
            "bandwidth_": hp.params["bandwidth"],
        }


@with_scale_out_doc
class MDHClustering(_DivisiveClustering):
    """Divisive clustering with minimum density hyperplanes (MDDC; PPCI's ``mddc``).

    Each split is an :class:`~lowdens_dask.MDH` fitted on the leaf's own rows (Pavlidis, Hofmeyr &
    Tasoulis, JMLR 2016; divisive use as in Hofmeyr & Pavlidis, R Journal 11(2), 2019).

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
        Number of leaves to grow. None splits until no leaf has a valid split (PPCI's ``mddc``). "auto" splits
        a leaf only while its split is significant at ``significance_level`` against a one-cluster null: the
        dip of the leaf's rows (in summary mode, the summary's sample of rows that reach it) along each start's
        split, against the dip of the splits the same pursuit finds in one-cluster samples of the leaf's size
        and effective dimension (:mod:`lowdens_dask.pursuit.significance`); the best significant start's split
        is made, and every node records its ``dip``, ``p_value``, ``n_test`` and ``d_eff`` in ``tree_`` (the
        leaves their would-be split's). A significant direction whose hyperplane lies at the edge of the alpha
        interval (a small cluster beyond it) is split at its projection's lowest density minimum, as dePDDP
        splits (the node's ``params["placed_at"]`` says so).
    leaf_order : {"size", "fval", "rdepth"}, their "-only" forms, or callable, default="size"
        Which leaf to split next: the largest, the one whose hyperplane has the lowest density, or the
        largest relative depth. For an integer ``n_clusters`` every leaf's best split is tested as ``"auto"``
        tests it, and leaves whose split is significant go first (the one split decision of ``"auto"`` and a
        told K: told the K that ``"auto"`` finds, the fit makes ``"auto"``'s splits, and forced or insignificant
        splits come only after every significant one); the index orders the leaves within each group. The
        "-only" forms order by the index alone, with no test (PPCI's ``mddc`` is ``"size-only"``); so does a
        callable, which receives ``(X_leaf, hyperplane)`` and returns a number.
    min_size : float, default=1
        Each side of a split must hold at least this many points (total weight).
    min_cluster_size : float, default=0.005
        With ``n_clusters="auto"``: each side of a split must also hold at least this share of the rows fitted (a
        number below 1) or this many rows (1 or more): a split must be substantial as well as significant, since a
        consistent test on a large sample resolves every tight clump of its rows. 0 splits while significant.
    force_n_clusters : bool, default=True
        When no leaf has a valid split and fewer than ``n_clusters`` leaves exist, split the leaf whose best
        hyperplane the projection index prefers (for MDH and dePDDP, the one through the lowest density; ties to
        the leaf the split index prefers) with that hyperplane (the node is marked ``forced`` in ``tree_``)
        and warn once. False stops at the last valid split (PPCI's ``mddc``; a warning says how many
        clusters were formed). Only for an integer ``n_clusters``.
    max_clusters : int or None, default=None
        With ``n_clusters="auto"`` or None, grow at most this many leaves (None: no cap).
    significance_level : float, default=0.01
        With ``n_clusters="auto"``: a leaf is split only if its held-out dip test's p-value is below this (a
        level per split, in (0, 1); not MDH's ``alphas``, which bound the hyperplane's offset).
    decay : float or None, default=None
        :meth:`partial_fit`: each update first multiplies the weight of the rows seen before by ``1 - decay``
        (in [0, 1); None keeps their whole weight), so that old data fades.
    bandwidth, alphas, v0, eta, penalty_exponent, max_iter, tol, standardize
        As for :class:`~lowdens_dask.MDH`, applied at every node.
    {scale_out}

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), or dask array for Dask or zarr input
        Leaf labels of the training rows (-1 for rows set aside for NaN/inf); a Dask array backed by
        ``labels_store`` when one is given.
    tree_ : ClusterTree
        The fitted tree itself (not a copy): editing it changes ``predict``; ``labels_`` and
        ``n_clusters_`` keep describing the fit.
    n_clusters_ : int
        Number of leaves actually formed.
    fit_mode_ : str
        How the last :meth:`fit` ran: ``"memory"`` (Dask and zarr input read into memory included), ``"exact"``
        (passes over the chunks) or ``"summary"`` (``mode``'s rule).
    fit_mode_reason_ : str
        Why: the rule's words for this input (for example "2,000,000 x 64 values are more than 5,000,000").
    n_microclusters_ : int
        Summary mode only: size of the summary (the number of rows, for small input fitted on its rows).
    timings_ : dict
        Summary mode only: seconds spent in the summarising pass (``"summary_pass"``), growing the tree on the
        microclusters (``"tree"``) and labelling every row (``"label_pass"``; None while the labels of
        chunked input stay lazy, without ``labels_store``). After :meth:`partial_fit`: the update's (``"tree"``:
        updating the tree).
    client_seconds_ : dict
        With ``timings_``: the CPU seconds this process (the client, and the scheduler of a ``LocalCluster``
        started in it) spent in each step; what is left of a pass's time is waiting on the workers. The part of a
        fit that does not shrink as workers are added (``benchmarks/scale.py``'s serial model).
    summary_ : ClusterSummary
        Summary mode and :meth:`partial_fit`: the microclusters of every row seen, which updates merge into.
    update_report_ : dict
        After :meth:`partial_fit`: what the last update did (:mod:`lowdens_dask.growth.grower`): ``update``,
        ``n_rows``, ``n_clusters_before``, ``n_clusters``, ``nodes`` (each split's ``action``: "kept",
        "re-pursued", "split" or "merged", with ``rerouted``, ``angle_degrees``, ``threshold_shift``,
        ``p_value``), ``leaves`` (each cluster id's ``share_before`` and ``share_new``) and ``drift`` (``psi``,
        ``chi2``, ``dof``, ``p_value``).
    n_nonfinite_ : int
        Rows set aside for NaN/inf.
    n_passes_ : int
        Passes over the rows of Dask or zarr input during the fit (0 for in-memory input).
    n_evaluation_passes_ : int
        Of these, the passes of the pursuit's objective evaluations (``X @ V`` and ``X.T @ G``).
    n_evaluations_, n_iter_ : int
        Objective evaluations of every split computed (``n_iter_``: scikit-learn's name for it where ``max_iter``
        bounds the pursuit).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
    """

    _method = "mdh"
    _split_indices = {"size": _size, "fval": _lowest_density, "rdepth": _relative_depth}

    _parameter_constraints = PARAMETER_CONSTRAINTS["MDHClustering"]

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        leaf_order: str | Callable = "size",
        min_size: float = 1,
        min_cluster_size: float = 0.005,
        force_n_clusters: bool = True,
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        decay: float | None = None,
        bandwidth: float | str | Callable | None = None,
        alphas: Sequence[float] | None = None,
        v0: np.ndarray | Callable | None = None,
        eta: float = 0.01,
        penalty_exponent: float = 0.999999,
        max_iter: int = 50,
        tol: float = 1e-05,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        refine: int = 0,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        max_node_bytes: float | str = "auto",
        split_index="deprecated",  # now leaf_order (FutureWarning)
        eps="deprecated",  # now penalty_exponent (FutureWarning)
        maxiter="deprecated",  # now max_iter (FutureWarning)
        ftol="deprecated",  # now tol (FutureWarning)
    ):
        self.n_clusters = n_clusters
        self.leaf_order = leaf_order
        self.min_size = min_size
        self.min_cluster_size = min_cluster_size
        self.force_n_clusters = force_n_clusters
        self.max_clusters = max_clusters
        self.significance_level = significance_level
        self.decay = decay
        self.bandwidth = bandwidth
        self.alphas = alphas
        self.v0 = v0
        self.eta = eta
        self.penalty_exponent = penalty_exponent
        self.max_iter = max_iter
        self.tol = tol
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.refine = refine
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.max_node_bytes = max_node_bytes
        self.split_index = split_index
        self.eps = eps
        self.maxiter = maxiter
        self.ftol = ftol

    def _index_params(self) -> dict:
        return {
            "bandwidth": self.bandwidth,
            "alphas": tuple(DEFAULT_ALPHAS if self.alphas is None else self.alphas),
            "v0": self.v0,
            "eta": self.eta,
            "eps": param(self, "penalty_exponent"),
            "maxiter": param(self, "max_iter"),
            "ftol": param(self, "tol"),
        }


class MDHProjection(_ProjectionPursuit):
    """Successive minimum density directions (PPCI's ``mddr``): each the normal of a minimum density hyperplane
    (:class:`~lowdens_dask.MDH`) of the data deflated by the directions before it.

    Parameters
    ----------
    n_components : int, default=2
    bandwidth, alphas, eta, penalty_exponent, max_iter, tol, min_size
        As for :class:`~lowdens_dask.MDH`.

    """

    _method = "mdh"

    _parameter_constraints = PARAMETER_CONSTRAINTS["MDHProjection"]

    def __init__(
        self,
        n_components: int = 2,
        *,
        bandwidth: float | str | Callable | None = None,
        alphas: Sequence[float] | None = None,
        eta: float = 0.01,
        penalty_exponent: float = 0.999999,
        max_iter: int = 50,
        tol: float = 1e-05,
        min_size: float = 1,
        eps="deprecated",  # now penalty_exponent (FutureWarning)
        maxiter="deprecated",  # now max_iter (FutureWarning)
        ftol="deprecated",  # now tol (FutureWarning)
    ):
        self.n_components = n_components
        self.bandwidth = bandwidth
        self.alphas = alphas
        self.eta = eta
        self.penalty_exponent = penalty_exponent
        self.max_iter = max_iter
        self.tol = tol
        self.min_size = min_size
        self.eps = eps
        self.maxiter = maxiter
        self.ftol = ftol

    def _index_params(self) -> dict:
        alphas = tuple(DEFAULT_ALPHAS if self.alphas is None else self.alphas)
        return {
            "bandwidth": self.bandwidth,
            "alphas": alphas,
            "eta": self.eta,
            "eps": param(self, "penalty_exponent"),
            "maxiter": param(self, "max_iter"),
            "ftol": param(self, "tol"),
        }
