"""ClusterTree: a binary tree of separating hyperplanes (PPCI's cluster solution, without the data)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import functools
import json
import math
import os
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .rules import HyperplaneRule, SplitRule, rule_from_dict

# Routing (compiled kernels), Dask, zarr and the backend are imported where rows are routed, so that a tree is read
# and described (a runs listing, ``lowdens runs show``) without them.
if TYPE_CHECKING:
    import dask.array as da
    import zarr

    from ..pursuit import Hyperplane
    from .routing import Router

#: Version 2: each node's split is a ``rule`` object and its index statistics one ``stats`` object;
#: version 1 (``v``, ``b``, ``fval``, ``relative_depth`` fields) is still read.
SCHEMA_VERSION = 2


def format_p_value(stats: dict) -> str:
    """A split test's p-value in words: ``p = 0.0123``, or ``p < 0.00025`` where it is the floor of the table it was
    read from (``stats["p_floor"]``, recorded with it: the table resolves no smaller p-value, so it is at most
    that). Trees recorded before the floor was print ``p = ``."""
    p, floor = stats["p_value"], stats.get("p_floor")
    return f"p < {floor:.3g}" if floor is not None and p <= floor * (1 + 1e-9) else f"p = {p:.3g}"


def format_stats(stats: dict, names: dict | None = None, digits: int = 4) -> list[str]:
    """A node's statistics in words, ``name value`` each (``names``: the words for some keys), the p-value by
    :func:`format_p_value` (after ``names["p_value"]`` where given), which says its floor: not a word of its own."""
    names = names or {}
    words = []
    for key, value in stats.items():
        if key == "p_value":
            words.append(" ".join([*([names[key]] if key in names else []), format_p_value(stats)]))
        elif key != "p_floor":
            words.append(f"{names.get(key, key)} {value:.{digits}g}")
    return words


@dataclass
class Node:
    """One node of a :class:`ClusterTree`.

    A node's split is set once it has been computed; an internal node always has one, and a leaf may
    carry its would-be split. ``rule`` routes rows (for a hyperplane, ``v.x < b`` to ``children[0]`` and
    the rest to ``children[1]``); ``stats`` holds the statistics the split's projection index records
    (``fval``: the index value at the split, e.g. the projected density for MDH and dePDDP, the
    normalised cut for NCut, the variance ratio for MC; ``relative_depth``: eq. 30 of the MDH paper for
    the density indices; ``gap`` for iPDDP). ``forced`` marks a split made without a valid split
    (``force_n_clusters``).
    """

    id: int
    parent: int | None
    depth: int
    size: float
    children: tuple[int, int] | None = None
    rule: SplitRule | None = None
    method: str | None = None
    params: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    forced: bool = False
    #: A leaf's cluster id once the tree's labels are stable (:meth:`ClusterTree.stabilise_labels`), else None.
    label: int | None = None
    #: The update (:attr:`ClusterTree.n_updates`) at which the node was created, and at which its split last changed.
    created: int = 0
    changed: int = 0

    @property
    def is_leaf(self) -> bool:
        return self.children is None

    @property
    def v(self) -> np.ndarray | None:
        """The hyperplane's unit normal (None without a hyperplane rule)."""
        return self.rule.v if isinstance(self.rule, HyperplaneRule) else None

    @property
    def b(self) -> float | None:
        """The hyperplane's offset (None without a hyperplane rule)."""
        return self.rule.b if isinstance(self.rule, HyperplaneRule) else None

    @property
    def fval(self) -> float:
        return float(self.stats.get("fval", math.nan))

    @property
    def relative_depth(self) -> float:
        return float(self.stats.get("relative_depth", math.nan))

    def set_hyperplane(self, method: str, hyperplane: Hyperplane) -> None:
        self.set_rule(method, HyperplaneRule(hyperplane.v, hyperplane.b), hyperplane.params, hyperplane.stats)

    def set_rule(self, method: str, rule: SplitRule, params: dict, stats: dict) -> None:
        """Set the node's split: its rule, the method that found it, its parameters and statistics."""
        self.rule = rule
        self.method = method
        self.params = dict(params)
        self.stats = {key: float(value) for key, value in stats.items()}

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "parent": self.parent,
            "depth": self.depth,
            "size": self.size,
            "children": list(self.children) if self.children is not None else None,
        }
        if self.label is not None:
            out["label"] = self.label
        if self.created or self.changed:
            out.update(created=self.created, changed=self.changed)
        if self.rule is not None:
            out.update(
                rule=self.rule.to_dict(),
                method=self.method,
                params=self.params,
                stats={key: _json_float(value) for key, value in self.stats.items()},
                forced=self.forced,
            )
        return out

    @classmethod
    def from_dict(cls, item: dict[str, Any], version: int) -> Node:
        children = tuple(item["children"]) if item["children"] is not None else None
        node = cls(item["id"], item["parent"], item["depth"], item["size"], children)
        node.label = item.get("label")
        node.created, node.changed = int(item.get("created", 0)), int(item.get("changed", 0))
        if version == 1 and "v" in item:  # v, b and the MDH statistics as fields of their own
            item = {
                **item,
                "rule": {"kind": HyperplaneRule.kind, "v": item["v"], "b": item["b"]},
                "stats": {"fval": item["fval"], "relative_depth": item["relative_depth"]},
            }
        if "rule" in item:
            node.rule = rule_from_dict(item["rule"])
            node.method = item["method"]
            node.params = item["params"]
            node.stats = {key: math.nan if value is None else float(value) for key, value in item["stats"].items()}
            node.forced = bool(item.get("forced", False))
        return node


