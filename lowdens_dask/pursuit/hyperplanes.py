"""One projection pursuit for every projection index and every backend.

:func:`find_hyperplane` sets a registered index up for a node (:mod:`lowdens_dask.indices`) and calls
:func:`pursue`: L-BFGS over the direction through the index's continuation schedule, from each start
(warm-started from stage to stage), keeping the last stage whose split the index accepts; among the
starts the index's score picks the winner. Rows in memory are evaluated start by start on the whole
array; rows held in chunks (exact mode) run the starts in lockstep, so that each pass over the rows
(one ``X @ V`` block) serves all of them. A fixed-direction index (PDDP, dePDDP, iPDDP) is evaluated once
on its start.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numba
import numpy as np

from ..backend import InMemoryData
from ..indices import DEFAULT_ALPHAS, ProjectionIndex, Split, get_index, silverman_bandwidth  # noqa: F401 (re-exported)
from ..indices.minimum_density import MinimumDensityIndex
from ._bfgs import LBFGSMemory, lbfgs_steps
from .compiled_mdh import mdh_continuation, scatter_moments

#: Curvature pairs kept by L-BFGS: at least one continuation stage, so each stage's steps are BFGS steps.
LBFGS_MEMORY = 50

#: A covariance eigenvalue at most ``FLAT_ULPS * n_features * eps`` times the largest is rounding error: the rows
#: do not vary along its eigenvector (a constant column, rank-deficient or deflated rows).
FLAT_ULPS = 64.0


def varying_components(vals: np.ndarray, n_features: int) -> np.ndarray:
    """Mask of the covariance eigenvalues ``vals`` (largest first) whose eigenvectors the rows vary along (see
    :data:`FLAT_ULPS`); its count is the covariance's numerical rank."""
    vals = np.asarray(vals, dtype=np.float64)
    return vals > vals[0] * FLAT_ULPS * n_features * np.finfo(float).eps


class Hyperplane(NamedTuple):
    """A separating hyperplane ``{x : v.x = b}``; side 0 is ``v.x < b`` and side 1 is ``v.x >= b``."""

    v: np.ndarray  #: unit normal vector
    b: float  #: offset
    valid: bool  #: a usable split: both sides hold at least min_size, and the index's own test holds
    stats: dict  #: the index's node statistics (``fval``, ``relative_depth``, ...)
    params: dict  #: resolved parameters (bandwidth, alpha reached, ...), JSON-serialisable
    n_evaluations: int = 0  #: objective evaluations spent
    starts: tuple = ()  #: the unit normal each start reached (the best one is ``v``)
    per_start: tuple = ()  #: every start's hyperplane, in start order (the best one is among them)

    @property
    def fval(self) -> float:
        """The index's value statistic (projected density for MDH, the cut for NCut, ...); nan if none."""
        return float(self.stats.get("fval", math.nan))

    @property
    def relative_depth(self) -> float:
        """Relative depth (eq. 30) for the density indices; nan for the others."""
        return float(self.stats.get("relative_depth", math.nan))


class _Evaluation(NamedTuple):
    """What the pursuit keeps of one objective evaluation."""

    u: np.ndarray  #: unit direction
    split: Split  #: the index's split of the centred projections
    p: np.ndarray | None = None  #: the centred projections (in memory)


def _direction_gradient(xg: np.ndarray, u: np.ndarray, norm: float) -> np.ndarray:
    """Gradient in v of an index of the projections on u = v / |v|, from ``xg = X_c.T @ dindex/dp``."""
    return (xg - u * (u @ xg)) / norm


