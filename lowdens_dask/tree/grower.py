"""The tree grower: one way to grow a :class:`ClusterTree` for every projection index, used by the one-split
estimators (``n_clusters=2``) and every divisive estimator, in memory, in summary mode and in exact mode.

Growth repeatedly splits the leaf that ``rank`` prefers among the leaves with a valid split. Each split is
found on the leaf's own rows (re-centred, its principal components and bandwidth or scale recomputed).
With ``lazy=True`` (a rank that needs no split, such as size) a leaf's split is computed only when the
leaf is ranked first, which gives the same tree as computing every leaf eagerly. With ``parallel`` > 0
(summary mode: the number of tasks the cluster runs at once) the split of a leaf of at least ``TASK_MIN_ROWS``
rows is computed with each restart a named Dask task (``lowdens-split-node-<id>-start-<j>-<token>``), so the
restarts run at once on the cluster; the two children of such a split are split at once too when ``rank``
needs every leaf's split, or when the cluster has room for both children's restarts (with fewer slots,
splitting a leaf that is never ranked first would only delay the others). Smaller leaves are split in this
process. The leaves' rows are literal tasks in the graph, which any worker can rebuild.

Exact mode on chunked rows: a node whose rows take at most ``max_node_bytes`` (as float64) is gathered to one
worker and split there by the in-memory path, its restarts as parallel tasks (and, when ``rank`` needs every
leaf's split, the two children of each split at once); larger nodes are split by passes over their chunks.
Each split computed is logged (``lowdens_dask`` loggers, INFO): the node, its size, the index value, the time
and the passes over the rows.

When no leaf has a valid split and fewer than ``n_clusters`` leaves exist, ``force=True`` splits the
leaf whose best split the index prefers (``forced_score``: for the density indices, the split through the
lowest density; ties go to the leaf ``rank`` prefers) with that hyperplane, moved to the mean of the leaf
along its normal if it leaves a side below ``min_size`` (the node is marked ``forced``); with ``force=False``
growth stops at the last valid split.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import NamedTuple

import dask
import numpy as np
from dask.base import tokenize

from ..backend.chunked import large_allocations_from_the_heap
from ..backend.frame import Frame
from ..indices import get_index
from ..pursuit import Hyperplane, best_of_starts, find_hyperplane
from ..pursuit.significance import SplitTest, halves, held_out_test, significant, with_test
from .cluster_tree import ClusterTree, Node
from .rules import HyperplaneRule
from .update import Candidate

#: In summary mode (``parallel`` > 0), leaves of at least this many rows (microclusters) are split in Dask tasks;
#: smaller ones here, one restart after the other. Measured on the 10^7-row scale mixture (5,078 microclusters,
#: 2 workers): growing the tree in tasks took 3.1-3.4 s, here 1.2 s (with two local threads, 1.5 s): a task's
#: round trip (tens of ms) outweighs splitting a leaf of a few thousand rows.
TASK_MIN_ROWS = 20_000


class Refine(NamedTuple):
    """Exact polishing of summary-mode splits (``refine``): the chunked rows, their frame, L-BFGS steps."""

    rows: object  #: the rows as a chunked data-layer node (``ChunkedNode``)
    frame: Frame  #: the frame the rows are fitted in
    iterations: int


logger = logging.getLogger(__name__)


class Growth(NamedTuple):
    """What :func:`grow_tree` returns."""

    tree: ClusterTree  #: splits in the original coordinates
    n_leaves: int
    n_forced: int  #: splits made by ``force``
    root_split: Hyperplane | None  #: the root's best split in the original coordinates, valid or not
    n_evaluations: int = 0  #: objective evaluations of every split computed


def grow_tree(
    root,
    method: str,
    params: dict,
    *,
    n_clusters: int | None,
    rank: Callable[[Node, object, Hyperplane | None], float],
    lazy: bool = False,
    min_size: float = 1,
    frame: Frame = Frame(),
    force: bool = False,
    parallel: int = 0,
    refine: Refine | None = None,
    max_node_bytes: float = 0.0,
    progress: Callable[[int], None] | None = None,
    test: SplitTest | None = None,
) -> Growth:
    """Grow a tree on ``root`` (a data-layer object in the coordinates of ``frame``) with the index ``method``.

    ``params`` are the index's set-up and pursuit parameters (without ``min_size``); ``rank(node, data,
    hyperplane)`` scores a leaf (larger splits first; ``hyperplane`` is None for an unevaluated leaf when
    ``lazy``). Chunked nodes of at most ``max_node_bytes`` are split on one worker each (see the module
    docstring); ``progress(n_leaves)`` is called after each split.

    With ``test`` (``n_clusters="auto"``, where ``n_clusters`` is the cap), each leaf's split is found on a random
    half of its rows and is valid only if the other half's dip test along it is significant
    (:mod:`lowdens_dask.pursuit.significance`); every leaf's test is recorded in its node's ``stats``.
    """
    tree = ClusterTree(root.n_features, method, {**params, "min_size": min_size}, root_size=root.total_weight)
    leaves = {0: root}  # leaf id -> its rows, in the frame
    row_leaves = {} if refine is None else {0: refine.rows}  # leaf id -> its chunked rows (refine)
    found: dict[int, Hyperplane | None] = {}  # leaf id -> best split in the frame (maybe invalid), or None
    target = math.inf if n_clusters is None else n_clusters
    token = tokenize(root.token, method, params, min_size)[:8] if parallel or root.chunked else None
    n_leaves, n_forced = 1, 0
    stuck: set[int] = set()  # leaves whose best split cannot be made on their rows

    def on_a_worker(leaf: int) -> bool:
        data = leaves[leaf]
        return data.chunked and 0 < data.nbytes <= max_node_bytes

    def in_tasks(nodes: list[int]) -> None:
        start, passes = time.perf_counter(), _passes(root)
        _split_in_tasks(method, params, min_size, nodes, leaves, found, token, test)
        for leaf in nodes:
            _log_split(leaf, leaves[leaf], found[leaf], time.perf_counter() - start, _passes(root) - passes, True)

    room_for_both = parallel >= 2 * _n_starts(method, params, root.n_features)

    def in_memory_tasks(leaf: int) -> bool:
        return parallel > 0 and not root.chunked and leaves[leaf].n_samples >= TASK_MIN_ROWS

    def compute(leaf: int) -> None:
        if leaf in found:
            return
        if on_a_worker(leaf) or in_memory_tasks(leaf):
            in_tasks([leaf])
            return
        start, passes = time.perf_counter(), _passes(root)
        found[leaf] = _best_split(method, leaves[leaf], params, min_size, None, test, leaf)
        _log_split(leaf, leaves[leaf], found[leaf], time.perf_counter() - start, _passes(root) - passes, False)

    def score(leaf: int) -> float:
        value = float(rank(tree.nodes[leaf], leaves[leaf], found.get(leaf)))
        return -math.inf if math.isnan(value) else value

    def forced_score(leaf: int) -> tuple[float, float]:
        return get_index(method).forced_score(found[leaf].stats), score(leaf)

    def valid(leaf: int) -> bool:
        return found[leaf] is not None and found[leaf].valid

    while n_leaves < target:
        if not lazy:
            for leaf in leaves:
                compute(leaf)
        candidates = [leaf for leaf in leaves if leaf not in stuck and (leaf not in found or valid(leaf))]
        forced = not candidates
        if forced:
            if not force:
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
        node = _split_leaf(tree, leaf, method, params, leaves, row_leaves, found, frame, refine, forced, min_size)
        if node is None:  # a side below min_size, or within rounding of the other: not split, not valid
            stuck.add(leaf)
            found[leaf] = found[leaf]._replace(valid=False)
            continue
        n_leaves += 1
        n_forced += forced
        if progress is not None:
            progress(n_leaves)
        if n_leaves < target:
            if (not lazy or room_for_both) and all(in_memory_tasks(c) for c in node.children):
                in_tasks(list(node.children))
            elif not lazy and (children := [c for c in node.children if on_a_worker(c)]):
                in_tasks(children)  # both are needed: split them at once
    for leaf, hp in found.items():  # keep computed would-be splits (and auto's tests) on the final leaves
        if hp is not None and (hp.valid or test is not None) and leaf in leaves:
            tree.nodes[leaf].set_hyperplane(method, _to_original(hp, frame))
    root_split = found.get(0)
    n_evaluations = sum(hp.n_evaluations for hp in found.values() if hp is not None)
    root_split = None if root_split is None else _to_original(root_split, frame)
    return Growth(tree, n_leaves, n_forced, root_split, n_evaluations)


def _passes(data) -> int:
    return data.counter.total if data.chunked else 0


def _log_split(leaf: int, data, hp: Hyperplane | None, seconds: float, passes: int, tasks: bool) -> None:
    where = "on a worker" if data.chunked and tasks else "by passes over chunks" if data.chunked else "in memory"
    if hp is None:
        logger.info("node %d: %.6g rows, too small to split (%s)", leaf, data.total_weight, where)
        return
    logger.info(
        "node %d: %.6g rows, %s split, fval %.4g, %.2f s, %d passes over the rows, %d evaluations (%s)",
        leaf, data.total_weight, "a valid" if hp.valid else "no valid", hp.fval, seconds, passes, hp.n_evaluations,
        where,
    )  # fmt: skip


def _split_leaf(tree, leaf, method, params, leaves, row_leaves, found, frame, refine, forced, min_size):
    """Make the split of ``leaf`` (polished first with ``refine``); returns the node, or None when the rows
    themselves do not leave ``min_size`` on each side, or lie on both sides of it by less than rounding
    error (then the leaf is not split)."""
    hp = _clear_of_rows(leaves[leaf], found[leaf], frame)
    if hp is None and forced:  # try the mean along v (PDDP's split)
        hp = _clear_of_rows(leaves[leaf], found[leaf]._replace(b=float(leaves[leaf].mean() @ found[leaf].v)), frame)
    if hp is None:
        return None
    original = _to_original(hp, frame)
    rows = row_leaves.get(leaf)
    if rows is not None:  # refine: polish the split on the node's rows, then split both
        polished = polish(method, rows, hp, frame, refine.frame, params, refine.iterations, min_size)
        if polished is not None:
            original = _to_original(polished[0], refine.frame)
            hp = polished[1]

    def cut():
        row_parts = None if rows is None else rows.split(*refine.frame.from_original(original.v, original.b))
        parts = leaves[leaf].split(hp.v, hp.b)
        return parts, row_parts, [part.total_weight for part in (row_parts or parts)]

    least = max(min_size, 1e-300)
    parts, row_parts, sizes = cut()
    if min(sizes) < least and not forced:  # rounding of x @ v (features of very different scales) emptied a side
        return None
    if min(sizes) < least:  # a forced split: fall back to the mean along v (PDDP's split)
        hp = _clear_of_rows(leaves[leaf], hp._replace(b=float(leaves[leaf].mean() @ hp.v)), frame)
        if hp is None:
            return None
        original = _to_original(hp, frame)
        parts, row_parts, sizes = cut()
        if min(sizes) < least:
            return None
    del leaves[leaf]
    node = tree.add_split(leaf, method, original, sizes, forced=forced)
    leaves.update(zip(node.children, parts))
    if row_parts is not None:
        del row_leaves[leaf]
        row_leaves.update(zip(node.children, row_parts))
    return node


#: Rounding error allowed for in x @ v, in units of eps * (d + 1) * sum_j |x_j v_j| (a dot product's bound
#: is d eps sum_j |x_j v_j|), so that routing in either coordinate frame agrees.
ROUNDING_ULPS = 64.0


def _clear_of_rows(data, hp: Hyperplane, frame: Frame) -> Hyperplane | None:
    """``hp`` made safe to route by: b moved to the middle of the gap between the rows' projections around it
    when a row lies within rounding error of b; None when the gap itself is within rounding error (the two sides
    cannot be told apart reliably). In memory and on chunked rows alike (one pass over the chunks), so that exact
    mode makes the splits the in-memory fit makes.

    The tree routes rows in the original coordinates, where ``x @ v`` rounds differently from the frame the
    split was found in (the frame's offsets ``mean / scale`` add to the terms); a row at b (PDDP's mean
    when one row's weight dominates, or when rows repeat) could change sides and leave a leaf without rows.
    """
    lo, hi, colmax = data.gap_around(hp.v, hp.b)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return hp
    terms = float(colmax @ np.abs(hp.v))  # a bound on sum_j |x_j v_j| over the rows
    offset = 0.0 if frame.mean is None else float(np.abs(hp.v) @ np.abs(frame.mean / frame.scale))
    margin = ROUNDING_ULPS * np.finfo(float).eps * (len(hp.v) + 1) * (terms + offset + abs(hp.b))
    if hi - lo <= 2.0 * margin:
        return None
    if min(hp.b - lo, hi - hp.b) >= margin:
        return hp
    return hp._replace(b=float(0.5 * (lo + hi)))


def _to_original(hp: Hyperplane, frame: Frame) -> Hyperplane:
    if frame.mean is None:
        return hp
    v, b = frame.to_original(hp.v, hp.b)
    return hp._replace(v=v, b=b)


def _split_in_tasks(method, params, min_size, nodes, leaves, found, token, test) -> None:
    """Split the given leaves at once, each restart of each leaf a named Dask task.

    Chunked leaves enter the graph as the task that gathers their rows from the chunks (one worker holds
    them; the restarts run there or next to it). In-memory leaves' rows enter the graph once, as a literal
    task (``lowdens-node-data-<id>-<token>``) that its restarts depend on. On a distributed cluster the scheduler can rebuild it on any worker, so
    losing a worker at any moment costs only recomputation (data placed with ``client.scatter`` would be
    lost with the worker that held it).
    """
    starts = range(_n_starts(method, params, leaves[nodes[0]].n_features)) if params.get("v0") is None else [None]
    data = {
        c: leaves[c].gathered()
        if leaves[c].chunked
        else dask.delayed(leaves[c], name=f"lowdens-node-data-{c}-{token}", traverse=False)
        for c in nodes
    }
    jobs = [(c, j) for c in nodes for j in starts]
    tasks = [
        _split_task(
            method, data[c], params, min_size, j, test, c, dask_key_name=f"lowdens-split-node-{c}-start-{j}-{token}"
        )
        for c, j in jobs
    ]
    literal = sum(leaves[c].X.nbytes for c in nodes if not leaves[c].chunked)
    # the rows are in the graph on purpose (see above): no "large graph" warning for them
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": f"{literal + 10 * 2**20}B"}):
        results = dask.compute(*tasks)
    for c in nodes:
        found[c] = _combine([r for (cc, _), r in zip(jobs, results) if cc == c], method, test)


def _n_starts(method: str, params: dict, n_features: int) -> int:
    """Restarts of a split: the index's own, or one from a given ``v0``."""
    return get_index(method).n_starts(n_features) if params.get("v0") is None else 1


def _best_split(method, data, params, min_size, start, test=None, node=0) -> Hyperplane | None:
    return _combine([_split_from_start(method, data, params, min_size, start, test, node)], method, test)


def _split_from_start(method, data, params, min_size, start, test=None, node=0) -> Hyperplane | None:
    """The node's split from one restart (all restarts if ``start`` is None), or None if the node is too
    small to split. With ``test``, found on a random half of the rows and tested on the other (on chunked rows,
    the split is found on every row and the test made on the node's summary, split in halves the same way).
    A plain function: it runs on workers."""
    if data.n_samples < 2 or data.total_weight < 2 * min_size:
        return None
    if not data.chunked:  # on a Dask worker, arrays of n floats are allocated at every evaluation
        large_allocations_from_the_heap()
    if test is None:
        return find_hyperplane(method, data, min_size=min_size, start=start, **params)
    if data.chunked:
        hp = find_hyperplane(method, data, min_size=min_size, start=start, **params)
        summary = data.summarise(SUMMARY_ROWS_PER_MICROCLUSTER, SUMMARY_MAX_PER_CHUNK, test.seed)
        held_out = _split_from_start(method, summary, params, min_size, start, test, node)
        return hp if held_out is None else hp._replace(stats={**hp.stats, **_test_stats(held_out)})
    fit_rows, test_rows = halves(data, test.seed, node)
    if fit_rows.n_samples < 2 or test_rows.n_samples < 2:
        return None
    hp = find_hyperplane(method, fit_rows, min_size=min_size / 2, start=start, **params)
    return with_test(hp, test_rows)


#: Exact mode on chunked rows with ``n_clusters="auto"``: the summary a node's test is made on.
SUMMARY_ROWS_PER_MICROCLUSTER, SUMMARY_MAX_PER_CHUNK = 20, 64


def _test_stats(hp: Hyperplane) -> dict:
    return {key: hp.stats[key] for key in ("dip", "p_value", "n_test")}


_split_task = dask.delayed(_split_from_start, pure=True)


def _combine(found: list[Hyperplane | None], method: str, test: SplitTest | None = None) -> Hyperplane | None:
    """The best restart's split (valid or not), with the evaluations and final directions of all of them; with
    ``test``, valid only if significant (the index alone picks the restart)."""
    found = [hp for hp in found if hp is not None]
    if not found:
        return None
    best = best_of_starts(found, get_index(method))
    if test is not None:
        best = significant(best, test)
    return best._replace(
        n_evaluations=sum(hp.n_evaluations for hp in found), starts=tuple(v for hp in found for v in hp.starts)
    )


def polish(
    method: str, rows, hp: Hyperplane, frame: Frame, row_frame: Frame, params: dict, iterations: int, min_size: float
):
    """Polish a summary-mode split with exact passes over the node's rows (``refine``).

    ``iterations`` L-BFGS steps from every start's summary direction at once (one pass serves all of them),
    at the continuation stage the summary reached (the alpha of MDH); the start the index scores best on
    the rows wins. ``frame`` and ``row_frame`` are the frames of the summary and of the rows. Returns
    ``(split in the rows' frame, the same in the summary's frame)``, or None if no polished start is valid.
    """
    if rows.n_samples < 2:
        return None
    starts = np.column_stack([frame.to(row_frame, v, 0.0)[0] for v in hp.starts or (hp.v,)])
    params = {**params, **get_index(method).polish_params(hp.params), "v0": starts, "maxiter": iterations}
    polished = find_hyperplane(method, rows, min_size=min_size, **params)
    if not polished.valid:
        return None
    v, b = row_frame.to(frame, polished.v, polished.b)
    return polished, polished._replace(v=v, b=b)


class HyperplaneSplitter:
    """Finds and tests splits for :func:`lowdens_dask.tree.update.update_tree` with a hyperplane index, as
    :func:`grow_tree` does: points in ``frame``, rules in the original coordinates. A node's split is re-pursued
    from its current hyperplane (one start, at the continuation stage its pursuit ended, e.g. MDH's last
    alpha); a leaf's is searched from the index's own starts."""

    def __init__(self, method: str, params: dict, min_size: float, frame: Frame, test: SplitTest | None):
        self.method, self.params, self.min_size, self.frame, self.test = method, params, min_size, frame, test

    def find(self, points, node: int, start: Node | None) -> Candidate | None:
        params = self.params
        if start is not None and isinstance(start.rule, HyperplaneRule):
            v, _ = self.frame.from_original(start.rule.v, start.rule.b)
            params = {**params, **get_index(self.method).polish_params(start.params), "v0": v[:, None]}
        hp = _best_split(self.method, points, params, self.min_size, None, self.test, node)
        if hp is None:
            return None
        hp = _to_original(hp, self.frame)
        return Candidate(HyperplaneRule(hp.v, hp.b), hp.params, hp.stats, bool(hp.valid))

    def held_out(self, points, node: int, rule) -> dict:
        v, _ = self.frame.from_original(rule.v, rule.b)
        return held_out_test(halves(points, self.test.seed, node)[1], v)
