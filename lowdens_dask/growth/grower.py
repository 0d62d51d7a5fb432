"""The tree grower: :func:`grow` is the one place where a :class:`ClusterTree`'s leaves are chosen, its splits
are found and judged, and the tree changes. It serves every tree: a fit (in memory, in summary mode, in exact
mode; every divisive estimator, SCPP, LMSC, MSC and SVM-relabel, each through its
:class:`~lowdens_dask.growth.splitter.Splitter`) and an update (``partial_fit``). A fit is an update of a one-leaf
tree.

Each step at a node answers one of:

- **keep** (updates only): the node's rule stays as it is while it still lies in low density
  (:mod:`lowdens_dask.growth.revision`) and, for ``n_clusters="auto"``, its test is still significant;
- **re-pursue** (updates only): the split found from the node's current rule replaces it;
- **merge** (updates, where :attr:`GrowthRules.merge` allows it): a node with neither a kept nor a valid
  re-pursued rule becomes a leaf, with the cluster id of its largest leaf; and where a leaf count is asked
  (an integer ``n_clusters``) and exceeded, the latest splits are merged back;
  after a summary-mode fit, a split that made a leaf no row reaches is merged back too
  (:func:`merge_unreached_leaves`, a safety net: the growth itself refuses such splits, below);
- **split**: the leaf that :attr:`GrowthRules.leaf_order` prefers among the leaves with a valid split is split (for an
  integer ``n_clusters`` with a ranking test, ``SplitTest.required`` False, leaves whose split is significant first:
  the one split decision of ``"auto"`` and a told K), until
  :attr:`GrowthRules.n_clusters` leaves exist or none has a valid split. With ``lazy`` (a leaf order that needs
  no split, such as size) a leaf's split is found only when it is ranked first, which gives the same tree as
  finding every leaf's. With ``force`` (``force_n_clusters``), when no leaf has a valid split and fewer than
  ``n_clusters`` leaves exist, the leaf whose best split the splitter prefers (``forced_score``; ties to the leaf
  the leaf order prefers) is split anyway (the node is marked ``forced``). A split that would leave one side
  without any of the data's ``reach`` rows (summary mode: the microclusters' representative rows, which the label
  pass routes) is not made: a cluster no row reaches would be undone after the fit, one short of ``n_clusters``.
  The leaf is set aside and growth goes on with the others (counted in ``Growth.n_unreached``).

The splits found for the final leaves that were valid, or tested (``"auto"``), are kept on them as their
would-be splits. In an update, the child holding most of a split leaf's old weight (rows seen before the update)
keeps its cluster id, and the report says what happened at every node and how the partition drifted
(:mod:`lowdens_dask.growth.drift`).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .._warnings import warn
from ..pursuit.significance import SplitTest, is_significant, required
from ..tree.cluster_tree import ClusterTree, Node
from ..tree.rules import HyperplaneRule
from .drift import shares
from .revision import KEEP_DIP_LOSS, KEEP_REROUTED, movement, oriented, still_low
from .splitter import Candidate, Splitter


def _p_value(stats: dict) -> dict:
    """An update report's record of a node's test: its ``p_value`` (None without one) and the table's floor it was
    read against (``p_floor``, where recorded), so that a p-value at the floor is reported as below it."""
    return {"p_value": stats.get("p_value"), **({"p_floor": stats["p_floor"]} if "p_floor" in stats else {})}


def by_size(node: Node, data, found) -> float:
    """The default leaf order: the largest leaf first."""
    return node.size


class GrowthRules(NamedTuple):
    """How a tree grows, the same in a fit and in an update.

    ``n_clusters``: the leaves to grow to (an integer ``n_clusters``), or the cap (``"auto"`` and None: None for
    no cap). ``leaf_order(node, data, found)`` scores a leaf, larger first (the ``split_index`` parameter) (``found`` is the splitter's own result, None
    for a leaf not yet searched when ``lazy``). ``merge``: an update may merge back splits that are no longer
    valid (``"auto"`` and None); with an integer ``n_clusters`` the leaf count is the user's and splits only move.
    ``test``: the significance test of ``"auto"`` (a split must pass it), or of an integer ``n_clusters``
    (``required`` False: it ranks the leaves, significant splits first), or None."""

    n_clusters: int | None
    leaf_order: Callable = by_size
    lazy: bool = False
    force: bool = False
    merge: bool = False
    test: SplitTest | None = None


class History(NamedTuple):
    """What an update knows of the points it grows on: their original coordinates and per-dimension spread (the
    tree's coordinates), each point's weight before the update (0 for new points), and the original coordinates
    of the summary's sample rows (the data's ``sample``, by its ``index``; None without a sample)."""

    original: np.ndarray
    spread: np.ndarray
    old_weights: np.ndarray
    sample: np.ndarray | None = None


class Growth(NamedTuple):
    """What :func:`grow` returns."""

    tree: ClusterTree
    n_leaves: int
    n_forced: int  #: splits made by ``force``
    root: Candidate | None  #: the root's best split found in this growth (valid or not), if one was searched
    n_evaluations: int  #: objective evaluations of every split found
    report: dict | None  #: an update's report (None for a fit)
    n_unreached: int = 0  #: splits not made: a side no ``reach`` row would reach
    n_microclusters: int | None = None  #: summary mode: the microclusters grown on (set by the estimator)


def grow(
    tree: ClusterTree,
    data,
    splitter: Splitter,
    rules: GrowthRules,
    *,
    history: History | None = None,
    progress: Callable[[int], None] | None = None,
    leaf: int | None = None,
) -> Growth:
    """Grow ``tree`` on ``data`` (the rows that reach its root, in the splitter's form) by ``rules``.

    A fit passes a one-leaf tree (``ClusterTree(n_features, method, params, root_size)``) and no history. An update
    passes the grown tree, the merged summary as ``data`` (:class:`~lowdens_dask.backend.InMemoryData` in the
    splitter's frame) and its ``history``; the tree's ``update`` is counted up and its report returned. With
    ``leaf``, only that leaf grows, from ``data``, the rows that reach it (:meth:`ClusterTree.split`)."""
    report_nodes: list[dict] = []
    splitter.begin(data)
    if leaf is not None:
        leaves = {leaf: data}
    elif history is None:
        if tree.n_leaves != 1:
            raise ValueError("grow: a tree with splits grows from the history of its points (an update).")
        leaves = {tree.root.id: data}
    else:
        tree.stabilise_labels()
        tree.n_updates += 1
        n_before = tree.n_leaves
        old_labels = tree.predict(history.original)
        leaves = {}
        _revise(tree, tree.root, data, splitter, rules, history, leaves, report_nodes)
    keep = None if history is None else _keep_by_old_weight(history.old_weights)
    reach = getattr(data, "reach", None)
    n_leaves, n_forced, root, n_evaluations, n_unreached = _split_leaves(
        tree, leaves, splitter, rules, keep, report_nodes, progress, reach
    )
    if history is None:
        return Growth(tree, n_leaves, n_forced, root, n_evaluations, None, n_unreached)
    _merge_latest(tree, rules, report_nodes)
    leaf_of = tree.apply(history.original)
    _match_old_ids(tree, old_labels, leaf_of, history.old_weights, report_nodes)
    points = {leaf.id: np.flatnonzero(leaf_of == leaf.id) for leaf in tree.leaves()}
    new_weights = np.maximum(data.weights - history.old_weights, 0.0)
    report = {
        "update": tree.n_updates,
        "n_clusters_before": n_before,
        "n_clusters": tree.n_leaves,
        "nodes": [{k: v for k, v in record.items() if v is not None} for record in report_nodes],
        **shares(tree, points, history.old_weights, new_weights),
    }
    return Growth(tree, tree.n_leaves, n_forced, root, n_evaluations, report, n_unreached)


def _split_leaves(tree, leaves: dict, splitter, rules: GrowthRules, keep, report_nodes, progress, reach=None):
    """Split the leaves by ``rules`` (module docstring): ``(leaves, forced splits, root's candidate, evaluations,
    splits refused because a side no ``reach`` row reaches)``."""
    found: dict[int, Candidate | None] = {}
    stuck: set[int] = set()  # leaves whose split cannot be made on their rows
    target = math.inf if rules.n_clusters is None else rules.n_clusters
    n_leaves, n_forced, n_unreached = tree.n_leaves, 0, 0
    reached = None if reach is None or not len(reach) else tree.apply(reach)  # the leaf each reach row is in

    def compute(leaf: int) -> None:
        if leaf not in found:
            found[leaf] = splitter.find(leaf, leaves[leaf])

    ranked = rules.test is not None and not rules.test.required  # an integer n_clusters: significant splits first
    lazy = rules.lazy and not ranked  # ranking needs every leaf's split

    def score(leaf: int) -> tuple[bool, float, int]:
        c = found.get(leaf)
        value = float(rules.leaf_order(tree.nodes[leaf], leaves[leaf], None if c is None else c.found))
        first = not ranked or (
            c is not None
            and is_significant(c.stats, rules.test)
            and c.stats.get("smaller_side", math.inf) >= splitter.least_cluster
        )
        return first, (-math.inf if math.isnan(value) else value), -leaf  # ties: the lowest id

    def forced_score(leaf: int) -> tuple[float, tuple[bool, float, int]]:
        return splitter.forced_score(found[leaf]), score(leaf)

    def valid(leaf: int) -> bool:
        return found[leaf] is not None and found[leaf].valid

    while n_leaves < target:
        if not lazy:
            for leaf in leaves:
                compute(leaf)
        candidates = [leaf for leaf in leaves if leaf not in stuck and (leaf not in found or valid(leaf))]
        forced = not candidates
        if forced:
            if not rules.force:
                break
            for leaf in leaves:
                compute(leaf)
            candidates = [leaf for leaf in leaves if leaf not in stuck and found[leaf] is not None]
            if not candidates:
                break
        leaf = max(candidates, key=forced_score if forced else score)
        compute(leaf)
        if not (valid(leaf) or forced):
            continue
        cut = splitter.cut(leaf, leaves[leaf], found[leaf], forced)
        sides = None
        if cut is not None and reached is not None:
            mine = np.flatnonzero(reached == leaf)
            sides = cut.rule.side(reach[mine]).astype(bool)
            if sides.all() or not sides.any():  # a cluster no row would reach: set the leaf aside
                cut, n_unreached = None, n_unreached + 1
        if cut is None:  # a side below the least size, or within rounding of the other: not split, not valid
            stuck.add(leaf)
            found[leaf] = found[leaf]._replace(valid=False)
            continue
        label = tree.nodes[leaf].label
        side = None if keep is None else keep(cut.parts)
        node = tree.add_rule_split(
            leaf, splitter.method, cut.rule, cut.sizes, cut.params, cut.stats, forced=forced, keep=side
        )
        if sides is not None:
            reached[mine] = np.where(sides, node.children[1], node.children[0])
        del leaves[leaf]
        leaves.update(zip(node.children, cut.parts))
        splitter.made(leaf, node.children, cut)
        n_leaves += 1
        n_forced += forced
        if keep is not None:
            report_nodes.append(
                {"node": leaf, "action": "split", "label": label,
                 "new_label": tree.nodes[node.children[1 - side]].label, **_p_value(cut.stats)}
            )  # fmt: skip
        if progress is not None:
            progress(n_leaves)
        if n_leaves < target:
            found.update(splitter.prefetch({c: leaves[c] for c in node.children}, eager=not lazy))
    for leaf, c in found.items():  # keep the found would-be splits (and auto's tests) on the final leaves
        if c is not None and (c.valid or splitter.tested) and leaf in leaves:
            tree.nodes[leaf].set_rule(splitter.method, c.rule, c.params, c.stats)
    n_evaluations = sum(c.n_evaluations for c in found.values() if c is not None)
    return n_leaves, n_forced, found.get(tree.root.id), n_evaluations, n_unreached


def _keep_by_old_weight(old_weights: np.ndarray):
    """Which child keeps a split leaf's cluster id: the one with most of its old weight (else the larger)."""

    def keep(parts) -> int:
        old = [float(old_weights[part.index].sum()) for part in parts]
        return int(old[1] > old[0]) if max(old) > 0 else int(parts[1].total_weight > parts[0].total_weight)

    return keep


def _revise(tree, node: Node, data, splitter, rules: GrowthRules, history: History, leaves: dict, report: list):
    """Keep, re-pursue or merge ``node``'s split on the points that reach it (``data``), then its children's;
    the leaves reached are collected in ``leaves``."""
    node.size = float(data.total_weight)
    if node.is_leaf:
        leaves[node.id] = data
        return
    rows = data.index
    X, w = history.original[rows], data.weights
    found = splitter.find(node.id, data, node)
    current = node.rule.side(X)
    record = {"node": node.id}
    in_low_density, stats = True, {}
    if found is not None:
        found = found._replace(rule=oriented(found.rule, X, w, current))
        record.update(movement(node.rule, found.rule, X, w, current))
        if isinstance(node.rule, HyperplaneRule):  # a hyperplane: is the density at it still as low?
            in_low_density = still_low(node.rule, found.rule, X, w, history.spread[rows])
        elif record["rerouted"] > KEEP_REROUTED:  # a rule with no threshold: does it still separate as well?
            stats = splitter.rule_test(node.id, data, node.rule)
            new = splitter.rule_test(node.id, data, found.rule)
            in_low_density = stats["dip"] >= (1.0 - KEEP_DIP_LOSS) * new["dip"]
    valid = found is not None and found.valid
    test = required(rules.test)
    if in_low_density and test is not None and not stats:  # is the current rule still significant?
        stats = splitter.rule_test(node.id, data, node.rule)
    if in_low_density and is_significant(stats, test) or not (valid or rules.merge):
        node.stats.update(stats)
        record.update(action="kept", **_p_value(node.stats))
    elif valid:
        node.set_rule(splitter.method, found.rule, found.params, found.stats)
        node.changed = tree.n_updates
        record.update(action="re-pursued", **_p_value(found.stats))
        current = node.rule.side(X)
    else:  # neither the current rule nor a re-pursued one is a valid (significant) split: merge it back
        _resize(tree, node, X, w)  # the id kept is that of the now largest leaf
        tree.prune(node)
        record.update(action="merged", label=node.label, **_p_value(stats))
        report.append(record)
        leaves[node.id] = data
        return
    report.append(record)
    parts = data.take(~current), data.take(current)
    if data.sample is not None:  # the sample rows go where the rule sends them
        on_side = node.rule.side(history.sample[data.sample.index])
        parts[0].sample, parts[1].sample = data.sample.take(~on_side), data.sample.take(on_side)
    for child, part in zip(node.children, parts):
        _revise(tree, tree.nodes[child], part, splitter, rules, history, leaves, report)


def _match_old_ids(tree: ClusterTree, old_labels: np.ndarray, leaf_of: np.ndarray, old_weights, report: list) -> None:
    """Give each cluster id of the tree before the update to the leaf that now holds most of that id's old weight,
    largest overlaps first, one id per leaf; a leaf left without one keeps its own where no other leaf took it,
    else gets an id this update made and no leaf kept, or a new one.
    A re-pursued split can send a subtree's old clusters down other branches than their ids took (a new component
    between two old ones is cut off first, and they are split again below it): their rows keep their ids. The
    update report's labels follow."""
    leaves = tree.leaves()
    index = {leaf.id: i for i, leaf in enumerate(leaves)}
    ids = np.unique(old_labels)
    overlap = np.zeros((len(ids), len(leaves)))
    np.add.at(overlap, (np.searchsorted(ids, old_labels), [index[leaf] for leaf in leaf_of]), old_weights)
    given: dict[int, int] = {}  # leaf position -> old id
    for flat in np.argsort(-overlap, axis=None, kind="stable"):
        i, j = divmod(int(flat), len(leaves))
        if overlap[i, j] <= 0:
            break
        if j not in given and int(ids[i]) not in given.values():
            given[j] = int(ids[i])
    old_ids, taken = set(ids.tolist()), set(given.values())
    # a leaf given no old id keeps its own unless another leaf took it (an id whose old weight decay took away)
    kept = {j: leaf.label for j, leaf in enumerate(leaves) if j not in given and leaf.label not in taken}
    # ids made by this update that no leaf keeps go first to the leaves still without one (none is skipped)
    free = sorted(leaf.label for j, leaf in enumerate(leaves) if leaf.label not in old_ids and j not in kept)
    renamed = {}
    for j, leaf in enumerate(leaves):
        label = given.get(j, kept.get(j))
        if label is None:
            label = free.pop(0) if free else tree._new_label()
        if label != leaf.label:
            renamed[leaf.label] = label
            leaf.label = label
    for record in report:
        for key in ("label", "new_label"):
            if record.get(key) in renamed:
                record[key] = renamed[record[key]]


def _resize(tree: ClusterTree, node: Node, X: np.ndarray, w: np.ndarray) -> None:
    """Set the sizes of ``node``'s subtree to the weight of the points (``X``, ``w``) that reach each node."""
    node.size = float(w.sum())
    if not node.is_leaf:
        side = node.rule.side(X)
        for child, part in zip(node.children, (~side, side)):
            _resize(tree, tree.nodes[child], X[part], w[part])


def _merge_latest(tree: ClusterTree, rules: GrowthRules, report: list) -> None:
    """With an integer ``n_clusters`` below the tree's leaves (``set_params`` between updates), merge back the
    latest splits (of two leaves) until the tree has that many."""
    if rules.merge or rules.n_clusters is None:
        return
    while tree.n_leaves > rules.n_clusters:
        node = max(
            (n for n in tree if not n.is_leaf and all(tree.nodes[c].is_leaf for c in n.children)),
            key=lambda n: (n.changed, n.id),
        )
        tree.prune(node)
        report.append({"node": node.id, "action": "merged", "label": node.label})


def merge_unreached_leaves(tree: ClusterTree, representatives: np.ndarray) -> int:
    """Undo each split of ``tree`` that made a leaf no microcluster's representative row reaches (with a warning);
    returns how many.

    A leaf of a tree grown on microclusters may hold only microclusters whose rows lie elsewhere (a microcluster
    averaging rows of two groups lies between them): no row would be labelled there, and ``n_clusters_`` would
    count a cluster that ``labels_`` never holds. Each microcluster's representative is its member row nearest to
    its mean, routed as the label pass routes rows: a leaf it reaches gets that row's label, so every leaf left
    is a label of ``labels_``."""
    if representatives is None or not len(representatives):
        return 0
    merged = 0
    while tree.n_leaves > 1:
        reached = set(np.unique(tree.apply(representatives)).tolist())
        unreached = [leaf for leaf in tree.leaves() if leaf.id not in reached]
        if not unreached:
            break
        tree.merge_leaf(unreached[0])
        merged += 1
    if merged:
        warn(
            f"Summary mode: {merged} split(s) made a cluster that no row reaches (its microclusters averaged rows of "
            f"other clusters), so they were undone: {tree.n_leaves} clusters are left. Smaller rows_per_microcluster, "
            "larger chunks or mode='exact' avoid this."
        )
    return merged
