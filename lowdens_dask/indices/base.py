"""The projection-index contract: what a clustering criterion declares to get the pursuit, the tree grower,
summary mode, exact chunked mode and ``refine`` without code of its own (docs/DESIGN.md, "Where a new method
plugs in").

A :class:`ProjectionIndex` subclass is registered by method name in :data:`INDICES`. For each tree node
the pursuit calls :meth:`ProjectionIndex.for_node` with the node's data, which does the per-node set-up
(bandwidth, scale) and returns an index bound to that node. The pursuit then works on the node's centred
projections ``p = (X - mean) @ u`` only through:

- :attr:`stages`, the continuation schedule (alpha for MDH; ``(None,)`` for none). Each stage is an
  L-BFGS minimisation warm-started from the previous one; a fixed-direction index (PDDP, dePDDP,
  iPDDP) has ``fixed_direction = True`` and is evaluated once on its starting direction;
- :meth:`evaluate` (rows in memory, one chunk) or :meth:`evaluate_chunked` (projections held in row
  chunks): the value the pursuit minimises, the split point b and d value / d p;
- :meth:`stage_done` and :meth:`accept` (and ``accept_chunked``): whether the split at the end of a stage
  is a valid split, and the node statistics recorded for it (``fval``, ``relative_depth``, ...);
- :meth:`score`: which of several starts wins;
- :meth:`profile`: the index along one projection, as a node plot draws it (``lowdens_dask.plots``).

The in-memory methods are the fast whole-array path. The default chunked methods gather the node's
projections (one float per row and direction) to the client and call the in-memory ones, which is what a
criterion that needs the sorted projections (NCut, variance ratio, iPDDP) must do; an index whose value
reduces over chunks (MDH) overrides them with map/tree-reduce passes.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np

#: Chunked projections with at most this many values (rows x directions, 512 MB as float64) are gathered to the
#: client for an evaluation: one pass for ``X @ V``, the in-memory evaluation, one pass for ``X.T @ G``.
GATHER_MAX_VALUES = 2**26


def gathers(proj) -> bool:
    """Whether an evaluation of these chunked projections gathers them (see :data:`GATHER_MAX_VALUES`)."""
    return proj.node.n_samples * proj.n_directions <= GATHER_MAX_VALUES


class Split(NamedTuple):
    """The split an index finds on one set of centred projections."""

    b: float  #: split point on the centred projections
    value: float  #: the value the pursuit minimises (e.g. log f_CL, NCut, minus the variance ratio)
    stats: dict  #: node statistics of this split (fval, ...), JSON-able floats
    weight_below: float = math.nan  #: weight of the rows with p < b, where the index knows it
    detail: Any = None  #: index-private detail (e.g. the penalty interval of MDH)


@dataclass(frozen=True)
class Profile:
    """An index along one projection, as a node plot draws it (:meth:`ProjectionIndex.profile`).

    ``curves``, ``spans`` and ``lines`` map an id (the plotted artist's gid) to ``(legend label, data)``: the
    values at ``x``, an interval ``(lo, hi)`` to shade, and positions of vertical lines. The first curve is the
    index's own; without curves a plot draws the histogram of the projections by side.
    """

    x: np.ndarray = field(default_factory=lambda: np.empty(0))
    curves: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    ylabel: str = "rows"
    best: str = ""  #: "min" or "max": the split point is the first curve's optimum
    at_b: tuple[str, float] | None = None  #: (label, value) of the first curve's quantity at b
    spans: dict[str, tuple[str, tuple[float, float]]] = field(default_factory=dict)
    lines: dict[str, tuple[str, tuple[float, ...]]] = field(default_factory=dict)
    note: str = ""  #: what the node's recorded statistics mean beside the curve, how b was found


def admissible_splits(xs: np.ndarray, ws: np.ndarray, min_size: float) -> tuple[np.ndarray, np.ndarray]:
    """The splits of sorted projections ``xs`` (positive weights ``ws``) into the first k and the rest
    (k = 1..n-1) that separate distinct values and leave ``min_size`` weight on each side: a mask over k, and
    their split points (midpoints)."""
    left = np.cumsum(ws)[:-1]
    ok = (xs[:-1] < xs[1:]) & (left >= min_size) & (float(ws.sum()) - left >= min_size)
    return ok, 0.5 * (xs[:-1] + xs[1:])[ok]


def sorted_positive(p: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The projections of positive weight, sorted, with their weights."""
    keep = w > 0
    order = np.argsort(p[keep], kind="stable")
    return p[keep][order], w[keep][order]


def fallback_split(p: np.ndarray, w: np.ndarray, curve, best: str) -> tuple[float, float]:
    """Where an index whose splits all fail ``min_size`` puts its would-be split: ``(b, weight below b)``.

    The best split between two distinct projections of positive weight whatever the weight left on each side
    (by ``curve(xs, ws)``, the index along the sorted projections, as ``ncut_curve``; ``best`` is "min" or
    "max"), at the midpoint of its gap; when all those projections coincide, their common value (their
    median: every row then lies on side 1, ``p >= b``). So that the hyperplane an estimator reports without a
    valid split is finite (issue 22, point 8), as MDH's is. The caller keeps the split invalid.
    """
    xs, ws = sorted_positive(p, w)
    if xs.size == 0:  # no row of positive weight (refused by the estimators' input checks)
        return (float(np.median(p)) if p.size else 0.0), 0.0
    gaps = np.flatnonzero(xs[:-1] < xs[1:])
    if gaps.size == 0:
        return float(xs[0]), 0.0
    values = np.asarray(curve(xs, ws), dtype=np.float64)[gaps]
    worst = math.inf if best == "min" else -math.inf
    values = np.where(np.isnan(values), worst, values)
    k = int(gaps[np.argmin(values) if best == "min" else np.argmax(values)])
    lo, hi = float(xs[k]), float(xs[k + 1])
    b = 0.5 * (lo + hi)
    if not lo < b:  # adjacent doubles: lo must stay below b
        b = hi
    return b, float(ws[: k + 1].sum())


class ProjectionIndex:
    """Base class of projection indices (see the module docstring for the contract).

    Subclasses set :attr:`name`, implement :meth:`for_node`, :meth:`evaluate` and :meth:`accept`, and may
    override the schedule, the starts, the chunked passes and the score.
    """

    name: ClassVar[str] = ""
    #: Evaluated once on the starting direction, without optimisation (PDDP, dePDDP, iPDDP).
    fixed_direction: ClassVar[bool] = False
    #: Parameters of the node set-up (``for_node``) that are not pursuit options.
    setup_params: ClassVar[tuple[str, ...]] = ()
    #: Whether the index's value along a direction is unchanged when the projection is rescaled (a ratio of
    #: variances): its pursuit then reaches every direction of the rows' span alike, a low-variance one as well as
    #: a high-variance one, and a test of its splits counts the span's dimensions, not the participation ratio.
    scale_free: ClassVar[bool] = False
    #: Principal components the set-up needs (the default starts use them).
    n_components: ClassVar[int] = 1

    #: The continuation schedule: one L-BFGS stage per entry.
    stages: tuple = (None,)
    #: Parameters recorded on every node split with this index (bandwidth, scale, ...).
    record: dict

    # ------------------------------------------------------------------ per node
    @classmethod
    def for_node(cls, data, vals: np.ndarray, vecs: np.ndarray, *, min_size: float = 1, **params) -> ProjectionIndex:
        """The index set up for one node, from its data, its leading covariance eigenpairs and the least
        weight a side of a split may hold."""
        raise NotImplementedError

    def starts(self, data, vecs: np.ndarray) -> list[np.ndarray]:
        """Default starting directions (unit vectors): the leading principal components."""
        return [vecs[:, j] for j in range(min(self.n_components, vecs.shape[1]))]

    @classmethod
    def n_starts(cls, n_features: int) -> int:
        """How many default starts :meth:`starts` gives (they can run as separate tasks)."""
        return min(cls.n_components, n_features)

    # ------------------------------------------------------------------ value, split, derivative
    def evaluate(self, p: np.ndarray, w: np.ndarray, stage, grad_out: np.ndarray | None) -> Split:
        """The split of centred projections ``p`` (weights ``w``); ``grad_out`` (if given) receives
        d value / d p."""
        raise NotImplementedError

    def evaluate_chunked(self, proj, stages: list, gradient: bool) -> list[tuple[Split, np.ndarray, np.ndarray]]:
        """:meth:`evaluate` for each direction of a chunked projection set, with ``(X.T @ g, sum g)`` per
        direction (None, None without ``gradient``). Default: gather the projections."""
        P, w = proj.gather()
        out, G = [], np.zeros_like(P) if gradient else None
        for j, stage in enumerate(stages):
            out.append(self.evaluate(P[j], w, stage, None if G is None else G[j]))
        if G is None:
            return [(split, None, None) for split in out]
        XtG, sum_g = proj.backproject_values(G)
        return [(split, XtG[:, j], sum_g[j]) for j, split in enumerate(out)]

    # ------------------------------------------------------------------ validity and statistics
    def stage_done(self, split: Split) -> bool:
        """Whether the split at the end of a stage is a candidate (checked by :meth:`accept`)."""
        return math.isfinite(split.b)

    def accept(self, p: np.ndarray, w: np.ndarray, split: Split, min_size: float) -> dict | None:
        """The node statistics of a valid split, or None (a side below ``min_size``, or the index's own test)."""
        below = split.weight_below if math.isfinite(split.weight_below) else float(w[p < split.b].sum())
        if min(below, float(w.sum()) - below) < min_size:
            return None
        return split.stats

    def accept_chunked(self, proj, splits: list[Split], min_size: float) -> list[dict | None]:
        """:meth:`accept` for each direction of a chunked projection set. Default: gather the projections."""
        P, w = proj.gather()
        return [self.accept(P[j], w, split, min_size) for j, split in enumerate(splits)]

    def failed_stats(self, split: Split) -> dict:
        """Statistics recorded when no stage gave a valid split."""
        return dict(split.stats)

    @classmethod
    def score(cls, stats: dict) -> float:
        """Larger is better: which start's result is kept."""
        return -float(stats.get("fval", math.inf))

    @classmethod
    def significant_split(cls, p: np.ndarray, w: np.ndarray, params: dict, min_size: float):
        """Where a split goes along a direction whose projection the significance test found multimodal when the
        pursuit's own split there is not valid: ``(b, node statistics)``, or None (the default: nowhere)."""
        return

    @classmethod
    def forced_score(cls, stats: dict) -> float:
        """Larger is better: when no leaf has a valid split, which leaf's best split ``force_n_clusters`` makes
        (ties go to the leaf the estimator's split index prefers; by default they all tie)."""
        return 0.0

    def stage_record(self, stage) -> dict:
        """Parameters recorded for the stage a result comes from."""
        return {}

    @classmethod
    def polish_params(cls, params: dict) -> dict:
        """Pursuit parameters that restart a summary-mode result where it ended (``refine``)."""
        return {}

    # ------------------------------------------------------------------ plots
    def profile(self, p: np.ndarray, w: np.ndarray, b: float, params: dict) -> Profile:
        """The index along projections ``p`` (weights ``w``) split at ``b``, for a node that recorded
        ``params`` (the stage's record included). Default: no curve (plots draw the histogram)."""
        return Profile()


#: Projection indices by method name (what ClusterTree nodes and the estimators' registry refer to).
INDICES: dict[str, type[ProjectionIndex]] = {}


def register_index(cls: type[ProjectionIndex]) -> type[ProjectionIndex]:
    """Class decorator: add a projection index to :data:`INDICES` under its ``name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name.")
    INDICES[cls.name] = cls
    return cls


def get_index(method: str) -> type[ProjectionIndex]:
    try:
        return INDICES[method]
    except KeyError:
        raise ValueError(f"Unknown split method {method!r}; known methods: {sorted(INDICES)}.") from None
