"""Input checks shared by the estimators: clear errors, no silent changes to the data."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numbers
import sys

import numpy as np
from sklearn.utils.validation import validate_data
from threadpoolctl import ThreadpoolController

from .._warnings import warn
from ..backend.frame import check_value_range
from ..indices.minimum_density import BANDWIDTH_RANGE
from ._params import param


def single_threaded_blas():
    """Context in which BLAS runs on one thread.

    Projection pursuit issues thousands of small matrix-vector products. Multi-threaded OpenBLAS
    gains nothing on them, and its spinning threads (two pools: numpy's and scipy's) contend for the
    cores: fits were 1.5-8x slower on a 2-core machine without this limit.

    The thread pools are found once (threadpoolctl reads the process's memory map for them: 5 ms, a fifth of a
    small PDDP fit) and again only after modules were imported, which may have loaded another BLAS.
    """
    if _BLAS_POOLS[1] != len(sys.modules):
        _BLAS_POOLS[:] = [ThreadpoolController(), len(sys.modules)]
    return _BLAS_POOLS[0].limit(limits=1, user_api="blas")


#: The process's thread pools (``threadpoolctl.ThreadpoolController``) and the number of modules loaded when they
#: were found.
_BLAS_POOLS: list = [None, -1]


#: Largest total sample weight accepted (weights are row counts): the indices' weighted sums, their squares
#: and the powers of the total weight in the variance-ratio gradient must stay far from overflow.
MAX_TOTAL_WEIGHT = 1e30
#: Smallest ratio of a positive sample weight to the largest. Weights are frequency counts and no result depends
#: on their common scale, but the methods multiply and square them (the spectral Laplacian's n_j n_k and its
#: degrees, the SVM's pair weights w_i w_j, weighted sums of squares): a ratio below 1e-150 makes such products
#: underflow to zero in float64 (issue 22: divisions by zero in MDH and SCPP, a hanging SVM). Zero weights are
#: accepted (the row is labelled but carries no weight); weights in between are refused, not rounded to zero.
MIN_RELATIVE_WEIGHT = 1e-150


def reject_strings(X) -> None:
    """Strings in X are an error: numpy would convert numeric strings ("1.5") to numbers silently."""
    columns = getattr(X, "dtypes", None)  # a DataFrame: look at its non-numeric columns only
    if columns is not None:
        arrays = [np.asarray(X[name]) for name, dtype in zip(X.columns, columns) if np.dtype(dtype).kind not in "biufc"]
    elif isinstance(X, np.ndarray) or isinstance(X, (list, tuple)):
        arrays = [np.asarray(X, dtype=object) if not isinstance(X, np.ndarray) else X]
    else:
        return
    for arr in arrays:
        if arr.dtype.kind in "US" or (
            arr.dtype.kind == "O" and any(isinstance(v, (str, bytes)) for v in np.asarray(arr).ravel())
        ):
            raise ValueError(
                "X contains strings; convert it to numbers first (numeric strings are not converted silently)."
            )


def check_fit_input(estimator, X, sample_weight) -> tuple[np.ndarray, np.ndarray]:
    """Validate X (finite, 2-D, at least two rows, no strings, of a scale within
    :data:`~lowdens_dask.backend.frame.SCALE_RANGE`) and the weights; warn about constant columns."""
    reject_strings(X)
    X = validate_data(estimator, X, dtype=np.float64, order="C", ensure_min_samples=2, ensure_all_finite=True)
    return X, _checked_weights(X, sample_weight)


def check_fit_rows(estimator, X, sample_weight) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`check_fit_input` with the estimator's NaN/inf policy: with ``nonfinite="skip"`` the rows with NaN or
    inf are set aside (as for chunked input). Returns ``(X, weights, finite)``: the rows kept, their weights, and
    the mask of the rows kept among X's, or None when all are."""
    if getattr(estimator, "nonfinite", "raise") != "skip":
        return (*check_fit_input(estimator, X, sample_weight), None)
    reject_strings(X)
    X = validate_data(estimator, X, dtype=np.float64, order="C", ensure_min_samples=2, ensure_all_finite=False)
    finite = np.isfinite(X).all(axis=1)
    if finite.all():
        return X, _checked_weights(X, sample_weight), None
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight)
        if sample_weight.shape != (X.shape[0],):
            raise ValueError(f"sample_weight must have shape ({X.shape[0]},); got {sample_weight.shape}.")
        sample_weight = sample_weight[finite]
    X = np.ascontiguousarray(X[finite])
    if X.shape[0] < 2:
        raise ValueError(f"X has {X.shape[0]} rows without NaN or inf; at least 2 are needed.")
    return X, _checked_weights(X, sample_weight), finite


def labels_with_skipped(labels: np.ndarray, finite: np.ndarray | None) -> np.ndarray:
    """Labels of all rows: those of the rows kept, -1 for the rows set aside (``finite`` False)."""
    if finite is None:
        return labels
    out = np.full(finite.shape[0], -1, dtype=labels.dtype)
    out[finite] = labels
    return out


