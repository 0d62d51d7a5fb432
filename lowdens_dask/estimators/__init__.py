"""scikit-learn compatible estimators, and the registry of methods by name."""

from .divisive import IPDDP, PDDP, DePDDP, MDHClustering
from .mdh import MDH
from .ncut import NCutClustering, NCutH
from .projection import MCProjection, MDHProjection, NCutProjection
from .registry import METHODS, Method, get_method
from .spectral import LMSC, SCPP, LMSCClustering, SCPPClustering
from .variance_ratio import MCClustering, MCH

__all__ = [
    "IPDDP",
    "LMSC",
    "LMSCClustering",
    "MCH",
    "MDH",
    "METHODS",
    "PDDP",
    "SCPP",
    "SCPPClustering",
    "DePDDP",
    "MCClustering",
    "MCProjection",
    "MDHClustering",
    "MDHProjection",
    "Method",
    "NCutClustering",
    "NCutH",
    "NCutProjection",
    "get_method",
]
