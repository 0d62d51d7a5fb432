"""The method registry: each method name (a projection index of :data:`lowdens_dask.indices.INDICES`) with its
estimators. The pipelines' ``--method`` reads it; a new method is one more entry."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import NamedTuple

from ._params import check_scale_out_params
from .divisive import IPDDP, PDDP, DePDDP, MDHClustering
from .mdh import MDH
from .msc import MSC, MSCClustering
from .ncut import NCutClustering, NCutH
from .projection import MCProjection, MDHProjection, NCutProjection
from .spectral import LMSC, SCPP, LMSCClustering, SCPPClustering
from .svm import SVMRelabelClustering
from .variance_ratio import MCH, MCClustering


class Method(NamedTuple):
    """The estimators of one method (None where the method has no such estimator)."""

    clustering: type  #: divisive estimator (``n_clusters``)
    hyperplane: type | None  #: one split
    projection: type | None  #: dimension reduction (``n_components``)


#: Methods by name; the names are the projection indices' (``ClusterTree`` nodes record them).
METHODS: dict[str, Method] = {
    "mdh": Method(MDHClustering, MDH, MDHProjection),
    "pddp": Method(PDDP, None, None),
    "depddp": Method(DePDDP, None, None),
    "ipddp": Method(IPDDP, None, None),
    "ncut": Method(NCutClustering, NCutH, NCutProjection),
    "mc": Method(MCClustering, MCH, MCProjection),
    # spectral connectivity: their own pursuit over l-dimensional projections of microclusters
    "scpp": Method(SCPPClustering, SCPP, None),
    "lmsc": Method(LMSCClustering, LMSC, None),
    # kernel and distance feature spaces: splits are KernelExpansionRule objects
    "msc": Method(MSCClustering, MSC, None),
    "svm-relabel": Method(SVMRelabelClustering, None, None),
}


def get_method(name: str) -> Method:
    """The estimators registered for ``name``; a clear error lists the known names."""
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"Unknown method {name!r}; known methods: {sorted(METHODS)}.") from None


def check_params(estimator) -> None:
    """Run the parameter checks that an estimator's ``fit`` runs first, without fitting: a bad value is a
    ``ValueError`` that names the parameter (so a pipeline can refuse it before it starts any work)."""
    estimator._check_params()
    if hasattr(estimator, "nonfinite"):  # estimators that also take Dask and zarr input
        check_scale_out_params(estimator)
