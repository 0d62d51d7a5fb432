"""ClusterTree: a binary tree of separating hyperplanes (PPCI's cluster solution, without the data)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..pursuit import Hyperplane, find_hyperplane

SCHEMA_VERSION = 1


@dataclass
class Node:
    """One node of a :class:`ClusterTree`.

    A node's hyperplane (``v``, ``b`` and the values that describe it) is set once it has been
    computed; an internal node always has one, and a leaf may carry its would-be split. Points with
    ``v.x < b`` go to ``children[0]`` and the rest to ``children[1]``.
    """

    id: int
    parent: int | None
    depth: int
    size: float
    children: tuple[int, int] | None = None
    v: np.ndarray | None = None
    b: float | None = None
    method: str | None = None
    params: dict = field(default_factory=dict)
    fval: float | None = None
    relative_depth: float | None = None

    @property
    def is_leaf(self) -> bool:
        return self.children is None

    def set_hyperplane(self, method: str, hyperplane: Hyperplane) -> None:
        self.v = np.asarray(hyperplane.v, dtype=np.float64)
        self.b = float(hyperplane.b)
        self.method = method
        self.params = dict(hyperplane.params)
        self.fval = float(hyperplane.fval)
        self.relative_depth = float(hyperplane.relative_depth)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "parent": self.parent,
            "depth": self.depth,
            "size": self.size,
            "children": list(self.children) if self.children is not None else None,
        }
        if self.v is not None:
            out.update(
                v=[float(x) for x in self.v],
                b=self.b,
                method=self.method,
                params=self.params,
                fval=_json_float(self.fval),
                relative_depth=_json_float(self.relative_depth),
            )
        return out


def _json_float(x: float | None):
    return None if x is None or math.isnan(x) else float(x)


class ClusterTree:
    """A divisive cluster tree of hyperplanes. It stores no data rows.

    Node ids are stable: the root is 0, new nodes take the next free id, and pruning never
    renumbers. Leaves are labelled 0..K-1 in depth-first, left-to-right order.

    Parameters
    ----------
    n_features : int
        Dimension of the data the hyperplanes live in.
    method : str, default="mdh"
        Default split method for :meth:`split` ("mdh", "pddp" or "depddp").
    params : dict, optional
        Default parameters for that method.
    root_size : float, default=0
        Number (total weight) of training rows at the root.
    """

    def __init__(self, n_features: int, method: str = "mdh", params: dict | None = None, root_size: float = 0):
        self.n_features = int(n_features)
        self.method = method
        self.params = dict(params or {})
        self.nodes: dict[int, Node] = {0: Node(0, None, 0, float(root_size))}
        self._next_id = 1

    # ------------------------------------------------------------------ navigation
    @property
    def root(self) -> Node:
        return self.nodes[0]

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        """Nodes in depth-first, left-to-right order."""
        stack = [0]
        while stack:
            node = self.nodes[stack.pop()]
            yield node
            if node.children is not None:
                stack.extend(reversed(node.children))

    def leaves(self) -> list[Node]:
        """Leaves in label order."""
        return [node for node in self if node.is_leaf]

    @property
    def n_leaves(self) -> int:
        return len(self.leaves())

    def _node(self, node: int | Node) -> Node:
        node_id = node.id if isinstance(node, Node) else int(node)
        if node_id not in self.nodes:
            raise KeyError(f"The tree has no node {node_id}; its nodes are {sorted(self.nodes)}.")
        return self.nodes[node_id]

    # ------------------------------------------------------------------ editing
    def add_split(self, node: int | Node, method: str, hyperplane: Hyperplane, sizes: tuple[float, float]) -> Node:
        """Split a leaf with a computed hyperplane; returns the node. Children are new leaves."""
        node = self._node(node)
        if not node.is_leaf:
            raise ValueError(f"Node {node.id} is already split; prune it first.")
        node.set_hyperplane(method, hyperplane)
        ids = (self._next_id, self._next_id + 1)
        self._next_id += 2
        for child_id, size in zip(ids, sizes):
            self.nodes[child_id] = Node(child_id, node.id, node.depth + 1, float(size))
        node.children = ids
        return node

    def split(self, node: int | Node, X, *, method: str | None = None, **params) -> Node:
        """Split a leaf: compute its hyperplane from the rows of X that reach it (PPCI's tree_split).

        ``method`` and ``params`` override the tree's defaults (e.g. ``bandwidth``, ``alphas``).
        Raises ValueError if no valid split exists for the node.
        """
        node = self._node(node)
        if not node.is_leaf:
            raise ValueError(f"Only leaves can be split; node {node.id} has children {node.children}.")
        X = self._check_X(X)
        rows = self.apply(X) == node.id
        method = method or node.method or self.method
        merged = {**self.params, **params} if method == self.method else dict(params)
        hyperplane = find_hyperplane(method, X[rows], **merged)
        if not hyperplane.valid:
            raise ValueError(f"Node {node.id} ({int(rows.sum())} rows) has no valid {method} split.")
        below = X[rows] @ hyperplane.v < hyperplane.b
        return self.add_split(node, method, hyperplane, (float(below.sum()), float((~below).sum())))

    def prune(self, node: int | Node) -> Node:
        """Remove every descendant of an internal node, making it a leaf (PPCI's tree_prune).

        The node keeps its hyperplane as its would-be split; other ids are unchanged.
        """
        node = self._node(node)
        if node.is_leaf:
            raise ValueError(f"Node {node.id} is a leaf; there is nothing to prune.")
        stack = list(node.children)
        while stack:
            child = self.nodes.pop(stack.pop())
            if child.children is not None:
                stack.extend(child.children)
        node.children = None
        return node

    # ------------------------------------------------------------------ prediction
    def _check_X(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n_samples, {self.n_features}); got {X.shape}.")
        return X

    def apply(self, X) -> np.ndarray:
        """The id of the leaf each row of X reaches."""
        X = self._check_X(X)
        out = np.zeros(X.shape[0], dtype=np.int64)
        stack = [(0, np.arange(X.shape[0]))]
        while stack:
            node_id, rows = stack.pop()
            node = self.nodes[node_id]
            if node.is_leaf:
                out[rows] = node_id
                continue
            below = X[rows] @ node.v < node.b
            stack.append((node.children[0], rows[below]))
            stack.append((node.children[1], rows[~below]))
        return out

    def leaf_labels(self) -> dict[int, int]:
        """Map from leaf id to cluster label."""
        return {node.id: label for label, node in enumerate(self.leaves())}

    def predict(self, X) -> np.ndarray:
        """Cluster labels: route each row down the tree to its leaf."""
        ids = self.apply(X)
        lookup = self.leaf_labels()
        keys = np.fromiter(lookup.keys(), dtype=np.int64)
        vals = np.fromiter(lookup.values(), dtype=np.int64)
        order = np.argsort(keys)
        return vals[order][np.searchsorted(keys[order], ids)]

    # ------------------------------------------------------------------ export
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "n_features": self.n_features,
            "method": self.method,
            "params": _jsonable(self.params),
            "next_id": self._next_id,
            "nodes": [node.to_dict() for node in sorted(self.nodes.values(), key=lambda n: n.id)],
        }

    def to_json(self, **kwargs) -> str:
        """JSON text; floats are written with full precision so predictions round-trip bit for bit."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> ClusterTree:
        version = payload.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ValueError(f"Unsupported ClusterTree schema_version {version!r}; expected {SCHEMA_VERSION}.")
        tree = cls(payload["n_features"], payload.get("method", "mdh"), payload.get("params"))
        tree.nodes = {}
        for item in payload["nodes"]:
            node = Node(
                item["id"],
                item["parent"],
                item["depth"],
                item["size"],
                tuple(item["children"]) if item["children"] is not None else None,
            )
            if "v" in item:
                node.v = np.asarray(item["v"], dtype=np.float64)
                node.b = float(item["b"])
                node.method = item["method"]
                node.params = item["params"]
                node.fval = np.nan if item["fval"] is None else item["fval"]
                node.relative_depth = np.nan if item["relative_depth"] is None else item["relative_depth"]
            tree.nodes[node.id] = node
        tree._next_id = payload["next_id"]
        return tree

    @classmethod
    def from_json(cls, text: str) -> ClusterTree:
        return cls.from_dict(json.loads(text))

    def to_linkage(self) -> np.ndarray:
        """A scipy linkage matrix over the leaves (observation i = leaf label i).

        The merge height of an internal node is the height of its subtree, so heights are monotone
        and :func:`scipy.cluster.hierarchy.dendrogram` draws the tree as it is.
        """
        labels = self.leaf_labels()
        n_leaves = len(labels)
        if n_leaves < 2:
            raise ValueError("A linkage matrix needs at least two leaves.")
        cluster_id: dict[int, int] = dict(labels)
        height: dict[int, float] = {leaf: 0.0 for leaf in labels}
        count: dict[int, int] = {leaf: 1 for leaf in labels}
        rows = []
        for node in reversed(list(self)):  # children before parents
            if node.is_leaf:
                continue
            a, b = node.children
            height[node.id] = max(height[a], height[b]) + 1.0
            count[node.id] = count[a] + count[b]
            rows.append([cluster_id[a], cluster_id[b], height[node.id], count[node.id]])
            cluster_id[node.id] = n_leaves + len(rows) - 1
        return np.asarray(rows, dtype=np.float64)

    def __repr__(self) -> str:
        return f"ClusterTree(n_nodes={len(self.nodes)}, n_leaves={self.n_leaves}, method={self.method!r})"

    def describe(self) -> str:
        """A text rendering of the tree, one line per node."""
        labels = self.leaf_labels()
        lines = []
        for node in self:
            pad = "  " * node.depth
            if node.is_leaf:
                lines.append(f"{pad}leaf {node.id} -> cluster {labels[node.id]} (size {node.size:g})")
            else:
                lines.append(
                    f"{pad}node {node.id}: {node.method} split, size {node.size:g}, "
                    f"density {node.fval:.4g}, relative depth {node.relative_depth:.3g}"
                )
        return "\n".join(lines)


def _jsonable(params: dict) -> dict:
    """Tree-level defaults that JSON can hold; callables are dropped (they cannot be serialised)."""
    out = {}
    for key, value in params.items():
        if callable(value):
            continue
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, tuple):
            value = list(value)
        out[key] = value
    return out
