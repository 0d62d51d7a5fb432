"""Divisive clustering by recursive bi-partition: MDHClustering (PPCI's mddc), PDDP and DePDDP."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import numbers

import numpy as np

from .._warnings import warn
from ..backend import InMemoryData
from ..backend.cluster_summary import ClusterSummary
from ..backend.memory import merge_near_copies
from ..backend.workers import task_slots
from ..growth.grower import Growth, GrowthRules, History, grow
from ..growth.hyperplane_splitter import HyperplaneSplitter
from ..indices import DEFAULT_ALPHAS
from ..pursuit import Hyperplane
from ..pursuit.significance import SplitTest
from ..tree import ClusterTree
from ._fit import TreeClustering, summary_clause
from ._params import DIVISIVE_DEFAULTS, MDH_INDEX_DEFAULTS, init_with, max_node_bytes, scale_out, with_scale_out_doc
from ._validation import check_bandwidth, check_mdh_params, check_n_clusters_auto, single_threaded_blas
from .hyperplane import FramedGrowth, sample_in_frame
from .progress import progress_bar


class _DivisiveClustering(FramedGrowth, TreeClustering):
    """Grow a ClusterTree by repeatedly splitting the leaf with the largest split index
    (:func:`lowdens_dask.growth.grower.grow`).

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
    _updatable = True
    _predict_dtype = [np.float64, np.float32]  # float32 routed as it is

    def _index_params(self) -> dict:
        raise NotImplementedError

    def _check_params(self) -> None:
        name = type(self).__name__
        check_n_clusters_auto(self)
        if not (callable(self.split_index) or index_name(self.split_index) in self._split_indices):
            names = (*self._split_indices, *(f"{index}{ALONE}" for index in self._split_indices))
            raise ValueError(f"{name}: split_index must be one of {names} or a callable; got {self.split_index!r}.")
        if not (isinstance(self.min_size, numbers.Real) and self.min_size > 0):
            raise ValueError(f"{name}: min_size must be a positive number; got {self.min_size!r}.")
        size = self.min_cluster_size
        if not (isinstance(size, numbers.Real) and not isinstance(size, bool) and 0 <= size and np.isfinite(size)):
            raise ValueError(
                f"{name}: min_cluster_size must be a share of the rows in [0, 1) or a number of rows >= 1; got {size!r}."
            )
        if not isinstance(self.force_n_clusters, (bool, np.bool_)):
            raise ValueError(f"{name}: force_n_clusters must be True or False; got {self.force_n_clusters!r}.")

    # ------------------------------------------------------------------ growing
    def _grow(self, data, frame, parallel: int, refine) -> Growth:
        """Grow a one-leaf tree on ``data`` (in ``frame``): :func:`~lowdens_dask.growth.grower.grow`."""
        rules = self._rules()
        splitter = self._splitter(frame, rules.test, data, parallel=parallel, refine=refine)
        tree = ClusterTree(data.n_features, self._method, self._tree_params(), root_size=data.total_weight)
        rows = data if data.chunked else None if refine is None else refine.rows
        passes = None if rows is None else (lambda: rows.counter.total)
        bar = progress_bar(type(self).__name__, rules.n_clusters, passes, draw=rows is not None)
        try:
            return grow(tree, data, splitter, rules, progress=bar)
        finally:
            if bar is not None:
                bar.close()

    def _grow_update(self, summary: ClusterSummary, old_weights: np.ndarray) -> Growth:
        """Grow ``tree_`` on the merged summary by the rules of a fit (:meth:`_rules`)."""
        frame, Z, spread = self._in_frame(summary.means, summary.weights, summary.spread)
        # rows seen again, or nearly (a batch that repeats the fitted rows), are tested once, as a fit tests them
        rows, weights, _ = merge_near_copies(summary.sample, summary.sample_row_weights())
        sample = sample_in_frame(rows, frame, weights)
        points = InMemoryData(Z, summary.weights, spread, sample=sample)
        rules = self._rules()
        splitter = self._splitter(frame, rules.test, points, parallel=task_slots(), original=summary.means)
        history = History(summary.means, np.asarray(summary.spread, dtype=np.float64), old_weights, rows)
        with single_threaded_blas():
            return grow(self.tree_, points, splitter, rules, history=history)

    def _target(self):
        """(leaves to grow to, the held-out test of n_clusters="auto" or None)."""
        return growth_target(self)

    def _rules(self) -> GrowthRules:
        """How the tree grows, in :meth:`fit` and :meth:`partial_fit` alike."""
        target, test = self._target()
        told = isinstance(self.n_clusters, numbers.Integral)
        return GrowthRules(
            target,
            self._leaf_order,
            lazy=index_name(self.split_index) == "size",
            force=bool(self.force_n_clusters) and told,
            merge=not told,
            test=test,
        )

    def _splitter(self, frame, test, data, *, parallel=0, refine=None, original=None):
        return HyperplaneSplitter(
            self._method, self._index_params(), self._least_side(data.total_weight), frame, test, parallel=parallel,
            refine=refine, max_node_bytes=max_node_bytes(self) if data.chunked else 0.0,
            least_cluster=self._least_cluster(data.total_weight),
        )  # fmt: skip

    def _least_cluster(self, total: float) -> float:
        """The least weight of a cluster: ``min_size``, and ``min_cluster_size`` (a share of the ``total`` rows
        fitted, or a number of rows). A split must be substantial as well as significant, so that a large sample
        keeps the clusters of the population it was drawn from, not the clumps of its rows, which a consistent test
        resolves at any size; far rows in groups lighter than this are no cluster (the splitter sets them aside)."""
        size = self.min_cluster_size
        return max(self.min_size, size * total if size < 1 else size)

    def _least_side(self, total: float) -> float:
        """The least weight each side of a split holds: with ``n_clusters="auto"`` :meth:`_least_cluster`, else
        ``min_size`` (a told K ranks the substantial splits first: :func:`~lowdens_dask.growth.grower.grow`)."""
        if not (isinstance(self.n_clusters, str) and self.n_clusters == "auto"):
            return self.min_size
        return self._least_cluster(total)

    def _tree_params(self) -> dict:
        """The parameters the tree records."""
        return {**self._index_params(), "min_size": self.min_size}

    def _leaf_order(self, node, data, hp: Hyperplane | None) -> float:
        if callable(self.split_index):
            return float(self.split_index(data.X, hp))
        return self._split_indices[index_name(self.split_index)](node, data, hp)

    def _fitted_attributes(self, growth) -> dict:
        """No attributes of its own; the warnings of a growth that fell short of ``n_clusters``."""
        if growth.n_forced:
            warn(
                f"{growth.n_forced} of the {growth.n_leaves - 1} splits were forced to reach n_clusters="
                f"{self.n_clusters}: no leaf had a valid {self._method} split (they are marked forced in tree_; "
                "force_n_clusters=False stops at the last valid split)."
            )
        if isinstance(self.n_clusters, numbers.Integral) and growth.n_leaves < self.n_clusters:
            warn(
                f"Only {growth.n_leaves} clusters could be formed (n_clusters={self.n_clusters}): no remaining leaf "
                + ("can be split further." if self.force_n_clusters else f"has a valid {self._method} split.")
                + summary_clause(growth)
            )
        return {}


