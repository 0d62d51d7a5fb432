"""Dimension reduction by projection pursuit: MDHProjection, NCutProjection and MCProjection (PPCI's ``mddr``,
``ncutdr`` and ``mcdr``).

Direction j is the one the index finds on the data deflated by the directions before it,
``X - X V V^T`` (Hofmeyr & Pavlidis, R Journal 11(2), 2019, §"dimension reduction"), so the directions are
orthonormal. In-memory arrays are fitted in memory; Dask arrays and zarr stores in exact chunked mode
(every pursuit step a pass over the chunks of the lazily deflated array).

Each direction is taken within the span of the centred rows: a component along a direction in which X does not
vary (a constant column, say) moves no projection but by a constant, and is removed. So when X varies along
only r < ``n_components`` directions (rank-r data once centred: rank-1 data, constant columns), the data deflated
by r directions have no variance left and there is no further direction to find: the fit stops at r with a
warning that says how many directions were found and why, and ``n_components_`` (the rows of ``components_``,
the columns of ``transform``) is r, as scikit-learn's PCA reports the ``n_components_`` it kept. r is the
covariance's numerical rank: its eigenvalues above ``FLAT_ULPS * n_features * penalty_exponent`` times the largest
(:data:`lowdens_dask.pursuit.hyperplanes.FLAT_ULPS`).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._warnings import warn
from ..backend import InMemoryData, as_dask_array
from ..backend.chunked import ChunkedNode
from ..pursuit import find_hyperplane
from ..pursuit.hyperplanes import varying_components
from ._params import is_chunked_input, validate_params
from ._validation import (
    check_fit_input,
    single_threaded_blas,
)


def _rank_and_null_space(data, name: str) -> tuple[int, np.ndarray]:
    """The number of directions along which the rows vary (the covariance's numerical rank: eigenvalues above
    ``FLAT_ULPS * d * penalty_exponent`` times the largest) and an orthonormal basis of the others, as columns."""
    vals, vecs = data.leading_eigenvectors(data.n_features)
    if not vals[0] > 0:
        raise ValueError(f"{name}: every row of X is the same point; there is no direction to find.")
    rank = int(np.count_nonzero(varying_components(vals, data.n_features)))
    return rank, vecs[:, rank:]


_ATTRIBUTES_DOC = """
    Attributes
    ----------
    components_ : ndarray of shape (n_components_, n_features)
        The directions, orthonormal rows, each within the span of the centred rows.
    n_components_ : int
        How many were found: ``n_components``, or fewer when X varies along fewer directions once centred
        (rank-deficient data, constant columns); the fit then warns how many were found and why.
    stats_ : list of dict
        The index's statistics of each direction's split.
    """


class _ProjectionPursuit(TransformerMixin, BaseEstimator):
    """Base class: ``n_components`` successive directions of the index ``_method``.

    Attributes: ``components_`` (n_components_, n_features), orthonormal rows; ``n_components_``, the number
    of directions found: ``n_components``, or fewer (with a warning) when the data deflated by the directions
    found have no variance left; ``stats_``, the index's statistics of each direction's split; ``n_iter_``, the
    objective evaluations of every direction (scikit-learn's name in estimators with ``max_iter``);
    ``n_features_in_``.
    """

    _method: str

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__doc__:  # every projection's docstring ends with the attributes they share
            cls.__doc__ = cls.__doc__.rstrip() + "\n" + _ATTRIBUTES_DOC

    def _index_params(self) -> dict:
        raise NotImplementedError

    def fit(self, X, y=None, sample_weight=None):
        """Find the directions on X (an array, a Dask array or a zarr store)."""
        validate_params(self)
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
        first = self._deflated(X, V, weights, chunked)  # X itself; chunked: its covariance pass serves both
        rank, null = _rank_and_null_space(first, type(self).__name__)
        stats = []
        stopped = None
        n_evaluations = 0
        with single_threaded_blas():
            for j in range(min(self.n_components, rank)):
                data = first if j == 0 else self._deflated(X, V, weights, chunked)
                hp = find_hyperplane(self._method, data, min_size=self.min_size, **self._index_params())
                n_evaluations += hp.n_evaluations
                v = hp.v - null @ (null.T @ hp.v)  # a component along which X does not vary moves no projection
                for _ in range(2):  # twice: orthonormal to rounding whatever the overlap
                    v -= V.T @ (V @ v)
                norm = float(np.linalg.norm(v))
                if not norm > 0.5:  # not expected: the starts and steps lie in the deflated rows' span
                    stopped = "the next direction found lies along the previous ones or where X does not vary"
                    break
                V = np.vstack([V, v / norm])
                stats.append(dict(hp.stats))
        if stopped is None and rank < self.n_components:
            dirs = f"{rank} direction{'' if rank == 1 else 's'}"
            stopped = (
                f"X varies along only {dirs} once centred (its covariance has rank {rank} to rounding error), so the "
                f"data deflated by the first {dirs} found have no variance left"
            )
        if stopped is not None:
            k = V.shape[0]
            s = "" if k == 1 else "s"
            warn(
                f"{type(self).__name__}: found {k} of the {self.n_components} components requested: {stopped}. "
                f"components_ has {k} row{s} and transform gives {k} column{s} (n_components_ = {k})."
            )
        self.components_ = V
        self.n_components_ = V.shape[0]
        self.stats_ = stats
        self.n_iter_ = n_evaluations  # scikit-learn's name, with max_iter: the objective evaluations of every direction
        return self

    @staticmethod
    def _deflated(X, V, weights, chunked):
        deflated = X - (X @ V.T) @ V
        # X's scale is checked on X itself (the first node's first pass), not on what deflation leaves of it
        return ChunkedNode(deflated, check_scale=V.shape[0] == 0) if chunked else InMemoryData(deflated, weights)

    def transform(self, X):
        """The projections ``X @ components_.T`` (lazily, for Dask or zarr input)."""
        check_is_fitted(self)
        if is_chunked_input(X):
            return as_dask_array(X) @ self.components_.T
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=True)
        return X @ self.components_.T
