"""Numerical tolerances of the tests, set from the problem's conditioning, not from one machine's BLAS (issue 34,
item 17: ``test_integer_weights_equal_repeated_rows[MCH]`` differed by 2.06e-8 against ``atol=1e-8`` on another
machine; permuting the repeated rows, which only reorders the sums, gives the same 2.07e-8 here).

Two kinds of comparison are not exact and depend on the order of summation (BLAS kernels and their blocking,
threads, chunking, weights against repeated rows):

* a sum or product of n terms computed two ways: any two orders differ by at most about ``2 (n - 1) eps sum |t|``
  (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., eq. 4.4), which is relative to the sum
  only when its terms do not cancel (:func:`sum_atol`, :func:`sum_rtol`);
* the result of an optimiser stopped at a relative change of ``ftol``: the optimum's value is determined to about
  ``ftol`` of itself (:func:`optimum_rtol`), but its argmin, where the objective is flat, only to about
  ``sqrt(ftol)`` (:func:`argmin_atol`): a perturbation of the rounding's size moves the iterates anywhere within
  that, whatever the arithmetic.

Comparisons that are exact by construction (counts, labels, integers, the same operations on the same numbers)
keep exact checks.
"""

import math

import numpy as np

EPS = float(np.finfo(np.float64).eps)
#: Factor over the worst-case bounds' leading term (two orders of summation, each within the bound, and the few
#: roundings of what is computed from the sum).
SAFETY = 8.0


def sum_atol(terms, safety: float = SAFETY) -> float:
    """Absolute tolerance of a float64 sum of ``terms`` (the array of its terms, any shape) computed in another
    order: ``safety (n - 1) eps sum |t|``, at least one ulp of the terms' largest magnitude."""
    t = np.abs(np.asarray(terms, dtype=np.float64))
    n = max(t.size - 1, 1)
    return safety * n * EPS * float(t.sum()) + EPS * float(t.max(initial=0.0))


def sum_rtol(terms, safety: float = SAFETY) -> float:
    """:func:`sum_atol` relative to the sum: the sum's condition number ``sum |t| / |sum t|`` times ``n eps``."""
    total = abs(float(np.sum(terms)))
    return sum_atol(terms, safety) / total if total > 0 else math.inf


def rows_atol(terms, axis: int = -1, safety: float = SAFETY) -> np.ndarray:
    """:func:`sum_atol` of each sum along ``axis`` (e.g. the rows of a matrix-vector product): an array to pass
    as ``atol`` elementwise (``np.testing.assert_allclose`` broadcasts it)."""
    t = np.abs(np.asarray(terms, dtype=np.float64))
    n = max(t.shape[axis] - 1, 1)
    return safety * n * EPS * t.sum(axis=axis) + EPS * t.max(axis=axis, initial=0.0)


def optimum_rtol(ftol: float) -> float:
    """Relative tolerance of an optimum's value reached by two runs stopped at a relative change of ``ftol``."""
    return 10.0 * ftol


def argmin_atol(ftol: float) -> float:
    """Tolerance of an argmin (a unit direction) reached by two runs stopped at a relative change of ``ftol``: the
    objective is flat there, so a change of ``ftol`` in its value allows about ``sqrt(ftol)`` in the point."""
    return math.sqrt(ftol)


def assert_within(actual, desired, atol, rtol: float = 0.0) -> None:
    """``|actual - desired| <= atol + rtol |desired|`` elementwise, with ``atol`` (and ``rtol``) arrays allowed (one
    tolerance per entry, as :func:`rows_atol` gives them; ``np.testing.assert_allclose`` takes scalars only)."""
    actual, desired = np.asarray(actual, dtype=np.float64), np.asarray(desired, dtype=np.float64)
    bound = np.asarray(atol, dtype=np.float64) + np.asarray(rtol, dtype=np.float64) * np.abs(desired)
    error = np.abs(actual - desired)
    bad = ~(error <= bound)
    if np.any(bad):
        where = np.argwhere(bad)[:5].tolist()
        raise AssertionError(
            f"{int(bad.sum())} of {bad.size} entries differ by more than their tolerance (first at {where}): "
            f"errors {np.broadcast_to(error, bad.shape)[bad][:5]}, tolerances {np.broadcast_to(bound, bad.shape)[bad][:5]}"
        )
