"""Projection pursuit: optimisation over directions for any projection index, continuation schedules, restarts."""

from .hyperplanes import (
    DEFAULT_ALPHAS,
    Hyperplane,
    best_of_starts,
    find_hyperplane,
    minimum_density_hyperplane,
    pursue,
    silverman_bandwidth,
)

__all__ = [
    "DEFAULT_ALPHAS",
    "Hyperplane",
    "best_of_starts",
    "find_hyperplane",
    "minimum_density_hyperplane",
    "pursue",
    "silverman_bandwidth",
]
