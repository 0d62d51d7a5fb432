"""MDH: one minimum density hyperplane as a scikit-learn estimator."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..backend import ChunkedData, InMemoryData, as_dask_array
from ..backend.chunked import ChunkedNode
from ..pursuit import DEFAULT_ALPHAS, minimum_density_hyperplane
from ._scale_out import (
    check_scale_out_params,
    exact_frame,
    fit_exact_chunked,
    fit_in_summary_mode,
    is_chunked_input,
    polish,
    use_summary_mode,
)
from ._validation import (
    check_fit_input,
    check_mdh_params,
    single_threaded_blas,
    standardisation,
    to_original_coordinates,
)


class MDH(ClusterMixin, BaseEstimator):
    """Minimum density hyperplane by minimum density projection pursuit (MDP²).

    Finds the hyperplane ``{x : v.x = b}`` through the lowest-density region of the data's Gaussian
    kernel density estimate, subject to ``b`` lying within ``alpha`` standard deviations of the
    projected mean (Pavlidis, Hofmeyr & Tasoulis, "Minimum Density Hyperplanes", JMLR 17(156), 2016,
    eqs. 10-13 and 26). Label 0 is ``v.x < b`` and label 1 is ``v.x >= b``.

    Parameters
    ----------
    bandwidth : None, "silverman", float or callable, default=None
        Kernel bandwidth h. None/"silverman": ``0.9 * sigma_pc1 * n**(-1/5)`` (§5.1.1); a callable is
        called with the (possibly standardised) data.
    alphas : sequence of float, default=None
        Increasing alpha schedule; None means (0.01, 0.1, 0.2, ..., 0.9).
    v0 : None, array of shape (n_features,) or (n_features, k), or callable, default=None
        Initial directions; None means the first two principal components. The result with the
        largest relative depth (eq. 30) is kept.
    eta : float, default=0.01
        Penalty accuracy (eq. 10).
    eps : float, default=1 - 1e-6
        Penalty smoothness exponent (eq. 10).
    maxiter : int, default=50
        BFGS iterations per alpha stage.
    ftol : float, default=1e-5
        An alpha stage ends when one BFGS iteration lowers the projection index by at most this
        relative amount.
    min_size : float, default=1
        A hyperplane is accepted only if each side holds at least this many points (total weight).
    standardize : bool, default=False
        Z-score the features before fitting; hyperplanes are reported in the original coordinates.
    mode, rows_per_microcluster, refine, nonfinite, random_state, storage_options, labels_store
        Exact and summary modes for Dask arrays and zarr stores; as for :class:`~lowdens_dask.MDHClustering`.

    Attributes
    ----------
    v_ : ndarray of shape (n_features,)
        Unit normal of the hyperplane.
    b_ : float
        Offset of the hyperplane.
    labels_ : ndarray of shape (n_samples,)
        0 for ``X @ v_ < b_``, 1 otherwise.
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

    def __init__(
        self,
        *,
        bandwidth: float | str | Callable | None = None,
        alphas: Sequence[float] | None = None,
        v0: np.ndarray | Callable | None = None,
        eta: float = 1e-2,
        eps: float = 1.0 - 1e-6,
        maxiter: int = 50,
        ftol: float = 1e-5,
        min_size: float = 1,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        refine: int = 0,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
    ):
        self.bandwidth = bandwidth
        self.alphas = alphas
        self.v0 = v0
        self.eta = eta
        self.eps = eps
        self.maxiter = maxiter
        self.ftol = ftol
        self.min_size = min_size
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.refine = refine
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store

    def _pursuit_params(self) -> dict:
        return {
            "bandwidth": self.bandwidth,
            "alphas": tuple(DEFAULT_ALPHAS if self.alphas is None else self.alphas),
            "eta": self.eta,
            "eps": self.eps,
            "maxiter": self.maxiter,
            "ftol": self.ftol,
            "min_size": self.min_size,
        }

    def fit(self, X, y=None, sample_weight=None) -> MDH:
        """Fit one minimum density hyperplane; with ``sample_weight`` the KDE, moments and PCs are weighted.

        X may be an array, a Dask array or a zarr store; see ``mode`` and
        :mod:`lowdens_dask.estimators._scale_out` for the summary and exact modes of the latter two.
        """
        check_mdh_params(self)
        check_scale_out_params(self)
        if use_summary_mode(self, X):
            return fit_in_summary_mode(self, X, sample_weight, self._fit_rows, self._predict_chunked)
        if is_chunked_input(X):
            return fit_exact_chunked(self, X, sample_weight, self._fit_node, self._predict_chunked)
        X, weights = check_fit_input(self, X, sample_weight)
        self._fit_rows(X, weights)
        self.labels_ = self._predict(X)
        return self

    def _fit_rows(self, X: np.ndarray, weights: np.ndarray, spread: np.ndarray | None = None, rows=None) -> None:
        """Fit on rows or summaries in memory; with ``rows`` (chunked, for ``refine``) polish the result
        by exact passes over them."""
        mean = scale = None
        Z = X
        if self.standardize:
            mean, scale = standardisation(X, weights)
            Z = (X - mean) / scale
            if spread is not None:
                spread = spread / np.mean(scale**2)
        self._fit_data(InMemoryData(Z, weights, spread), mean, scale, rows)

    def _fit_node(self, root: ChunkedNode) -> None:
        self._fit_data(*exact_frame(self, root))

    def _fit_data(self, data, mean: np.ndarray | None, scale: np.ndarray | None, rows=None) -> None:
        v0 = self.v0
        if v0 is not None and not callable(v0) and self.standardize:
            v0 = np.asarray(v0, dtype=np.float64) * (scale if np.ndim(v0) == 1 else scale[:, None])
        with single_threaded_blas():
            hp = minimum_density_hyperplane(data, v0=v0, **self._pursuit_params())
            if rows is not None and hp.valid:
                root, row_mean, row_scale = exact_frame(self, ChunkedNode(rows))
                polished = polish(root, hp, (mean, scale), (row_mean, row_scale), self._pursuit_params(), self.refine)
                if polished is not None:
                    hp, mean, scale = polished[0], row_mean, row_scale
        v, b = hp.v, hp.b
        if self.standardize:
            v, b = to_original_coordinates(v, b, mean, scale)
        if not hp.valid:
            warnings.warn(
                "No starting direction led to a hyperplane through a minimum of the projected density "
                "(relative depth 0); v_ and b_ hold the last solution of the alpha schedule.",
                UserWarning,
                stacklevel=3,
            )
        self.v_ = v
        self.b_ = b
        self.relative_depth_ = hp.relative_depth
        self.fval_ = hp.fval
        self.alpha_ = hp.params["alpha"]
        self.bandwidth_ = hp.params["bandwidth"]
        self.n_evaluations_ = hp.n_evaluations

    def _predict(self, X: np.ndarray) -> np.ndarray:
        return _side(X, self.v_, self.b_)

    def _predict_chunked(self, arr):
        return ChunkedData(arr).label_rows(_side, self.v_, self.b_)

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
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=True)
        return self._predict(X)


def _side(x: np.ndarray, v: np.ndarray, b: float) -> np.ndarray:
    """Side of the hyperplane: 0 for ``x @ v < b``, 1 otherwise."""
    return (x @ v >= b).astype(np.int64)
