"""Projection indices: value, split point and derivative of a clustering criterion on 1-D projections.

Each index module registers its :class:`~.base.ProjectionIndex` in :data:`INDICES` under its method name.
"""

from . import ncut, principal, variance_ratio
from .base import INDICES, ProjectionIndex, Split, get_index, register_index
from .density import lowest_density_minimum
from .minimum_density import DEFAULT_ALPHAS, DensityMinimumIndex, MinimumDensityIndex, silverman_bandwidth

__all__ = [
    "DEFAULT_ALPHAS",
    "INDICES",
    "DensityMinimumIndex",
    "MinimumDensityIndex",
    "ProjectionIndex",
    "Split",
    "get_index",
    "lowest_density_minimum",
    "ncut",
    "principal",
    "register_index",
    "silverman_bandwidth",
    "variance_ratio",
]
