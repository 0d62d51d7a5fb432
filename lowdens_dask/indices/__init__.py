"""Projection indices: value, split point and derivative of an index on 1-D projections."""

from .density import DensitySplit, MinimumDensityIndex, lowest_density_minimum

__all__ = ["DensitySplit", "MinimumDensityIndex", "lowest_density_minimum"]
