"""The coordinate frame a tree is grown in: the rows z-scored by ``(mean, scale)``, or unchanged.

Splits are found in the frame and reported in the original coordinates; ``Frame()`` (no mean, no scale)
is the identity.

A column whose spread is within rounding error of its values (:func:`constant_columns`, scikit-learn's
rule for ``StandardScaler``) is constant for every method: :func:`column_frame` gives it the scale
``CONSTANT_SCALE``, so its coordinates in the frame are about 1e-300 of its rounding noise and no split
direction uses it. Without this, z-scoring turns the last bits of such a column (1.0, 1.0 + 1 ulp, 1.0 +
2 ulp) into a feature of unit variance, and even unscaled, a column 1e9 ± 1e-5 offers splits that no
float64 routing can reproduce; both made in-memory and exact chunked fits of the same rows disagree.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._warnings import warn

#: Scale of a constant column in a frame (as MSC's): its frame coordinates are negligible (its deviations from
#: its mean are rounding noise), and a split direction found in the frame has no weight on it in the original
#: coordinates.
CONSTANT_SCALE = 1e300


def constant_columns(mean: np.ndarray, var: np.ndarray, n: float) -> np.ndarray:
    """Columns indistinguishable from constant columns: variance within the error bound of a float64
    two-pass variance (Chan, Golub & LeVeque), ``var <= n eps var + (n eps mean)**2`` with n the number of
    rows (the total weight), as scikit-learn's ``StandardScaler`` decides (``_is_constant_feature``)."""
    eps = np.finfo(np.float64).eps
    var = np.asarray(var, dtype=np.float64)
    return var <= n * eps * var + (n * np.asarray(mean, dtype=np.float64) * eps) ** 2


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


def column_frame(mean: np.ndarray, var: np.ndarray, n: float, standardize: bool) -> tuple[Frame, np.ndarray]:
    """The frame rows with these column means and variances (divisor n - 1) are fitted in, and the mask of
    their constant columns (:func:`constant_columns`).

    With ``standardize`` the columns are z-scored; without, the frame is the identity (``Frame()``) unless a
    column is constant, and then only that column moves (mean 0 and scale 1 elsewhere, so the others' frame
    coordinates are the rows' own values, bit for bit). A constant column gets its mean and
    ``CONSTANT_SCALE`` either way."""
    mean = np.asarray(mean, dtype=np.float64)
    var = np.maximum(np.asarray(var, dtype=np.float64), 0.0)
    constant = constant_columns(mean, var, n)
    if standardize:
        scale = np.sqrt(var)
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
    var = np.diag(root.scatter_matrix()) / max(root.total_weight - 1.0, 1.0)
    frame, constant = column_frame(mean, var, root.total_weight, standardize)
    _warn_constant(constant & (var > 0))
    if frame.mean is None:
        return root, frame
    return type(root)((root.X - frame.mean) / frame.scale, counter=root.counter), frame


def rows_frame(X: np.ndarray, weights: np.ndarray, standardize: bool) -> tuple[Frame, np.ndarray]:
    """The frame rows in memory are fitted in, and the mask of their constant columns: weighted column means
    and variances (divisor W - 1) through :func:`~lowdens_dask.backend.frame.column_frame`, with W the total
    weight (the rows a summary stands for), as exact mode does on chunks."""
    total = float(weights.sum())
    mean = weights @ X / total
    scatter = np.zeros(X.shape[1])
    for start in range(0, X.shape[0], FRAME_BLOCK_ROWS):  # working copies of a block of rows only
        block = X[start : start + FRAME_BLOCK_ROWS] - mean
        scatter += weights[start : start + FRAME_BLOCK_ROWS] @ (block * block)
    var = scatter / max(total - 1.0, 1.0)
    frame, constant = column_frame(mean, var, total, standardize)
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