class _InMemoryObjective:
    """The index of the centred projections ``(X - mean) @ v / |v|`` and its gradient in v, rows in memory."""

    def __init__(self, data, index: ProjectionIndex):
        self.data = data
        self.index = index
        self.mean = data.mean()
        self.grad_p = np.empty(data.n_samples)
        self.n_evaluations = 0

    def answer(self, request, min_size: float):
        """Answer one request of :func:`_continuation`."""
        if request[0] == "accept":
            ev = request[1]
            return self.index.accept(ev.p, self.data.weights, ev.split, min_size)
        _, v, stage, gradient = request
        norm = math.sqrt(v @ v)
        u = v / norm
        p = self.data.project(u)
        p -= self.mean @ u
        split = self.index.evaluate(p, self.data.weights, stage, self.grad_p if gradient else None)
        self.n_evaluations += 1
        grad = None
        if gradient:
            xg = self.data.backproject(self.grad_p) - self.mean * self.grad_p.sum()
            grad = _direction_gradient(xg, u, norm)
        return split.value, grad, _Evaluation(u, split, p)


class _ChunkedObjective:
    """The same objective over chunked rows: the pending requests of all starts are answered together,
    one pass over the node's rows per step for all of them (projections as one ``X @ V`` block)."""

    def __init__(self, data, index: ProjectionIndex):
        self.data = data
        self.index = index
        self.mean = data.mean()
        self.n_evaluations = 0

    def answer_batch(self, requests: list, min_size: float) -> list:
        answers = [None] * len(requests)
        for kind, answer in (("evaluate", self._evaluate), ("accept", self._accept)):
            todo = [q for q, r in enumerate(requests) if r[0] == kind]
            if todo:
                for q, a in zip(todo, answer([requests[q] for q in todo], min_size)):
                    answers[q] = a
        return answers

    def _evaluate(self, requests: list, min_size: float) -> list:
        V = np.column_stack([r[1] for r in requests])
        norms = np.sqrt((V * V).sum(axis=0))
        U = V / norms
        gradient = any(r[3] for r in requests)
        proj = self.data.projections(U, self.mean @ U)
        found = self.index.evaluate_chunked(proj, [r[2] for r in requests], gradient)
        self.n_evaluations += len(requests)
        P = None if proj.gathered is None else proj.gathered[0]  # kept for the acceptance test
        out = []
        for j, (split, xtg, sum_g) in enumerate(found):
            grad = None if xtg is None else _direction_gradient(xtg - self.mean * sum_g, U[:, j], norms[j])
            out.append((split.value, grad, _Evaluation(U[:, j].copy(), split, None if P is None else P[j])))
        return out

    def _accept(self, requests: list, min_size: float) -> list:
        evs = [r[1] for r in requests]
        if all(ev.p is not None for ev in evs):  # the evaluation's gathered projections: no pass
            return [self.index.accept(ev.p, np.ones(ev.p.size), ev.split, min_size) for ev in evs]
        U = np.column_stack([ev.u for ev in evs])
        proj = self.data.projections(U, self.mean @ U)
        return self.index.accept_chunked(proj, [ev.split for ev in evs], min_size)


def _continuation(v: np.ndarray, index: ProjectionIndex, maxiter: int, ftol: float):
    """The index's continuation from one start, as a coroutine over the objective.

    Yields ``("evaluate", v, stage, gradient)`` and receives ``(value, grad, evaluation)``; yields
    ``("accept", evaluation)`` at the end of a stage whose split the index calls done, and receives the
    node statistics of a valid split or None. Returns ``(u, split, stage, stats, valid)`` of the last
    accepted stage, or of the last stage if none was accepted.
    """
    kept = None
    gradient = not index.fixed_direction
    memory = LBFGSMemory(v.size, min(LBFGS_MEMORY, maxiter)) if gradient else None
    for stage in index.stages:
        f, g, ev = yield ("evaluate", v, stage, gradient)
        if gradient:
            steps = lbfgs_steps(v, f, g, ev, memory, maxiter, ftol)
            try:
                x = next(steps)
                while True:
                    x = steps.send((yield ("evaluate", x, stage, True)))
            except StopIteration as stop:
                v, f, g, ev = stop.value
        if index.stage_done(ev.split):
            stats = yield ("accept", ev)
            if stats is not None:
                kept = (ev.u.copy(), ev.split, stage, stats, True)
    if kept is None:
        kept = (ev.u.copy(), ev.split, index.stages[-1], index.failed_stats(ev.split), False)
    return kept


