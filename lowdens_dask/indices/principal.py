"""Fixed-direction indices on the first principal component: PDDP (split at the mean) and iPDDP (split in the
largest gap). Neither is optimised: the pursuit evaluates them once on the node's first principal direction.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math

import numpy as np

from .base import Profile, ProjectionIndex, Split, register_index, sorted_positive


def _chunk_weight_below(P: np.ndarray, w: np.ndarray, points) -> np.ndarray:
    return np.array([w[P[j] < b].sum() for j, b in enumerate(points)])


def _sum(*parts: np.ndarray) -> np.ndarray:
    return np.sum(parts, axis=0)


@register_index
class MeanSplitIndex(ProjectionIndex):
    """PDDP (Boley, Data Min. Knowl. Discov. 2(4), 1998): the first principal direction, split at the mean.

    Valid when each side holds ``min_size``. It records no statistics (Boley's split index, the scatter,
    is a property of the node's rows).
    """

    name = "pddp"
    fixed_direction = True

    def __init__(self):
        self.record = {}

    @classmethod
    def for_node(cls, data, vals, vecs, *, min_size=1):
        return cls()

    def evaluate(self, p, w, stage, grad_out=None):
        return Split(0.0, 0.0, {})

    def evaluate_chunked(self, proj, stages, gradient):
        return [(Split(0.0, 0.0, {}), None, None) for _ in stages]

    def accept_chunked(self, proj, splits, min_size):
        below = proj.reduce(_chunk_weight_below, _sum, [split.b for split in splits])
        total = proj.total_weight
        return [split.stats if min(x, total - x) >= min_size else None for x, split in zip(below, splits)]

    @classmethod
    def score(cls, stats: dict) -> float:
        return 0.0

    def profile(self, p, w, b, params):
        mean = float(w @ p / w.sum())
        return Profile(
            lines={"mean": ("mean of these rows", (mean,))},
            note="b at the mean of the node's rows along its first principal component",
        )


def largest_gap(p: np.ndarray, w: np.ndarray, percentile: float, min_size: float) -> tuple[float, float, float]:
    """The midpoint of the widest gap between consecutive projections (of positive weight) that leaves at least
    ``max(percentile * W, min_size)`` weight on each side: ``(b, gap width, weight below)``, or
    ``(nan, 0, 0)`` if there is none."""
    keep = w > 0
    order = np.argsort(p[keep], kind="stable")
    x, ww = p[keep][order], w[keep][order]
    if x.size < 2:
        return math.nan, 0.0, 0.0
    cw = np.cumsum(ww)
    total = cw[-1]
    left = cw[:-1]
    gaps = np.diff(x)
    least = max(percentile * total, min_size)
    ok = (left >= least) & (total - left >= least) & (gaps > 0)
    if not ok.any():
        return math.nan, 0.0, 0.0
    k = np.flatnonzero(ok)[np.argmax(gaps[ok])]
    return 0.5 * (x[k] + x[k + 1]), float(gaps[k]), float(left[k])


@register_index
class LargestGapIndex(ProjectionIndex):
    """iPDDP (Tasoulis, Tasoulis & Plagianakos 2010, as implemented in HiPart): the first principal direction,
    split at the midpoint of the largest gap between consecutive projections, ignoring the outer
    ``percentile`` of the weight on each side. Statistic: ``gap``, the gap's width (the largest is split
    first).
    """

    name = "ipddp"
    fixed_direction = True
    setup_params = ("percentile",)

    def __init__(self, percentile: float = 0.1, min_size: float = 1):
        if not 0.0 <= percentile < 0.5:
            raise ValueError(f"percentile must lie in [0, 0.5); got {percentile!r}.")
        self.percentile = float(percentile)
        self.min_size = float(min_size)
        self.record = {"percentile": self.percentile}

    @classmethod
    def for_node(cls, data, vals, vecs, *, min_size=1, percentile: float = 0.1):
        return cls(percentile, min_size)

    def evaluate(self, p, w, stage, grad_out=None):
        b, gap, below = largest_gap(p, w, self.percentile, self.min_size)
        if not math.isfinite(b):
            return Split(0.0, math.inf, {"gap": 0.0})
        return Split(b, -gap, {"gap": gap}, weight_below=below)

    def stage_done(self, split: Split) -> bool:
        return math.isfinite(split.value)

    @classmethod
    def score(cls, stats: dict) -> float:
        return stats["gap"]

    def profile(self, p, w, b, params):
        """The widest gap of these rows shaded, and the outer ``percentile`` of their weight on each side marked."""
        mid, gap, _ = largest_gap(p, w, self.percentile, self.min_size)
        spans = {"gap": (f"widest gap {gap:.3g}", (mid - gap / 2, mid + gap / 2))} if math.isfinite(mid) else {}
        lines = {}
        if self.percentile > 0:
            xs, ws = sorted_positive(p, w)
            cw = np.cumsum(ws)
            at = np.searchsorted(cw, [self.percentile * cw[-1], (1.0 - self.percentile) * cw[-1]])
            label = f"outer {self.percentile:.0%} each side (not searched)"
            lines["percentile"] = (label, tuple(float(x) for x in xs[np.minimum(at, xs.size - 1)]))
        return Profile(spans=spans, lines=lines, note="b at the midpoint of the widest gap")