def _json_float(x: float | None):
    return None if x is None or math.isnan(x) else float(x)


class ClusterTree:
    """A divisive cluster tree of hyperplanes. It stores no data rows.

    Node ids are stable: the root is 0, new nodes take the next free id, and pruning never
    renumbers. Leaves are labelled 0..K-1 in depth-first, left-to-right order, until the labels are made
    stable (:meth:`stabilise_labels`, as ``partial_fit`` does): each leaf then carries its cluster id, which
    edits and updates keep. A split leaf's id goes to the child that holds most of its weight and the other
    child gets a new one; a leaf made by merging (:meth:`merge_leaf`, :meth:`prune`) takes the id of its
    largest leaf; ids are never reused. ``n_updates`` counts the updates applied (``partial_fit``), and each
    node records the update at which it was ``created`` and ``changed`` last.

    Parameters
    ----------
    n_features : int
        Dimension of the data the hyperplanes live in.
    method : str, default="mdh"
        Default split method for :meth:`split`: a key of :data:`lowdens_dask.indices.INDICES`.
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
        self.n_updates = 0
        self._next_label: int | None = None  # the next cluster id, once the labels are stable

    @property
    def update(self) -> int:
        """Deprecated: the old name of :attr:`n_updates` (a count, not an action), for one release."""
        warnings.warn(
            "ClusterTree.update was renamed n_updates; update will be removed in the next release.",
            FutureWarning,
            stacklevel=2,
        )
        return self.n_updates

    @update.setter
    def update(self, value: int) -> None:
        warnings.warn(
            "ClusterTree.update was renamed n_updates; update will be removed in the next release.",
            FutureWarning,
            stacklevel=2,
        )
        self.n_updates = value

    # ------------------------------------------------------------------ stable cluster ids
    @property
    def labels_stable(self) -> bool:
        """Whether each leaf carries its cluster id (:meth:`stabilise_labels`)."""
        return self._next_label is not None

    def stabilise_labels(self) -> None:
        """Give each leaf its current label (depth-first order) as a cluster id that later edits keep."""
        if self.labels_stable:
            return
        leaves = self.leaves()
        for label, leaf in enumerate(leaves):
            leaf.label = label
        self._next_label = len(leaves)

    def _new_label(self) -> int:
        label = self._next_label
        self._next_label += 1
        return label

    def _largest_leaf_label(self, node: Node) -> int | None:
        """The cluster id of the largest leaf in the subtree of ``node`` (ties to the smaller id)."""
        leaves, stack = [], [node.id]
        while stack:
            current = self.nodes[stack.pop()]
            if current.children is None:
                leaves.append(current)
            else:
                stack.extend(current.children)
        return min(leaves, key=lambda leaf: (-leaf.size, leaf.label)).label

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
    def add_split(
        self,
        node: int | Node,
        method: str,
        hyperplane: Hyperplane,
        sizes: tuple[float, float],
        forced: bool = False,
        keep: int | None = None,
    ) -> Node:
        """Split a leaf with a computed hyperplane; returns the node. Children are new leaves. ``forced`` marks
        a split made although the hyperplane is not a valid split (``force_n_clusters``). With stable labels,
        child ``keep`` (0 or 1; default the larger) keeps the leaf's cluster id."""
        rule = HyperplaneRule(hyperplane.v, hyperplane.b)
        return self.add_rule_split(node, method, rule, sizes, hyperplane.params, hyperplane.stats, forced, keep)

    def add_rule_split(
        self,
        node: int | Node,
        method: str,
        rule: SplitRule,
        sizes: tuple[float, float],
        params: dict,
        stats: dict,
        forced: bool = False,
        keep: int | None = None,
    ) -> Node:
        """Split a leaf by any split rule (:mod:`lowdens_dask.tree.rules`); returns the node. ``keep``: as for
        :meth:`add_split`."""
        node = self._node(node)
        if not node.is_leaf:
            raise ValueError(f"Node {node.id} is already split; prune it first.")
        node.set_rule(method, rule, params, stats)
        node.forced = bool(forced)
        node.changed = self.n_updates
        ids = (self._next_id, self._next_id + 1)
        self._next_id += 2
        for child_id, size in zip(ids, sizes):
            self.nodes[child_id] = Node(child_id, node.id, node.depth + 1, float(size), created=self.n_updates)
            self.nodes[child_id].changed = self.n_updates
        node.children = ids
        if self.labels_stable:
            keep = int(sizes[1] > sizes[0]) if keep is None else int(keep)
            self.nodes[ids[keep]].label = node.label
            self.nodes[ids[1 - keep]].label = self._new_label()
            node.label = None
        return node

    #: What :meth:`split` calls to split a leaf: :func:`lowdens_dask.growth.split_leaf`, set by the growth layer
    #: when it is imported (``import lowdens_dask`` imports it). The model does not import the machine that edits it.
    leaf_splitter = None

    def split(self, node: int | Node, X, *, method: str | None = None, **params) -> Node:
        """Split a leaf: compute its hyperplane from the rows of X that reach it (PPCI's tree_split), by the
        grower, as a fit splits a leaf (:func:`lowdens_dask.growth.split_leaf`).

        ``method`` and ``params`` override the tree's defaults (e.g. ``bandwidth``, ``alphas``).
        Raises ValueError if no valid split exists for the node.
        """
        if ClusterTree.leaf_splitter is None:
            raise RuntimeError(
                "ClusterTree.split needs the growth layer: import lowdens_dask.growth first (lowdens_dask.ClusterTree "
                "and the estimators import it)."
            )
        return ClusterTree.leaf_splitter(self, node, X, method=method, **params)

    def prune(self, node: int | Node) -> Node:
        """Remove every descendant of an internal node, making it a leaf (PPCI's tree_prune).

        The node keeps its hyperplane as its would-be split; other ids are unchanged.
        """
        node = self._node(node)
        if node.is_leaf:
            raise ValueError(f"Node {node.id} is a leaf; there is nothing to prune.")
        label = self._largest_leaf_label(node) if self.labels_stable else None
        stack = list(node.children)
        while stack:
            child = self.nodes.pop(stack.pop())
            if child.children is not None:
                stack.extend(child.children)
        node.children, node.label, node.changed = None, label, self.n_updates
        return node

    def merge_leaf(self, leaf: int | Node) -> Node:
        """Undo the split that made a leaf: its parent takes the place of the leaf's sibling (the sibling's
        split, statistics and subtree, or its being a leaf); returns the parent. The leaf and the sibling's id
        are removed; other ids are unchanged, and the sibling's descendants move one level up."""
        leaf = self._node(leaf)
        if not leaf.is_leaf or leaf.parent is None:
            raise ValueError(f"Node {leaf.id} is not a leaf with a parent; only such a leaf can be merged back.")
        parent = self.nodes[leaf.parent]
        sibling = self.nodes[next(c for c in parent.children if c != leaf.id)]
        if sibling.is_leaf and self.labels_stable:  # the merged leaf takes the id of the larger
            parent.label = min((leaf, sibling), key=lambda n: (-n.size, n.label)).label
        del self.nodes[leaf.id], self.nodes[sibling.id]
        parent.children, parent.rule, parent.method = sibling.children, sibling.rule, sibling.method
        parent.params, parent.stats, parent.forced = sibling.params, sibling.stats, sibling.forced
        parent.changed = self.n_updates
        for child in sibling.children or ():
            self.nodes[child].parent = parent.id
        stack = list(parent.children or ())
        while stack:
            node = self.nodes[stack.pop()]
            node.depth -= 1
            stack.extend(node.children or ())
        return parent

    # ------------------------------------------------------------------ prediction
    def _check_X(self, X) -> np.ndarray:
        from .routing import as_routable

        X = as_routable(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n_samples, {self.n_features}); got {X.shape}.")
        return X

    def apply(self, X) -> np.ndarray:
        """The id of the leaf each row of X reaches.

        Rows go to child 1 of a hyperplane node when ``x @ v >= b`` in float64, as ``HyperplaneRule.side`` has
        it. The projections on every hyperplane are computed at once in X's own precision (float32 or
        float64), and rows within rounding error of a threshold are routed by the rule itself
        (:class:`~lowdens_dask.tree.routing.Router`).
        """
        from .routing import Router

        return Router(self).apply(self._check_X(X))

    def leaf_labels(self) -> dict[int, int]:
        """Map from leaf id to cluster label (the leaves' stable cluster ids, once :meth:`stabilise_labels`)."""
        if self.labels_stable:
            return {node.id: node.label for node in self.leaves()}
        return {node.id: label for label, node in enumerate(self.leaves())}

    def changed_nodes(self) -> list[int]:
        """Ids of the nodes created or changed by the latest update (none before the first)."""
        return [node.id for node in self if self.n_updates and node.changed == self.n_updates]

    def predict(self, X, *, storage_options: dict | None = None):
        """Cluster labels: route each row down the tree to its leaf.

        X may also be a Dask array, a zarr array or a zarr path / URL (``storage_options`` for fsspec), as the
        estimators' ``predict`` accepts: the labels are then a lazy Dask array with X's row chunks, -1 for rows
        with NaN or inf.
        """
        if isinstance(X, (str, os.PathLike)) or _is_dask_or_zarr(X):
            from ..backend import as_dask_array

            arr = as_dask_array(X, storage_options=storage_options)
            if arr.shape[1] != self.n_features:
                raise ValueError(f"X must have shape (n_samples, {self.n_features}); got {arr.shape}.")
            return self.predict_chunked(arr)
        return self._label_lookup()[self.apply(X)]

    def predict_chunked(self, arr: da.Array, out: zarr.Array | None = None):
        """Lazy labels of a row-chunked Dask array, -1 for rows with NaN or inf; with ``out``, the tasks that write
        them to its rows instead (:meth:`~lowdens_dask.backend.ChunkedData.label_rows`). The tree travels to the
        workers as JSON."""
        from ..backend import ChunkedData

        return ChunkedData(arr).label_rows(leaf_labels_from_json, self.to_json(), labels_nonfinite=True, out=out)

    def _label_lookup(self, nonfinite: int | None = None) -> np.ndarray:
        """Cluster label by node id (-1 for internal and free ids), with ``nonfinite`` appended last."""
        lookup = np.full(max(self.nodes) + 1 + (nonfinite is not None), -1, dtype=np.int64)
        for node_id, label in self.leaf_labels().items():
            lookup[node_id] = label
        if nonfinite is not None:
            lookup[-1] = nonfinite
        return lookup

    # ------------------------------------------------------------------ export
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "n_features": self.n_features,
            "method": self.method,
            "params": _jsonable(self.params),
            "next_id": self._next_id,
            **({"update": self.n_updates, "next_label": self._next_label} if self.labels_stable else {}),
            "nodes": [node.to_dict() for node in sorted(self.nodes.values(), key=lambda n: n.id)],
        }

    def to_json(self, **kwargs) -> str:
        """JSON text; floats are written with full precision so predictions round-trip bit for bit."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> ClusterTree:
        """A tree from :meth:`to_dict` output (schema version 2, or version 1)."""
        version = payload.get("schema_version")
        if version not in (1, SCHEMA_VERSION):
            raise ValueError(f"Unsupported ClusterTree schema_version {version!r}; expected 1 or {SCHEMA_VERSION}.")
        tree = cls(payload["n_features"], payload.get("method", "mdh"), payload.get("params"))
        tree.nodes = {}
        for item in payload["nodes"]:
            node = Node.from_dict(item, version)
            tree.nodes[node.id] = node
        tree._next_id = payload["next_id"]
        tree.n_updates = int(payload.get("update", 0))
        tree._next_label = payload.get("next_label")
        return tree

    @classmethod
    def from_json(cls, text: str) -> ClusterTree:
        return cls.from_dict(json.loads(text))

    def to_linkage(self) -> np.ndarray:
        """A scipy linkage matrix over the leaves (observation i = the leaf with the i-th smallest label).

        The merge height of an internal node is the height of its subtree, so heights are monotone
        and :func:`scipy.cluster.hierarchy.dendrogram` draws the tree as it is.
        """
        labels = self.leaf_labels()
        n_leaves = len(labels)
        if n_leaves < 2:
            raise ValueError("A linkage matrix needs at least two leaves.")
        cluster_id: dict[int, int] = {leaf: i for i, leaf in enumerate(sorted(labels, key=labels.get))}
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
        """A text rendering of the tree, one line per node.

        With ``n_clusters="auto"`` every node shows its split's dip test (``dip``, ``p_value``, ``n_test``, and
        the effective dimension ``d_eff`` its null was read at), and each leaf the test of the split it was not
        given (not significant or not substantial under ``"auto"``; under an integer ``n_clusters``, the count was
        reached).

        A node's size is "rows at fit": the rows (the sample weight, if weighted) it held when the tree was grown,
        in summary mode those of the microclusters routed to it. ``predict`` routes each row by itself, so the
        rows it sends to a leaf (a run's ``cluster_sizes``) can differ.
        """
        labels = self.leaf_labels()
        lines = []
        for node in self:
            pad = "  " * node.depth
            if node.is_leaf:
                test = ""
                if "dip" in node.stats:  # its would-be split, not made (auto: not significant or not substantial)
                    test = f"; its best split, not made: dip {node.stats['dip']:.4g}, {format_p_value(node.stats)}"
                lines.append(f"{pad}leaf {node.id} -> cluster {labels[node.id]} ({node.size:g} rows at fit{test})")
            else:
                stats = ", ".join(format_stats(node.stats))
                forced = " (forced)" if node.forced else ""
                lines.append(
                    f"{pad}node {node.id}: {node.method} split{forced}, {node.size:g} rows at fit"
                    + (f", {stats}" if stats else "")
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


def _is_dask_or_zarr(X) -> bool:
    """Whether X is a Dask or zarr array, asked without importing either (whoever holds one has imported it)."""
    dask_array, zarr_module = sys.modules.get("dask.array"), sys.modules.get("zarr")
    return (dask_array is not None and isinstance(X, dask_array.Array)) or (
        zarr_module is not None and isinstance(X, zarr_module.Array)
    )


@functools.lru_cache(maxsize=16)
def _labeller_from_json(text: str) -> tuple[Router, np.ndarray]:
    from .routing import Router

    tree = ClusterTree.from_json(text)
    return Router(tree), tree._label_lookup(nonfinite=-1)


def leaf_labels_from_json(x: np.ndarray, tree_json: str) -> np.ndarray:
    """``ClusterTree.from_json(tree_json).predict(x)`` with -1 for rows with NaN or inf, parsing each tree once
    per process: the labelling task of chunked data (the tree travels to the workers as JSON; the task imports
    only this layer). The chunk is read in its own precision, never copied."""
    router, lookup = _labeller_from_json(tree_json)
    return lookup[router.apply(x, nonfinite=len(lookup) - 1)]


def hyperplane_side(x: np.ndarray, v: np.ndarray, b: float) -> np.ndarray:
    """Side of the hyperplane, as int64 labels: 0 for ``x @ v < b``, 1 otherwise (a chunk task)."""
    return HyperplaneRule(v, b).side(x).astype(np.int64)
