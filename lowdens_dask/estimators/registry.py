"""The method registry: each method name (a projection index of :data:`lowdens_dask.indices.INDICES`) with its
estimators. The pipelines' ``--method`` reads it; a new method is one more entry."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from ._constraints import check_scale_out_params


class Method(NamedTuple):
    """The estimators of one method (None where the method has no such estimator)."""

    clustering: type  #: divisive estimator (``n_clusters``)
    hyperplane: type | None  #: one split
    projection: type | None  #: dimension reduction (``n_components``)


#: Where each method's estimators are defined (module of this package, class), as :class:`Method` holds them; the
#: names are the projection indices' (``ClusterTree`` nodes record them).
_DEFINED: dict[str, tuple[tuple[str, str] | None, ...]] = {
    "mdh": (("divisive", "MDHClustering"), ("mdh", "MDH"), ("projection", "MDHProjection")),
    "pddp": (("divisive", "PDDP"), None, None),
    "depddp": (("divisive", "DePDDP"), None, None),
    "ipddp": (("divisive", "IPDDP"), None, None),
    "ncut": (("ncut", "NCutClustering"), ("ncut", "NCutH"), ("projection", "NCutProjection")),
    "mc": (("variance_ratio", "MCClustering"), ("variance_ratio", "MCH"), ("projection", "MCProjection")),
    # spectral connectivity: their own pursuit over l-dimensional projections of microclusters
    "scpp": (("spectral", "SCPPClustering"), ("spectral", "SCPP"), None),
    "lmsc": (("spectral", "LMSCClustering"), ("spectral", "LMSC"), None),
    # kernel and distance feature spaces: splits are KernelExpansionRule objects
    "msc": (("msc", "MSCClustering"), ("msc", "MSC"), None),
    "svm-relabel": (("svm", "SVMRelabelClustering"), None, None),
}


class _Methods(Mapping):
    """The registry, read-only: a method's estimators are imported on first use of that method, so that a fit of
    one does not import the modules of all (the spectral methods' alone take about half a second)."""

    def __init__(self):
        self._methods: dict[str, Method] = {}

    def __getitem__(self, name: str) -> Method:
        if name not in self._methods:
            self._methods[name] = Method(
                *(
                    None if where is None else getattr(importlib.import_module(f"{__package__}.{where[0]}"), where[1])
                    for where in _DEFINED[name]
                )
            )
        return self._methods[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_DEFINED)

    def __len__(self) -> int:
        return len(_DEFINED)

    def __repr__(self) -> str:
        return f"METHODS({', '.join(_DEFINED)})"


#: Methods by name (a read-only mapping: name -> :class:`Method`).
METHODS: Mapping[str, Method] = _Methods()


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
