"""Divisive clustering by recursive bi-partition: MDHClustering (PPCI's mddc), PDDP and DePDDP."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted

from .._warnings import warn
from ..backend import InMemoryData, as_dask_array
from ..backend.cluster_summary import ClusterSummary
from ..indices import DEFAULT_ALPHAS
from ..pursuit import Hyperplane
from ..pursuit.significance import SplitTest
from ..backend.chunked import task_slots
from ..tree import ClusterTree
from ..tree.grower import GrowthRules, History, grow
from ..tree.hyperplanes import HyperplaneSplitter
from ._base import TreeFitMixin
from ._progress import progress_bar
from ._scale_out import (
    check_n_features,
    check_scale_out_params,
    fit_exact_chunked,
    fit_in_summary_mode,
    is_chunked_input,
    max_node_bytes,
    route_rows,
    summary_of_rows,
    update_in_summary_mode,
    use_summary_mode,
)
from ._validation import (
    check_bandwidth,
    check_fit_rows,
    check_mdh_params,
    check_n_clusters_auto,
    labels_with_skipped,
    predict_rows,
    single_threaded_blas,
)


class _DivisiveClustering(TreeFitMixin, ClusterMixin, BaseEstimator):
    """Grow a ClusterTree by repeatedly splitting the leaf with the largest split index
    (:func:`lowdens_dask.tree.grower.grow`).

    Each node is re-centred and its split (PCs, bandwidth or scale) recomputed from its own rows. A leaf
    whose split is not valid is split only by ``force_n_clusters``. With ``split_index="size"`` a leaf's
    split is computed only when it is the largest splittable leaf, which gives the same tree as computing
    every leaf eagerly.

    ``labels_`` is a numpy array for in-memory input, and a Dask array for Dask or zarr input (backed by
    ``labels_store`` when given), as in dask-ml. ``tree_`` is the fitted tree itself: editing it (prune,
    split) changes what ``predict`` returns, while ``labels_`` and ``n_clusters_`` keep describing the fit
    (recompute them with ``tree_.predict(X)`` and ``tree_.n_leaves``).
    """

    _method: str
    #: Split indices by name: ``(node, data, hyperplane) -> number``, larger first.
    _split_indices: dict

    def _index_params(self) -> dict:
        raise NotImplementedError

    def _check_params(self) -> None:
        name = type(self).__name__
        check_n_clusters_auto(self)
        if not (callable(self.split_index) or self.split_index in self._split_indices):
            raise ValueError(
                f"{name}: split_index must be one of {tuple(self._split_indices)} or a callable; "
                f"got {self.split_index!r}."
            )
        if not (isinstance(self.min_size, numbers.Real) and self.min_size > 0):
            raise ValueError(f"{name}: min_size must be a positive number; got {self.min_size!r}.")
        if not isinstance(self.force_n_clusters, (bool, np.bool_)):
            raise ValueError(f"{name}: force_n_clusters must be True or False; got {self.force_n_clusters!r}.")

    def fit(self, X, y=None, sample_weight=None):
        """Grow the tree on X; ``labels_`` are the leaves' labels (tree order).

        X may be an array, a Dask array or a zarr store; see ``mode`` and
        :mod:`lowdens_dask.estimators._scale_out` for the summary and exact modes of the latter two. A fit
        forgets earlier fits and updates; in summary mode it keeps the summary (``summary_``) that
        :meth:`partial_fit` updates.
        """
        self._check_params()
        check_scale_out_params(self)
        for name in ("summary_", "update_report_", "_rows_fitted"):
            self.__dict__.pop(name, None)
        if use_summary_mode(self, X):
            return fit_in_summary_mode(self, X, sample_weight, self._fit_rows, self._route)
        if is_chunked_input(X):
            fit_exact_chunked(self, X, sample_weight, self._fit_node, self._route, self._fit_rows)
            self._rows_fitted = (X, None)  # summarised when the first update comes
            return self
        X, weights, finite = check_fit_rows(self, X, sample_weight)
        self._fit_rows(X, weights)
        self._rows_fitted = (X, None if sample_weight is None else weights)
        self.labels_ = labels_with_skipped(self.tree_.predict(X), finite)
        self.n_nonfinite_ = 0 if finite is None else int((~finite).sum())
        self.n_passes_ = self.n_evaluation_passes_ = 0  # the rows are in memory
        return self

    def partial_fit(self, X, y=None, sample_weight=None):
        """Update the clustering with new rows X (an array, a Dask array or a zarr store), in summary mode.

        The first call fits X in summary mode (whatever ``mode`` says). Each later call summarises only X's rows
        (one pass), merges them into ``summary_`` (with ``decay``, the rows seen before keep ``1 - decay`` of
        their weight) and updates ``tree_`` on the merged summary (:mod:`lowdens_dask.tree.grower` has the
        rules): each split is re-pursued from its hyperplane, and kept as it is while it still lies in low density
        and, for ``n_clusters="auto"``, is still significant on held-out microclusters; with ``"auto"`` (or None)
        a split that is no longer significant (valid) is merged back and a leaf whose best split has become
        significant is split; with an integer ``n_clusters`` only the hyperplanes move. Cluster ids are
        stable: an unchanged leaf keeps its id, a split leaf's id goes to the child with most of its old
        weight, a merged leaf takes the id of its largest leaf, and ids are never reused, so ids need not be
        0..K-1. ``labels_`` are X's ids (as ``predict(X)``), ``update_report_`` says what changed, and
        ``tree_.update`` counts the updates (each node records ``created`` and ``changed``).

        After :meth:`fit` in memory or in exact mode, the first update summarises the rows the fit saw (one pass, as
        summary mode would: :func:`~lowdens_dask.estimators.build_summary`) and updates the fitted tree. The fit
        holds a reference to those rows until then (not pickled: an estimator unpickled before its first update
        starts afresh, with a warning). Splits are found, judged and made by the rules of :meth:`fit`:
        ``split_index``, ``force_n_clusters``, ``max_clusters`` and ``n_clusters`` (an integer: the tree grows, or
        merges back its latest splits, to that many leaves). ``sample_weight`` is not supported (the summary's
        microclusters carry the row counts).
        """
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported by partial_fit (the summary carries the weights).")
        self._check_params()
        check_scale_out_params(self)
        if hasattr(self, "tree_"):
            check_n_features(self, X)
        if hasattr(self, "tree_") and not hasattr(self, "summary_") and hasattr(self, "_rows_fitted"):
            self.summary_ = summary_of_rows(self, *self._rows_fitted)
            del self._rows_fitted
        if hasattr(self, "summary_"):
            return update_in_summary_mode(self, X, self._update_tree, self._route)
        if hasattr(self, "tree_"):
            warn(
                f"This {type(self).__name__} has no summary of the rows it was fitted on (it was unpickled, or its "
                "summary_ deleted), which an update needs, so partial_fit starts a new fit from X (set summary_ = "
                "build_summary(estimator, X_fitted) before partial_fit to update the fit instead)."
            )
        fit_in_summary_mode(self, X, None, self._fit_rows, self._route)
        self.tree_.stabilise_labels()
        self.update_report_ = {
            "update": 0,
            "n_rows": self.summary_.n_rows,
            "decay": getattr(self, "decay", None),
            "n_clusters_before": 0,
            "n_clusters": self.n_clusters_,
            "nodes": [],
            "leaves": [],
            "drift": None,
        }
        return self

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_rows_fitted", None)  # the rows of an in-memory or exact fit stay with the user
        return state

    def _update_tree(self, summary: ClusterSummary, old_weights: np.ndarray) -> dict:
        """Update ``tree_`` to the merged summary: :func:`~lowdens_dask.tree.grower.grow` from the fitted tree, by
        the rules of a fit (:meth:`_rules`)."""
        frame, Z, spread = self._in_frame(summary.means, summary.weights, summary.spread)
        points = InMemoryData(Z, summary.weights, spread)
        rules = self._rules()
        splitter = self._splitter(frame, rules.test, points, parallel=task_slots(), original=summary.means)
        history = History(summary.means, np.asarray(summary.spread, dtype=np.float64), old_weights)
        with single_threaded_blas():
            growth = grow(self.tree_, points, splitter, rules, history=history)
        self._set_growth(growth)
        return growth.report

    def _target(self):
        """(leaves to grow to, the held-out test of n_clusters="auto" or None)."""
        return growth_target(self)

    def _rules(self) -> GrowthRules:
        """How the tree grows, in :meth:`fit` and :meth:`partial_fit` alike."""
        target, test = self._target()
        n_clusters = getattr(self, "n_clusters", 2)  # the one-split SCPP and LMSC: 2
        told = isinstance(n_clusters, numbers.Integral)
        return GrowthRules(
            target,
            self._rank,
            lazy=self.split_index == "size",
            force=bool(getattr(self, "force_n_clusters", False)) and told,
            merge=not told,
            test=test,
        )

    def _splitter(self, frame, test, data, *, parallel=0, refine=None, original=None):
        chunked = data.chunked
        return HyperplaneSplitter(
            self._method, self._index_params(), self.min_size, frame, test, parallel=parallel, refine=refine,
            max_node_bytes=max_node_bytes(self) if chunked else 0.0,
        )  # fmt: skip

    def _tree_params(self) -> dict:
        """The parameters the tree records."""
        return {**self._index_params(), "min_size": self.min_size}

    def _route(self, arr, out=None):
        return route_rows(self.tree_, arr, out)

    def _fit_data(self, data, frame, parallel: int, refine) -> None:
        """Grow a one-leaf tree on ``data`` (in ``frame``): :func:`~lowdens_dask.tree.grower.grow`."""
        rules = self._rules()
        splitter = self._splitter(frame, rules.test, data, parallel=parallel, refine=refine)
        tree = ClusterTree(data.n_features, self._method, self._tree_params(), root_size=data.total_weight)
        rows = data if data.chunked else None if refine is None else refine.rows
        passes = None if rows is None else (lambda: rows.counter.total)
        bar = progress_bar(type(self).__name__, rules.n_clusters, passes, draw=rows is not None)
        try:
            growth = grow(tree, data, splitter, rules, progress=bar)
        finally:
            if bar is not None:
                bar.close()
        self._set_growth(growth)

    def _set_growth(self, growth) -> None:
        """The fitted attributes of a grown tree, with the warnings of a growth that fell short of ``n_clusters``."""
        told = isinstance(self.n_clusters, numbers.Integral)
        if growth.n_forced:
            warn(
                f"{growth.n_forced} of the {growth.n_leaves - 1} splits were forced to reach n_clusters="
                f"{self.n_clusters}: no leaf had a valid {self._method} split (they are marked forced in tree_; "
                "force_n_clusters=False stops at the last valid split)."
            )
        if told and growth.n_leaves < self.n_clusters:
            warn(
                f"Only {growth.n_leaves} clusters could be formed (n_clusters={self.n_clusters}): no remaining leaf "
                + ("can be split further." if self.force_n_clusters else f"has a valid {self._method} split.")
            )
        self.tree_ = growth.tree
        self.n_clusters_ = growth.n_leaves
        self.n_evaluations_ = growth.n_evaluations

    def _rank(self, node, data, hp: Hyperplane | None) -> float:
        if callable(self.split_index):
            return float(self.split_index(data.X, hp))
        return self._split_indices[self.split_index](node, data, hp)

    def predict(self, X):
        """Route each row down the tree to its leaf's label (lazily, for Dask or zarr input)."""
        check_is_fitted(self)
        if is_chunked_input(X):
            return route_rows(self.tree_, as_dask_array(X, storage_options=self.storage_options))
        return predict_rows(self, X, self.tree_.predict, dtype=[np.float64, np.float32])  # float32 routed as it is


