"""Maximum variance-ratio clusterability hyperplanes: MCH (one split) and MCClustering (divisive), PPCI's ``mch``
and ``mcdc`` (Hofmeyr & Pavlidis, "Maximum clusterability divisive clustering", IEEE SSCI 2015)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.stats import ncf

from ._constraints import PARAMETER_CONSTRAINTS
from ._params import param
from .divisive import _DivisiveClustering, _size
from .hyperplane import HyperplaneEstimator
from .projection import _ProjectionPursuit

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
    max_iter : int, default=50
    tol : float, default=1e-8
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

    _parameter_constraints = PARAMETER_CONSTRAINTS["MCH"]

    def __init__(
        self,
        *,
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
        return {
            "v0": self.v0,
            "maxiter": param(self, "max_iter"),
            "ftol": param(self, "tol"),
            "random_state": self.random_state,
        }


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
    leaf_order : {"Fdist", "fval", "size"}, their "-only" forms, or callable, default="Fdist"
        "Fdist" (PPCI's default): below 2,000 rows the leaf whose variance ratio is least likely under the
        non-central F distribution of one cluster (:func:`f_distribution_index`), else the largest leaf;
        "fval" the largest variance ratio; "size" the largest leaf. Significant splits first, as for
        :class:`~lowdens_dask.MDHClustering` (PPCI's ``mcdc`` order is "Fdist-only").
    min_size, min_cluster_size, force_n_clusters, max_clusters, significance_level, decay
        As for :class:`~lowdens_dask.MDHClustering`.
    v0, max_iter, tol, random_state, standardize
        As for :class:`MCH`, applied at every node (``v0`` None or a callable of the node's rows).
    mode, rows_per_microcluster, max_microclusters, refine, nonfinite, storage_options, labels_store
        As for :class:`~lowdens_dask.MDHClustering`.

    Attributes
    ----------
    labels_, tree_, n_clusters_, n_microclusters_, n_nonfinite_
        As for :class:`~lowdens_dask.MDHClustering`.
    """

    _method = "mc"

    _parameter_constraints = PARAMETER_CONSTRAINTS["MCClustering"]

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        leaf_order: str | Callable = "Fdist",
        min_size: float = 1,
        min_cluster_size: float = 0.005,
        force_n_clusters: bool = True,
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        decay: float | None = None,
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

    def _index_params(self) -> dict:
        return {
            "v0": self.v0,
            "maxiter": param(self, "max_iter"),
            "ftol": param(self, "tol"),
            "random_state": self.random_state,
        }


class MCProjection(_ProjectionPursuit):
    """Successive maximum variance-ratio directions (PPCI's ``mcdr``), each found by :class:`MCH` on the data
    deflated by the directions before it.

    Parameters
    ----------
    n_components : int, default=2
    max_iter, tol, min_size, random_state
        As for :class:`~lowdens_dask.MCH`.

    """

    _method = "mc"

    _parameter_constraints = PARAMETER_CONSTRAINTS["MCProjection"]

    def __init__(
        self,
        n_components: int = 2,
        *,
        max_iter: int = 50,
        tol: float = 1e-08,
        min_size: float = 1,
        random_state: int | None = None,
        maxiter="deprecated",  # now max_iter (FutureWarning)
        ftol="deprecated",  # now tol (FutureWarning)
    ):
        self.n_components = n_components
        self.max_iter = max_iter
        self.tol = tol
        self.min_size = min_size
        self.random_state = random_state
        self.maxiter = maxiter
        self.ftol = ftol

    def _index_params(self) -> dict:
        return {"maxiter": param(self, "max_iter"), "ftol": param(self, "tol"), "random_state": self.random_state}
