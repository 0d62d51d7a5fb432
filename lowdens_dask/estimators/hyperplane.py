"""One separating hyperplane as a scikit-learn estimator, for any projection index: the base of MDH, NCutH and
MCH. The fit is the tree grower's one-split case, so summary mode, exact chunked mode and ``refine`` come
with it."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from .._warnings import warn
from ..backend import InMemoryData, as_dask_array
from ..backend.frame import Frame, exact_frame, rows_frame
from ..backend.workers import task_slots
from ..growth.grower import Growth, GrowthRules, grow
from ..growth.hyperplane_splitter import HyperplaneSplitter, Refine
from ..tree import ClusterTree, hyperplane_side
from ._fit import TreeClustering
from ._params import is_chunked_input, max_node_bytes
from ._validation import single_threaded_blas


def sample_in_frame(sample: np.ndarray | None, frame: Frame, weights: np.ndarray | None = None) -> InMemoryData | None:
    """A summary's sample rows (and their weights, :meth:`ClusterSummary.sample_row_weights`) in the frame its
    microclusters are fitted in (None for no rows)."""
    if sample is None or not len(sample):
        return None
    return InMemoryData(sample if frame.mean is None else (sample - frame.mean) / frame.scale, weights)


class FramedGrowth:
    """Hyperplane indices grow on their points in a frame: ``_grow(data, frame, parallel, refine) -> Growth`` is
    handed the rows in memory, the summary-mode microclusters (grown as parallel Dask tasks) or the chunked rows of
    exact mode, each in the frame they are fitted in."""

    def _in_frame(self, X: np.ndarray, weights: np.ndarray, spread: np.ndarray | None):
        """``(frame, rows in the frame, spread in the frame)`` of rows or summaries in memory: standardised if
        ``standardize``, and with columns that are constant up to rounding set aside either way
        (:func:`~lowdens_dask.backend.frame.column_frame`), the same in memory and in exact mode."""
        frame, constant = rows_frame(X, weights, self.standardize)
        Z = X if frame.mean is None else (X - frame.mean) / frame.scale
        if self.standardize and spread is not None and not constant.all():
            # per-dimension variance, approximately, in z-scored units (of the columns that are not constant)
            spread = spread / np.mean(frame.scale[~constant] ** 2)
        return frame, Z, spread

    def _grow_rows(
        self, X: np.ndarray, weights: np.ndarray, spread: np.ndarray | None = None, rows=None, sample=None, reach=None
    ) -> Growth:
        """Grow on rows or summaries in memory. In summary mode (``spread`` given) the tree grows as parallel Dask
        tasks; with ``rows`` (a ChunkedNode of the rows, for ``refine``) every split is polished by exact passes over
        its node's rows before it is made. ``sample``: the summary's sample of rows, on which splits are tested."""
        frame, Z, spread = self._in_frame(X, weights, spread)
        refine = None if rows is None else Refine(*exact_frame(rows, self.standardize), self.refine)
        points = InMemoryData(Z, weights, spread, sample=sample_in_frame(sample, frame), reach=reach)
        with single_threaded_blas():
            return self._grow(points, frame, task_slots() if spread is not None else 0, refine)

    def _grow_node(self, root) -> Growth:
        """Exact mode over chunked rows: nodes that fit ``max_node_bytes`` on one worker each, the others by
        passes over their chunks."""
        with single_threaded_blas():
            return self._grow(*exact_frame(root, self.standardize), 0, None)


class HyperplaneEstimator(FramedGrowth, TreeClustering):
    """Base class: fit one hyperplane ``{x : v.x = b}`` of the index ``_method``; label 0 is ``v.x < b``.

    Subclasses define ``_method`` and ``_index_params()``. Sets ``v_``, ``b_``,
    ``stats_`` (the index's statistics), ``fval_``, ``n_evaluations_`` and ``labels_`` (a numpy array for
    in-memory input, a Dask array for Dask or zarr input, backed by ``labels_store`` when given); ``tree_`` is the
    one-split tree. With ``sample_weight`` the index, moments and PCs are weighted.
    """

    _method: str
    _no_split_warning = "No valid split was found; v_ and b_ hold the best hyperplane found."

    def _index_params(self) -> dict:
        raise NotImplementedError

    def _grow(self, data, frame, parallel: int, refine) -> Growth:
        """The tree grower's one-split case: the root's best split (in the original coordinates), made if valid."""
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
        return growth._replace(root=growth.root._replace(found=splitter.original(growth.root)))

    @staticmethod
    def _split(growth: Growth):
        """The split made (polished with refine), else the best found, in the original coordinates."""
        hp, root = growth.root.found, growth.tree.root
        return hp if root.is_leaf else hp._replace(v=root.v, b=root.b, stats=root.stats, params=root.params)

    def _fitted_attributes(self, growth: Growth) -> dict:
        """``v_``, ``b_``, ``stats_``, ``fval_`` of :meth:`_split`."""
        if growth.tree.root.is_leaf:
            warn(self._no_split_warning)
        hp = self._split(growth)
        return {"v_": hp.v, "b_": hp.b, "stats_": dict(hp.stats), "fval_": hp.fval}

    def _route_rows(self, X: np.ndarray, fitted: dict) -> np.ndarray:
        return hyperplane_side(X, fitted["v_"], fitted["b_"])

    def _labeller(self, fitted: dict) -> tuple:
        return hyperplane_side, (fitted["v_"], fitted["b_"]), False

    def decision_function(self, X) -> np.ndarray:
        """Signed distance ``X @ v_ - b_`` to the hyperplane (lazily, for Dask or zarr input)."""
        check_is_fitted(self)
        if is_chunked_input(X):
            return as_dask_array(X, storage_options=self.storage_options) @ self.v_ - self.b_
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=True)
        return X @ self.v_ - self.b_
