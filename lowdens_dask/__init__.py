"""lowdens-dask: low-density-separation clustering with hyperplanes, in memory and at scale.

Layers, each using only the one below: backend (data) -> kernels -> indices -> pursuit -> tree ->
estimators.
"""

# SPDX-License-Identifier: BSD-3-Clause

from .estimators import (
    IPDDP,
    MCH,
    MDH,
    METHODS,
    PDDP,
    DePDDP,
    MCClustering,
    MCProjection,
    MDHClustering,
    MDHProjection,
    NCutClustering,
    NCutH,
    NCutProjection,
)
from .tree import ClusterTree

__version__ = "0.1.0"

__all__ = [
    "IPDDP",
    "MCH",
    "MDH",
    "METHODS",
    "PDDP",
    "ClusterTree",
    "DePDDP",
    "MCClustering",
    "MCProjection",
    "MDHClustering",
    "MDHProjection",
    "NCutClustering",
    "NCutH",
    "NCutProjection",
    "__version__",
]
