"""IPDDPClustering: PDDP split in the largest gap (Tasoulis, Tasoulis & Plagianakos, 2010)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections.abc import Callable

from sklearn.utils import deprecated

from ._constraints import PARAMETER_CONSTRAINTS
from .divisive import (
    _DivisiveClustering,
    _size,
)


def _widest_gap(node, data, hp) -> float:
    return hp.stats.get("gap", 0.0)  # no gap recorded: the leaf's rows are all identical


class IPDDPClustering(_DivisiveClustering):
    """iPDDP: PDDP split in the largest gap (Tasoulis, Tasoulis & Plagianakos, Pattern Recognit. 43(11), 2010;
    as in HiPart's ``IPDDP``).

    Each split projects the node onto its first principal component and cuts at the midpoint of the
    widest gap between consecutive projections, ignoring the outer ``percentile`` of the points on each
    side.

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
    leaf_order : {"gap", "size"}, their "-only" forms, or callable, default="gap"
        "gap" splits the leaf with the widest gap (HiPart's rule), "size" the largest leaf; significant splits
        first, as for :class:`~lowdens_dask.MDHClustering`.
    percentile : float, default=0.1
        Fraction of the points (total weight) on each side of the projection that no split may cut off.
    min_size : float, default=1
    min_cluster_size : float, default=0.005
        As for :class:`~lowdens_dask.MDHClustering`.
    force_n_clusters : bool, default=True
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

    _method = "ipddp"
    _split_indices = {"gap": _widest_gap, "size": _size}

    _parameter_constraints = PARAMETER_CONSTRAINTS["IPDDPClustering"]

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        leaf_order: str | Callable = "gap",
        percentile: float = 0.1,
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
        self.percentile = percentile
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
        return {"percentile": self.percentile}


@deprecated(
    "IPDDP was renamed IPDDPClustering (the divisive estimators are all named ...Clustering); IPDDP will be removed in the next release."
)
class IPDDP(IPDDPClustering):
    """Deprecated: the old name of :class:`IPDDPClustering`, for one release."""
