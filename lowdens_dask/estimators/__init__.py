"""scikit-learn compatible estimators, and the registry of methods by name."""

from ._params import auto_mode_rule
from ._summary_pass import build_summary
from .divisive import IPDDP, PDDP, DePDDP, MDHClustering
from .mdh import MDH
from .msc import MSC, MSCClustering
from .ncut import NCutClustering, NCutH
from .projection import MCProjection, MDHProjection, NCutProjection
from .registry import METHODS, Method, check_params, get_method
from .semi_supervised import MDHClassifier
from .spectral import LMSC, SCPP, LMSCClustering, SCPPClustering
from .svm import SupportVectorClustering, SVMRelabelClustering
from .variance_ratio import MCH, MCClustering

__all__ = [
    "auto_mode_rule",
    "build_summary",
    "IPDDP",
    "LMSC",
    "MCH",
    "MDH",
    "METHODS",
    "MSC",
    "PDDP",
    "SCPP",
    "DePDDP",
    "LMSCClustering",
    "MCClustering",
    "MCProjection",
    "MDHClassifier",
    "MDHClustering",
    "MDHProjection",
    "MSCClustering",
    "Method",
    "NCutClustering",
    "NCutH",
    "NCutProjection",
    "SCPPClustering",
    "SVMRelabelClustering",
    "SupportVectorClustering",
    "check_params",
    "get_method",
]
