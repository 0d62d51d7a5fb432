"""One separating hyperplane as a scikit-learn estimator, for any projection index: the base of MDH, NCutH and
MCH. The fit is the tree grower's one-split case, so summary mode, exact chunked mode and ``refine`` come
with it."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._warnings import warn
from ..backend import ChunkedData, as_dask_array
from ..backend.frame import Frame
from ..tree import ClusterTree, hyperplane_side
from ..tree.grower import GrowthRules, grow
from ..tree.hyperplanes import HyperplaneSplitter
from ._base import TreeFitMixin
from ._scale_out import (
    check_scale_out_params,
    fit_exact_chunked,
    fit_in_summary_mode,
    is_chunked_input,
    max_node_bytes,
    use_summary_mode,
)
from ._validation import check_fit_rows, labels_with_skipped, predict_rows


class HyperplaneEstimator(TreeFitMixin, ClusterMixin, BaseEstimator):
    """Base class: fit one hyperplane ``{x : v.x = b}`` of the index ``_method``; label 0 is ``v.x < b``.

    Subclasses define ``_method``, ``_index_params()`` and ``_check_params()``. Sets ``v_``, ``b_``,
    ``stats_`` (the index's statistics), ``fval_``, ``n_evaluations_`` and ``labels_`` (a numpy array for
    in-memory input, a Dask array for Dask or zarr input, backed by ``labels_store`` when given).
    """

    _method: str
    _no_split_warning = "No valid split was found; v_ and b_ hold the best hyperplane found."

    def _index_params(self) -> dict:
        raise NotImplementedError

    def _check_params(self) -> None:
        raise NotImplementedError

    def fit(self, X, y=None, sample_weight=None):
        """Fit the hyperplane; with ``sample_weight`` the index, moments and PCs are weighted.

        X may be an array, a Dask array or a zarr store; see ``mode`` and
        :mod:`lowdens_dask.estimators._scale_out` for the summary and exact modes of the latter two.
        """
        self._check_params()
        check_scale_out_params(self)
        if use_summary_mode(self, X):
            return fit_in_summary_mode(self, X, sample_weight, self._fit_rows, self._predict_chunked)
        if is_chunked_input(X):
            return fit_exact_chunked(self, X, sample_weight, self._fit_node, self._predict_chunked)
        X, weights, finite = check_fit_rows(self, X, sample_weight)
        self._fit_rows(X, weights)
        self.labels_ = labels_with_skipped(self._predict(X), finite)
        self.n_nonfinite_ = 0 if finite is None else int((~finite).sum())
        self.n_passes_ = self.n_evaluation_passes_ = 0  # the rows are in memory
        return self

    def _fit_data(self, data, frame: Frame, parallel: int, refine) -> None:
        params = self._index_params()
        v0 = params.get("v0")
        if v0 is not None and not callable(v0) and frame.scale is not None:
            v0 = np.asarray(v0, dtype=np.float64)
            params["v0"] = v0 * (frame.scale if v0.ndim == 1 else frame.scale[:, None])
        splitter = HyperplaneSplitter(
            self._method, params, self.min_size, frame, refine=refine,
            max_node_bytes=max_node_bytes(self) if data.chunked else 0.0,
        )  # fmt: skip
        tree = ClusterTree(data.n_features, self._method, {**params, "min_size": self.min_size}, data.total_weight)
        growth = grow(tree, data, splitter, GrowthRules(2, lazy=True))
        if growth.root is None:  # the grower does not try a node whose weight cannot leave min_size on each side
            raise ValueError(
                f"{type(self).__name__}: the rows' total weight, {data.total_weight:.6g}, is below 2 * min_size "
                f"= {2 * self.min_size:.6g}, so no split can leave min_size on each side; scale sample_weight "
                "up or lower min_size."
            )
        hp = splitter.original(growth.root)
        root = growth.tree.root
        if not root.is_leaf:  # the split made (polished with refine)
            hp = hp._replace(v=root.v, b=root.b, stats=root.stats, params=root.params)
        else:
            warn(self._no_split_warning)
        self._set_split(hp)
        self.n_evaluations_ = growth.n_evaluations

    def _set_split(self, hp) -> None:
        self.v_ = hp.v
        self.b_ = hp.b
        self.stats_ = dict(hp.stats)
        self.fval_ = hp.fval

    def _predict(self, X: np.ndarray) -> np.ndarray:
        return hyperplane_side(X, self.v_, self.b_)

    def _predict_chunked(self, arr, out=None):
        return ChunkedData(arr).label_rows(hyperplane_side, self.v_, self.b_, out=out)

    def decision_function(self, X) -> np.ndarray:
        """Signed distance ``X @ v_ - b_`` to the hyperplane (lazily, for Dask or zarr input)."""
        check_is_fitted(self)
        if is_chunked_input(X):
            return as_dask_array(X, storage_options=self.storage_options) @ self.v_ - self.b_
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=True)
        return X @ self.v_ - self.b_

    def predict(self, X) -> np.ndarray:
        """Side of the hyperplane: 0 for ``X @ v_ < b_``, 1 otherwise (-1 for NaN/inf rows of chunked input)."""
        check_is_fitted(self)
        if is_chunked_input(X):
            return self._predict_chunked(as_dask_array(X, storage_options=self.storage_options))
        return predict_rows(self, X, self._predict)
