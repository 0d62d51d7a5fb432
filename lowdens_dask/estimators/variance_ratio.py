"""Maximum variance-ratio clusterability hyperplanes: MCH (one split) and MCClustering (divisive), PPCI's ``mch``
and ``mcdc`` (Hofmeyr & Pavlidis, "Maximum clusterability divisive clustering", IEEE SSCI 2015)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

from scipy.stats import ncf

from ._params import DIVISIVE_DEFAULTS, MC_INDEX_DEFAULTS, init_with, scale_out
from ._validation import check_pursuit_params
from .divisive import _DivisiveClustering, _size
from .hyperplane import HyperplaneEstimator

#: Below this many rows at the root, MCClustering's "Fdist" split index uses the F distribution; above, size
#: (PPCI's ``mcdc``: the degrees of freedom are unreliable for large n).
FDIST_MAX_ROWS = 2000


class MCH(HyperplaneEstimator):
    """Maximum variance-ratio clusterability hyperplane (MCH; Hofmeyr & Pavlidis, SSCI 2015; PPCI's ``mch``).

    The hyperplane maximises the variance ratio ``B / (V - B)`` of the split of the projected data (between-
    over within-group variance along the projection) over the splits that leave ``min_size`` points on each
    side, by L-BFGS over the direction from the line joining the centres of a 2-means clustering.
    Label 0 is ``X @ v_ < b_``.

    Parameters
    ----------
    v0 : None, array of shape (n_features,) or (n_features, k), or callable, default=None
        Initial directions; None means the 2-means direction (seeded by ``random_state``). The largest
        variance ratio is kept.
    maxiter : int, default=50
    ftol : float, default=1e-8
        Stop when an iteration raises the variance ratio by at most this much (PPCI's default).
    min_size : float, default=1
    random_state : int or None, default=None
        Seeds the 2-means start (and, in summary mode, the microclusters); None means seed 0.
    standardize, mode, rows_per_microcluster, max_microclusters, refine, nonfinite, storage_options, labels_store
        As for :class:`~lowdens_dask.MDH`.

    Attributes
    ----------
    v_, b_ : ndarray of shape (n_features,), float
        The hyperplane. When no split leaves ``min_size`` on each side (a warning says so), the best one found,
        still finite: b_ is the split point of the largest variance ratio between distinct projections
        whatever the weight on each side, or the projections' common value if they all coincide; labels and
        ``decision_function`` follow it.
    fval_ : float
        Its variance ratio (-inf without a valid split); ``stats_`` (dict) holds the index's statistics.
    labels_ : ndarray of shape (n_samples,), or dask array for Dask or zarr input
        As for :class:`~lowdens_dask.MDH`.
    n_evaluations_ : int
    """

    _method = "mc"

    __init__ = init_with({}, {**MC_INDEX_DEFAULTS, "min_size": 1, "standardize": False, **scale_out()})

    def _check_params(self) -> None:
        check_pursuit_params(self, divisive=False)

    def _index_params(self) -> dict:
        return {"v0": self.v0, "maxiter": self.maxiter, "ftol": self.ftol, "random_state": self.random_state}


def _largest_ratio(node, data, hp) -> float:
    return hp.fval


def f_distribution_index(variance_ratio: float, n: float, d: int) -> float:
    """PPCI's ``mcdc`` split index: the non-central F probability of the variance ratio,
    ``F(VR beta / al; al, beta, ncp=n)`` with ``al = min(n, d + 1)`` and ``beta = max(0, n - d - 1)``. Where the
    probability is 1 in floating point, ``1 + sqrt(n) VR``: PPCI adds ``1e-30 sqrt(n) VR`` to order such nodes,
    which is lost when added to 1, so well-separated leaves tied and the first one found was split."""
    al = min(n, d + 1)
    beta = max(0.0, n - d - 1)
    if beta == 0 or not math.isfinite(variance_ratio):
        return 0.0
    p = float(ncf.cdf(variance_ratio * beta / al, al, beta, n))
    return p if p < 1.0 else 1.0 + math.sqrt(n) * variance_ratio


class MCClustering(_DivisiveClustering):
    """Divisive clustering with maximum variance-ratio hyperplanes (MCDC; PPCI's ``mcdc``).

    Each split is an :class:`MCH` fitted on the leaf's own rows.

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
    split_index : {"Fdist", "fval", "size"}, their "-only" forms, or callable, default="Fdist"
        "Fdist" (PPCI's default): below 2,000 rows the leaf whose variance ratio is least likely under the
        non-central F distribution of one cluster (:func:`f_distribution_index`), else the largest leaf;
        "fval" the largest variance ratio; "size" the largest leaf. Significant splits first, as for
        :class:`~lowdens_dask.MDHClustering` (PPCI's ``mcdc`` order is "Fdist-only").
    min_size, min_cluster_size, force_n_clusters, max_clusters, significance_level, decay
        As for :class:`~lowdens_dask.MDHClustering`.
    v0, maxiter, ftol, random_state, standardize
        As for :class:`MCH`, applied at every node (``v0`` None or a callable of the node's rows).
    mode, rows_per_microcluster, max_microclusters, refine, nonfinite, storage_options, labels_store
        As for :class:`~lowdens_dask.MDHClustering`.

    Attributes
    ----------
    labels_, tree_, n_clusters_, n_microclusters_, n_nonfinite_
        As for :class:`~lowdens_dask.MDHClustering`.
    """

    _method = "mc"

    __init__ = init_with(
        {"n_clusters": 8},
        {"split_index": "Fdist", **DIVISIVE_DEFAULTS, **MC_INDEX_DEFAULTS, "standardize": False, **scale_out()},
    )

    @property
    def _split_indices(self) -> dict:
        return {"Fdist": self._f_distribution, "fval": _largest_ratio, "size": _size}

    def _f_distribution(self, node, data, hp) -> float:
        if self._root_rows >= FDIST_MAX_ROWS:
            return node.size
        return f_distribution_index(hp.fval, node.size, data.n_features)

    def _grow(self, data, frame, parallel, refine):
        self._root_rows = data.total_weight
        return super()._grow(data, frame, parallel, refine)

    def _check_params(self) -> None:
        super()._check_params()
        check_pursuit_params(self, divisive=True)

    def _index_params(self) -> dict:
        return {"v0": self.v0, "maxiter": self.maxiter, "ftol": self.ftol, "random_state": self.random_state}
