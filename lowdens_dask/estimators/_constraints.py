"""Every public estimator's parameter constraints, one table per estimator in scikit-learn's
``_parameter_constraints`` form (:data:`PARAMETER_CONSTRAINTS`; each class's ``_parameter_constraints`` is its entry),
and the one function that checks them (:func:`check_constraints`). The estimators check their parameters by these
tables before any work (:func:`~lowdens_dask.estimators._params.validate_params`); the ``lowdens`` command checks a
``--param`` by the same table of the method's estimator before it imports the library. This module imports nothing
but the standard library, so that the command can refuse a bad value at once (the library's imports take seconds).

A constraint is, as in scikit-learn: ``Interval(numbers.Integral | numbers.Real, left, right, closed=...)``,
``StrOptions({...})``, ``"boolean"``, ``callable``, ``None``, ``dict``, ``str``, ``"random_state"``, ``"array-like"``,
or a :class:`Rule` (a test with the words that describe it) where none of these says it."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple


class Interval(NamedTuple):
    """Finite numbers of ``type`` (``numbers.Integral`` or ``numbers.Real``) between ``left`` and ``right`` (None: no
    bound), ``closed`` "left", "right", "both" or "neither" (scikit-learn's ``Interval``; booleans, NaN and inf are
    not numbers here)."""

    type: type
    left: float | None
    right: float | None
    closed: str = "both"

    def holds(self, value) -> bool:
        if isinstance(value, bool) or not isinstance(value, self.type) or not math.isfinite(value):
            return False
        low_ok = self.left is None or (value >= self.left if self.closed in ("left", "both") else value > self.left)
        high_ok = self.right is None or (
            value <= self.right if self.closed in ("right", "both") else value < self.right
        )
        return low_ok and high_ok

    def words(self) -> str:
        kind = "an integer" if self.type is numbers.Integral else "a number"
        if self.right is None and self.left == 0 and self.closed in ("neither", "right"):
            return f"a positive {kind.split()[-1]}"
        if self.right is None and self.left == 0:
            return f"a non-negative {kind.split()[-1]}"
        if self.right is None and self.left == 1 and self.type is numbers.Integral:
            return "a positive integer"
        if self.right is None:
            return f"{kind} {'>=' if self.closed in ('left', 'both') else '>'} {self.left:g}"
        opening = "[" if self.closed in ("left", "both") else "("
        closing = "]" if self.closed in ("right", "both") else ")"
        left = "-inf" if self.left is None else f"{self.left:g}"
        return f"{kind} in {opening}{left}, {self.right:g}{closing}"


class StrOptions(NamedTuple):
    """One of these strings (scikit-learn's ``StrOptions``)."""

    options: tuple

    def holds(self, value) -> bool:
        return isinstance(value, str) and value in self.options

    def words(self) -> str:
        return _either([repr(option) for option in self.options])


class Rule(NamedTuple):
    """A constraint none of the others says: ``test(value)``, described by ``description``."""

    test: Callable[[object], bool]
    description: str

    def holds(self, value) -> bool:
        return bool(self.test(value))

    def words(self) -> str:
        return self.description


def _boolean(value) -> bool:
    """True or False (numpy's booleans included), not a string such as "False" that is truthy."""
    kind = type(value)
    return isinstance(value, bool) or (kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"))


def _random_state(value) -> bool:
    return value is None or Interval(numbers.Integral, 0, None, "left").holds(value) or hasattr(value, "randint")


def _array_like(value) -> bool:
    return hasattr(value, "__array__") or (isinstance(value, (list, tuple)) and not isinstance(value, str))


_NAMED = {
    "boolean": (_boolean, "True or False"),
    "random_state": (_random_state, "an int >= 0, a RandomState or None"),
    "array-like": (_array_like, "an array"),
}


def _holds(constraint, value) -> bool:
    if constraint is None:
        return value is None
    if constraint is callable:
        return callable(value)
    if isinstance(constraint, str):
        return _NAMED[constraint][0](value)
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return constraint.holds(value)


def _words(constraint) -> str:
    if constraint is None:
        return "None"
    if constraint is callable:
        return "a callable"
    if isinstance(constraint, str):
        return _NAMED[constraint][1]
    if isinstance(constraint, type):
        return {dict: "a dict", str: "a string"}.get(constraint, f"a {constraint.__name__}")
    return constraint.words()


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def describe(constraints: Sequence) -> str:
    """A parameter's legal values in words, as the errors say them (the options of a ``StrOptions`` one by one)."""
    words = []
    for constraint in constraints:
        options = isinstance(constraint, StrOptions)
        words.extend([repr(option) for option in constraint.options] if options else [_words(constraint)])
    return _either(words)


#: Parameters renamed in this release, new name -> old name: the old name still works for one release, with a
#: ``FutureWarning`` that names the new one (:func:`~lowdens_dask.estimators._params.warn_renamed`), and is checked
#: by the new name's constraints; the README and docs use the new names.
RENAMED = {
    "max_iter": "maxiter",
    "tol": "ftol",
    "penalty_exponent": "eps",
    "leaf_order": "split_index",
    "n_centres": "n_microclusters",
    "centres_above": "microclusters_above",
    "centre_init": "microcluster_init",
}
#: The default of a renamed parameter's old name: not given.
DEPRECATED = "deprecated"


def check_constraints(constraints: Mapping[str, Sequence], params: Mapping[str, object], owner: str) -> None:
    """The one check of parameter values: each of ``params`` (name -> value) that ``constraints`` (a table of
    :data:`PARAMETER_CONSTRAINTS`) lists must satisfy one of its constraints, an old name (:data:`RENAMED`, unless
    left at :data:`DEPRECATED`) those of its new name; else a ``ValueError`` that starts with ``owner``, names the
    parameter and says its legal values."""
    old_names = {old: new for new, old in RENAMED.items() if new in constraints}
    for name, value in params.items():
        if name in old_names and name not in constraints:
            if isinstance(value, str) and value == DEPRECATED:
                continue
            legal = constraints[old_names[name]]
        else:
            legal = constraints.get(name)
        if legal is not None and not any(_holds(constraint, value) for constraint in legal):
            words = describe(legal)
            why, _, words = words.partition(") ") if words.startswith("(") else ("", "", words)
            raise ValueError(f"{owner}: {name}{f' {why})' if why else ''} must be {words}; got {value!r}.")


# ---------------------------------------------------------------------------------------------------- the pieces
Integral, Real = numbers.Integral, numbers.Real

#: The bandwidth's range in data units (:data:`lowdens_dask.indices.minimum_density.BANDWIDTH_RANGE`, which
#: ``tests/estimators/test_validation.py`` keeps equal): outside it the kernel density over- or underflows in float64.
BANDWIDTH_RANGE = (1e-100, 1e100)
#: The legal ``scale_multiplier``: the paper's sensitivity study uses 0.1 to 10 (Figs. 7-8). Far below 1 every
#: similarity between distinct points underflows to 0 (the graph has no edges, λ₂ = 0 for every projection) and far
#: above it every similarity is 1; the range only excludes multipliers whose σ², 1/σ² or δ = min(0.01, σ²) cannot
#: be represented in float64 for data of an ordinary scale (issue 22, point 15: 1e-300 divided by zero, 1e300
#: overflowed).
SCALE_MULTIPLIER_RANGE = (1e-100, 1e100)
#: The legal ``svm_C``. The SVM only supplies a start direction, whose limits as C -> 0 (the weighted difference of
#: the class means) and C -> inf (the hard-margin SVM) are reached well inside this range; liblinear's primal solver
#: did not return for per-row costs C w_i below about 1e-180 or above about 1e120 (measured), and returns w = 0
#: (no start) below about 1e-20.
SVM_C_RANGE = (1e-12, 1e12)


def _finite_reals(value, least: float, open_low: bool, highest: float | None = None) -> bool:
    """A non-empty sequence of finite numbers above ``least`` (at or above unless ``open_low``; at most
    ``highest``)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or not len(value):
        return False
    try:
        numbers_ = [float(v) for v in value]
    except (TypeError, ValueError):
        return False
    above = all(v > least if open_low else v >= least for v in numbers_)
    return all(map(math.isfinite, numbers_)) and above and (highest is None or all(v <= highest for v in numbers_))


def _alphas(value) -> bool:
    if not _finite_reals(value, 0.0, False, 1.0) or getattr(value, "ndim", 1) != 1:
        return False
    values = [float(v) for v in value]
    return all(a <= b for a, b in zip(values, values[1:]))


def _options(*names: str) -> list:
    return [StrOptions(tuple(names))]


BANDWIDTH = [
    None,
    StrOptions(("silverman",)),
    callable,
    Interval(Real, *BANDWIDTH_RANGE, "both"),
]
ALPHAS = [
    None,
    Rule(
        _alphas,
        "a non-empty, non-decreasing sequence of numbers in [0, 1] (standard deviations of the projections either "
        "side of their mean, eq. 7)",
    ),
]
POSITIVE = [Interval(Real, 0, None, "neither")]
POSITIVE_INT = [Interval(Integral, 1, None, "left")]
UNIT = [Interval(Real, 0, 1, "neither")]
BOOLEAN = ["boolean"]

#: The scale-out parameters (:data:`~lowdens_dask.estimators._params.SCALE_OUT_DOC` documents them).
SCALE_OUT = {
    "mode": _options("auto", "exact", "summary"),
    "rows_per_microcluster": [Interval(Real, 1, None, "left")],
    "max_microclusters": [Interval(Integral, 2, None, "left"), None],
    "refine": [Interval(Integral, 0, None, "left")],
    "nonfinite": _options("raise", "skip"),
    "random_state": ["random_state"],
    "storage_options": [dict, None],
    "labels_store": [str, Rule(lambda v: isinstance(v, os.PathLike), "a path"), None],
    "max_node_bytes": [StrOptions(("auto",)), Interval(Real, 0, None, "left")],
}


def scale_out(*without: str) -> dict:
    """:data:`SCALE_OUT` without the named parameters (those the estimator does not have)."""
    return {name: value for name, value in SCALE_OUT.items() if name not in without}


#: The growth parameters of the divisive estimators.
GROWTH = {
    "n_clusters": [Interval(Integral, 1, None, "left"), StrOptions(("auto",)), None],
    "min_size": POSITIVE,
    "min_cluster_size": [Interval(Real, 0, None, "left")],
    "force_n_clusters": BOOLEAN,
    "max_clusters": [Interval(Integral, 1, None, "left"), None],
    "significance_level": [
        Rule(
            Interval(Real, 0, 1, "neither").holds,
            "(the p-value below which n_clusters='auto' splits a leaf) a number strictly between 0 and 1",
        )
    ],
    "decay": [
        Rule(
            Interval(Real, 0, 1, "left").holds,
            "(the share of the old rows' weight each partial_fit takes away) a number in [0, 1)",
        ),
        None,
    ],
}
#: The divisive estimators whose ``n_clusters`` is a number or "auto" (None is no stopping rule for them).
GROWTH_TOLD_OR_AUTO = {
    "n_clusters": [Interval(Integral, 1, None, "left"), StrOptions(("auto",))],
    **{name: GROWTH[name] for name in ("max_clusters", "significance_level")},
}


def leaf_order(*names: str, user: bool = True) -> dict:
    """``leaf_order``: one of the split indices ``names``, each also with "-only" (the index alone, no test first),
    or (``user``) a callable of ``(X_leaf, hyperplane)``."""
    return {"leaf_order": [StrOptions((*names, *(f"{name}-only" for name in names))), *([callable] if user else [])]}


#: MDP²'s parameters (Pavlidis, Hofmeyr & Tasoulis, JMLR 2016), as the one-split estimators take them; a divisive
#: estimator's ``v0`` is a callable of each node's data, not fixed directions.
MDH_INDEX = {
    "bandwidth": BANDWIDTH,
    "alphas": ALPHAS,
    "v0": [None, "array-like", callable],
    "eta": UNIT,
    "penalty_exponent": UNIT,
    "max_iter": POSITIVE_INT,
    "tol": POSITIVE,
}
NCUT_INDEX = {
    "scale": [None, Interval(Real, 0, None, "neither"), callable],
    **{k: MDH_INDEX[k] for k in ("v0", "max_iter", "tol")},
}
MC_INDEX = {k: MDH_INDEX[k] for k in ("v0", "max_iter", "tol")}
DIVISIVE_V0 = {"v0": [None, callable]}

#: The spectral estimators' parameters (Hofmeyr, Pavlidis & Eckley, Statistics and Computing 29, 2019).
SPECTRAL = {
    "n_components": POSITIVE_INT,
    "laplacian": _options("standard", "normalized"),
    "scheme": _options("package", "paper"),
    "omega": [Rule(lambda v: isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v), "a finite number")],
    "similarity": [None, StrOptions(("paper", "gaussian"))],
    "scale_multiplier": [Interval(Real, *SCALE_MULTIPLIER_RANGE, "both")],
    "betas": [None, Rule(lambda v: _finite_reals(v, 0.0, True), "a non-empty sequence of positive numbers")],
    "n_centres": [Interval(Integral, 2, None, "left")],
    "centres_above": [Interval(Integral, 1, None, "left"), None],
    "centre_init": _options("farthest", "k-means++"),
    "min_side": [None, Interval(Real, 0, None, "left")],
    "max_iter": POSITIVE_INT,
    "standardize": BOOLEAN,
}
#: MSC's parameters (Hofmeyr & Pavlidis, maximum spacing clustering).
MSC = {
    "weight": _options("alpha1", "alpha2", "alpha3"),
    "sigma2": [None, Interval(Real, 0, None, "neither")],
    "metric": _options("gaussian", "euclidean"),
    "solver": _options("auto", "exact", "landmarks"),
    "n_landmarks": [Interval(Integral, 2, None, "left")],
    "standardize": BOOLEAN,
}
GAMMA = [StrOptions(("auto", "median")), Interval(Real, 0, None, "neither")]

# ---------------------------------------------------------------------------------------------------- the tables
#: Each public estimator's constraints, by class name (its ``_parameter_constraints``).
PARAMETER_CONSTRAINTS: dict[str, dict[str, list]] = {
    "MDH": {**MDH_INDEX, "min_size": POSITIVE, "standardize": BOOLEAN, **scale_out()},
    "MDHClustering": {
        **GROWTH,
        **leaf_order("size", "fval", "rdepth"),
        **MDH_INDEX,
        **DIVISIVE_V0,
        "standardize": BOOLEAN,
        **scale_out(),
    },
    "MDHProjection": {
        "n_components": POSITIVE_INT,
        **{k: v for k, v in MDH_INDEX.items() if k != "v0"},
        "min_size": POSITIVE,
    },
    "PDDPClustering": {**GROWTH, **leaf_order("scatter", "size"), "standardize": BOOLEAN, **scale_out("refine")},
    "DePDDPClustering": {
        **GROWTH,
        **leaf_order("fval", "size"),
        "bandwidth": BANDWIDTH,
        "standardize": BOOLEAN,
        **scale_out("refine"),
    },
    "IPDDPClustering": {
        **GROWTH,
        **leaf_order("gap", "size"),
        "percentile": [Interval(Real, 0, 0.5, "left")],
        "standardize": BOOLEAN,
        **scale_out("refine"),
    },
    "NCutH": {**NCUT_INDEX, "min_size": POSITIVE, "standardize": BOOLEAN, **scale_out()},
    "NCutClustering": {
        **GROWTH,
        **leaf_order("fval", "size"),
        **NCUT_INDEX,
        **DIVISIVE_V0,
        "standardize": BOOLEAN,
        **scale_out(),
    },
    "NCutProjection": {
        "n_components": POSITIVE_INT,
        **{k: v for k, v in NCUT_INDEX.items() if k != "v0"},
        "min_size": POSITIVE,
    },
    "MCH": {**MC_INDEX, "min_size": POSITIVE, "standardize": BOOLEAN, **scale_out()},
    "MCClustering": {
        **GROWTH,
        **leaf_order("Fdist", "fval", "size"),
        **MC_INDEX,
        **DIVISIVE_V0,
        "standardize": BOOLEAN,
        **scale_out(),
    },
    "MCProjection": {
        "n_components": POSITIVE_INT,
        **{k: v for k, v in MC_INDEX.items() if k != "v0"},
        "min_size": POSITIVE,
        "random_state": ["random_state"],
    },
    "SCPP": {**SPECTRAL, **scale_out("refine", "max_node_bytes")},
    "SCPPClustering": {
        **GROWTH_TOLD_OR_AUTO,
        **leaf_order("size", "fval", user=False),
        "decay": GROWTH["decay"],
        **SPECTRAL,
        **scale_out("refine", "max_node_bytes"),
    },
    "LMSC": {k: v for k, v in {**SPECTRAL, **scale_out("refine", "max_node_bytes")}.items() if k != "laplacian"},
    "LMSCClustering": {
        k: v
        for k, v in {
            **GROWTH_TOLD_OR_AUTO,
            **leaf_order("size", "fval", user=False),
            "decay": GROWTH["decay"],
            **SPECTRAL,
            **scale_out("refine", "max_node_bytes"),
        }.items()
        if k != "laplacian"
    },
    "MSC": {**MSC, **scale_out("refine", "max_node_bytes")},
    "MSCClustering": {**GROWTH_TOLD_OR_AUTO, **MSC, **scale_out("refine", "max_node_bytes")},
    "SVMRelabelClustering": {
        **GROWTH_TOLD_OR_AUTO,
        "C": POSITIVE,
        "gamma": GAMMA,
        "annealing": BOOLEAN,
        "perturbation": _options("variable", "constant"),
        **{name: POSITIVE_INT for name in ("n_restarts", "n_anneal_steps", "max_iter", "patience", "n_null")},
        "t0": POSITIVE,
        "beta": [Interval(Real, 0, 1, "right")],
        "schedule": _options("geometric", "paper_literal"),
        "relabel_fraction": [Interval(Real, 0, 1, "right")],
        "min_cluster_fraction": [Interval(Real, 0, 0.5, "left")],
        "max_points": [Interval(Integral, 2, None, "left")],
        "null_alpha": [Interval(Real, 0, 1, "neither")],
        "standardize": BOOLEAN,
        **scale_out("refine", "max_node_bytes"),
        # an SVM needs its points in memory: no exact mode on chunked input
        "mode": _options("auto", "summary"),
    },
    "SupportVectorClustering": {
        "gamma": GAMMA,
        "gamma_factor": POSITIVE,
        "bsv_fraction": [None, Interval(Real, 0, 1, "right")],
        "n_segment_points": [Interval(Integral, 2, None, "left")],
        "n_neighbors": [None, POSITIVE_INT[0]],
        "outliers": _options("nearest", "label"),
        "standardize": BOOLEAN,
    },
    "MDHClassifier": {
        **{k: v for k, v in MDH_INDEX.items() if k not in ("v0",)},
        "bandwidth": [None, StrOptions(("silverman",)), Interval(Real, *BANDWIDTH_RANGE, "both")],
        "gammas": [None, Rule(lambda v: _finite_reals(v, 0.0, True), "a non-empty sequence of positive numbers")],
        "svm_C": [Interval(Real, *SVM_C_RANGE, "both")],
        "starts": _options("best", "all"),
        "standardize": BOOLEAN,
        **scale_out("refine", "labels_store", "max_node_bytes"),
    },
}
