"""MDH: one minimum density hyperplane as a scikit-learn estimator."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from ..indices import DEFAULT_ALPHAS
from ._params import MDH_INDEX_DEFAULTS, init_with, scale_out
from ._validation import check_mdh_params
from .hyperplane import HyperplaneEstimator


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

    __init__ = init_with({}, {**MDH_INDEX_DEFAULTS, "min_size": 1, "standardize": False, **scale_out()})

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
            "eps": self.eps,
            "maxiter": self.maxiter,
            "ftol": self.ftol,
            "v0": self.v0,
        }

    def _check_params(self) -> None:
        check_mdh_params(self)

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
