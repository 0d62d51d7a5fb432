"""scikit-learn compatible estimators."""

from .divisive import PDDP, DePDDP, MDHClustering
from .mdh import MDH

__all__ = ["MDH", "PDDP", "DePDDP", "MDHClustering"]
