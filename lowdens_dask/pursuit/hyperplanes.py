"""Hyperplane finders: MDP² pursuit (MDH) and the fixed-direction baselines PDDP and dePDDP.

Each finder takes a data-layer object (see :mod:`lowdens_dask.backend`) and returns a
:class:`Hyperplane` in the data's own coordinates. They are registered in :data:`SPLITTERS` by
method name, which is how :class:`~lowdens_dask.ClusterTree` re-splits a node.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..backend import InMemoryData
from ..indices import DensitySplit, MinimumDensityIndex, lowest_density_minimum
from ..indices import density_passes as passes
from ..indices.density import relative_depth_from_logs
from ._bfgs import LBFGSMemory, lbfgs_steps

#: Curvature pairs kept by L-BFGS: at least one alpha stage, so each stage's steps are BFGS steps.
LBFGS_MEMORY = 50

#: The paper's alpha continuation: alpha_min close to 0, then 0.1 steps up to alpha_max = 0.9 (§5.1.1).
DEFAULT_ALPHAS = (0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


class Hyperplane(NamedTuple):
    """A separating hyperplane ``{x : v.x = b}``; side 0 is ``v.x < b`` and side 1 is ``v.x >= b``."""

    v: np.ndarray  #: unit normal vector
    b: float  #: offset
    valid: bool  #: a usable split (both sides hold at least min_size, and for MDH a density minimiser)
    fval: float  #: projected density at b (nan for PDDP)
    relative_depth: float  #: relative depth of b (eq. 30; nan for PDDP)
    params: dict  #: resolved parameters (bandwidth, alpha reached, ...), JSON-serialisable
    n_evaluations: int = 0  #: objective evaluations spent
    starts: tuple = ()  #: MDH: the unit normal each start reached (the best one is ``v``)


def silverman_bandwidth(sigma_pc1: float, total_weight: float) -> float:
    """h = 0.9 sigma_pc1 n^(-1/5) (Silverman's rule on the first principal component, seed-mdh §5.2)."""
    return 0.9 * sigma_pc1 * total_weight ** (-0.2)


def _bandwidth(bandwidth, data, sigma_pc1: float) -> float:
    if bandwidth is None or (isinstance(bandwidth, str) and bandwidth == "silverman"):
        # For summaries, each mean stands for rows spread around it: widen h by their variance.
        h = math.sqrt(silverman_bandwidth(sigma_pc1, data.total_weight) ** 2 + data.within_variance)
    elif callable(bandwidth):
        h = float(bandwidth(data.X))
    else:
        h = float(bandwidth)
    if not (h > 0 and math.isfinite(h)):
        raise ValueError(
            f"The bandwidth must be a positive finite number; got {h!r}"
            + (" (the data have zero variance along their first principal component)." if sigma_pc1 == 0 else ".")
        )
    return h


class _Evaluation(NamedTuple):
    """What the pursuit keeps of one objective evaluation."""

    u: np.ndarray  #: unit direction
    split: DensitySplit  #: b search result on the centred projections
    p: np.ndarray | None = None  #: the centred projections (in memory)
    moments: np.ndarray | None = None  #: (total, mean, std, min, max) of the projections (chunked)


class _ProjectionObjective:
    """log f_CL(v / |v|) and its gradient in v for centred data (spec §5.5, unnormalised-v form)."""

    def __init__(self, data, index: MinimumDensityIndex):
        self.data = data
        self.index = index
        self.mean = data.mean()
        self.grad_p = np.empty(data.n_samples)
        self.n_evaluations = 0
        self.last = None

    def __call__(self, v: np.ndarray, alpha: float) -> tuple[float, np.ndarray]:
        norm = math.sqrt(v @ v)
        u = v / norm
        p = self.data.project(u)
        p -= self.mean @ u
        split = self.index.evaluate(p, self.data.weights, alpha, self.grad_p)
        xg = self.data.backproject(self.grad_p) - self.mean * self.grad_p.sum()
        self.n_evaluations += 1
        self.last = _Evaluation(u, split, p)
        return split.log_f, _direction_gradient(xg, u, norm)

    def answer(self, request, min_size: float):
        """Answer one request of :func:`_continuation`."""
        if request[0] == "evaluate":
            f, g = self(request[1], request[2])
            return f, g, self.last
        ev = request[1]
        left = self.data.weighted_count(ev.p < ev.split.b)
        if min(left, self.data.total_weight - left) < min_size:
            return None
        return self.index.relative_depth(ev.p, self.data.weights, ev.split.b)


def _direction_gradient(xg: np.ndarray, u: np.ndarray, norm: float) -> np.ndarray:
    """Gradient in v of an index of the projections on u = v / |v|, from ``xg = X_c.T @ dindex/dp``."""
    return (xg - u * (u @ xg)) / norm


class _ChunkedObjective:
    """The same objective over chunked data: the restarts' evaluations are answered together, one
    pass over the node's rows per step for all of them (projections as one ``X @ V`` block)."""

    def __init__(self, data, index: MinimumDensityIndex):
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
        alphas = [r[2] for r in requests]
        norms = np.sqrt((V * V).sum(axis=0))
        U = V / norms
        index = self.index
        proj = self.data.projections(U, self.mean @ U)
        mom = passes.projection_moments(proj)
        found = passes.minimise_penalised_density(proj, mom, index.h, alphas, index.eta, index.eps)
        XtG, sum_g = passes.gradient(proj, mom, index.h, alphas, index.eta, index.eps, found)
        self.n_evaluations += len(requests)
        out = []
        for j, (b, log_f, log_i, *_) in enumerate(found):
            split = DensitySplit(b, log_f, log_i, mom[j, 1] - alphas[j] * mom[j, 2], mom[j, 1] + alphas[j] * mom[j, 2])
            grad = _direction_gradient(XtG[:, j] - self.mean * sum_g[j], U[:, j], norms[j])
            out.append((log_f, grad, _Evaluation(U[:, j].copy(), split, moments=mom[j : j + 1])))
        return out

    def _accept(self, requests: list, min_size: float) -> list:
        evs = [r[1] for r in requests]
        U = np.column_stack([ev.u for ev in evs])
        proj = self.data.projections(U, self.mean @ U)
        mom = np.vstack([ev.moments for ev in evs])
        stats = passes.split_statistics(proj, mom, self.index.h, [ev.split.b for ev in evs])
        out = []
        for (below, log_b, log_mode), ev in zip(stats, evs):
            if min(below, self.data.total_weight - below) < min_size:
                out.append(None)
            else:
                out.append(relative_depth_from_logs(log_b, log_mode, log_mode))
        return out


def _continuation(v: np.ndarray, alphas, maxiter: int, ftol: float):
    """Alpha continuation from one start (§5.1.1), as a coroutine over the objective.

    Yields ``("evaluate", v, alpha)`` and receives ``(f, grad, evaluation)``; yields ``("accept",
    evaluation)`` at the end of a stage whose b is interior and receives the relative depth, or None if a
    side holds less than min_size. Returns ``(u, split, alpha, relative depth, valid)``.
    """
    kept = None
    memory = LBFGSMemory(v.size, min(LBFGS_MEMORY, maxiter))
    for alpha in alphas:
        f, g, ev = yield ("evaluate", v, alpha)
        steps = lbfgs_steps(v, f, g, ev, memory, maxiter, ftol)
        try:
            x = next(steps)
            while True:
                x = steps.send((yield ("evaluate", x, alpha)))
        except StopIteration as stop:
            v, f, g, ev = stop.value
        if MinimumDensityIndex.is_interior(ev.split):
            depth = yield ("accept", ev)
            if depth is not None and depth > 0:
                kept = (ev.u.copy(), ev.split, float(alpha), depth, True)
    if kept is None:
        kept = (ev.u.copy(), ev.split, float(alphas[-1]), 0.0, False)
    return kept


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


def minimum_density_hyperplane(
    data,
    *,
    bandwidth: float | str | Callable | None = None,
    v0: np.ndarray | Callable | None = None,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    eta: float = 1e-2,
    eps: float = 1.0 - 1e-6,
    maxiter: int = 50,
    ftol: float = 1e-5,
    min_size: float = 1,
    start: int | None = None,
) -> Hyperplane:
    """Minimum density hyperplane by MDP² (Pavlidis, Hofmeyr & Tasoulis, JMLR 2016, §4-5).

    BFGS over the direction minimises ``phi(v) = min_b f_CL(v, b)`` (eq. 13) with the
    envelope-theorem gradient (eq. 26), for each alpha of an increasing schedule, warm-started from
    the previous alpha. The output of one start is the last alpha whose b is a true local minimiser
    of the projected density: strictly inside ``[mu - alpha sigma, mu + alpha sigma]`` with a mode of
    the projected KDE on each side and at least ``min_size`` weight on each side. Among the starts
    (PC1 and PC2 by default) the one with the largest relative depth (eq. 30) wins; ``start`` runs
    only the start of that index (restarts as separate tasks, combined by :func:`best_of_starts`).
    """
    vals, vecs = data.leading_eigenvectors(2)
    if vals[0] == 0:  # every row identical: nothing to separate
        return _no_split(data, vecs[:, 0])
    sigma_pc1 = math.sqrt(vals[0])
    h = _bandwidth(bandwidth, data, sigma_pc1)
    if eta > h:
        warnings.warn(
            f"eta={eta:g} exceeds the bandwidth h={h:.3g}: at this data scale the penalty of eq. 10 no longer "
            "keeps b near [mu - alpha sigma, mu + alpha sigma]. Rescale the data (e.g. standardize=True) or pass "
            "a smaller eta.",
            UserWarning,
            stacklevel=2,
        )
    starts = _starting_directions(v0, data, vecs)
    if start is not None:  # one restart alone, e.g. as its own task; see best_of_starts
        if not 0 <= start < len(starts):
            raise ValueError(f"start must lie in [0, {len(starts)}); got {start!r}.")
        starts = starts[start : start + 1]
    index = MinimumDensityIndex(h, eta, eps)
    coroutines = [_continuation(v, alphas, maxiter, ftol) for v in starts]
    if hasattr(data, "projections"):  # chunked: all starts share each pass over the data
        objective = _ChunkedObjective(data, index)
        found = _run_together(coroutines, lambda requests: objective.answer_batch(requests, min_size))
    else:
        objective = _ProjectionObjective(data, index)
        found = _run_serially(coroutines, lambda request: objective.answer(request, min_size))
    hyperplanes = []
    for u, split, alpha, depth, valid in found:
        params = {"bandwidth": h, "alpha": alpha, "eta": eta, "eps": eps}
        v, b = _canonical(u, split.b + float(objective.mean @ u))
        hyperplanes.append(Hyperplane(v, b, valid, math.exp(split.log_density), depth, params))
    best = best_of_starts(hyperplanes)
    return best._replace(n_evaluations=objective.n_evaluations, starts=tuple(hp.v for hp in hyperplanes))


def best_of_starts(hyperplanes: Sequence[Hyperplane]) -> Hyperplane:
    """The result of the start with the largest relative depth (the first one on ties)."""
    best = hyperplanes[0]
    for hp in hyperplanes[1:]:
        if hp.relative_depth > best.relative_depth:
            best = hp
    return best


def _canonical(v: np.ndarray, b: float) -> tuple[np.ndarray, float]:
    """(v, b) and (-v, -b) are the same hyperplane: orient v so its largest-magnitude entry is positive."""
    if v[np.argmax(np.abs(v))] < 0:
        return -v, -b
    return v, b


def _no_split(data, v: np.ndarray) -> Hyperplane:
    return Hyperplane(v, float(data.mean() @ v), False, math.nan, 0.0, {})


def _starting_directions(v0, data, vecs: np.ndarray) -> list[np.ndarray]:
    if v0 is None:
        return [vecs[:, j] for j in range(vecs.shape[1])]
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


def pddp_hyperplane(data, *, min_size: float = 1) -> Hyperplane:
    """PDDP (Boley 1998): the first principal direction, split at the mean of the projections."""
    _, vecs = data.leading_eigenvectors(1)
    u = vecs[:, 0]
    b = float(data.mean() @ u)
    left = data.weight_below(u, b)
    right = data.total_weight - left
    return Hyperplane(u, b, min(left, right) >= min_size, math.nan, math.nan, {})


def depddp_hyperplane(data, *, bandwidth: float | str | Callable | None = None, min_size: float = 1) -> Hyperplane:
    """dePDDP (Tasoulis et al. 2010): split the PC1 projection at its lowest KDE minimum.

    The bandwidth rule is the one of MDH (h = 0.9 sigma_pc1 n^(-1/5)). A unimodal projection has
    no split.
    """
    vals, vecs = data.leading_eigenvectors(1)
    u = vecs[:, 0]
    if vals[0] == 0:
        return _no_split(data, u)
    h = _bandwidth(bandwidth, data, math.sqrt(vals[0]))
    if hasattr(data, "projections"):
        proj = data.projections(u)
        mom = passes.projection_moments(proj)
        b, log_i = passes.lowest_density_minimum(proj, mom, h)
        if math.isfinite(b):
            ((left, log_b, log_mode),) = passes.split_statistics(proj, mom, h, [b])
            depth = relative_depth_from_logs(log_b, log_mode, log_mode)
    else:
        p = data.project(u)
        b, log_i = lowest_density_minimum(p, data.weights, data.total_weight, h, np.empty_like(p))
        if math.isfinite(b):
            left = data.weighted_count(p < b)
            depth = MinimumDensityIndex(h).relative_depth(p, data.weights, b)
    if not math.isfinite(b):
        return Hyperplane(u, math.nan, False, math.nan, 0.0, {"bandwidth": h})
    right = data.total_weight - left
    return Hyperplane(u, float(b), min(left, right) >= min_size, math.exp(log_i), depth, {"bandwidth": h})


#: Hyperplane finders by method name, as stored in ClusterTree nodes.
SPLITTERS: dict[str, Callable[..., Hyperplane]] = {
    "mdh": minimum_density_hyperplane,
    "pddp": pddp_hyperplane,
    "depddp": depddp_hyperplane,
}


def find_hyperplane(method: str, data, **params: Any) -> Hyperplane:
    """Dispatch to the finder registered for ``method``; ``data`` is a data-layer object or an array."""
    try:
        splitter = SPLITTERS[method]
    except KeyError:
        raise ValueError(f"Unknown split method {method!r}; known methods: {sorted(SPLITTERS)}.") from None
    if not hasattr(data, "leading_eigenvectors"):
        data = InMemoryData(np.asarray(data, dtype=np.float64))
    return splitter(data, **params)
