"""The scale-out parameters' constraints (:data:`SCALE_OUT_CONSTRAINTS`, in the style of scikit-learn's
``_parameter_constraints``), declared once. This module imports nothing but the standard library, so that the
``lowdens`` command can refuse a bad value of these parameters before it imports the library (seconds)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping


def _integer(value, low: int) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low


#: Each scale-out parameter: (a test of a legal value, what a legal value is). Every estimator that has the
#: parameter checks it by this table (:func:`check_scale_out_params`).
SCALE_OUT_CONSTRAINTS: dict[str, tuple[Callable[[object], bool], str]] = {
    "mode": (lambda v: v in ("auto", "exact", "summary"), "'auto', 'exact' or 'summary'"),
    "nonfinite": (lambda v: v in ("raise", "skip"), "'raise' or 'skip'"),
    "rows_per_microcluster": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 1,
        "a number >= 1",
    ),
    "max_microclusters": (lambda v: v is None or _integer(v, 2), "an integer >= 2 or None"),
    "refine": (lambda v: _integer(v, 0), "a non-negative integer (exact L-BFGS steps per hyperplane)"),
    "max_node_bytes": (
        lambda v: (isinstance(v, str) and v == "auto") or (isinstance(v, numbers.Real) and v >= 0),
        "'auto' or a non-negative number of bytes",
    ),
}


def check_scale_out_values(params: Mapping[str, object], owner: str) -> None:
    """Check those of ``params`` (name -> value) that are scale-out parameters against
    :data:`SCALE_OUT_CONSTRAINTS`; the ValueError starts with ``owner``."""
    for name, (legal, what) in SCALE_OUT_CONSTRAINTS.items():
        if name in params and not legal(params[name]):
            raise ValueError(f"{owner}: {name} must be {what}; got {params[name]!r}.")


def check_scale_out_params(est) -> None:
    """Check the scale-out parameters ``est`` has against :data:`SCALE_OUT_CONSTRAINTS`."""
    check_scale_out_values(est.get_params(deep=False), type(est).__name__)