#: MDH on rows in memory runs each start's continuation as one compiled call (:mod:`.compiled_mdh`); the tests
#: compare it with the coroutines' steps by turning this off.
COMPILED_MDH = True
#: A node of more than twice this many rows takes the alpha continuation's stages before the last on a uniform sample
#: of this many of its rows (the same bandwidth), and its last stage, the one whose minimiser is the hyperplane, on
#: every row from there: the stages before the last only carry the direction from the start to the last stage's
#: basin (MDP², §5.1), and their cost no longer grows with the rows. ``None`` takes every stage on every row.
#: (25,000 before: 200,000 rows in 4.8 s instead of 2.8 s, the same labels. On jittered copies of optidigits the
#: 10,000-row sample takes the fit to another local optimum, farther from the classes, where 25,000 did not:
#: ``benchmarks/results/continuation-sample.md``.)
CONTINUATION_SAMPLE_ROWS = 10_000


def _continuation_sample(X: np.ndarray, w: np.ndarray, mean: np.ndarray, moments: tuple, n_stages: int) -> tuple:
    """``(sample, n_sample_stages)`` for :func:`~.compiled_mdh.mdh_continuation` (:data:`CONTINUATION_SAMPLE_ROWS`;
    the rows drawn are the same on every call, so a fit is reproducible)."""
    m = CONTINUATION_SAMPLE_ROWS
    if m is None or X.shape[0] <= 2 * m or n_stages < 2:
        return (X, w, moments), 0
    rows = np.sort(np.random.default_rng(X.shape[0]).choice(X.shape[0], m, replace=False))
    Xs, ws = np.ascontiguousarray(X[rows]), np.ascontiguousarray(w[rows])
    return (Xs, ws, scatter_moments(Xs, ws, mean)), n_stages - 1


#: Nodes of at least this many rows take their starts on threads (:func:`_compiled_starts`): a start then costs tens
#: of milliseconds, against about one to start a thread.
THREADED_STARTS_MIN_ROWS = 10_000


def _compiled_starts(objective: _InMemoryObjective, starts, maxiter: int, ftol: float, min_size: float) -> list:
    """:func:`_compiled_mdh` from each start, on up to ``numba.get_num_threads()`` threads for a node of
    :data:`THREADED_STARTS_MIN_ROWS` rows or more: the compiled continuation releases the GIL and the starts share
    nothing they change, so the results are those of one thread."""
    data, index = objective.data, objective.index
    X = np.ascontiguousarray(data.X, dtype=np.float64)
    w = np.ascontiguousarray(data.weights, dtype=np.float64)
    moments = scatter_moments(X, w, objective.mean)
    rows = (X, w, moments, *_continuation_sample(X, w, objective.mean, moments, len(index.stages)))

    def run(v):
        return _compiled_mdh(objective, rows, np.asarray(v, dtype=np.float64), maxiter, ftol, min_size)

    threads = min(len(starts), numba.get_num_threads()) if X.shape[0] >= THREADED_STARTS_MIN_ROWS else 1
    if threads < 2:
        found = [run(v) for v in starts]
    else:
        with ThreadPoolExecutor(threads) as pool:
            found = list(pool.map(run, starts))
    objective.n_evaluations += sum(evaluations for _, evaluations in found)
    return [result for result, _ in found]


