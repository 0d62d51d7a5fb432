"""The splitter of every projection index (MDH, NCutH, MCH, PDDP, dePDDP, iPDDP): a node's split is a
hyperplane found by :func:`~lowdens_dask.pursuit.find_hyperplane` on the node's own rows (re-centred, its
principal components and bandwidth or scale recomputed), in the frame the rows are fitted in; the tree keeps it
in the original coordinates.

Where the rows are: in memory; in summary mode (``parallel`` > 0, the number of tasks the cluster runs at once)
a node of at least ``TASK_MIN_ROWS`` rows is split with each restart a named Dask task
(``lowdens-split-node-<id>-start-<j>-<token>``), so the restarts run at once on the cluster, and the two children
of a split are split at once too when every leaf's split is needed, or when the cluster has room for both
children's restarts; smaller nodes are split in this process. The leaves' rows are literal tasks in the graph,
which any worker can rebuild. Exact mode on chunked rows: a node whose rows take at most ``max_node_bytes`` (as
float64) is gathered to one worker and split there by the in-memory path, its restarts as parallel tasks; larger
nodes are split by passes over their chunks. Each split computed is logged (``lowdens_dask`` loggers, INFO): the
node, its size, the index value, the time and the passes over the rows.

With ``test`` (``n_clusters="auto"``) a node's split is valid only if it is significant: every start's split is
tested on the node's rows (:func:`rows_to_test`) against the pursued null, and the best significant one is made
(:mod:`lowdens_dask.pursuit.significance`). With ``refine``
(summary mode), each split is polished by exact L-BFGS steps over the node's rows before it is made
(:func:`polish`). A split is made safe to route by before it is made (:func:`_clear_of_rows`).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import logging
import time
from typing import NamedTuple

import dask
import numpy as np
from dask.base import tokenize

from ..backend import InMemoryData
from ..backend.cluster_summary import sample_size
from ..backend.frame import Frame
from ..backend.memory import far_rows
from ..backend.workers import large_allocations_from_the_heap
from ..indices import get_index
from ..pursuit import Hyperplane, best_of_starts, find_hyperplane
from ..pursuit.significance import (
    SplitTest,
    halves,
    has_pursued_null,
    held_out_test,
    is_significant,
    null_applies,
    required,
    tests_on_rows,
    with_test,
)
from ..tree.cluster_tree import Node
from ..tree.rules import HyperplaneRule
from .splitter import Candidate, Cut, SplitterBase

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


class HyperplaneSplitter(SplitterBase):
    """Finds, tests and makes hyperplane splits with the projection index ``method`` (module docstring): points in
    ``frame``, rules in the original coordinates. A node's split is re-pursued from its current hyperplane when
    ``start`` is given (one start, at the continuation stage its pursuit ended, e.g. MDH's last alpha); a leaf's
    is searched from the index's own starts."""

    def __init__(
        self,
        method: str,
        params: dict,
        min_size: float,
        frame: Frame = Frame(),
        test: SplitTest | None = None,
        *,
        parallel: int = 0,
        refine: Refine | None = None,
        max_node_bytes: float = 0.0,
        least_cluster: float = 0.0,
    ):
        self.method, self.params, self.min_size, self.frame, self.test = method, params, min_size, frame, test
        self.least_cluster = least_cluster
        self.tested = required(test) is not None
        self.parallel, self.refine, self.max_node_bytes = parallel, refine, max_node_bytes
        self.root = None
        self.token: str | None = None
        self.row_leaves: dict = {}  # leaf id -> its chunked rows (refine)

    def begin(self, root) -> None:
        self.root = root
        chunked = root.chunked
        self.token = (
            tokenize(root.token, self.method, self.params, self.min_size)[:8] if self.parallel or chunked else None
        )
        self.row_leaves = {} if self.refine is None else {0: self.refine.rows}
        self.room_for_both = self.parallel >= 2 * _n_starts(self.method, self.params, root.n_features)
        if self.test is None:
            return
        # the grid and record steps of the root's rows but its far rows (an outlier off the grid ungrids no column);
        # chunked rows: of the root's sample (one pass), so that every mode reads the same grid
        self.test = self.test.with_grid(core_rows(rows_to_test(root, self.test.seed), self.least_cluster))
        if not chunked:
            # a summary whose sample holds every row it summarised (fewer than the sample's size): memory-sized
            # data, whose nodes are pursued on their rows, as in memory; beyond, on the microclusters
            sample = root.sample
            complete = sample is not None and sample.n_samples < sample_size(root.n_features)
            # (a told K's ranking test leaves its pursuit on the microclusters, as summary mode fits them)
            self.test = self.test._replace(on_sample=complete and self.test.required)

    # ------------------------------------------------------------------ finding
    def _on_a_worker(self, data) -> bool:
        return data.chunked and 0 < data.nbytes <= self.max_node_bytes

    def _in_memory_tasks(self, data) -> bool:
        return self.parallel > 0 and not self.root.chunked and data.n_samples >= TASK_MIN_ROWS

    def candidate(self, hp: Hyperplane | None) -> Candidate | None:
        if hp is None:
            return None
        original = _to_original(hp, self.frame)
        return Candidate(
            HyperplaneRule(original.v, original.b), hp.params, hp.stats, bool(hp.valid), hp, hp.n_evaluations
        )

    def original(self, candidate: Candidate) -> Hyperplane:
        """The candidate's hyperplane in the original coordinates."""
        return _to_original(candidate.found, self.frame)

    def find(self, node: int, data, start: Node | None = None) -> Candidate | None:
        least = self.least_cluster
        if start is not None and isinstance(start.rule, HyperplaneRule):
            v, _ = self.frame.from_original(start.rule.v, start.rule.b)
            params = {**self.params, **get_index(self.method).polish_params(start.params), "v0": v[:, None]}
            return self.candidate(_best_split(self.method, data, params, self.min_size, None, self.test, node, least))
        if self._on_a_worker(data) or self._in_memory_tasks(data):
            return self._in_tasks({node: data})[node]
        start_time, passes = time.perf_counter(), _passes(self.root)
        hp = _best_split(self.method, data, self.params, self.min_size, None, self.test, node, least)
        _log_split(node, data, hp, time.perf_counter() - start_time, _passes(self.root) - passes, False)
        return self.candidate(hp)

    def prefetch(self, nodes: dict, eager: bool) -> dict:
        if (eager or self.room_for_both) and all(self._in_memory_tasks(data) for data in nodes.values()):
            return self._in_tasks(nodes)
        if eager and (on_a_worker := {c: data for c, data in nodes.items() if self._on_a_worker(data)}):
            return self._in_tasks(on_a_worker)  # both are needed: split them at once
        return {}

    def _in_tasks(self, nodes: dict) -> dict:
        start, passes = time.perf_counter(), _passes(self.root)
        found = _split_in_tasks(
            self.method, self.params, self.min_size, nodes, self.token, self.test, self.least_cluster
        )
        for node, data in nodes.items():
            _log_split(node, data, found[node], time.perf_counter() - start, _passes(self.root) - passes, True)
        return {node: self.candidate(hp) for node, hp in found.items()}

    def forced_score(self, candidate: Candidate) -> float:
        return get_index(self.method).forced_score(candidate.found.stats)

    def rule_test(self, node: int, data, rule) -> dict:
        v, _ = self.frame.from_original(rule.v, rule.b)
        test = self.test or SplitTest(0.0, 0)
        rows = None if data.chunked or not has_pursued_null(self.method) else rows_to_test(data, 0)
        d_eff = None if rows is None else null_applies(self.method, rows, test)
        if d_eff is not None:
            return tests_on_rows(self.method, rows, [v], test, d_eff)[0]
        return held_out_test(halves(data, test.seed, node, test.record_step)[1], v)

    # ------------------------------------------------------------------ making
    def cut(self, node: int, data, candidate: Candidate, forced: bool) -> Cut | None:
        """The split of ``data`` by the candidate's hyperplane, polished first with ``refine``; None when the rows
        themselves do not leave ``min_size`` on each side, or lie on both sides of it by less than rounding error."""
        frame, found = self.frame, candidate.found
        hp = _clear_of_rows(data, found, frame)
        if hp is None and forced:  # try the mean along v (PDDP's split)
            hp = _clear_of_rows(data, found._replace(b=float(data.mean() @ found.v)), frame)
        if hp is None:
            return None
        original = _to_original(hp, frame)
        rows = self.row_leaves.get(node)
        refine = self.refine
        if rows is not None:  # refine: polish the split on the node's rows, then split both
            polished = polish(self.method, rows, hp, frame, refine.frame, self.params, refine.iterations, self.min_size)
            if polished is not None:
                original = _to_original(polished[0], refine.frame)
                hp = polished[1]

        def partition():
            row_parts = None if rows is None else rows.partition(*refine.frame.from_original(original.v, original.b))
            parts = data.partition(hp.v, hp.b)
            return parts, row_parts, tuple(part.total_weight for part in (row_parts or parts))

        least = max(self.min_size, 1e-300)
        parts, row_parts, sizes = partition()
        if min(sizes) < least and not forced:  # rounding of x @ v (features of very different scales) emptied a side
            return None
        if min(sizes) < least:  # a forced split: fall back to the mean along v (PDDP's split)
            hp = _clear_of_rows(data, hp._replace(b=float(data.mean() @ hp.v)), frame)
            if hp is None:
                return None
            original = _to_original(hp, frame)
            parts, row_parts, sizes = partition()
            if min(sizes) < least:
                return None
        rule = HyperplaneRule(original.v, original.b)
        return Cut(rule, parts, sizes, original.params, original.stats, row_parts)

    def made(self, node: int, children: tuple[int, int], cut: Cut) -> None:
        if cut.extra is not None:
            del self.row_leaves[node]
            self.row_leaves.update(zip(children, cut.extra))


def _with_sides(hp: Hyperplane, data) -> Hyperplane:
    """``hp`` with the weight of its lighter side among ``data``'s rows (in memory) in ``stats`` (``smaller_side``),
    by which a told K ranks substantial splits first (:func:`~lowdens_dask.growth.grower.grow`)."""
    side = data.project(hp.v) >= hp.b
    upper = float(data.weights[side].sum())
    return hp._replace(stats={**hp.stats, "smaller_side": min(upper, float(data.total_weight) - upper)})


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


def _split_in_tasks(method, params, min_size, nodes: dict, token, test, least_cluster=0.0) -> dict:
    """Split the given leaves at once, each restart of each leaf a named Dask task.

    Chunked leaves enter the graph as the task that gathers their rows from the chunks (one worker holds
    them; the restarts run there or next to it). In-memory leaves' rows enter the graph once, as a literal
    task (``lowdens-node-data-<id>-<token>``) that its restarts depend on. On a distributed cluster the scheduler can rebuild it on any worker, so
    losing a worker at any moment costs only recomputation (data placed with ``client.scatter`` would be
    lost with the worker that held it).
    """
    leaves = nodes
    starts = (
        range(_n_starts(method, params, next(iter(nodes.values())).n_features)) if params.get("v0") is None else [None]
    )
    data = {
        c: leaves[c].gathered()
        if leaves[c].chunked
        else dask.delayed(leaves[c], name=f"lowdens-node-data-{c}-{token}", traverse=False)
        for c in nodes
    }
    jobs = [(c, j) for c in nodes for j in starts]
    tasks = [
        _split_task(
            method,
            data[c],
            params,
            min_size,
            j,
            test,
            c,
            least_cluster,
            dask_key_name=f"lowdens-split-node-{c}-start-{j}-{token}",
        )
        for c, j in jobs
    ]
    literal = sum(leaves[c].X.nbytes for c in nodes if not leaves[c].chunked)
    # the rows are in the graph on purpose (see above): no "large graph" warning for them
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": f"{literal + 10 * 2**20}B"}):
        results = dask.compute(*tasks)
    return {c: _combine([r for (cc, _), r in zip(jobs, results) if cc == c], method, test) for c in nodes}


def _n_starts(method: str, params: dict, n_features: int) -> int:
    """Restarts of a split: the index's own, or one from a given ``v0``."""
    return get_index(method).n_starts(n_features) if params.get("v0") is None else 1


def _best_split(method, data, params, min_size, start, test=None, node=0, least_cluster=0.0) -> Hyperplane | None:
    return _combine([_split_from_start(method, data, params, min_size, start, test, node, least_cluster)], method, test)


def core_rows(data, least_cluster: float):
    """The node's rows that its split is found and tested on: in memory, all but its far rows in groups lighter than
    a cluster (:func:`~lowdens_dask.backend.memory.far_rows`), which the split then routes as any other; ``data``
    itself otherwise (None: a summary without a sample)."""
    if data is None or data.chunked or data.spread is not None or data.sample is not None:
        return data
    far = far_rows(data.X, data.weights, least_cluster)
    return data if far is None else data.take(~far)


def _split_from_start(method, data, params, min_size, start, test=None, node=0, least_cluster=0.0):
    """:func:`_split_of_core` on the node's rows but their far rows (:func:`core_rows`), each start's split with the
    weight of its lighter side among all the node's rows (in memory)."""
    hp = _split_of_core(method, core_rows(data, least_cluster), params, min_size, start, test, node)
    if hp is None or data.chunked:
        return hp
    if not hp.per_start:  # the split found on a half: its own
        return _with_sides(hp, data)
    return hp._replace(per_start=tuple(_with_sides(s, data) for s in hp.per_start))  # _combine picks among them


def _split_of_core(method, data, params, min_size, start, test=None, node=0) -> Hyperplane | None:
    """The node's split from one restart (all restarts if ``start`` is None), or None if the node is too
    small to split. With ``test``, every start's split is tested on the node's rows (:func:`rows_to_test`) against
    the pursued null (:func:`~lowdens_dask.pursuit.significance.pursued_test`); without rows to test on (a
    summary of an older version) or a pursued null for the index, found on a random half of the points and
    tested on the other half. A plain function: it runs on workers."""
    if data.n_samples < 2 or data.total_weight < 2 * min_size:
        return None
    if not data.chunked:  # on a Dask worker, arrays of n floats are allocated at every evaluation
        large_allocations_from_the_heap()
    rows = rows_to_test(data, test.seed) if test is not None and has_pursued_null(method) else None
    d_eff = None if rows is None else null_applies(method, rows, test)  # None: no null here, sample splitting
    if test is None or d_eff is None and not test.required:  # no test, or a ranking test without a null to rank by
        return find_hyperplane(method, data, min_size=min_size, start=start, **params)
    if d_eff is not None:
        if test.on_sample and rows is not data and not data.chunked:
            # a summary's node of memory-sized data: pursued on the rows it is tested on, as in memory (its least
            # size scaled to the sample), the pursuit the null was simulated for
            min_size, data = min_size * rows.total_weight / data.total_weight, rows
        hp = find_hyperplane(method, data, min_size=min_size, start=start, **params)
        starts = hp.per_start or (hp,)
        tests = tests_on_rows(method, rows, [s.v for s in starts], test, d_eff)
        tested = (s._replace(stats={**s.stats, **t}) for s, t in zip(starts, tests))
        return hp._replace(per_start=tuple(_where_significant(method, data, s, test, min_size) for s in tested))
    fit_rows, held = halves(data, test.seed, node, test.record_step)
    if fit_rows.n_samples < 2 or held.n_samples < 2:
        return None
    hp = find_hyperplane(method, fit_rows, min_size=min_size / 2, start=start, **params)
    return with_test(hp._replace(per_start=()), held)


#: The parameter a split records where it was placed by the index's :meth:`significant_split`.
PLACED = "placed_at"


def _where_significant(method: str, data, hp: Hyperplane, test: SplitTest, min_size: float) -> Hyperplane:
    """``hp``, or, where its direction is significant and its own split is not valid (MDH's hyperplane at the edge of
    the alpha interval), the split the index places along it (:meth:`~lowdens_dask.indices.base.ProjectionIndex.
    significant_split`: MDH's lowest density minimum between the modes), recorded in its ``params``."""
    if hp.valid or not is_significant(hp.stats, test) or data.chunked:
        return hp
    placed = get_index(method).significant_split(data.project(hp.v), data.weights, hp.params, min_size)
    if placed is None:
        return hp
    b, stats = placed
    return hp._replace(
        b=float(b), valid=True, stats={**hp.stats, **stats}, params={**hp.params, PLACED: "density minimum"}
    )


def rows_to_test(data, seed: int):
    """The rows a node's split is tested on: its own rows in memory; the summary's sample rows that reach it
    (summary mode, ``ClusterSummary.sample``); a random sample of its chunked rows (exact mode, one pass); None
    for a summary without a sample."""
    if data.chunked:
        return InMemoryData(data.summarise(SUMMARY_ROWS_PER_MICROCLUSTER, SUMMARY_MAX_PER_CHUNK, seed).sample)
    if data.spread is None and data.sample is None:
        return data
    return data.sample


#: Exact mode on chunked rows with ``n_clusters="auto"``: the pass that samples a node's rows.
SUMMARY_ROWS_PER_MICROCLUSTER, SUMMARY_MAX_PER_CHUNK = 20, 64


_split_task = dask.delayed(_split_from_start, pure=True)


def _combine(found: list[Hyperplane | None], method: str, test: SplitTest | None = None) -> Hyperplane | None:
    """The best restart's split (valid or not), with the evaluations and final directions of all of them; with
    ``test``, valid only if significant (the index alone picks the restart)."""
    found = [hp for hp in found if hp is not None]
    if not found:
        return None
    index = get_index(method)
    per_start = tuple(s for hp in found for s in hp.per_start or (hp,))
    best = best_of_starts(per_start, index)
    if test is not None:  # the best start whose split is significant, else the best one (not valid for "auto")
        significant = [s for s in per_start if s.valid and is_significant(s.stats, test)]
        best = (
            best_of_starts(significant, index) if significant else best._replace(valid=best.valid and not test.required)
        )
    return best._replace(
        n_evaluations=sum(hp.n_evaluations for hp in found),
        starts=tuple(v for hp in found for v in hp.starts),
        per_start=per_start,
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
