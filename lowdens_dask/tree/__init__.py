"""The public cluster tree: nodes with split rules, and its grower."""

from .cluster_tree import SCHEMA_VERSION, ClusterTree, Node
from .rules import RULES, HyperplaneRule, SplitRule

__all__ = ["RULES", "SCHEMA_VERSION", "ClusterTree", "HyperplaneRule", "Node", "SplitRule"]
