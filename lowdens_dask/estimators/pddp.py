"""PDDPClustering: Principal Direction Divisive Partitioning (Boley, 1998)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections.abc import Callable

from sklearn.utils import deprecated

from ._constraints import PARAMETER_CONSTRAINTS
from .divisive import (
    _DivisiveClustering,
    _scatter,
    _size,
)


class PDDPClustering(_DivisiveClustering):
    """Principal Direction Divisive Partitioning (Boley, Data Min. Knowl. Discov. 2(4), 1998).

    Each split projects the node onto its first principal component and cuts at the mean.
    ``n_clusters=2`` gives a single split.

    Parameters
    ----------
    n_clusters : int, None or "auto", default=8
    leaf_order : {"scatter", "size"}, their "-only" forms, or callable, default="scatter"
        Boley's rule splits the leaf with the largest scatter (sum of squared distances to its mean); significant
        splits first, as for :class:`~lowdens_dask.MDHClustering`.
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

    _method = "pddp"
    _split_indices = {"scatter": _scatter, "size": _size}

    _parameter_constraints = PARAMETER_CONSTRAINTS["PDDPClustering"]

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        leaf_order: str | Callable = "scatter",
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
        return {}


@deprecated(
    "PDDP was renamed PDDPClustering (the divisive estimators are all named ...Clustering); PDDP will be removed in the next release."
)
class PDDP(PDDPClustering):
    """Deprecated: the old name of :class:`PDDPClustering`, for one release."""