def growth_target(est) -> tuple[int | None, SplitTest | None]:
    """The number of leaves to grow to (None: while a valid split exists) and, for ``n_clusters="auto"``, the
    held-out test each split must pass (its halves drawn from ``random_state``, 0 when None)."""
    if isinstance(est.n_clusters, str):  # "auto"
        seed = int(est.random_state) if isinstance(est.random_state, numbers.Integral) else 0
        return est.max_clusters, SplitTest(float(est.significance_level), seed)
    if est.n_clusters is None:
        return est.max_clusters, None
    return est.n_clusters, None


def _size(node, data, hp) -> float:
    return node.size


def _lowest_density(node, data, hp) -> float:
    return 1.0 / hp.fval if hp.fval > 0 else math.inf


def _relative_depth(node, data, hp) -> float:
    return hp.relative_depth


def _scatter(node, data, hp) -> float:
    return data.total_scatter()


class MDHClustering(_DivisiveClustering):
    """Divisive clustering with minimum density hyperplanes (MDDC; PPCI's ``mddc``).

    Each split is an :class:`~lowdens_dask.MDH` fitted on the leaf's own rows (Pavlidis, Hofmeyr &
    Tasoulis, JMLR 2016; divisive use as in Hofmeyr & Pavlidis, R Journal 11(2), 2019).

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
        Number of leaves to grow. None splits until no leaf has a valid split (PPCI's ``mddc``). "auto" splits
        a leaf only while its split is significant against a one-cluster null: the split is found on a random
        half of the leaf's rows (microclusters in summary mode) and Hartigan's dip test of the other half's
        projections must reject unimodality at ``significance_level``
        (:mod:`lowdens_dask.pursuit.significance`); the split made is the one tested, and every node records
        its ``dip``, ``p_value`` and ``n_test`` in ``tree_`` (the leaves their would-be split's).
        Which leaf to split next: the largest, the one whose hyperplane has the lowest density, or the
        largest relative depth. A callable receives ``(X_leaf, hyperplane)`` and returns a number.
    min_size : float, default=1
        Each side of a split must hold at least this many points (total weight).
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
    bandwidth, alphas, v0, eta, eps, maxiter, ftol, standardize
        As for :class:`~lowdens_dask.MDH`, applied at every node.
    mode : {"auto", "exact", "summary"}, default="auto"
        "auto" fits in-memory arrays of up to 2 million rows exactly, and larger ones, Dask arrays
        and zarr stores in summary mode; "exact" fits every input exactly (Dask and zarr input by
        chunk-map and tree-reduce passes over the rows, with the in-memory result); "summary" forces
        summary mode (see :mod:`lowdens_dask.estimators._scale_out`). Small input, at most 256 rows
        (``SMALL_INPUT_ROWS``), is read into memory in one pass and fitted on its rows in every mode, with
        the tree and labels of the numpy array's fit (its summary would have too few microclusters to place
        a split); ``labels_`` is still a Dask array for Dask or zarr input. At least 2 finite rows are needed.
    rows_per_microcluster : float, default=20
        Summary mode: each chunk gets at most one microcluster per this many rows (and at most 64).
    max_microclusters : int or None, default=1024
        Summary mode: the summary's budget. Microclusters are merged on the workers, in the tree reduction
        that combines the chunks' summaries, down to at most this many (weighted k-means of their means, which
        keeps counts, means and spreads exact), so the tree's cost does not grow with the number of chunks.
        None keeps every chunk's microclusters.
    refine : int, default=0
        Summary mode: before each split is made, polish it with this many exact L-BFGS steps (each a few
        passes over the node's rows) from every start's summary hyperplane, and keep the start with the
        largest exact relative depth; node sizes then count rows. 0 keeps the summary hyperplanes.
    nonfinite : {"raise", "skip"}, default="raise"
        Rows with NaN/inf make the fit fail with their count, or are set aside and labelled -1
        (``n_nonfinite_`` counts them), for in-memory and chunked input alike.
    random_state : int or None, default=None
        Seeds the microcluster k-means.
    storage_options : dict, optional
        fsspec options for zarr paths/URLs (input and ``labels_store``).
    labels_store : str, optional
        Dask or zarr input: a zarr path/URL where the labels are written, chunk-aligned with the input.
    max_node_bytes : float or "auto", default="auto"
        Exact mode on Dask or zarr input: a node whose rows take at most this many bytes (as float64) is
        gathered to one worker and split there by the in-memory path (its restarts, and the two children of
        each split, as parallel tasks); larger nodes are split by passes over their chunks, two per objective
        evaluation. "auto": a quarter of the smallest worker's memory limit (of the machine's memory without
        a distributed client). 0 uses the passes everywhere.

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
    n_microclusters_ : int
        Summary mode only: size of the summary (the number of rows, for small input fitted on its rows).
    timings_ : dict
        Summary mode only: seconds spent in the summarising pass (``"summary_pass"``), growing the tree on the
        microclusters (``"tree"``) and labelling every row (``"label_pass"``; None while the labels of
        chunked input stay lazy, without ``labels_store``). After :meth:`partial_fit`: the update's (``"tree"``:
        updating the tree).
    summary_ : ClusterSummary
        Summary mode and :meth:`partial_fit`: the microclusters of every row seen, which updates merge into.
    update_report_ : dict
        After :meth:`partial_fit`: what the last update did (:mod:`lowdens_dask.tree.grower`): ``update``,
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
    n_evaluations_ : int
        Objective evaluations of every split computed.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
    """

    _method = "mdh"
    _split_indices = {"size": _size, "fval": _lowest_density, "rdepth": _relative_depth}

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        split_index: str | Callable = "size",
        min_size: float = 1,
        force_n_clusters: bool = True,
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        decay: float | None = None,
        bandwidth: float | str | Callable | None = None,
        alphas: Sequence[float] | None = None,
        v0: np.ndarray | Callable | None = None,
        eta: float = 1e-2,
        eps: float = 1.0 - 1e-6,
        maxiter: int = 50,
        ftol: float = 1e-5,
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
    ):
        self.n_clusters = n_clusters
        self.split_index = split_index
        self.min_size = min_size
        self.force_n_clusters = force_n_clusters
        self.max_clusters = max_clusters
        self.significance_level = significance_level
        self.decay = decay
        self.bandwidth = bandwidth
        self.refine = refine
        self.alphas = alphas
        self.v0 = v0
        self.eta = eta
        self.eps = eps
        self.maxiter = maxiter
        self.ftol = ftol
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.max_node_bytes = max_node_bytes

    def _check_params(self) -> None:
        super()._check_params()
        check_mdh_params(self)
        if self.v0 is not None and not callable(self.v0):
            raise ValueError(
                f"{type(self).__name__}: in divisive use v0 must be None or a callable of the node's data."
            )

    def _index_params(self) -> dict:
        return {
            "bandwidth": self.bandwidth,
            "alphas": tuple(DEFAULT_ALPHAS if self.alphas is None else self.alphas),
            "v0": self.v0,
            "eta": self.eta,
            "eps": self.eps,
            "maxiter": self.maxiter,
            "ftol": self.ftol,
        }


