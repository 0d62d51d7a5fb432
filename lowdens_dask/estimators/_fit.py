"""The one fit path of every tree estimator: :class:`TreeClustering`.

``fit`` validates the parameters, decides the mode (:func:`~lowdens_dask.estimators._params.choose_mode`, one rule
for every estimator), prepares the rows for it (in memory; the summarising pass of summary mode,
:mod:`~lowdens_dask.estimators._summary_pass`; a ``ChunkedNode`` of the chunked rows in exact mode; small chunked
input read into memory), grows the tree (the estimator's ``_grow_rows`` or ``_grow_chunked``: its splitter and rules
handed to :func:`~lowdens_dask.growth.grower.grow`), labels the rows (in memory, or by the label pass,
:mod:`~lowdens_dask.estimators._label_pass`) and sets the fitted attributes, here and nowhere else. ``partial_fit``
(estimators with ``_updatable``) merges a batch's summary into ``summary_`` and grows the fitted tree on it by the
same rules.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy
import time
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_array, check_is_fitted

from .._warnings import warn
from ..backend import as_dask_array
from ..backend.chunked import ChunkedNode
from ..backend.cluster_summary import ClusterSummary
from ..backend.passes import PassCounter
from ..backend.workers import check_worker_memory, chunk_bytes
from ..growth.drift import shares
from ..growth.grower import Growth, merge_unreached_leaves
from ..tree import ClusterTree, leaf_labels_from_json
from ._label_pass import store_labels
from ._params import (
    AUTO_SUMMARY_ROWS,
    check_n_features,
    choose_mode,
    is_chunked_input,
    param,
    seed_of,
    validate_params,
)
from ._summary_pass import (
    as_chunked,
    check_enough_rows,
    check_nonfinite,
    is_small_input,
    read_small_input,
    rows_summary,
    summarise,
    summary_of_rows,
)
from ._validation import check_fit_rows, chunked_weights, labels_with_skipped, predict_rows, reject_strings


def _clock() -> tuple[float, float]:
    """``(wall seconds, CPU seconds of this process)``: the steps' ``timings_`` and ``client_seconds_``."""
    return time.perf_counter(), time.process_time()


#: Fitted attributes a new fit forgets (the others are all set again).
_FORGOTTEN = ("summary_", "update_report_", "n_microclusters_", "timings_", "client_seconds_", "_rows_fitted")


def sample_shares(tree, old: ClusterSummary, new: ClusterSummary) -> dict:
    """Each leaf's share of the rows seen before and of the new rows, and the drift between them
    (:func:`~lowdens_dask.growth.drift.shares`), from the two summaries' samples of rows routed by ``tree`` (each
    holds every row up to its size): the same rows give the same shares, and the shares of the new rows are those of
    their labels. Microclusters, routed whole, straddle a hyperplane differently in each summary."""
    rows = np.concatenate([old.sample, new.sample])
    leaf_of = tree.apply(rows)
    points = {leaf.id: np.flatnonzero(leaf_of == leaf.id) for leaf in tree.leaves()}
    n_old, n_new = len(old.sample), len(new.sample)
    old_weights = np.concatenate([old.sample_row_weights(), np.zeros(n_new)])
    new_weights = np.concatenate([np.zeros(n_old), new.sample_row_weights()])
    return shares(tree, points, old_weights, new_weights)


def summary_clause(growth: Growth) -> str:
    """For the warning of a fit that fell short of an integer ``n_clusters``, in summary mode: how many
    microclusters the tree grew on, and the splits set aside because a side would hold no row
    (``Growth.n_unreached``); empty for a fit of rows."""
    if growth.n_microclusters is None:
        return ""
    aside = (
        f"; {growth.n_unreached} split(s) were set aside because a side would hold no row (its microclusters "
        "average rows of other clusters)"
        if growth.n_unreached
        else ""
    )
    return (
        f" Summary mode grew the tree on {growth.n_microclusters} microclusters{aside}: smaller "
        "rows_per_microcluster, larger chunks or mode='exact' can reach it."
    )


