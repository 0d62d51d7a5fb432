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
from ..indices import MinimumDensityIndex, lowest_density_minimum
from ._bfgs import LBFGSMemory, lbfgs

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


def _side_weights(data, p: np.ndarray, b: float) -> tuple[float, float]:
    left = data.weighted_count(p < b)
    return left, data.total_weight - left


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
        grad = (xg - u * (u @ xg)) / norm
        self.n_evaluations += 1
        self.last = (v, u, p, split)
        return split.log_f, grad


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
) -> Hyperplane:
    """Minimum density hyperplane by MDP² (Pavlidis, Hofmeyr & Tasoulis, JMLR 2016, §4-5).

    BFGS over the direction minimises ``phi(v) = min_b f_CL(v, b)`` (eq. 13) with the
    envelope-theorem gradient (eq. 26), for each alpha of an increasing schedule, warm-started from
    the previous alpha. The output of one start is the last alpha whose b is a true local minimiser
    of the projected density: strictly inside ``[mu - alpha sigma, mu + alpha sigma]`` with a mode of
    the projected KDE on each side and at least ``min_size`` weight on each side. Among the starts
    (PC1 and PC2 by default) the one with the largest relative depth (eq. 30) wins.
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
    index = MinimumDensityIndex(h, eta, eps)
    objective = _ProjectionObjective(data, index)
    best = None
    for v_start in starts:
        found = _pursue(objective, v_start, alphas, maxiter, ftol, min_size)
        if best is None or found[3] > best[3]:
            best = found
    u, split, alpha, depth, valid = best
    params = {"bandwidth": h, "alpha": alpha, "eta": eta, "eps": eps}
    v, b = _canonical(u, split.b + float(objective.mean @ u))
    return Hyperplane(v, b, valid, math.exp(split.log_density), depth, params, objective.n_evaluations)


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


def _pursue(objective: _ProjectionObjective, v: np.ndarray, alphas, maxiter, ftol, min_size):
    """Alpha continuation from one start; returns (u, split, alpha, relative depth, valid)."""
    data = objective.data
    index = objective.index
    kept = None
    memory = LBFGSMemory(v.size, min(LBFGS_MEMORY, maxiter))
    for alpha in alphas:
        fun = lambda x, a=alpha: objective(x, a)
        f, g = fun(v)
        v, f, g = lbfgs(fun, v, f, g, memory, maxiter, ftol)
        if objective.last[0] is not v:
            fun(v)
        _, u, p, split = objective.last
        if index.is_interior(split):
            left, right = _side_weights(data, p, split.b)
            if min(left, right) >= min_size:
                depth = index.relative_depth(p, data.weights, split.b)
                if depth > 0:
                    kept = (u.copy(), split, float(alpha), depth, True)
    if kept is None:
        _, u, _, split = objective.last
        kept = (u.copy(), split, float(alphas[-1]), 0.0, False)
    return kept


def pddp_hyperplane(data, *, min_size: float = 1) -> Hyperplane:
    """PDDP (Boley 1998): the first principal direction, split at the mean of the projections."""
    _, vecs = data.leading_eigenvectors(1)
    u = vecs[:, 0]
    p = data.project(u)
    b = float(data.mean() @ u)
    left, right = _side_weights(data, p, b)
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
    p = data.project(u)
    b, log_i = lowest_density_minimum(p, data.weights, data.total_weight, h, np.empty_like(p))
    if not math.isfinite(b):
        return Hyperplane(u, math.nan, False, math.nan, 0.0, {"bandwidth": h})
    left, right = _side_weights(data, p, b)
    index = MinimumDensityIndex(h)
    depth = index.relative_depth(p, data.weights, b)
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
    if not hasattr(data, "project"):
        data = InMemoryData(np.asarray(data, dtype=np.float64))
    return splitter(data, **params)