def _compiled_mdh(objective: _InMemoryObjective, rows: tuple, v, maxiter: int, ftol: float, min_size: float) -> tuple:
    """``(result, evaluations)``: :func:`_continuation`'s result from :func:`~.compiled_mdh.mdh_continuation` (the
    last stage whose split the index accepts, else the last stage) and the objective evaluations it took. ``rows``:
    ``(X, w, moments, sample, n_sample_stages)``, :func:`~.compiled_mdh.scatter_moments` and
    :func:`_continuation_sample` of the node's rows."""
    data, index = objective.data, objective.index
    alphas = np.asarray(index.stages, dtype=np.float64)
    X, w, moments, sample, n_sample_stages = rows
    U, B, log_i, done, evaluations = mdh_continuation(
        X, w, moments, sample, n_sample_stages, n_sample_stages > 0, objective.mean, v, index.h, alphas, index.eta, index.eps, maxiter,
        ftol, min(LBFGS_MEMORY, maxiter),
    )
    evaluations = int(evaluations)
    splits = [Split(float(B[stage]), math.nan, {"fval": math.exp(log_i[stage])}) for stage in range(alphas.size)]
    for stage in reversed(range(alphas.size)):  # the last accepted stage: later stages are tried first
        if done[stage]:
            stats = index.accept(data.project(U[stage]) - objective.mean @ U[stage], w, splits[stage], min_size)
            if stats is not None:
                return (U[stage].copy(), splits[stage], index.stages[stage], stats, True), evaluations
    return (U[-1].copy(), splits[-1], index.stages[-1], index.failed_stats(splits[-1]), False), evaluations


def _run_serially(coroutines: list, answer: Callable) -> list:
    """Run each coroutine to the end in turn, answering its requests one at a time."""
    results = []
    for co in coroutines:
        try:
            request = next(co)
            while True:
                request = co.send(answer(request))
        except StopIteration as stop:
            results.append(stop.value)
    return results


def _run_together(coroutines: list, answer_batch: Callable) -> list:
    """Run coroutines in lockstep, answering the pending requests of all of them in one batch."""
    results = [None] * len(coroutines)
    pending = {q: next(co) for q, co in enumerate(coroutines)}
    while pending:
        keys = list(pending)
        answers = answer_batch([pending[q] for q in keys])
        for q, a in zip(keys, answers):
            try:
                pending[q] = coroutines[q].send(a)
            except StopIteration as stop:
                results[q] = stop.value
                del pending[q]
    return results


def pursue(
    data,
    index: ProjectionIndex,
    starts: Sequence[np.ndarray],
    *,
    maxiter: int = 50,
    ftol: float = 1e-5,
    min_size: float = 1,
) -> Hyperplane:
    """Projection pursuit of ``index`` on ``data`` (a data-layer object) from each of ``starts``.

    Returns the hyperplane of the best start (by the index's score; the first one on ties) in the data's
    coordinates, with every start's final direction in ``starts``.
    """
    coroutines = [_continuation(np.asarray(v, dtype=np.float64), index, maxiter, ftol) for v in starts]
    if data.chunked:
        objective = _ChunkedObjective(data, index)
        found = _run_together(coroutines, lambda requests: objective.answer_batch(requests, min_size))
    elif COMPILED_MDH and type(index) is MinimumDensityIndex:
        objective = _InMemoryObjective(data, index)
        found = _compiled_starts(objective, starts, maxiter, ftol, min_size)
    else:
        objective = _InMemoryObjective(data, index)
        found = _run_serially(coroutines, lambda request: objective.answer(request, min_size))
    hyperplanes = []
    for u, split, stage, stats, valid in found:
        v, b = _canonical(u, split.b + float(objective.mean @ u))
        hyperplanes.append(Hyperplane(v, b, valid, stats, {**index.record, **index.stage_record(stage)}))
    best = best_of_starts(hyperplanes, index)
    return best._replace(
        n_evaluations=objective.n_evaluations, starts=tuple(hp.v for hp in hyperplanes), per_start=tuple(hyperplanes)
    )


def best_of_starts(hyperplanes: Sequence[Hyperplane], index: ProjectionIndex | type[ProjectionIndex]) -> Hyperplane:
    """The valid result with the largest score of the index (the first one on ties), else the first result."""
    best = None
    for hp in hyperplanes:
        if hp.valid and (best is None or index.score(hp.stats) > index.score(best.stats)):
            best = hp
    return hyperplanes[0] if best is None else best


