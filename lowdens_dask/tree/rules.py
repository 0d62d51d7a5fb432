"""Split rules: what a tree node stores to route rows to its children, and how it is written to JSON.

A rule routes each row to child 0 or child 1 (``side`` returns True for child 1) and serialises to a
JSON object with a ``kind``. The hyperplane ``{x : v.x = b}`` is the rule of every one-dimensional
projection index; other kinds (two-dimensional projections, learned rules) register in :data:`RULES`.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np


class SplitRule:
    """Base class of split rules."""

    kind: ClassVar[str] = ""

    def side(self, X: np.ndarray) -> np.ndarray:
        """Boolean array: True for the rows that go to child 1."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> SplitRule:
        raise NotImplementedError


class HyperplaneRule(SplitRule):
    """Rows with ``x @ v >= b`` go to child 1, the others (``x @ v < b``) to child 0."""

    kind = "hyperplane"

    def __init__(self, v, b: float):
        self.v = np.asarray(v, dtype=np.float64)
        self.b = float(b)

    def side(self, X: np.ndarray) -> np.ndarray:
        return X @ self.v >= self.b

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "v": [float(x) for x in self.v], "b": self.b}

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> HyperplaneRule:
        return cls(payload["v"], payload["b"])

    def __eq__(self, other) -> bool:
        return isinstance(other, HyperplaneRule) and self.b == other.b and np.array_equal(self.v, other.v)

    def __repr__(self) -> str:
        return f"HyperplaneRule(v={self.v!r}, b={self.b!r})"


#: Split rules by kind, for reading trees back from JSON.
RULES: dict[str, type[SplitRule]] = {HyperplaneRule.kind: HyperplaneRule}


def rule_from_dict(payload: dict[str, Any]) -> SplitRule:
    kind = payload.get("kind")
    if kind not in RULES:
        raise ValueError(f"Unknown split rule kind {kind!r}; known kinds: {sorted(RULES)}.")
    return RULES[kind].from_dict(payload)
