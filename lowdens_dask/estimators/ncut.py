"""Minimum normalised cut hyperplanes: NCutH (one split) and NCutClustering (divisive), PPCI's ``ncuth`` and
``ncutdc`` (Hofmeyr, "Clustering by minimum cut hyperplanes", IEEE TPAMI 39(8), 2017)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._constraints import PARAMETER_CONSTRAINTS
from ._params import param
from .divisive import _DivisiveClustering, _size
from .hyperplane import HyperplaneEstimator
from .projection import _ProjectionPursuit


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
    max_iter : int, default=50
        L-BFGS iterations.
    tol : float, default=1e-8
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

    _parameter_constraints = PARAMETER_CONSTRAINTS["NCutH"]

    def __init__(
        self,
        *,
        scale: float | None = None,
        v0: np.ndarray | Callable | None = None,
        max_iter: int = 50,
        tol: float = 1e-08,
        min_size: float = 1,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        refine: int = 0,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        max_node_bytes: float | str = "auto",
        maxiter="deprecated",  # now max_iter (FutureWarning)
        ftol="deprecated",  # now tol (FutureWarning)
    ):
        self.scale = scale
        self.v0 = v0
        self.max_iter = max_iter
        self.tol = tol
        self.min_size = min_size
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.refine = refine
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.max_node_bytes = max_node_bytes
        self.maxiter = maxiter
        self.ftol = ftol

    def _index_params(self) -> dict:
        return {"scale": self.scale, "v0": self.v0, "maxiter": param(self, "max_iter"), "ftol": param(self, "tol")}


def _low_cut(node, data, hp) -> float:
    return 1.0 / (1.0 + hp.fval)


class NCutClustering(_DivisiveClustering):
    """Divisive clustering with minimum normalised cut hyperplanes (NCutDC; PPCI's ``ncutdc``).

    Each split is an :class:`NCutH` fitted on the leaf's own rows (scale recomputed per node).

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
    leaf_order : {"fval", "size"}, their "-only" forms, or callable, default="fval"
        "fval" splits the leaf whose hyperplane has the lowest normalised cut (index ``1 / (1 + ncut)``,
        PPCI's), "size" the largest leaf; significant splits first, as for :class:`~lowdens_dask.MDHClustering`
        (PPCI's ``ncutdc`` order is "fval-only").
    min_size, min_cluster_size, force_n_clusters, max_clusters, significance_level, decay
        As for :class:`~lowdens_dask.MDHClustering`.
    scale, v0, max_iter, tol, standardize
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

    _parameter_constraints = PARAMETER_CONSTRAINTS["NCutClustering"]

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        leaf_order: str | Callable = "fval",
        min_size: float = 1,
        min_cluster_size: float = 0.005,
        force_n_clusters: bool = True,
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        decay: float | None = None,
        scale: float | None = None,
        v0: np.ndarray | Callable | None = None,
        max_iter: int = 50,
        tol: float = 1e-08,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        refine: int = 0,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        max_node_bytes: float | str = "auto",
        split_index="deprecated",  # now leaf_order (FutureWarning)
        maxiter="deprecated",  # now max_iter (FutureWarning)
        ftol="deprecated",  # now tol (FutureWarning)
    ):
        self.n_clusters = n_clusters
        self.leaf_order = leaf_order
        self.min_size = min_size
        self.min_cluster_size = min_cluster_size
        self.force_n_clusters = force_n_clusters
        self.max_clusters = max_clusters
        self.significance_level = significance_level
        self.decay = decay
        self.scale = scale
        self.v0 = v0
        self.max_iter = max_iter
        self.tol = tol
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.refine = refine
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.max_node_bytes = max_node_bytes
        self.split_index = split_index
        self.maxiter = maxiter
        self.ftol = ftol

    def _index_params(self) -> dict:
        return {"scale": self.scale, "v0": self.v0, "maxiter": param(self, "max_iter"), "ftol": param(self, "tol")}


class NCutProjection(_ProjectionPursuit):
    """Successive minimum normalised cut directions (PPCI's ``ncutdr``), each found by :class:`NCutH` on the data
    deflated by the directions before it.

    Parameters
    ----------
    n_components : int, default=2
    scale, max_iter, tol, min_size
        As for :class:`~lowdens_dask.NCutH`.

    """

    _method = "ncut"

    _parameter_constraints = PARAMETER_CONSTRAINTS["NCutProjection"]

    def __init__(
        self,
        n_components: int = 2,
        *,
        scale: float | None = None,
        max_iter: int = 50,
        tol: float = 1e-08,
        min_size: float = 1,
        maxiter="deprecated",  # now max_iter (FutureWarning)
        ftol="deprecated",  # now tol (FutureWarning)
    ):
        self.n_components = n_components
        self.scale = scale
        self.max_iter = max_iter
        self.tol = tol
        self.min_size = min_size
        self.maxiter = maxiter
        self.ftol = ftol

    def _index_params(self) -> dict:
        return {"scale": self.scale, "maxiter": param(self, "max_iter"), "ftol": param(self, "tol")}
