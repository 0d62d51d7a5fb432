"""lowdens-dask: low-density-separation clustering with hyperplanes, in memory and at scale.

Layers, each importing only the layers below it (``tests/test_layers.py`` checks it, and that no import circle
exists): kernels -> backend -> indices -> pursuit -> tree -> growth -> estimators -> pipelines (the
``lowdens_pipelines`` package); ``lowdens_dask.plots`` (matplotlib) draws fitted trees.

The public names are imported on first use (PEP 562): a Dask worker that runs a chunk task imports only
the layers that task needs, not scikit-learn and the estimators (about 90 MB less per worker process).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: public name -> the module that defines it
_PUBLIC = {
    **{
        name: "lowdens_dask.estimators"
        for name in (
            "LMSC",
            "LMSCClustering",
            "MCH",
            "MDH",
            "MDHClassifier",
            "MSC",
            "MSCClustering",
            "METHODS",
            "DePDDPClustering",
            "IPDDPClustering",
            "PDDPClustering",
            "MCClustering",
            "MCProjection",
            "MDHClustering",
            "MDHProjection",
            "NCutClustering",
            "NCutH",
            "NCutProjection",
            "SCPP",
            "SCPPClustering",
            "SVMRelabelClustering",
            "SupportVectorClustering",
            "auto_mode_rule",
            "build_summary",
            "check_params",
        )
    },
    "ClusterTree": "lowdens_dask.growth",  # the model with its split(), which the growth layer provides
    "progress_to": "lowdens_dask.estimators.progress",
    "ClusterSummary": "lowdens_dask.backend.cluster_summary",
    # plots import matplotlib: only on first use of one of these names
    **{
        name: "lowdens_dask.plots"
        for name in ("plot_dendrogram", "plot_node", "plot_shares", "plot_tree", "save_plots")
    },
}

#: Old names, importable for one release with a FutureWarning (not in ``__all__``).
_DEPRECATED = {name: "lowdens_dask.estimators" for name in ("DePDDP", "IPDDP", "PDDP")}

__all__ = [*sorted(_PUBLIC), "__version__"]


def __getattr__(name: str):
    module = _PUBLIC.get(name) or _DEPRECATED.get(name)
    if module is None:
        raise AttributeError(f"module 'lowdens_dask' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
