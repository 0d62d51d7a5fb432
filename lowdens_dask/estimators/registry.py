"""The method registry: each method name (a projection index of :data:`lowdens_dask.indices.INDICES`) with its
estimators. The pipelines' ``--method`` reads it; a new method is one more entry."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from ._constraints import PARAMETER_CONSTRAINTS


class Method(NamedTuple):
    """The estimators of one method (None where the method has no such estimator)."""

    clustering: type  #: divisive estimator (``n_clusters``)
    hyperplane: type | None  #: one split
    projection: type | None  #: dimension reduction (``n_components``)


#: Each method's estimators by class name, as :class:`Method` holds them (this package imports each class's module
#: on first use); the method names are the projection indices' (``ClusterTree`` nodes record them).
_DEFINED: dict[str, tuple[str | None, ...]] = {
    "mdh": ("MDHClustering", "MDH", "MDHProjection"),
    "pddp": ("PDDPClustering", None, None),
    "depddp": ("DePDDPClustering", None, None),
    "ipddp": ("IPDDPClustering", None, None),
    "ncut": ("NCutClustering", "NCutH", "NCutProjection"),
    "mc": ("MCClustering", "MCH", "MCProjection"),
    # spectral connectivity: their own pursuit over l-dimensional projections of microclusters
    "scpp": ("SCPPClustering", "SCPP", None),
    "lmsc": ("LMSCClustering", "LMSC", None),
    # kernel and distance feature spaces: splits are KernelExpansionRule objects
    "msc": ("MSCClustering", "MSC", None),
    "svm-relabel": ("SVMRelabelClustering", None, None),
}


class _Methods(Mapping):
    """The registry, read-only: a method's estimators are imported on first use of that method, so that a fit of
    one does not import the modules of all (the spectral methods' alone take about half a second)."""

    def __init__(self):
        self._methods: dict[str, Method] = {}

    def __getitem__(self, name: str) -> Method:
        if name not in self._methods:
            package = importlib.import_module(__package__)
            self._methods[name] = Method(*(None if cls is None else getattr(package, cls) for cls in _DEFINED[name]))
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
    from ._params import validate_params  # the estimators' layer; this module stays light for the command line

    validate_params(estimator)


def method_constraints(name: str) -> dict:
    """The parameter constraints of the clustering estimator of the method ``name`` (its ``_parameter_constraints``,
    :data:`~lowdens_dask.estimators._constraints.PARAMETER_CONSTRAINTS`), without importing it: the ``lowdens``
    command checks a ``--param`` by them before it imports the library."""
    if name not in _DEFINED:
        raise ValueError(f"Unknown method {name!r}; known methods: {sorted(_DEFINED)}.")
    return PARAMETER_CONSTRAINTS[_DEFINED[name][0]]
