"""Split rules: what a tree node stores to route rows to its children, and how it is written to JSON.

A rule routes each row to child 0 or child 1 (``side`` returns True for child 1) and serialises to a
JSON object with a ``kind``. The hyperplane ``{x : v.x = b}`` is the rule of every one-dimensional
projection index; other kinds (two-dimensional projections, learned rules) register in :data:`RULES`.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np

# The compiled kernels (numba) and scipy are imported where a rule first routes rows, so that reading a tree
# (a runs listing, a plot's set-up) does not pay for them.


class SplitRule:
    """Base class of split rules.

    A rule that splits along one coordinate of the rows (a projection, a decision function) exposes it for
    plots: :meth:`coordinate`, :attr:`threshold` (rows at or above it go to child 1), :attr:`coordinate_label`
    and, where the coordinate is a linear projection, its unit :attr:`normal`.
    """

    kind: ClassVar[str] = ""
    #: What :meth:`coordinate` measures (an axis label); empty where the rule has no such coordinate.
    coordinate_label: ClassVar[str] = ""
    threshold: float = 0.0
    normal: np.ndarray | None = None

    def side(self, X: np.ndarray) -> np.ndarray:
        """Boolean array: True for the rows that go to child 1."""
        raise NotImplementedError

    def coordinate(self, X: np.ndarray) -> np.ndarray:
        """The coordinate the rule thresholds, for each row of X."""
        raise NotImplementedError(f"A {self.kind!r} split has no one-dimensional coordinate.")

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> SplitRule:
        raise NotImplementedError

    def __dask_tokenize__(self):
        return (type(self).__name__, json.dumps(self.to_dict()))


class HyperplaneRule(SplitRule):
    """Rows with ``x @ v >= b`` go to child 1, the others (``x @ v < b``) to child 0."""

    kind = "hyperplane"
    coordinate_label = "projection on v (node's normal)"

    def __init__(self, v, b: float):
        self.v = np.asarray(v, dtype=np.float64)
        self.b = float(b)

    @property
    def threshold(self) -> float:
        return self.b

    @property
    def normal(self) -> np.ndarray:
        return self.v

    def side(self, X: np.ndarray) -> np.ndarray:
        return X @ self.v >= self.b

    def coordinate(self, X: np.ndarray) -> np.ndarray:
        return X @ self.v

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "v": [float(x) for x in self.v], "b": self.b}

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> HyperplaneRule:
        return cls(payload["v"], payload["b"])

    def __eq__(self, other) -> bool:
        return isinstance(other, HyperplaneRule) and self.b == other.b and np.array_equal(self.v, other.v)

    def __repr__(self) -> str:
        return f"HyperplaneRule(v={self.v!r}, b={self.b!r})"


class NearestCentreRule(SplitRule):
    """Rows go to the side of their nearest projected centre: ``x @ V`` (l columns) against the K projected
    (micro)cluster centres of the split, each with its side (the split rule of a multi-dimensional spectral
    projection, SCPP/LMSC; the points a split was fitted on inherit the side of their own microcluster,
    and new rows that of the nearest one in the projection)."""

    kind = "nearest-projected-centre"

    def __init__(self, V, centres, sides):
        self.V = np.asarray(V, dtype=np.float64)
        if self.V.ndim == 1:
            self.V = self.V[:, None]
        self.centres = np.asarray(centres, dtype=np.float64).reshape(-1, self.V.shape[1])
        self.sides = np.asarray(sides, dtype=bool)
        self._index = None  # a scipy.spatial.cKDTree of the centres, built on first use
        self._grid: tuple | None = None

    def side(self, X: np.ndarray) -> np.ndarray:
        """The side of each row's nearest projected centre (a k-d tree over the K centres in the l-dimensional
        projection: 3x faster than all K distances per row at K = 200, l = 2)."""
        if self._index is None:
            from scipy.spatial import cKDTree

            self._index = cKDTree(self.centres)
        return self.sides[self._index.query(X @ self.V)[1]]

    def grid(self) -> tuple:
        """The cells over the projected centres with the centres that can be nearest in each, for the compiled
        walk of :class:`~lowdens_dask.tree.routing.Router` (:func:`~lowdens_dask.kernels.routing.centre_grid`;
        built once per rule)."""
        if self._grid is None:
            from ..kernels.routing import centre_grid

            self._grid = centre_grid(self.centres, self.sides)
        return self._grid

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "V": self.V.tolist(),
            "centres": self.centres.tolist(),
            "sides": [bool(s) for s in self.sides],
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> NearestCentreRule:
        return cls(payload["V"], payload["centres"], payload["sides"])

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, NearestCentreRule)
            and np.array_equal(self.V, other.V)
            and np.array_equal(self.centres, other.centres)
            and np.array_equal(self.sides, other.sides)
        )

    def __repr__(self) -> str:
        return f"NearestCentreRule(l={self.V.shape[1]}, n_centres={len(self.sides)})"


#: Kernels of :class:`KernelExpansionRule`, as functions of the squared distance r2 and the width gamma.
EXPANSION_KERNELS = ("rbf", "rbf-distance", "euclidean")


class KernelExpansionRule(SplitRule):
    """Rows with ``f(x) = sum_j coef_j k(x, s_j) + intercept >= 0`` go to child 1, the others to child 0.

    The rule of splits learned in a kernel or distance feature space: an SVM's decision function
    (``kernel="rbf"``, k = exp(-gamma |x - s|^2); SVM-relabel) or the maximal-separation hyperplane of MSC in
    distance-feature space (``"rbf-distance"``, k = sqrt(2 - 2 exp(-gamma |x - s|^2)), the metric of a Gaussian
    kernel, eq. 2.3 of the MSC paper; ``"euclidean"``, k = |x - s|). The support rows ``s_j`` are stored in the
    original coordinates and distances are taken on ``x / scale - s / scale`` (per-feature ``scale``, for fits on
    standardised rows; 1 by default).
    """

    kind = "kernel-expansion"
    coordinate_label = "decision function f(x)"

    def __init__(self, support, coef, intercept: float = 0.0, kernel: str = "rbf", gamma: float = 1.0, scale=None):
        if kernel not in EXPANSION_KERNELS:
            raise ValueError(f"kernel must be one of {EXPANSION_KERNELS}; got {kernel!r}.")
        self.support = np.atleast_2d(np.asarray(support, dtype=np.float64))
        self.coef = np.asarray(coef, dtype=np.float64).ravel()
        if self.coef.shape[0] != self.support.shape[0]:
            raise ValueError(f"coef has {self.coef.shape[0]} entries for {self.support.shape[0]} support rows.")
        self.intercept = float(intercept)
        self.kernel = kernel
        self.gamma = float(gamma)
        self.scale = None if scale is None else np.asarray(scale, dtype=np.float64).ravel()
        self._compiled: tuple[np.ndarray, np.ndarray] | None = None  # 1 / scale and the scaled support, transposed

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """f(x) for each row of X, in float64, each row from its own values alone
        (:func:`~lowdens_dask.kernels.expansion.expansion_values`): the same, bit for bit, for a row in memory, in
        a Dask chunk of any size, or alone, so that every path routes it to the same side."""
        from ..kernels.expansion import KINDS, expansion_values

        X = np.ascontiguousarray(X, dtype=np.float64)
        if self._compiled is None:
            inv_scale = np.ones(self.support.shape[1]) if self.scale is None else 1.0 / self.scale
            ST = np.ascontiguousarray((self.support * inv_scale).T)
            self._compiled = inv_scale, ST
        inv_scale, ST = self._compiled
        out = np.empty(X.shape[0])
        return expansion_values(X, inv_scale, ST, self.coef, self.intercept, KINDS[self.kernel], self.gamma, out)

    def side(self, X: np.ndarray) -> np.ndarray:
        return self.decision_function(X) >= 0

    coordinate = decision_function

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "kernel": self.kernel,
            "gamma": self.gamma,
            "support": self.support.tolist(),
            "coef": self.coef.tolist(),
            "intercept": self.intercept,
            "scale": None if self.scale is None else self.scale.tolist(),
        }

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> KernelExpansionRule:
        return cls(
            payload["support"],
            payload["coef"],
            payload["intercept"],
            payload["kernel"],
            payload["gamma"],
            payload.get("scale"),
        )

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, KernelExpansionRule)
            and (self.kernel, self.gamma, self.intercept) == (other.kernel, other.gamma, other.intercept)
            and np.array_equal(self.support, other.support)
            and np.array_equal(self.coef, other.coef)
            and (self.scale is None) == (other.scale is None)
            and (self.scale is None or np.array_equal(self.scale, other.scale))
        )

    def __repr__(self) -> str:
        return f"KernelExpansionRule(kernel={self.kernel!r}, gamma={self.gamma:g}, n_support={len(self.coef)})"


#: Split rules by kind, for reading trees back from JSON.
RULES: dict[str, type[SplitRule]] = {
    rule.kind: rule for rule in (HyperplaneRule, NearestCentreRule, KernelExpansionRule)
}


def rule_from_dict(payload: dict[str, Any]) -> SplitRule:
    kind = payload.get("kind")
    if kind not in RULES:
        raise ValueError(f"Unknown split rule kind {kind!r}; known kinds: {sorted(RULES)}.")
    return RULES[kind].from_dict(payload)