def predict_rows(estimator, X, predict, dtype=np.float64) -> np.ndarray:
    """``predict(X)`` on validated in-memory rows; with ``nonfinite="skip"`` rows with NaN or inf get -1.

    ``dtype`` as for scikit-learn's ``check_array``: a list keeps X's dtype when it is in the list."""
    reject_strings(X)
    skip = getattr(estimator, "nonfinite", "raise") == "skip"
    X = validate_data(estimator, X, dtype=dtype, reset=False, ensure_all_finite=not skip)
    finite = np.isfinite(X).all(axis=1) if skip else None
    if finite is None or finite.all():
        return predict(X)
    return labels_with_skipped(predict(X[finite]), finite)


def _checked_weights(X: np.ndarray, sample_weight) -> np.ndarray:
    n = X.shape[0]
    if sample_weight is None:
        weights = np.ones(n)
    else:
        weights = np.asarray(sample_weight, dtype=np.float64)
        if weights.shape != (n,):
            raise ValueError(f"sample_weight must have shape ({n},); got {weights.shape}.")
        positive = weights[weights > 0]
        check_weight_figures(
            int((~np.isfinite(weights)).sum()),
            int((weights < 0).sum()),
            float(weights.sum()),
            float(positive.max(initial=0.0)),
            float(positive.min(initial=np.inf)),
            int((positive < MIN_RELATIVE_WEIGHT * positive.max(initial=0.0)).sum()),
        )
    rows = X[weights > 0]
    lo, hi = rows.min(axis=0), rows.max(axis=0)
    check_value_range(lo, hi)  # X's scale, before anything is computed from its values
    constant = np.flatnonzero(hi == lo)
    if constant.size == X.shape[1]:
        raise ValueError("Every feature of X is constant; there is no direction to split along.")
    if constant.size:
        warn(
            f"X has {constant.size} constant column(s) (indices {constant[:10].tolist()}"
            f"{'...' if constant.size > 10 else ''}); they carry no information and do not affect the split."
        )
    return weights


def check_weight_figures(
    nonfinite: int, negative: int, total: float, largest: float, least: float, too_small: int
) -> None:
    """The checks of ``sample_weight`` from its figures (in memory, or reduced over a Dask array's chunks):
    values NaN or inf, negative, total weight, largest and least positive weight, and how many positive weights are
    below :data:`MIN_RELATIVE_WEIGHT` of the largest."""
    if nonfinite:
        raise ValueError("sample_weight contains NaN or infinite values.")
    if negative:
        raise ValueError(f"sample_weight must be non-negative; {negative} values are negative.")
    if not largest > 0:
        raise ValueError("All sample weights are zero; at least two rows need positive weight.")
    if total <= 1:
        raise ValueError(f"The total sample_weight must exceed 1 (weights are frequency counts); got {total:g}.")
    if total > MAX_TOTAL_WEIGHT:
        raise ValueError(
            f"The total sample_weight is {total:g}, above {MAX_TOTAL_WEIGHT:g}: weights are frequency "
            "counts (min_size and the bandwidth's n count them), and weighted sums of squares would "
            "overflow; divide the weights by a common factor."
        )
    if too_small:
        raise ValueError(
            f"sample_weight: {too_small} positive weight(s) are below {MIN_RELATIVE_WEIGHT:g} times the largest "
            f"({largest:g}; the smallest is {least:g}). Positive weights must lie within a factor "
            f"{1 / MIN_RELATIVE_WEIGHT:g} of each other: the methods multiply weights, and products this far "
            "apart underflow in float64. Set such weights to 0 (those rows are still labelled) or raise them."
        )


def chunked_weights(sample_weight, X) -> tuple:
    """``sample_weight`` for row-chunked ``X`` (a Dask array): ``(weights, total)``, the weights as a float64 Dask
    array with X's row chunks (numpy, Dask or zarr arrays of one value per row) and their total, checked as in
    memory (:func:`check_weight_figures`) in one pass over them."""
    import dask
    import dask.array as da

    weights = sample_weight if isinstance(sample_weight, da.Array) else da.asarray(sample_weight)
    if weights.ndim == 2 and weights.shape[1:] == (1,):
        weights = weights[:, 0]
    if weights.shape != (X.shape[0],):
        raise ValueError(f"sample_weight must have shape ({X.shape[0]},); got {weights.shape}.")
    weights = weights.astype(np.float64).rechunk((X.chunks[0],))
    positive = da.where(weights > 0, weights, np.nan)
    largest, least = da.nanmax(positive), da.nanmin(positive)
    with np.errstate(all="ignore"):
        figures = dask.compute(
            (~da.isfinite(weights)).sum(), (weights < 0).sum(), weights.sum(), largest, least,
            (positive < MIN_RELATIVE_WEIGHT * largest).sum(),
        )  # fmt: skip
    nonfinite, negative, total, largest, least, too_small = figures
    largest = 0.0 if not np.isfinite(largest) else float(largest)
    check_weight_figures(int(nonfinite), int(negative), float(total), largest, float(least), int(too_small))
    return weights, float(total)


