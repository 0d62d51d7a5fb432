"""The scale-out parameters' constraints (:data:`SCALE_OUT_CONSTRAINTS`, in the style of scikit-learn's
``_parameter_constraints``), declared once, and those of the methods' own parameters that the ``lowdens``
command checks (:data:`METHOD_CONSTRAINTS`). This module imports nothing but the standard library, so that the
command can refuse a bad value of these parameters before it imports the library (seconds)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence


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
    """Check the scale-out parameters ``est`` has against :data:`SCALE_OUT_CONSTRAINTS`, and its boolean
    parameters (:data:`BOOLEAN_PARAMS`): True or False, never a value that merely reads as one."""
    params = est.get_params(deep=False)
    check_scale_out_values(params, type(est).__name__)
    check_method_values({name: params[name] for name in BOOLEAN_PARAMS if name in params}, type(est).__name__)


def _real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _boolean(value) -> bool:
    """True or False (numpy's booleans included), not a string such as "False" that is truthy."""
    kind = type(value)
    return isinstance(value, bool) or (kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"))


def _alphas(value) -> bool:
    if value is None:
        return True
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        return False
    return all(_real(a) and 0 <= a <= 1 for a in value) and all(a <= b for a, b in zip(value, value[1:]))


#: The bandwidth's range in data units (:data:`lowdens_dask.indices.minimum_density.BANDWIDTH_RANGE`, which
#: ``tests/test_reliability_round4.py`` keeps equal): outside it the kernel density over- or underflows in float64.
BANDWIDTH_RANGE = (1e-100, 1e100)

#: The methods' own parameters with a value the ``lowdens`` command can check before it imports the library:
#: (a test of a legal value, the message's words after the name). The estimators check the same values in
#: ``_check_params`` (their messages say the same, and may say more); ``tests/test_reliability_round4.py`` fits
#: each method that takes a parameter with values this table refuses and accepts, so that the two cannot drift.
METHOD_CONSTRAINTS: dict[str, tuple[Callable[[object], bool], str]] = {
    "standardize": (_boolean, "must be True or False (on the command line: true or false)"),
    "force_n_clusters": (_boolean, "must be True or False (on the command line: true or false)"),
    "bandwidth": (
        lambda v: v is None or v == "silverman" or (_real(v) and BANDWIDTH_RANGE[0] <= v <= BANDWIDTH_RANGE[1]),
        f"must be None, 'silverman', a callable or a number in [{BANDWIDTH_RANGE[0]:g}, {BANDWIDTH_RANGE[1]:g}] "
        "(data units; outside this range the kernel density over- or underflows in float64)",
    ),
    "alphas": (
        _alphas,
        "must be a non-empty, non-decreasing sequence of numbers in [0, 1] (standard deviations of the projections "
        "either side of their mean, eq. 7)",
    ),
    "eta": (lambda v: _real(v) and 0 < v < 1, "must lie in (0, 1)"),
    "penalty_exponent": (lambda v: _real(v) and 0 < v < 1, "must lie in (0, 1)"),
    "max_iter": (lambda v: _integer(v, 1), "must be a positive integer"),
    "tol": (lambda v: _real(v) and v > 0, "must be positive"),
    "min_size": (lambda v: _real(v) and v > 0, "must be a positive number"),
    "max_clusters": (lambda v: v is None or _integer(v, 1), "must be a positive integer or None"),
    "significance_level": (
        lambda v: _real(v) and 0 < v < 1,
        "(the p-value below which n_clusters='auto' splits a leaf) must be a number strictly between 0 and 1",
    ),
    "decay": (
        lambda v: v is None or (_real(v) and 0 <= v < 1),
        "(the share of the old rows' weight each partial_fit takes away) must be None or a number in [0, 1)",
    ),
    "min_cluster_size": (
        lambda v: _real(v) and v >= 0,
        "must be a share of the rows in [0, 1) or a number of rows >= 1",
    ),
}


#: The parameters that take True or False, checked in every fit (:func:`check_scale_out_params`).
BOOLEAN_PARAMS = ("standardize", "force_n_clusters")


#: The renamed parameters' old names (one release, with a FutureWarning), checked as their new names are.
OLD_NAMES = {"eps": "penalty_exponent", "maxiter": "max_iter", "ftol": "tol"}


def check_method_values(params: Mapping[str, object], owner: str) -> None:
    """Check those of ``params`` (name -> value) that :data:`METHOD_CONSTRAINTS` lists (by their new names, where
    :data:`OLD_NAMES` has them); the ValueError starts with ``owner``."""
    for given in params:
        name = OLD_NAMES.get(given, given)
        legal, what = METHOD_CONSTRAINTS.get(name, (None, None))
        if legal is not None and not legal(params[given]):
            raise ValueError(f"{owner}: {given} {what}; got {params[given]!r}.")
