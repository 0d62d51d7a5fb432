"""The public cluster tree of hyperplanes."""

from .cluster_tree import SCHEMA_VERSION, ClusterTree, Node

__all__ = ["SCHEMA_VERSION", "ClusterTree", "Node"]