#: A ``split_index`` name with this suffix orders the leaves by that index alone, as PPCI does (``"size-only"`` is
#: ``mddc``'s order), not significant splits first.
ALONE = "-only"


def index_name(split_index) -> str | None:
    """The name of the split index ``split_index`` names (without :data:`ALONE`); None for a callable."""
    return split_index.removesuffix(ALONE) if isinstance(split_index, str) else None


def growth_target(est) -> tuple[int | None, SplitTest | None]:
    """The number of leaves to grow to (None: while a valid split exists) and the test of a split (its seed from
    ``random_state``, 0 when None): for ``n_clusters="auto"`` the test each split must pass; for an integer
    ``n_clusters`` the test that ranks the leaves, significant splits first (the one split decision of both: a fit
    told the K that ``"auto"`` finds makes ``"auto"``'s splits), unless ``split_index`` ends in :data:`ALONE` or is
    a callable (the user's own order)."""
    seed = int(est.random_state) if isinstance(est.random_state, numbers.Integral) else 0
    test = SplitTest(float(est.significance_level), seed)
    if isinstance(est.n_clusters, str):  # "auto"
        return est.max_clusters, test
    if est.n_clusters is None:
        return est.max_clusters, None
    alone = index_name(est.split_index) != est.split_index  # "<name>-only", or a callable: the user's order
    return est.n_clusters, None if alone else test._replace(required=False)