class PDDP(_DivisiveClustering):
    """Principal Direction Divisive Partitioning (Boley, Data Min. Knowl. Discov. 2(4), 1998).

    Each split projects the node onto its first principal component and cuts at the mean.
    ``n_clusters=2`` gives a single split.

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
    split_index : {"scatter", "size"} or callable, default="scatter"
        Boley's rule splits the leaf with the largest scatter (sum of squared distances to its mean).
    min_size : float, default=1
    force_n_clusters : bool, default=True
    max_clusters, significance_level, decay
        As for :class:`~lowdens_dask.MDHClustering`.
    standardize : bool, default=False
    mode, rows_per_microcluster, max_microclusters, nonfinite, random_state, storage_options, labels_store, max_node_bytes
        Exact and summary modes for large, Dask or zarr input; as for :class:`~lowdens_dask.MDHClustering`.

    Attributes
    ----------
    labels_, tree_, n_clusters_, n_microclusters_, n_nonfinite_
        As for :class:`~lowdens_dask.MDHClustering` (``labels_`` a Dask array for Dask or zarr input).
    """

    _method = "pddp"
    _split_indices = {"scatter": _scatter, "size": _size}

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        split_index: str | Callable = "scatter",
        min_size: float = 1,
        force_n_clusters: bool = True,
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        decay: float | None = None,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        max_node_bytes: float | str = "auto",
    ):
        self.n_clusters = n_clusters
        self.split_index = split_index
        self.min_size = min_size
        self.force_n_clusters = force_n_clusters
        self.max_clusters = max_clusters
        self.significance_level = significance_level
        self.decay = decay
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.max_node_bytes = max_node_bytes

    def _index_params(self) -> dict:
        return {}