class Prepared(NamedTuple):
    """The rows of a fit, prepared for its mode (:meth:`TreeClustering._prepare`)."""

    rows: np.ndarray | None  #: rows in memory (in-memory input, or chunked input read into memory)
    weights: np.ndarray | None  #: their weights
    finite: np.ndarray | None  #: in-memory input with nonfinite="skip": the mask of the rows kept
    arr: object  #: the rows as chunks, to label (None for in-memory input)
    chunks: tuple | None  #: ``(whether the input was Dask or zarr, the chunks' weights from chunked_weights)``
    attributes: (
        dict  #: what the preparation knows (``n_features_in_``, ``n_nonfinite_``, ``summary_``, ``_rows_fitted``)
    )
    times: tuple  #: summary mode: the clock at the start and at the end of the summarising pass
    summary: object = None  #: summary mode: the summarising pass (``SummaryPass``)


def _can_update(est) -> bool:
    return est._updatable


#: Exact mode on chunked rows: a column whose standard deviation is at most this share of its mean's size is
#: constant (the mean of identical rows, summed over chunks, can differ from them in the last bits).
CONSTANT_RTOL = 64 * np.finfo(np.float64).eps


class TreeClustering(ClusterMixin, BaseEstimator):
    """Base of the tree estimators: :meth:`fit`, :meth:`partial_fit` and :meth:`predict` (module docstring).

    An estimator defines ``_method``, ``_check_params()``,
    ``_grow_rows(X, weights, spread, rows, sample, reach) -> Growth`` (points in memory: rows, or summary-mode
    microclusters with their per-dimension ``spread``, the summary's ``sample`` of rows, on which
    ``n_clusters="auto"`` tests splits, and the ``reach`` rows each leaf must keep; ``rows``, the chunked rows for
    ``refine``) and ``_grow_node(root) -> Growth`` (exact mode: a ``ChunkedNode``), and may define
    ``_fitted_attributes(growth)`` (its own attributes of the grown tree) and ``_labeller()`` (how rows are routed:
    ``(function, args, labels_nonfinite)``, by default the tree's leaves)."""

    _method: str
    #: ``choose_mode``'s rule: input above this many rows (or ``AUTO_MEMORY_VALUES`` values) goes to summary mode
    #: (None: never, whatever the values)
    _auto_summary_rows: int | None = AUTO_SUMMARY_ROWS
    #: ``choose_mode``'s rule: the mode of chunked input under mode="auto"
    _auto_chunked_mode = "summary"
    #: ``choose_mode``'s rule: whether summary mode takes ``sample_weight`` (else weighted rows stay in memory)
    _weights_in_summary = True
    #: ``choose_mode``'s rule: whether chunked input can be fitted exactly (else in summary mode)
    _exact_on_chunks = True
    #: whether :meth:`partial_fit` updates a fitted tree
    _updatable = False
    #: dtypes ``predict`` routes in-memory rows in (scikit-learn's ``check_array``: a list keeps X's dtype in it)
    _predict_dtype: object = np.float64

    # ------------------------------------------------------------------ pickling and copying
    def __getstate__(self) -> dict:
        """The pickled state: a copy of the attributes without the rows of an in-memory or exact fit, which stay
        with the user (an estimator unpickled before its first update starts afresh). A copy, because scikit-learn's
        ``BaseEstimator.__getstate__`` returns ``self.__dict__`` itself on Python 3.11: removing from it removed the
        live estimator's rows, and its next update discarded the fitted tree."""
        state = dict(super().__getstate__())
        state.pop("_rows_fitted", None)
        return state

    def __copy__(self) -> TreeClustering:
        """A shallow copy: every attribute shared, the fitted rows included, so that the copy's next update continues
        the fitted tree (``copy.copy`` would otherwise go through :meth:`__getstate__`, which leaves the rows out)."""
        copied = type(self).__new__(type(self))
        copied.__dict__.update(self.__dict__)
        return copied

    def __deepcopy__(self, memo: dict) -> TreeClustering:
        """A deep copy of every attribute but the fitted rows, which the copy references as the estimator does
        (they are the user's, never written), so that the copy's next update continues the fitted tree too."""
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        for name, value in self.__dict__.items():
            copied.__dict__[name] = value if name == "_rows_fitted" else copy.deepcopy(value, memo)
        return copied

    # ------------------------------------------------------------------ the estimator's part
    def _check_params(self) -> None:
        """What the estimator's ``_parameter_constraints`` cannot say (a rule between parameters); none by default."""

    def _grow_rows(
        self, X: np.ndarray, weights: np.ndarray, spread: np.ndarray | None = None, rows=None, sample=None, reach=None
    ) -> Growth:
        raise NotImplementedError

    def _grow_node(self, root: ChunkedNode) -> Growth:
        raise NotImplementedError

    def _grow_chunked(self, arr, chunk_weights: tuple | None = None) -> tuple[Growth, int, PassCounter]:
        """Exact mode on chunked rows (with their ``chunk_weights``, from ``chunked_weights``): ``(growth, rows set aside for NaN/inf, the passes)``."""
        root = ChunkedNode(arr, weights=None if chunk_weights is None else chunk_weights[0])
        check_nonfinite(self, root.n_nonfinite, arr.shape[0])
        check_enough_rows(root.n_samples, arr.shape[0])
        spread = np.sqrt(np.diag(root.scatter_matrix()) / root.total_weight)  # the pass the growth needs first
        if np.all(spread <= CONSTANT_RTOL * np.abs(root.mean())):  # every row the same point, up to rounding
            raise ValueError("Every feature of X is constant; there is no direction to split along.")
        return self._grow_node(root), root.n_nonfinite, root.counter

    def _check_chunked(self) -> None:
        """What exact mode on chunked input cannot do, refused before any pass."""
        for name in ("bandwidth", "v0", "leaf_order"):
            if hasattr(self, name) and callable(param(self, name)):
                raise ValueError(
                    f"A callable {name} needs the rows in memory; exact mode on chunked input does not support it."
                )

    def _fitted_attributes(self, growth: Growth) -> dict:
        return {}

    def _labeller(self, fitted: dict) -> tuple:
        """How the fitted model (``fitted``: its attributes) routes chunks of rows: ``(function, args,
        labels_nonfinite)`` for :func:`~lowdens_dask.estimators._label_pass.store_labels`; by default the tree's
        leaves."""
        return leaf_labels_from_json, (fitted["tree_"].to_json(),), True

    def _route_rows(self, X: np.ndarray, fitted: dict) -> np.ndarray:
        """The labels the fitted model (``fitted``: its attributes) gives rows in memory."""
        return fitted["tree_"].predict(X)

    def _predict_rows(self, X: np.ndarray) -> np.ndarray:
        return self._route_rows(X, vars(self))

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None, sample_weight=None):
        """Grow the tree on X (an array, a Dask array or a zarr store; ``mode`` says how); ``labels_`` are the
        leaves' labels. A fit forgets earlier fits and updates.

        As scikit-learn's ``BisectingKMeans.fit`` reads: validate, prepare the rows for the mode, grow, label, and
        set every fitted attribute at the end, in one place (:meth:`_set_fitted`)."""
        validate_params(self)
        mode, reason = choose_mode(self, X, sample_weight)
        prepared = self._prepare(X, sample_weight, mode)
        growth, grown, passes = self._grow_prepared(prepared)
        fitted = {**prepared.attributes, **grown, **self._model(growth), "fit_mode_": mode, "fit_mode_reason_": reason}
        self._set_fitted({**fitted, **self._labels(prepared, fitted, passes)})
        return self

    def _prepare(self, X, sample_weight, mode: str) -> Prepared:
        """The rows of a fit in the form its mode grows on (:class:`Prepared`): in-memory rows validated; chunked
        input (and in-memory input in summary mode, cut into chunks) read into memory where small or where
        ``mode="auto"`` keeps it in memory, else summarised in one pass (summary mode) or left in its chunks
        (exact mode). ``sample_weight`` (frequencies, one per row: numpy, Dask or zarr) goes with the rows."""
        chunked = is_chunked_input(X)
        if mode == "memory" and not chunked:
            rows, weights, finite = check_fit_rows(self, X, sample_weight)
            kept = self._kept((rows, None if sample_weight is None else weights))
            n_nonfinite = 0 if finite is None else int((~finite).sum())
            return Prepared(rows, weights, finite, None, None, {"n_nonfinite_": n_nonfinite, **kept}, ())
        if mode == "exact":
            self._check_chunked()
        start = _clock()
        arr = (
            as_chunked(self, X, sample_weight)
            if mode == "summary"
            else as_dask_array(X, storage_options=self.storage_options)
        )
        weights = None if sample_weight is None else chunked_weights(sample_weight, arr)
        if weights is not None and getattr(self, "refine", 0) and mode == "summary":
            raise ValueError(
                f"sample_weight with refine={self.refine}: the refining passes over the rows count each row once; "
                "set refine=0, or fit the rows in memory."
            )
        check_worker_memory(chunk_bytes(arr))
        attributes = {"n_features_in_": arr.shape[1], **self._kept((X, sample_weight) if mode != "summary" else None)}
        if is_small_input(arr) or mode == "memory":
            rows, row_weights, attributes["n_nonfinite_"] = read_small_input(self, arr, weights=weights)
            if mode == "summary":
                attributes.update(n_microclusters_=rows.shape[0], summary_=rows_summary(rows, row_weights, len(arr)))
            elif not np.all(row_weights == 1):
                attributes.update(self._kept((rows, row_weights)))  # weighted rows read into memory: updates start here
            times = (start, _clock()) if mode == "summary" else ()
            return Prepared(rows, row_weights, None, arr, (chunked, weights), attributes, times)
        if mode == "exact":
            return Prepared(None, None, None, arr, (chunked, weights), attributes, ())
        done = summarise(self, arr, seed_of(self.random_state), weights=weights)
        summary = done.summary
        attributes.update(n_microclusters_=summary.n_microclusters, n_nonfinite_=done.n_nonfinite, summary_=summary)
        return Prepared(None, None, None, arr, (chunked, weights), attributes, (start, _clock()), done)

    def _kept(self, rows) -> dict:
        """The rows a fit keeps a reference to, for the first update to summarise (estimators with updates)."""
        return {"_rows_fitted": rows} if self._updatable and rows is not None else {}

    def _grow_prepared(self, prepared: Prepared) -> tuple[Growth, dict, PassCounter | None]:
        """Grow the tree on the prepared rows: in memory, on the summary's microclusters (then undo the splits no row
        reaches), or by passes over the chunks (exact mode). Returns the growth, what it adds to the fitted
        attributes, and the passes it made over the rows (None: none)."""
        if prepared.rows is not None:
            return self._grow_rows(prepared.rows, prepared.weights), {}, None
        done = prepared.summary
        if done is None:  # exact mode
            growth, n_nonfinite, counter = self._grow_chunked(prepared.arr, prepared.chunks[1])
            return growth, {"n_nonfinite_": n_nonfinite}, counter
        summary = done.summary
        rows = ChunkedNode(prepared.arr) if getattr(self, "refine", 0) else None
        growth = self._grow_rows(
            summary.means, summary.weights, summary.spread, rows, summary.sample, done.representatives
        )._replace(n_microclusters=summary.n_microclusters)
        merge_unreached_leaves(growth.tree, done.representatives)
        return growth, {}, None if rows is None else rows.counter

    def _model(self, growth: Growth) -> dict:
        """The fitted model's attributes of a grown (or updated) tree, with the estimator's own
        (``_fitted_attributes``)."""
        model = {"tree_": growth.tree, "n_clusters_": growth.tree.n_leaves, "n_evaluations_": growth.n_evaluations}
        if "max_iter" in self._get_param_names():  # scikit-learn's name for it in estimators with max_iter
            model["n_iter_"] = growth.n_evaluations
        return {**model, **self._fitted_attributes(growth)}

    def _labels(self, prepared: Prepared, fitted: dict, passes: PassCounter | None = None) -> dict:
        """The last step of a fit: every row labelled by the fitted model (:meth:`_labeller`), in memory, or by the
        label pass for chunked input (:meth:`_label_chunks`)."""
        if prepared.arr is None:
            labels = labels_with_skipped(self._route_rows(prepared.rows, fitted), prepared.finite)
            return {"labels_": labels, "n_passes_": 0, "n_evaluation_passes_": 0}  # the rows are in memory
        times = (*prepared.times, _clock()) if prepared.times else None
        read = 0 if prepared.summary is None and prepared.rows is None else 1  # exact mode's counter has its passes
        return self._label_chunks(prepared.arr, prepared.chunks[0], fitted, times, passes, read)

    def _set_fitted(self, fitted: dict, forget: bool = True) -> None:
        """Set the fitted attributes: the one place they are set, at the end of a fit (which first forgets what an
        earlier fit or update set and this one does not: ``forget``) or an update."""
        if forget:
            for name in _FORGOTTEN:
                self.__dict__.pop(name, None)
        self.__dict__.update(fitted)

    def _label_chunks(self, arr, chunked: bool, fitted: dict, times=None, counter=None, read: int = 1) -> dict:
        """Every row of ``arr`` routed to ``labels_`` (lazy, or written to ``labels_store``, for chunked input;
        computed for in-memory input cut into chunks), ``timings_`` from ``times`` (the starts of the summarising
        pass, the tree and the label pass; summary mode) and the passes (``counter``'s, with ``read`` passes that read
        or summarised the rows, and the labels written, added)."""
        labels_store = getattr(self, "labels_store", None)
        largest = max(1, *fitted["tree_"].leaf_labels().values())  # the sides of one hyperplane are 0 and 1
        path = labels_store if chunked else None
        labels = store_labels(arr, self._labeller(fitted), path, self.storage_options, largest)
        out = {"labels_": labels if chunked else labels.compute()}
        if times is not None:
            start, summarised, grown = times
            done = _clock() if not chunked or labels_store is not None else None
            steps = {"summary_pass": (start, summarised), "tree": (summarised, grown), "label_pass": (grown, done)}
            out["timings_"] = {name: None if b is None else b[0] - a[0] for name, (a, b) in steps.items()}
            out["client_seconds_"] = {name: None if b is None else b[1] - a[1] for name, (a, b) in steps.items()}
        counter = PassCounter() if counter is None else counter
        counter.add(read + (labels_store is not None and chunked))
        return {**out, "n_passes_": counter.total, "n_evaluation_passes_": counter.evaluation}

    # ------------------------------------------------------------------ update
    @available_if(_can_update)
    def resume(self, tree: ClusterTree, summary: ClusterSummary):
        """Start from a stored tree and the summary of the rows it has seen (a run's ``tree.json`` and summary, or
        another estimator's ``tree_`` and :meth:`summary`): the next :meth:`partial_fit` updates them. The tree is
        used as it is (not copied), as ``tree_`` is. Returns the estimator."""
        if summary.n_features != tree.n_features:
            raise ValueError(
                f"The summary has {summary.n_features} features and the tree {tree.n_features}; they must match."
            )
        for name in _FORGOTTEN:
            self.__dict__.pop(name, None)
        self.tree_, self.summary_ = tree, summary
        self.n_features_in_, self.n_clusters_ = tree.n_features, tree.n_leaves
        self.n_microclusters_ = summary.n_microclusters
        return self

    @classmethod
    def from_tree(cls, tree: ClusterTree, summary: ClusterSummary, **params):
        """``cls(**params).resume(tree, summary)``: an estimator whose next :meth:`partial_fit` updates ``tree``."""
        return cls(**params).resume(tree, summary)

    @available_if(_can_update)
    def summary(self) -> ClusterSummary:
        """The summary an update merges into: ``summary_`` (summary mode, updates and :meth:`resume`), or, after a fit
        in memory or in exact mode, the summary of the rows the fit saw, built once (one pass) and kept as
        ``summary_``."""
        check_is_fitted(self)
        if not hasattr(self, "summary_") and hasattr(self, "_rows_fitted"):
            self.summary_ = summary_of_rows(self, *self._rows_fitted)
            del self._rows_fitted
        if not hasattr(self, "summary_"):
            raise AttributeError(
                f"This {type(self).__name__} keeps no summary of the rows it was fitted on (it was unpickled before "
                "its first update); fit it again, or set summary_ = build_summary(estimator, X_fitted)."
            )
        return self.summary_

    @available_if(_can_update)
    def partial_fit(self, X, y=None, sample_weight=None):
        """Update the clustering with new rows X (an array, a Dask array or a zarr store), in summary mode.

        The first call fits X in summary mode (whatever ``mode`` says). Each later call summarises only X's rows
        (one pass), merges them into ``summary_`` (with ``decay``, the rows seen before keep ``1 - decay`` of
        their weight) and grows ``tree_`` on the merged summary by the rules of :meth:`fit`
        (:func:`lowdens_dask.growth.grower.grow`): each split is re-pursued from its rule, and kept as it is while it
        still lies in low density and, for ``n_clusters="auto"``, is still significant on the summary's sample rows
        that reach it; with ``"auto"`` (or None) a split that is no longer significant (valid) is merged back; then
        leaves are split by ``leaf_order``, ``force_n_clusters`` and ``max_clusters`` as in a fit, up to
        ``n_clusters`` (an integer: the tree grows, or merges back its latest splits, to that many leaves). Cluster
        ids are stable: each id goes to the leaf that holds most of its old weight, a leaf that holds none keeps its
        own, and ids are never reused, so ids need not be 0..K-1. X is checked as :meth:`fit` checks it; a later
        call's batch may be one row, or identical rows (they are merged, not split). ``labels_``
        are X's ids (as ``predict(X)``), ``update_report_`` says what changed, and ``tree_.n_updates`` counts the
        updates (each node records ``created`` and ``changed``).

        After :meth:`fit` in memory or in exact mode, the first update summarises the rows the fit saw (one pass, as
        summary mode would: :func:`~lowdens_dask.estimators.build_summary`) and updates the fitted tree. The fit
        holds a reference to those rows until then (not pickled: an estimator unpickled before its first update
        starts afresh, with a warning). ``sample_weight`` is not supported (the summary's microclusters carry the
        row counts).
        """
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported by partial_fit (the summary carries the weights).")
        before = dict(self.__dict__)  # an update that fails changes nothing: the tree grows on a copy
        try:
            return self._partial_fit(X)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def _partial_fit(self, X):
        if not is_chunked_input(X):  # in memory: what fit accepts (lists, 2-D arrays), with fit's errors
            reject_strings(X)
            X = check_array(X, dtype=(np.float64, np.float32), ensure_all_finite=False, input_name="X")
        validate_params(self)
        if hasattr(self, "tree_"):
            check_n_features(self, X)
            if hasattr(self, "_rows_fitted"):
                self.summary()
        if hasattr(self, "summary_"):
            return self._update(X)
        if hasattr(self, "tree_"):
            warn(
                f"This {type(self).__name__} has no summary of the rows it was fitted on (it was unpickled, or its "
                "summary_ deleted), which an update needs, so partial_fit starts a new fit from X (set summary_ = "
                "build_summary(estimator, X_fitted) before partial_fit to update the fit instead)."
            )
        prepared = self._prepare(X, None, "summary")
        growth, grown, passes = self._grow_prepared(prepared)
        growth.tree.stabilise_labels()
        fitted = {**prepared.attributes, **grown, **self._model(growth)}
        report = {"update": 0, "n_rows": fitted["summary_"].n_rows, "decay": self.decay, "n_clusters_before": 0}
        report.update(n_clusters=growth.tree.n_leaves, nodes=[], leaves=[], drift=None)
        self._set_fitted({**fitted, "update_report_": report, **self._labels(prepared, fitted, passes)})
        return self

    def _update(self, X):
        """Summarise X's rows (one pass), merge them into ``summary_`` (old weights times ``1 - decay``), grow the
        tree on the merged summary (:meth:`_grow_update`), keep the summary within ``max_microclusters``, then label
        X's rows."""
        arr = as_chunked(self, X)
        check_worker_memory(chunk_bytes(arr))
        start = _clock()
        if is_small_input(arr):
            rows, weights, n_nonfinite = read_small_input(self, arr, update=True)
            new = rows_summary(rows, weights, arr.shape[0])
        else:
            seed = np.random.default_rng([seed_of(self.random_state), self.tree_.n_updates + 1])
            done = summarise(self, arr, int(seed.integers(2**31 - 1)), update=True)
            new, n_nonfinite = done.summary, done.n_nonfinite
        summarised = _clock()
        old = self.summary_
        merged = old.merged(new, self.decay)
        old_weights = merged.weights.copy()
        old_weights[merged.n_microclusters - new.n_microclusters :] = 0.0
        self.tree_ = copy.deepcopy(self.tree_)  # grown in place; partial_fit restores the old one on failure
        growth = self._grow_update(merged, old_weights)
        bounded = merged.bounded(self.max_microclusters, growth.tree.n_updates)
        report = {"n_rows": new.n_rows, "decay": self.decay, **growth.report}
        if report.get("drift") is not None:  # the shares of rows, not of microclusters cut differently each time
            report.update(sample_shares(growth.tree, old, new))
        fitted = {**self._model(growth), "summary_": bounded, "n_microclusters_": bounded.n_microclusters}
        fitted.update(n_nonfinite_=n_nonfinite, update_report_=report)
        times = (start, summarised, _clock())
        self._set_fitted({**fitted, **self._label_chunks(arr, is_chunked_input(X), fitted, times)}, forget=False)
        return self

    def _grow_update(self, summary: ClusterSummary, old_weights: np.ndarray) -> Growth:
        raise NotImplementedError

    # ------------------------------------------------------------------ predict
    def predict(self, X):
        """Route each row down the tree to its leaf's label (lazily, for Dask or zarr input)."""
        check_is_fitted(self)
        if is_chunked_input(X):
            arr = as_dask_array(X, storage_options=self.storage_options)
            return store_labels(arr, self._labeller(vars(self)), None, self.storage_options, 0)
        return predict_rows(self, X, self._predict_rows, dtype=self._predict_dtype)
