"""Dimension reduction by projection pursuit: MDHProjection, NCutProjection and MCProjection (PPCI's ``mddr``,
``ncutdr`` and ``mcdr``).

Direction j is the one the index finds on the data deflated by the directions before it,
``X - X V V^T`` (Hofmeyr & Pavlidis, R Journal 11(2), 2019, §"dimension reduction"), so the directions are
orthonormal. In-memory arrays are fitted in memory; Dask arrays and zarr stores in exact chunked mode
(every pursuit step a pass over the chunks of the lazily deflated array).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..backend import InMemoryData, as_dask_array
from ..backend.chunked import ChunkedNode
from ..indices import DEFAULT_ALPHAS
from ..pursuit import find_hyperplane
from ._scale_out import is_chunked_input
from ._validation import (
    check_fit_input,
    check_mdh_params,
    check_positive_int,
    check_pursuit_params,
    check_scale,
    single_threaded_blas,
)


class _ProjectionPursuit(TransformerMixin, BaseEstimator):
    """Base class: ``n_components`` successive directions of the index ``_method``.

    Attributes: ``components_`` (n_components, n_features), orthonormal rows; ``stats_``, the index's
    statistics of each direction's split; ``n_features_in_``.
    """

    _method: str

    def _index_params(self) -> dict:
        raise NotImplementedError

    def _check_params(self) -> None:
        check_positive_int(self.n_components, f"{type(self).__name__}: n_components")

    def fit(self, X, y=None, sample_weight=None):
        """Find the directions on X (an array, a Dask array or a zarr store)."""
        self._check_params()
        chunked = is_chunked_input(X)
        if chunked:
            if sample_weight is not None:
                raise ValueError(f"{type(self).__name__}: sample_weight is not supported for Dask or zarr input.")
            X = as_dask_array(X)
            self.n_features_in_ = X.shape[1]
            weights = None
        else:
            X, weights = check_fit_input(self, X, sample_weight)
        d = X.shape[1]
        if self.n_components > d:
            raise ValueError(f"{type(self).__name__}: n_components={self.n_components} exceeds the {d} features of X.")
        V = np.zeros((0, d))
        stats = []
        with single_threaded_blas():
            for _ in range(self.n_components):
                deflated = X - (X @ V.T) @ V
                data = ChunkedNode(deflated) if chunked else InMemoryData(deflated, weights)
                hp = find_hyperplane(self._method, data, min_size=self.min_size, **self._index_params())
                v = hp.v - V.T @ (V @ hp.v)
                V = np.vstack([V, v / np.linalg.norm(v)])
                stats.append(dict(hp.stats))
        self.components_ = V
        self.stats_ = stats
        return self

    def transform(self, X):
        """The projections ``X @ components_.T`` (lazily, for Dask or zarr input)."""
        check_is_fitted(self)
        if is_chunked_input(X):
            return as_dask_array(X) @ self.components_.T
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=True)
        return X @ self.components_.T


class MDHProjection(_ProjectionPursuit):
    """Successive minimum density directions (PPCI's ``mddr``): each the normal of a minimum density hyperplane
    (:class:`~lowdens_dask.MDH`) of the data deflated by the directions before it.

    Parameters
    ----------
    n_components : int, default=2
    bandwidth, alphas, eta, eps, maxiter, ftol, min_size
        As for :class:`~lowdens_dask.MDH`.
    """

    _method = "mdh"

    def __init__(
        self,
        n_components: int = 2,
        *,
        bandwidth: float | str | Callable | None = None,
        alphas: Sequence[float] | None = None,
        eta: float = 1e-2,
        eps: float = 1.0 - 1e-6,
        maxiter: int = 50,
        ftol: float = 1e-5,
        min_size: float = 1,
    ):
        self.n_components = n_components
        self.bandwidth = bandwidth
        self.alphas = alphas
        self.eta = eta
        self.eps = eps
        self.maxiter = maxiter
        self.ftol = ftol
        self.min_size = min_size

    def _check_params(self) -> None:
        super()._check_params()
        check_mdh_params(self)

    def _index_params(self) -> dict:
        alphas = tuple(DEFAULT_ALPHAS if self.alphas is None else self.alphas)
        return {
            "bandwidth": self.bandwidth,
            "alphas": alphas,
            "eta": self.eta,
            "eps": self.eps,
            "maxiter": self.maxiter,
            "ftol": self.ftol,
        }


class NCutProjection(_ProjectionPursuit):
    """Successive minimum normalised cut directions (PPCI's ``ncutdr``), each found by :class:`NCutH` on the data
    deflated by the directions before it.

    Parameters
    ----------
    n_components : int, default=2
    scale, maxiter, ftol, min_size
        As for :class:`~lowdens_dask.NCutH`.
    """

    _method = "ncut"

    def __init__(
        self,
        n_components: int = 2,
        *,
        scale: float | Callable | None = None,
        maxiter: int = 50,
        ftol: float = 1e-8,
        min_size: float = 1,
    ):
        self.n_components = n_components
        self.scale = scale
        self.maxiter = maxiter
        self.ftol = ftol
        self.min_size = min_size

    def _check_params(self) -> None:
        super()._check_params()
        check_pursuit_params(self, divisive=False)
        check_scale(self)

    def _index_params(self) -> dict:
        return {"scale": self.scale, "maxiter": self.maxiter, "ftol": self.ftol}


class MCProjection(_ProjectionPursuit):
    """Successive maximum variance-ratio directions (PPCI's ``mcdr``), each found by :class:`MCH` on the data
    deflated by the directions before it.

    Parameters
    ----------
    n_components : int, default=2
    maxiter, ftol, min_size, random_state
        As for :class:`~lowdens_dask.MCH`.
    """

    _method = "mc"

    def __init__(
        self,
        n_components: int = 2,
        *,
        maxiter: int = 50,
        ftol: float = 1e-8,
        min_size: float = 1,
        random_state: int | None = None,
    ):
        self.n_components = n_components
        self.maxiter = maxiter
        self.ftol = ftol
        self.min_size = min_size
        self.random_state = random_state

    def _check_params(self) -> None:
        super()._check_params()
        check_pursuit_params(self, divisive=False)

    def _index_params(self) -> dict:
        return {"maxiter": self.maxiter, "ftol": self.ftol, "random_state": self.random_state}
