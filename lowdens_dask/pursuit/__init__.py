"""Projection pursuit: optimisation over directions, continuation schedules, hyperplane finders."""

from .hyperplanes import (
    DEFAULT_ALPHAS,
    SPLITTERS,
    Hyperplane,
    best_of_starts,
    depddp_hyperplane,
    find_hyperplane,
    minimum_density_hyperplane,
    pddp_hyperplane,
    silverman_bandwidth,
)

__all__ = [
    "DEFAULT_ALPHAS",
    "SPLITTERS",
    "Hyperplane",
    "best_of_starts",
    "depddp_hyperplane",
    "find_hyperplane",
    "minimum_density_hyperplane",
    "pddp_hyperplane",
    "silverman_bandwidth",
]
