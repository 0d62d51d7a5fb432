"""The cluster tree model: nodes with split rules, routing, export (the grower that edits it is
:mod:`lowdens_dask.growth`, the layer above)."""

from .cluster_tree import (
    SCHEMA_VERSION,
    ClusterTree,
    Node,
    format_p_value,
    format_stats,
    hyperplane_side,
    leaf_labels_from_json,
)
from .rules import RULES, HyperplaneRule, KernelExpansionRule, NearestCentreRule, SplitRule

__all__ = [
    "RULES",
    "SCHEMA_VERSION",
    "ClusterTree",
    "HyperplaneRule",
    "KernelExpansionRule",
    "NearestCentreRule",
    "Node",
    "SplitRule",
    "format_p_value",
    "format_stats",
    "hyperplane_side",
    "leaf_labels_from_json",
]
