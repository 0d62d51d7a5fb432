"""DePDDPClustering: density-enhanced PDDP (Tasoulis, Tasoulis & Plagianakos, 2010)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections.abc import Callable

from sklearn.utils import deprecated

from ._constraints import PARAMETER_CONSTRAINTS
from .divisive import (
    _DivisiveClustering,
    _lowest_density,
    _size,
)


class DePDDPClustering(_DivisiveClustering):
    """Density-enhanced PDDP (Tasoulis, Tasoulis & Plagianakos, Pattern Recognit. 43(11), 2010).

    Each split projects the node onto its first principal component and cuts at the lowest local
    minimum of the projection's Gaussian KDE (bandwidth ``0.9 * sigma_pc1 * n**(-1/5)``); a leaf with a
    unimodal projection is not split.

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
    leaf_order : {"fval", "size"}, their "-only" forms, or callable, default="fval"
        "fval" splits the leaf whose minimum has the lowest density (the dePDDP rule); significant splits first, as
        for :class:`~lowdens_dask.MDHClustering` ("fval-only": the rule alone).
    bandwidth : None, "silverman", float or callable, default=None
        As for :class:`~lowdens_dask.MDH` (a number lies in [1e-100, 1e100]).
    min_size : float, default=1
    min_cluster_size : float, default=0.005
        As for :class:`~lowdens_dask.MDHClustering`.
    force_n_clusters : bool, default=True
        As for :class:`~lowdens_dask.MDHClustering`; a leaf with a unimodal projection is then split at
        its mean (PDDP's split).
    max_clusters, significance_level, decay
        As for :class:`~lowdens_dask.MDHClustering`.
    standardize : bool, default=False
    mode, rows_per_microcluster, max_microclusters, nonfinite, random_state, storage_options, labels_store, max_node_bytes
        Exact and summary modes for large, Dask or zarr input; as for :class:`~lowdens_dask.MDHClustering`.

    Attributes
    ----------
    labels_, tree_, n_clusters_, n_microclusters_, n_nonfinite_
        As for :class:`~lowdens_dask.MDHClustering` (``labels_`` a Dask array for Dask or zarr input).
    """

    _method = "depddp"
    _split_indices = {"fval": _lowest_density, "size": _size}

    _parameter_constraints = PARAMETER_CONSTRAINTS["DePDDPClustering"]

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        leaf_order: str | Callable = "fval",
        bandwidth: float | str | Callable | None = None,
        min_size: float = 1,
        min_cluster_size: float = 0.005,
        force_n_clusters: bool = True,
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        decay: float | None = None,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        max_node_bytes: float | str = "auto",
        split_index="deprecated",  # now leaf_order (FutureWarning)
    ):
        self.n_clusters = n_clusters
        self.leaf_order = leaf_order
        self.bandwidth = bandwidth
        self.min_size = min_size
        self.min_cluster_size = min_cluster_size
        self.force_n_clusters = force_n_clusters
        self.max_clusters = max_clusters
        self.significance_level = significance_level
        self.decay = decay
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.max_node_bytes = max_node_bytes
        self.split_index = split_index

    def _index_params(self) -> dict:
        return {"bandwidth": self.bandwidth}


@deprecated(
    "DePDDP was renamed DePDDPClustering (the divisive estimators are all named ...Clustering); DePDDP will be removed in the next release."
)
class DePDDP(DePDDPClustering):
    """Deprecated: the old name of :class:`DePDDPClustering`, for one release."""
