"""Input checks shared by the estimators: clear errors, no silent changes to the data."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import sys

import numpy as np
from sklearn.utils.validation import validate_data
from threadpoolctl import ThreadpoolController

from .._warnings import warn
from ..backend.frame import check_value_range


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