def check_positive_int(value, name: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer{' or None' if allow_none else ''}; got {value!r}.")


def check_n_clusters_auto(est, allow_none: bool = True) -> None:
    """Checks of ``n_clusters`` (a positive integer, "auto", or None where ``allow_none``), ``max_clusters`` and
    ``significance_level``."""
    name = type(est).__name__
    n = est.n_clusters
    if not (isinstance(n, str) and n == "auto") and not (n is None and allow_none):
        if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1:
            options = "a positive integer, None or 'auto'" if allow_none else "a positive integer or 'auto'"
            raise ValueError(f"{name}: n_clusters must be {options}; got {n!r}.")
    check_positive_int(est.max_clusters, f"{name}: max_clusters", allow_none=True)
    level = est.significance_level
    if not (isinstance(level, numbers.Real) and not isinstance(level, bool) and 0 < level < 1):
        raise ValueError(
            f"{name}: significance_level (the p-value below which n_clusters='auto' splits a leaf) must be a number "
            f"strictly between 0 and 1; got {level!r}."
        )
    decay = getattr(est, "decay", None)
    if decay is not None and not (isinstance(decay, numbers.Real) and not isinstance(decay, bool) and 0 <= decay < 1):
        raise ValueError(
            f"{name}: decay (the share of the old rows' weight each partial_fit takes away) must be None or a number "
            f"in [0, 1); got {decay!r}."
        )


def check_mdh_params(est) -> None:
    """Checks of the MDP² parameters shared by the MDH estimators; errors name the estimator."""
    name = type(est).__name__
    if est.alphas is not None:
        alphas = np.asarray(est.alphas, dtype=np.float64)
        if alphas.ndim != 1 or alphas.size == 0 or np.any(alphas < 0) or not np.all(np.isfinite(alphas)):
            raise ValueError(
                f"{name}: alphas must be a non-empty sequence of non-negative numbers; got {est.alphas!r}."
            )
        if np.any(alphas > 1):
            raise ValueError(
                f"{name}: alphas are standard deviations of the projections either side of their mean (eq. 7), "
                f"at most 1 (the paper's schedule ends at 0.9); got {est.alphas!r}."
            )
        if np.any(np.diff(alphas) < 0):
            raise ValueError(f"{name}: alphas must be non-decreasing (a continuation schedule); got {est.alphas!r}.")
    if not 0 < est.eta < 1:
        raise ValueError(f"{name}: eta must lie in (0, 1); got {est.eta!r}.")
    if not 0 < param(est, "penalty_exponent") < 1:
        raise ValueError(f"{name}: penalty_exponent must lie in (0, 1); got {param(est, 'penalty_exponent')!r}.")
    check_positive_int(param(est, "max_iter"), f"{name}: max_iter")
    if not param(est, "tol") > 0:
        raise ValueError(f"{name}: tol must be positive; got {param(est, 'tol')!r}.")
    min_size = getattr(est, "min_size", 1)  # the classifier has none
    if not (isinstance(min_size, numbers.Real) and min_size > 0):
        raise ValueError(f"{name}: min_size must be a positive number; got {min_size!r}.")
    check_bandwidth(est)


def check_bandwidth(est) -> None:
    """``bandwidth``: None, "silverman", a callable, or a number within ``BANDWIDTH_RANGE`` (where the kernel
    density's arithmetic stays finite in float64; see :data:`lowdens_dask.indices.minimum_density.BANDWIDTH_RANGE`).
    """
    name = type(est).__name__
    bw = est.bandwidth
    if isinstance(bw, str) or callable(bw) or bw is None:
        if not (bw is None or bw == "silverman" or callable(bw)):
            raise ValueError(f"{name}: bandwidth must be None, 'silverman', a number or a callable; got {bw!r}.")
        return
    low, high = BANDWIDTH_RANGE
    if not (isinstance(bw, numbers.Real) and not isinstance(bw, bool) and low <= bw <= high):
        raise ValueError(
            f"{name}: bandwidth must be None, 'silverman', a callable or a number in [{low:g}, {high:g}] (data units; "
            f"outside this range the kernel density over- or underflows in float64); got {bw!r}."
        )


def check_pursuit_params(est, *, divisive: bool) -> None:
    """max_iter, tol, min_size and v0 of a pursued index, with errors that name the estimator."""
    name = type(est).__name__
    check_positive_int(param(est, "max_iter"), f"{name}: max_iter")
    if not (isinstance(param(est, "tol"), numbers.Real) and param(est, "tol") > 0):
        raise ValueError(f"{name}: tol must be a positive number; got {param(est, 'tol')!r}.")
    if not (isinstance(est.min_size, numbers.Real) and est.min_size > 0):
        raise ValueError(f"{name}: min_size must be a positive number; got {est.min_size!r}.")
    if divisive and est.v0 is not None and not callable(est.v0):
        raise ValueError(f"{name}: in divisive use v0 must be None or a callable of the node's data; got {est.v0!r}.")


def check_scale(est) -> None:
    scale = est.scale
    if not (scale is None or callable(scale) or (isinstance(scale, numbers.Real) and scale > 0)):
        raise ValueError(f"{type(est).__name__}: scale must be None, a positive number or a callable; got {scale!r}.")