class DePDDP(_DivisiveClustering):
    """Density-enhanced PDDP (Tasoulis, Tasoulis & Plagianakos, Pattern Recognit. 43(11), 2010).

    Each split projects the node onto its first principal component and cuts at the lowest local
    minimum of the projection's Gaussian KDE (bandwidth ``0.9 * sigma_pc1 * n**(-1/5)``); a leaf with a
    unimodal projection is not split.

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
    split_index : {"fval", "size"} or callable, default="fval"
        "fval" splits the leaf whose minimum has the lowest density (the dePDDP rule).
    bandwidth : None, "silverman", float or callable, default=None
        As for :class:`~lowdens_dask.MDH` (a number lies in [1e-100, 1e100]).
    min_size : float, default=1
    force_n_clusters : bool, default=True
        As for :class:`~lowdens_dask.MDHClustering`; a leaf with a unimodal projection is then split at
        its mean (PDDP's split).
    max_clusters, significance_level, decay
        As for :class:`~lowdens_dask.MDHClustering`.
    standardize : bool, default=False
    mode, rows_per_microcluster, max_microclusters, nonfinite, random_state, storage_options, labels_store, max_node_bytes
        Exact and summary modes for large, Dask or zarr input; as for :class:`~lowdens_dask.MDHClustering`.

    Attributes
    ----------
    labels_, tree_, n_clusters_, n_microclusters_, n_nonfinite_
        As for :class:`~lowdens_dask.MDHClustering` (``labels_`` a Dask array for Dask or zarr input).
    """

    _method = "depddp"
    _split_indices = {"fval": _lowest_density, "size": _size}

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        split_index: str | Callable = "fval",
        bandwidth: float | str | Callable | None = None,
        min_size: float = 1,
        force_n_clusters: bool = True,
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        decay: float | None = None,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        max_node_bytes: float | str = "auto",
    ):
        self.n_clusters = n_clusters
        self.split_index = split_index
        self.bandwidth = bandwidth
        self.min_size = min_size
        self.force_n_clusters = force_n_clusters
        self.max_clusters = max_clusters
        self.significance_level = significance_level
        self.decay = decay
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.max_node_bytes = max_node_bytes

    def _check_params(self) -> None:
        super()._check_params()
        check_bandwidth(self)

    def _index_params(self) -> dict:
        return {"bandwidth": self.bandwidth}