def _canonical(v: np.ndarray, b: float) -> tuple[np.ndarray, float]:
    """(v, b) and (-v, -b) are the same hyperplane: orient v so its largest-magnitude entry is positive."""
    if v[np.argmax(np.abs(v))] < 0:
        return -v, -b
    return v, b


def _starting_directions(v0, data, vecs: np.ndarray, index: ProjectionIndex) -> list[np.ndarray]:
    if v0 is None:
        return index.starts(data, vecs)
    if callable(v0):
        v0 = v0(data.X)
    v0 = np.asarray(v0, dtype=np.float64)
    if v0.ndim == 1:
        v0 = v0[:, None]
    if v0.ndim != 2 or v0.shape[0] != data.n_features:
        raise ValueError(f"v0 must have shape ({data.n_features},) or ({data.n_features}, k); got {v0.shape}.")
    norms = np.linalg.norm(v0, axis=0)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise ValueError("Every initial direction in v0 must be finite and non-zero.")
    return [v0[:, j] / norms[j] for j in range(v0.shape[1])]


def find_hyperplane(
    method: str,
    data,
    *,
    v0: np.ndarray | Callable | None = None,
    maxiter: int = 50,
    ftol: float = 1e-5,
    min_size: float = 1,
    start: int | None = None,
    **params: Any,
) -> Hyperplane:
    """The split of ``data`` (a data-layer object or an array) by the index registered as ``method``.

    ``params`` are the index's set-up parameters (e.g. ``bandwidth`` and ``alphas`` for "mdh"); ``v0``
    overrides its default starts; ``start`` runs only the start of that number (restarts as separate
    tasks, combined by :func:`best_of_starts`). A node whose rows are all identical has no split.
    """
    index_type = get_index(method)
    if not hasattr(data, "leading_eigenvectors"):
        data = InMemoryData(np.asarray(data, dtype=np.float64))
    unknown = sorted(set(params) - set(index_type.setup_params))
    if unknown:
        raise TypeError(
            f"Unknown parameters {unknown} for split method {method!r}; it takes {index_type.setup_params}."
        )
    vals, vecs = data.leading_eigenvectors(max(index_type.n_components, 1))
    if vals[0] == 0:  # every row identical: nothing to separate
        u = vecs[:, 0]
        return Hyperplane(u, float(data.mean() @ u), False, {}, {})
    index = index_type.for_node(data, vals, vecs, min_size=min_size, **params)
    flat = ~varying_components(vals, data.n_features)
    if flat.any():
        # A component the rows do not vary along is no start: its projections are rounding noise, which a
        # scale-free index (the variance ratio) can rank above a real split. The leading one stands in for it,
        # so that the number of starts (and of restart tasks) stays the index's.
        vecs = vecs.copy()
        vecs[:, flat] = vecs[:, :1]
    starts = _starting_directions(v0, data, vecs, index)
    if start is not None:
        if not 0 <= start < len(starts):
            raise ValueError(f"start must lie in [0, {len(starts)}); got {start!r}.")
        starts = starts[start : start + 1]
    return pursue(data, index, starts, maxiter=maxiter, ftol=ftol, min_size=min_size)


def minimum_density_hyperplane(data, **params: Any) -> Hyperplane:
    """Minimum density hyperplane by MDP² (Pavlidis, Hofmeyr & Tasoulis, JMLR 2016, §4-5).

    L-BFGS over the direction minimises ``phi(v) = min_b f_CL(v, b)`` (eq. 13) with the envelope-theorem
    gradient (eq. 26), for each alpha of an increasing schedule, warm-started from the previous alpha. The
    output of one start is the last alpha whose b is a true local minimiser of the projected density:
    strictly inside ``[mu - alpha sigma, mu + alpha sigma]`` with a mode of the projected KDE on each side
    and at least ``min_size`` weight on each side. Among the starts (PC1 and PC2 by default) the one with
    the largest relative depth (eq. 30) wins.
    """
    return find_hyperplane("mdh", data, **params)
