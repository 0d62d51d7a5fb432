"""Minimum normalised cut hyperplanes: NCutH (one split) and NCutClustering (divisive), PPCI's ``ncuth`` and
``ncutdc`` (Hofmeyr, "Clustering by minimum cut hyperplanes", IEEE TPAMI 39(8), 2017)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from ._params import DIVISIVE_DEFAULTS, NCUT_INDEX_DEFAULTS, init_with, scale_out
from ._validation import check_pursuit_params, check_scale
from .divisive import _DivisiveClustering, _size
from .hyperplane import HyperplaneEstimator


class NCutH(HyperplaneEstimator):
    """Minimum normalised cut hyperplane (NCutH; Hofmeyr, TPAMI 2017; PPCI's ``ncuth``).

    The hyperplane minimises the normalised cut of the Laplace similarity ``exp(-|p_i - p_j| / scale)`` of
    the projected data over the splits that leave ``min_size`` points on each side, by L-BFGS over the
    direction from the first two principal components. The cut, volumes and their derivatives come from one
    sort of the projections and O(n) recursions. Label 0 is ``X @ v_ < b_``.

    Parameters
    ----------
    scale : None, float or callable, default=None
        Scale of the similarity; None is PPCI's ``100 * sigma_pc1 * n**(-1/5)``.
    v0 : None, array of shape (n_features,) or (n_features, k), or callable, default=None
        Initial directions; None means the first two principal components. The lowest cut is kept.
    maxiter : int, default=50
        L-BFGS iterations.
    ftol : float, default=1e-8
        Stop when an iteration lowers the normalised cut by at most this much (PPCI's default).
    min_size : float, default=1
        Least total weight on each side of the split.
    standardize, mode, rows_per_microcluster, max_microclusters, refine, nonfinite, random_state, storage_options, labels_store, max_node_bytes
        As for :class:`~lowdens_dask.MDH`.

    Attributes
    ----------
    v_, b_ : ndarray of shape (n_features,), float
        The hyperplane. When no split leaves ``min_size`` on each side (a warning says so), the best one found,
        still finite: b_ is the split point of the lowest normalised cut between distinct projections whatever
        the weight on each side, or the projections' common value if they all coincide; labels and
        ``decision_function`` follow it.
    fval_ : float
        Its normalised cut (inf without a valid split); ``stats_`` (dict) holds the index's statistics.
    labels_ : ndarray of shape (n_samples,), or dask array for Dask or zarr input
        As for :class:`~lowdens_dask.MDH`.
    n_evaluations_ : int
    """

    _method = "ncut"

    __init__ = init_with({}, {**NCUT_INDEX_DEFAULTS, "min_size": 1, "standardize": False, **scale_out()})

    def _check_params(self) -> None:
        check_pursuit_params(self, divisive=False)
        check_scale(self)

    def _index_params(self) -> dict:
        return {"scale": self.scale, "v0": self.v0, "maxiter": self.maxiter, "ftol": self.ftol}


def _low_cut(node, data, hp) -> float:
    return 1.0 / (1.0 + hp.fval)


class NCutClustering(_DivisiveClustering):
    """Divisive clustering with minimum normalised cut hyperplanes (NCutDC; PPCI's ``ncutdc``).

    Each split is an :class:`NCutH` fitted on the leaf's own rows (scale recomputed per node).

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
    split_index : {"fval", "size"}, their "-only" forms, or callable, default="fval"
        "fval" splits the leaf whose hyperplane has the lowest normalised cut (index ``1 / (1 + ncut)``,
        PPCI's), "size" the largest leaf; significant splits first, as for :class:`~lowdens_dask.MDHClustering`
        (PPCI's ``ncutdc`` order is "fval-only").
    min_size, min_cluster_size, force_n_clusters, max_clusters, significance_level, decay
        As for :class:`~lowdens_dask.MDHClustering`.
    scale, v0, maxiter, ftol, standardize
        As for :class:`NCutH`, applied at every node (``v0`` None or a callable of the node's rows).
    mode, rows_per_microcluster, max_microclusters, refine, nonfinite, random_state, storage_options, labels_store, max_node_bytes
        As for :class:`~lowdens_dask.MDHClustering`.

    Attributes
    ----------
    labels_, tree_, n_clusters_, n_microclusters_, n_nonfinite_
        As for :class:`~lowdens_dask.MDHClustering`.
    """

    _method = "ncut"
    _split_indices = {"fval": _low_cut, "size": _size}

    __init__ = init_with(
        {"n_clusters": 8},
        {"split_index": "fval", **DIVISIVE_DEFAULTS, **NCUT_INDEX_DEFAULTS, "standardize": False, **scale_out()},
    )

    def _check_params(self) -> None:
        super()._check_params()
        check_pursuit_params(self, divisive=True)
        check_scale(self)

    def _index_params(self) -> dict:
        return {"scale": self.scale, "v0": self.v0, "maxiter": self.maxiter, "ftol": self.ftol}
