"""The coordinate frame a tree is grown in: the rows z-scored by ``(mean, scale)``, or unchanged.

Splits are found in the frame and reported in the original coordinates; ``Frame()`` (no mean, no scale)
is the identity.

A column whose spread is within rounding error of its values (:func:`constant_columns`, scikit-learn's
rule for ``StandardScaler``) is constant for every method: :func:`column_frame` gives it the scale
``CONSTANT_SCALE``, so its coordinates in the frame are about 1e-300 of its rounding noise and no split
direction uses it. Without this, z-scoring turns the last bits of such a column (1.0, 1.0 + 1 ulp, 1.0 +
2 ulp) into a feature of unit variance, and even unscaled, a column 1e9 ± 1e-5 offers splits that no
float64 routing can reproduce; both made in-memory and exact chunked fits of the same rows disagree.

Column means and variances are taken of each column divided by a power of two at or above its largest |x|
(:func:`column_units`, :func:`column_moments`): the division is exact, so the statistics are those of the
rows themselves bit for bit, except that a variance no longer under- or overflows float64 (a column of
scale 1e-170 beside columns of scale 1 is not "within rounding error": its variance, 1e-340, was 0). X's
own scale is checked once, before any fit (:func:`check_value_range`): the methods compute in X's units.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._warnings import warn

#: Scale of a constant column in a frame (as MSC's): its frame coordinates are negligible (its deviations from
#: its mean are rounding noise), and a split direction found in the frame has no weight on it in the original
#: coordinates.
CONSTANT_SCALE = 1e300

#: The scales of X that every method fits in X's own units: its largest |x| at most ``SCALE_RANGE[1]`` and, unless
#: every column is constant, the largest range (max - min) of a column at least ``SCALE_RANGE[0]``. The methods
#: square distances and square them again (the Gram matrix's squares in the significance test's participation
#: ratio, 1/h^4 in MDH's Newton steps) and sum them over rows of total weight up to 1e30: at 1e50 such sums reach
#: about 1e266 and at 1e-50 about 1e-200, within float64's normal range. Outside it they over- or underflow
#: (issue 34, item 13: PDDP on data scaled by 1e-170 found one cluster, its variances 0 and called "within
#: rounding error"; MDH at 1e155 reported a bandwidth of 3e-145 from an infinite variance; at 1e90 the auto-K
#: test's sums overflowed). Data outside the range are refused with one ValueError that names their scale and
#: the factor that brings them in; they are never rescaled silently.
SCALE_RANGE = (1e-50, 1e50)


def check_value_range(lo: np.ndarray, hi: np.ndarray, spread: bool = True) -> None:
    """Refuse X whose scale lies outside :data:`SCALE_RANGE`, given each column's least and largest value over the
    rows fitted (finite, positive weight): its largest |x| above ``SCALE_RANGE[1]``, or (with ``spread``) the
    largest range of a column positive and below ``SCALE_RANGE[0]`` (all columns constant is the caller's error).
    The one check every fit makes before any other work on X's values: in memory, in the first pass over chunks
    (exact mode) and on the summary (summary mode)."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    if lo.size == 0 or not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        return  # no rows (the callers' row checks answer that)
    low, high = SCALE_RANGE
    largest = float(max(np.abs(lo).max(), np.abs(hi).max()))
    if largest > high:
        factor = 10.0 ** math.ceil(math.log10(largest))
        raise ValueError(
            f"X's values reach {largest:.3g} (its largest |x|), above {high:g}: every method computes in X's units, "
            "and its squared distances, their squares and their sums over the rows overflow float64 beyond that "
            f"scale (the variances are inf). Rescale X before fitting, e.g. X / {factor:.0e}; it is not rescaled "
            "silently."
        )
    widest = float((hi - lo).max())
    if spread and 0.0 < widest < low:
        factor = 10.0 ** -math.floor(math.log10(widest))
        raise ValueError(
            f"X's columns vary by at most {widest:.3g} (the largest max - min of a column), below {low:g}: every "
            "method computes in X's units, and its squared distances and their squares underflow float64 below "
            f"that scale (the variances are 0). Rescale X before fitting, e.g. X * {factor:.0e}; it is not "
            "rescaled silently."
        )


def column_units(max_abs: np.ndarray) -> np.ndarray:
    """Per column, the power of two at or above its largest |x| (1 for a column of zeros): dividing a column by it
    is exact in float64 and brings its values into [-1, 1], where squares neither over- nor underflow."""
    _, exponent = np.frexp(np.asarray(max_abs, dtype=np.float64))
    return np.ldexp(1.0, exponent)


def column_moments(X: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, var, unit)``: weighted column means, and the variances (divisor W - 1, W the total weight) of the
    columns divided by ``unit`` (:func:`column_units`), i.e. the variance is ``var * unit**2``. The scaling is
    exact, so ``mean`` and ``sqrt(var) * unit`` are the rows' own statistics bit for bit where they are
    representable, and ``var`` is never 0 or inf by under- or overflow. Rows are taken ``FRAME_BLOCK_ROWS`` at a
    time (working copies of a block only)."""
    total = float(weights.sum())
    mean = weights @ X / total  # within SCALE_RANGE (checked before any fit) a sum of weights times |x| is finite
    largest = np.zeros(X.shape[1])
    for start in range(0, X.shape[0], FRAME_BLOCK_ROWS):
        np.maximum(largest, np.abs(X[start : start + FRAME_BLOCK_ROWS]).max(axis=0, initial=0.0), out=largest)
    unit = column_units(largest)
    centre = mean / unit
    scatter = np.zeros(X.shape[1])
    for start in range(0, X.shape[0], FRAME_BLOCK_ROWS):
        block = X[start : start + FRAME_BLOCK_ROWS] / unit - centre
        scatter += weights[start : start + FRAME_BLOCK_ROWS] @ (block * block)
    return mean, scatter / max(total - 1.0, 1.0), unit


def constant_columns(mean: np.ndarray, var: np.ndarray, n: float, unit: np.ndarray | None = None) -> np.ndarray:
    """Columns indistinguishable from constant columns: variance within the error bound of a float64
    two-pass variance (Chan, Golub & LeVeque), ``var <= n eps var + (n eps mean)**2`` with n the number of
    rows (the total weight), as scikit-learn's ``StandardScaler`` decides (``_is_constant_feature``).

    With ``unit`` (:func:`column_moments`), ``var`` is that of the columns divided by ``unit``; the rule is
    invariant to the scale, so it is applied in those units, where neither side under- or overflows."""
    eps = np.finfo(np.float64).eps
    var = np.asarray(var, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    if unit is not None:
        mean = mean / unit
    return var <= n * eps * var + (n * mean * eps) ** 2


class Frame(NamedTuple):
    """Coordinates ``z = (x - mean) / scale``; the identity when ``mean`` is None."""

    mean: np.ndarray | None = None
    scale: np.ndarray | None = None

    def to_original(self, v: np.ndarray, b: float) -> tuple[np.ndarray, float]:
        """The hyperplane v.z = b of this frame in the original coordinates (unit normal)."""
        if self.mean is None:
            return v, b
        w, top, norm = _unit(v / self.scale)
        return w, float((b / top + (w * norm) @ self.mean) / norm)

    def from_original(self, v: np.ndarray, b: float) -> tuple[np.ndarray, float]:
        """The hyperplane v.x = b of the original coordinates in this frame (inverse of :meth:`to_original`)."""
        if self.mean is None:
            return v, b
        w, top, norm = _unit(v * self.scale)
        return w, float((b - v @ self.mean) / top / norm)

    def to(self, other: Frame, v: np.ndarray, b: float) -> tuple[np.ndarray, float]:
        """The hyperplane v.z = b of this frame in the frame ``other``."""
        return other.from_original(*self.to_original(v, b))


def _unit(w: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``(w / |w|, top, |w / top|)`` with ``top = max |w_j|``: the norm is taken of ``w / top``, so that a normal
    with weights of 1e-300 (constant columns) neither underflows nor overflows when squared."""
    top = float(np.abs(w).max(initial=0.0))
    if not (0.0 < top < np.inf):
        return w, 1.0, 1.0
    u = w / top
    norm = float(np.linalg.norm(u))
    return u / norm, top, norm


def column_frame(
    mean: np.ndarray, var: np.ndarray, n: float, standardize: bool, unit: np.ndarray | None = None
) -> tuple[Frame, np.ndarray]:
    """The frame rows with these column means and variances (divisor n - 1; with ``unit``, the variances of the
    columns divided by ``unit``, as :func:`column_moments` gives them) are fitted in, and the mask of their
    constant columns (:func:`constant_columns`).

    With ``standardize`` the columns are z-scored; without, the frame is the identity (``Frame()``) unless a
    column is constant, and then only that column moves (mean 0 and scale 1 elsewhere, so the others' frame
    coordinates are the rows' own values, bit for bit). A constant column gets its mean and
    ``CONSTANT_SCALE`` either way."""
    mean = np.asarray(mean, dtype=np.float64)
    var = np.maximum(np.asarray(var, dtype=np.float64), 0.0)
    constant = constant_columns(mean, var, n, unit)
    if standardize:
        scale = np.sqrt(var) if unit is None else np.sqrt(var) * unit
        centre = mean.copy()
    elif constant.any():
        scale = np.ones(mean.shape[0])
        centre = np.where(constant, mean, 0.0)
    else:
        return Frame(), constant
    scale[constant] = CONSTANT_SCALE
    return Frame(centre, scale), constant


def exact_frame(root, standardize: bool):
    """The chunked rows (a ``ChunkedNode``) in the frame exact mode fits them in: ``(root, frame)``, as
    :func:`rows_frame` puts rows in memory (z-scored lazily if ``standardize``, divisor n - 1; columns constant up to rounding set aside);
    the rows themselves with the identity frame when neither applies. Column means and variances come from
    the root's first two passes, which the root's principal components reuse."""
    mean = root.mean()
    var, unit = root.column_variances()
    frame, constant = column_frame(mean, var, root.total_weight, standardize, unit)
    _warn_constant(constant & (var > 0))
    if frame.mean is None:
        return root, frame
    return type(root)((root.X - frame.mean) / frame.scale, counter=root.counter, weights=root.weights), frame


def rows_frame(X: np.ndarray, weights: np.ndarray, standardize: bool) -> tuple[Frame, np.ndarray]:
    """The frame rows in memory are fitted in, and the mask of their constant columns: weighted column means
    and variances (divisor W - 1, :func:`column_moments`) through :func:`~lowdens_dask.backend.frame.column_frame`,
    with W the total weight (the rows a summary stands for), as exact mode does on chunks."""
    total = float(weights.sum())
    mean, var, unit = column_moments(X, weights)
    frame, constant = column_frame(mean, var, total, standardize, unit)
    if constant.any():
        rows = X[weights > 0][:, constant]
        rounding = np.zeros_like(constant)
        rounding[constant] = rows.max(axis=0) > rows.min(axis=0)
        _warn_constant(rounding)
    return frame, constant


#: Rows whose deviations from the mean :func:`rows_frame` holds at once.
FRAME_BLOCK_ROWS = 65_536


def _warn_constant(rounding: np.ndarray) -> None:
    """Warn about the columns that vary, but only within rounding error of their values (exactly constant
    columns are reported by the input checks)."""
    rounding = np.flatnonzero(rounding)
    if rounding.size:
        warn(
            f"X has {rounding.size} column(s) whose spread is within rounding error of their values (indices "
            f"{rounding[:10].tolist()}{'...' if rounding.size > 10 else ''}: the variance is within the error "
            "bound of a float64 variance, scikit-learn's rule for StandardScaler); they are treated as constant "
            "and do not affect the splits."
        )


def standardisation(X: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted column means and standard deviations (divisor W - 1); constant columns get scale 1. The variances
    are taken of the columns divided by powers of two (:func:`column_moments`), so a
    column of scale 1e-170 gets its own deviation, not 0 (its variance underflowed)."""
    mean, var, unit = column_moments(X, weights)
    scale = np.sqrt(var) * unit
    scale[scale == 0] = 1.0
    return mean, scale