def _size(node, data, hp) -> float:
    return node.size


def _lowest_density(node, data, hp) -> float:
    return 1.0 / hp.fval if hp.fval > 0 else math.inf


def _relative_depth(node, data, hp) -> float:
    return hp.relative_depth


def _scatter(node, data, hp) -> float:
    return data.total_scatter()


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
    split_index : {"size", "fval", "rdepth"}, their "-only" forms, or callable, default="size"
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
    bandwidth, alphas, v0, eta, eps, maxiter, ftol, standardize
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
    n_evaluations_ : int
        Objective evaluations of every split computed.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
    """

    _method = "mdh"
    _split_indices = {"size": _size, "fval": _lowest_density, "rdepth": _relative_depth}

    __init__ = init_with(
        {"n_clusters": 8},
        {"split_index": "size", **DIVISIVE_DEFAULTS, **MDH_INDEX_DEFAULTS, "standardize": False, **scale_out()},
    )

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
    split_index : {"scatter", "size"}, their "-only" forms, or callable, default="scatter"
        Boley's rule splits the leaf with the largest scatter (sum of squared distances to its mean); significant
        splits first, as for :class:`~lowdens_dask.MDHClustering`.
    min_size : float, default=1
    min_cluster_size : float, default=0.005
        As for :class:`~lowdens_dask.MDHClustering`.
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

    __init__ = init_with(
        {"n_clusters": 8}, {"split_index": "scatter", **DIVISIVE_DEFAULTS, "standardize": False, **scale_out("refine")}
    )

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
    split_index : {"fval", "size"}, their "-only" forms, or callable, default="fval"
        "fval" splits the leaf whose minimum has the lowest density (the dePDDP rule); significant splits first, as
        for :class:`~lowdens_dask.MDHClustering` ("fval-only": the rule alone).
    bandwidth : None, "silverman", float or callable, default=None
        As for :class:`~lowdens_dask.MDH` (a number lies in [1e-100, 1e100]).
    min_size : float, default=1
    min_cluster_size : float, default=0.005
        As for :class:`~lowdens_dask.MDHClustering`.
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

    __init__ = init_with(
        {"n_clusters": 8},
        {"split_index": "fval", "bandwidth": None, **DIVISIVE_DEFAULTS, "standardize": False, **scale_out("refine")},
    )

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
    split_index : {"gap", "size"}, their "-only" forms, or callable, default="gap"
        "gap" splits the leaf with the widest gap (HiPart's rule), "size" the largest leaf; significant splits
        first, as for :class:`~lowdens_dask.MDHClustering`.
    percentile : float, default=0.1
        Fraction of the points (total weight) on each side of the projection that no split may cut off.
    min_size : float, default=1
    min_cluster_size : float, default=0.005
        As for :class:`~lowdens_dask.MDHClustering`.
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

    __init__ = init_with(
        {"n_clusters": 8},
        {"split_index": "gap", "percentile": 0.1, **DIVISIVE_DEFAULTS, "standardize": False, **scale_out("refine")},
    )

    def _check_params(self) -> None:
        super()._check_params()
        if not (isinstance(self.percentile, numbers.Real) and 0 <= self.percentile < 0.5):
            raise ValueError(f"IPDDP: percentile must lie in [0, 0.5); got {self.percentile!r}.")

    def _index_params(self) -> dict:
        return {"percentile": self.percentile}
