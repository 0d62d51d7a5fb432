"""scikit-learn compatible estimators, and the registry of methods by name."""

import importlib

#: public name -> the module of this package that defines it, imported on first use (PEP 562): a fit of one method
#: imports that method's module, not every estimator's
_DEFINED = {
    "auto_mode_rule": "_params",
    "build_summary": "_summary_pass",
    "check_scale_out_values": "_constraints",
    "check_method_values": "_constraints",
    **dict.fromkeys(("IPDDP", "PDDP", "DePDDP", "MDHClustering"), "divisive"),
    "MDH": "mdh",
    **dict.fromkeys(("MSC", "MSCClustering"), "msc"),
    **dict.fromkeys(("NCutClustering", "NCutH"), "ncut"),
    **dict.fromkeys(("MCProjection", "MDHProjection", "NCutProjection"), "projection"),
    **dict.fromkeys(("METHODS", "Method", "check_params", "get_method"), "registry"),
    "MDHClassifier": "semi_supervised",
    **dict.fromkeys(("LMSC", "SCPP", "LMSCClustering", "SCPPClustering"), "spectral"),
    **dict.fromkeys(("SupportVectorClustering", "SVMRelabelClustering"), "svm"),
    **dict.fromkeys(("MCH", "MCClustering"), "variance_ratio"),
}

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
    "check_scale_out_values",
    "check_method_values",
    "get_method",
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
