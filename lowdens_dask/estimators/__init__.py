"""scikit-learn compatible estimators, and the registry of methods by name."""

import importlib

#: public name -> the module of this package that defines it, imported on first use (PEP 562): a fit of one method
#: imports that method's module, not every estimator's
_DEFINED = {
    "auto_mode_rule": "_params",
    "build_summary": "_summary_pass",
    **dict.fromkeys(("PARAMETER_CONSTRAINTS", "check_constraints"), "_constraints"),
    **dict.fromkeys(("MDH", "MDHClustering", "MDHProjection"), "mdh"),
    **dict.fromkeys(("PDDPClustering", "PDDP"), "pddp"),
    **dict.fromkeys(("DePDDPClustering", "DePDDP"), "depddp"),
    **dict.fromkeys(("IPDDPClustering", "IPDDP"), "ipddp"),
    **dict.fromkeys(("NCutH", "NCutClustering", "NCutProjection"), "ncut"),
    **dict.fromkeys(("MCH", "MCClustering", "MCProjection"), "mc"),
    **dict.fromkeys(("SCPP", "SCPPClustering"), "scpp"),
    **dict.fromkeys(("LMSC", "LMSCClustering"), "lmsc"),
    **dict.fromkeys(("MSC", "MSCClustering"), "msc"),
    "SVMRelabelClustering": "svm_relabel",
    "SupportVectorClustering": "support_vector",
    "MDHClassifier": "mdh_classifier",
    **dict.fromkeys(("METHODS", "Method", "check_params", "get_method", "method_constraints"), "registry"),
}

__all__ = [
    "LMSC",
    "MCH",
    "MDH",
    "METHODS",
    "PARAMETER_CONSTRAINTS",
    "MSC",
    "SCPP",
    "DePDDPClustering",
    "IPDDPClustering",
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
    "PDDPClustering",
    "SCPPClustering",
    "SVMRelabelClustering",
    "SupportVectorClustering",
    "auto_mode_rule",
    "build_summary",
    "check_constraints",
    "check_params",
    "get_method",
    "method_constraints",
]


def __getattr__(name: str):
    module = _DEFINED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_DEFINED})