def _widest_gap(node, data, hp) -> float:
    return hp.stats.get("gap", 0.0)  # no gap recorded: the leaf's rows are all identical


class IPDDP(_DivisiveClustering):
    """iPDDP: PDDP split in the largest gap (Tasoulis, Tasoulis & Plagianakos, Pattern Recognit. 43(11), 2010;
    as in HiPart's ``IPDDP``).

    Each split projects the node onto its first principal component and cuts at the midpoint of the
    widest gap between consecutive projections, ignoring the outer ``percentile`` of the points on each
    side.

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
    split_index : {"gap", "size"} or callable, default="gap"
        "gap" splits the leaf with the widest gap (HiPart's rule), "size" the largest leaf.
    percentile : float, default=0.1
        Fraction of the points (total weight) on each side of the projection that no split may cut off.
    min_size : float, default=1
    force_n_clusters : bool, default=True
    max_clusters, significance_level, decay
        As for :class:`~lowdens_dask.MDHClustering`.
    standardize : bool, default=False
    mode, rows_per_microcluster, max_microclusters, nonfinite, random_state, storage_options, labels_store, max_node_bytes
        Exact and summary modes for large, Dask or zarr input; as for :class:`~lowdens_dask.MDHClustering`.

    Attributes
    ----------
    labels_, tree_, n_clusters_, n_microclusters_, n_nonfinite_
        As for :class:`~lowdens_dask.MDHClustering` (``labels_`` a Dask array for Dask or zarr input).
    """

    _method = "ipddp"
    _split_indices = {"gap": _widest_gap, "size": _size}

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        split_index: str | Callable = "gap",
        percentile: float = 0.1,
        min_size: float = 1,
        force_n_clusters: bool = True,
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        decay: float | None = None,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        max_node_bytes: float | str = "auto",
    ):
        self.n_clusters = n_clusters
        self.split_index = split_index
        self.percentile = percentile
        self.min_size = min_size
        self.force_n_clusters = force_n_clusters
        self.max_clusters = max_clusters
        self.significance_level = significance_level
        self.decay = decay
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.max_node_bytes = max_node_bytes

    def _check_params(self) -> None:
        super()._check_params()
        if not (isinstance(self.percentile, numbers.Real) and 0 <= self.percentile < 0.5):
            raise ValueError(f"IPDDP: percentile must lie in [0, 0.5); got {self.percentile!r}.")

    def _index_params(self) -> dict:
        return {"percentile": self.percentile}
