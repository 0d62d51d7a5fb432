"""The coordinate frame a tree is grown in: the rows z-scored by ``(mean, scale)``, or unchanged.

Splits are found in the frame and reported in the original coordinates; ``Frame()`` (no mean, no scale)
is the identity.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Frame(NamedTuple):
    """Coordinates ``z = (x - mean) / scale``; the identity when ``mean`` is None."""

    mean: np.ndarray | None = None
    scale: np.ndarray | None = None

    def to_original(self, v: np.ndarray, b: float) -> tuple[np.ndarray, float]:
        """The hyperplane v.z = b of this frame in the original coordinates (unit normal)."""
        if self.mean is None:
            return v, b
        w = v / self.scale
        norm = np.linalg.norm(w)
        return w / norm, float((b + w @ self.mean) / norm)

    def from_original(self, v: np.ndarray, b: float) -> tuple[np.ndarray, float]:
        """The hyperplane v.x = b of the original coordinates in this frame (inverse of :meth:`to_original`)."""
        if self.mean is None:
            return v, b
        w = v * self.scale
        norm = np.linalg.norm(w)
        return w / norm, float((b - v @ self.mean) / norm)

    def to(self, other: Frame, v: np.ndarray, b: float) -> tuple[np.ndarray, float]:
        """The hyperplane v.z = b of this frame in the frame ``other``."""
        return other.from_original(*self.to_original(v, b))
