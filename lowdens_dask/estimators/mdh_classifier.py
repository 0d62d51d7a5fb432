"""MDHClassifier: semi-supervised classification by minimum density hyperplanes (MDP² for SSC)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence

import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ..backend import ChunkedData, InMemoryData, as_dask_array
from ..backend.frame import Frame, standardisation
from ..pursuit.semi_supervised import semi_supervised_hyperplane
from ._constraints import PARAMETER_CONSTRAINTS
from ._params import (
    AUTO_SUMMARY_ROWS,
    fit_mode,
    is_chunked_input,
    param,
    seed_of,
    validate_params,
)
from ._summary_pass import summarise
from ._validation import check_fit_input, single_threaded_blas

#: The label of unlabelled rows (scikit-learn's semi-supervised convention).
UNLABELLED = -1


def _decision(x: np.ndarray, coef: np.ndarray, intercept: np.ndarray) -> np.ndarray:
    """Chunk task: ``x @ coef.T + intercept`` (nan for rows with NaN/inf)."""
    return x @ coef.T + intercept


def _classes_of(x: np.ndarray, coef: np.ndarray, intercept: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Chunk task: the predicted class of each row (-1 for rows with NaN/inf)."""
    scores = x @ coef.T + intercept
    index = (scores[:, 0] > 0).astype(np.int64) if coef.shape[0] == 1 else np.argmax(scores, axis=1)
    return classes[index]


class MDHClassifier(ClassifierMixin, BaseEstimator):
    """Semi-supervised classification by minimum density hyperplanes (Pavlidis, Hofmeyr & Tasoulis, "Minimum
    Density Hyperplanes", JMLR 17(156), 2016, §2.4 and §5.2.1).

    The hyperplane minimises f_SSC (eq. 16): the penalised density integral of all rows, labelled and
    unlabelled (eq. 10), plus ``gamma`` times the labelled rows' misclassification penalty. MDP² runs from the
    best of +-PC1, +-PC2 and a linear SVM trained on the labelled rows (the smallest phi_SSC at the first stage),
    with gamma = 0.1 while alpha rises through (0.01, 0.1, ..., 0.9), then gamma = 1 and 10 at alpha = 0.9.

    Labels follow scikit-learn's semi-supervised convention: ``y = -1`` marks the unlabelled rows. Two classes
    are one hyperplane, as in the paper. More classes are one-versus-rest: one hyperplane per class, each fitted
    on all rows (the density term needs them all), and a row goes to the class whose hyperplane it lies
    furthest on the positive side of (unit normals make the distances comparable). One-versus-rest keeps each
    problem the paper's two-class one and its classes' order irrelevant; a tree of splits would first have to
    choose which groups of classes to separate, which the labels alone do not say.

    Parameters
    ----------
    bandwidth : None, "silverman" or float, default=None
        Kernel bandwidth h; None: Silverman's rule on the first principal component of all rows (§5.1.1). A number
        (or the rule's value) must lie in [1e-100, 1e100], as for :class:`~lowdens_dask.MDH`.
    alphas : sequence of float, default=None
        The alpha schedule; None means (0.01, 0.1, ..., 0.9).
    gammas : sequence of float, default=None
        The label weights: the first while alpha rises, the others at the last alpha; None means (0.1, 1, 10).
    eta, penalty_exponent : float
        Penalty accuracy and smoothness (eqs. 10 and 16).
    max_iter : int, default=50
        L-BFGS iterations per stage.
    tol : float, default=1e-5
        A stage ends when one iteration lowers the index by at most this relative amount.
    svm_C : float, default=1.0
        C of the linear SVM whose normal is one of the starts (not stated in the paper), in [1e-12, 1e12]: the
        normal's direction hardly changes beyond, and liblinear's solver does not return far outside. The SVM
        weighs the labelled rows by their weights relative to the largest.
    starts : {"best", "all"}, default="best"
        "best" (the paper): run MDP² from the start with the smallest phi_SSC; "all": from each, keeping the
        lowest final f_SSC.
    standardize : bool, default=False
        Z-score the features before fitting (the paper z-scores its data); coefficients are reported in the
        original coordinates.
    mode : {"auto", "summary", "exact"}, default="auto"
        Dask arrays and zarr stores (and "summary" for arrays) are fitted on the microclusters of one pass over
        the rows (weighted by their row counts) plus the labelled rows, read by one more pass: the density term
        comes from the summaries, the label term from the labelled rows themselves. "exact" fits arrays in
        memory and is not offered for chunked input.
    rows_per_microcluster, max_microclusters, nonfinite, storage_options
        Summary mode, as for :class:`~lowdens_dask.MDHClustering`; NaN/inf rows of chunked input are predicted
        as -1 with ``nonfinite="skip"``.
    random_state : int or None, default=None
        Seeds the summaries (summary mode) and the SVM start's coordinate descent: a fixed value gives the same
        ``coef_`` and ``transduction_`` fit after fit; None means seed 0, as in every estimator.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) for two classes, (n_classes, n_features) otherwise
        Unit normals of the hyperplanes (``decision_function = X @ coef_.T + intercept_``).
    intercept_ : ndarray of shape (1,) or (n_classes,)
    transduction_ : ndarray of shape (n_samples,), or dask array for chunked input
        The class predicted for every training row.
    stats_ : list of dict
        Per hyperplane: ``fval`` (projected density at b), ``objective`` (f_SSC) and ``label_penalty``.
    n_evaluations_ : int
        Objective evaluations spent.
    bandwidth_ : float
    n_features_in_ : int
    """

    #: :func:`~lowdens_dask.estimators._params.choose_mode`'s rule, as for the tree estimators
    _auto_summary_rows = AUTO_SUMMARY_ROWS
    _auto_chunked_mode = "summary"
    _exact_on_chunks = False  # chunked input is fitted in summary mode (mode='exact' refuses it)
    _weights_in_summary = False  # summary mode refuses sample_weight: weighted in-memory rows stay in memory

    _parameter_constraints = PARAMETER_CONSTRAINTS["MDHClassifier"]

    def __init__(
        self,
        *,
        bandwidth: float | str | Callable | None = None,
        alphas: Sequence[float] | None = None,
        eta: float = 0.01,
        penalty_exponent: float = 0.999999,
        max_iter: int = 50,
        tol: float = 1e-05,
        gammas=None,
        svm_C=1.0,
        starts="best",
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        eps="deprecated",  # now penalty_exponent (FutureWarning)
        maxiter="deprecated",  # now max_iter (FutureWarning)
        ftol="deprecated",  # now tol (FutureWarning)
    ):
        self.bandwidth = bandwidth
        self.alphas = alphas
        self.eta = eta
        self.penalty_exponent = penalty_exponent
        self.max_iter = max_iter
        self.tol = tol
        self.gammas = gammas
        self.svm_C = svm_C
        self.starts = starts
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.eps = eps
        self.maxiter = maxiter
        self.ftol = ftol

    # ------------------------------------------------------------------ checks
    def _check_labels(self, y, n_rows: int) -> np.ndarray:
        """Class codes of y (index into ``classes_``, set here) with -1 for the unlabelled rows."""
        name = type(self).__name__
        if y is None:
            raise ValueError(
                f"{name} requires y to be passed, but the target y is None: give the class of each labelled row "
                "and -1 for the unlabelled ones."
            )
        y = column_or_1d(y.compute() if isinstance(y, da.Array) else y, warn=True)
        if y.shape[0] != n_rows:
            raise ValueError(f"{name}: y must have shape ({n_rows},); got {y.shape}.")
        if y.dtype.kind in "iuf":
            unlabelled = y == UNLABELLED
        else:
            unlabelled = np.array([isinstance(v, numbers.Number) and v == UNLABELLED for v in y], dtype=bool)
        target = type_of_target(y[~unlabelled], input_name="y", raise_unknown=True)
        if target not in ("binary", "multiclass"):
            raise ValueError(
                f"Unknown label type: {target!r}. {name} needs class labels (-1 for unlabelled rows); a continuous "
                "or multi-output target is not a classification problem."
            )
        self.classes_, codes = np.unique(y[~unlabelled], return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                f"{name}: y must label rows of at least two classes (-1 marks unlabelled rows); "
                f"it has {self.classes_.size} labelled class(es)."
            )
        out = np.full(n_rows, -1, dtype=np.int64)
        out[~unlabelled] = codes
        return out

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None):
        """Fit on all rows of X, labelled (``y >= 0`` or any class other than -1) and unlabelled (``y == -1``).

        X may be an array, a Dask array or a zarr store (summary mode); y an array or a Dask array.
        """
        validate_params(self)
        if self.mode == "exact" and is_chunked_input(X):
            raise ValueError(
                f"{type(self).__name__}: mode='exact' is not available for Dask or zarr input; use mode='auto'."
            )
        if fit_mode(self, X, sample_weight) == "summary":
            return self._fit_summary(X, y, sample_weight)
        X, weights = check_fit_input(self, X, sample_weight)
        codes = self._check_labels(y, X.shape[0])
        self._fit_rows(X, weights, None, codes, weights)
        self.transduction_ = self.predict(X)
        return self

    def _fit_summary(self, X, y, sample_weight):
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported in summary mode (the summary carries the weights).")
        chunked = is_chunked_input(X)
        arr = as_dask_array(X, storage_options=self.storage_options) if chunked else None
        if arr is None:
            X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2, ensure_all_finite="allow-nan")
            arr = as_dask_array(da.from_array(X, chunks=(int(self.rows_per_microcluster * 64), X.shape[1])))
        self.n_features_in_ = arr.shape[1]
        codes = self._check_labels(y, arr.shape[0])
        if self.classes_.dtype.kind not in "iu":
            raise ValueError(
                f"{type(self).__name__}: summary mode needs integer class labels; got {self.classes_.dtype}."
            )
        rows = np.flatnonzero(codes >= 0)
        X_lab = arr[rows].compute() if chunked else X[rows]
        if not np.all(np.isfinite(X_lab)):
            raise ValueError(
                f"{type(self).__name__}: {int((~np.isfinite(X_lab).all(axis=1)).sum())} labelled rows have NaN or inf."
            )
        done = summarise(self, arr, seed_of(self.random_state))
        s = done.summary.data()
        self.n_microclusters_ = s.n_samples
        self.n_nonfinite_ = done.n_nonfinite
        # the labelled rows already count in the summaries' density: weight 0 there, label weight 1
        Xs = np.vstack([s.X, X_lab])
        weights = np.concatenate([s.weights, np.zeros(rows.size)])
        spread = np.concatenate([s.spread, np.zeros(rows.size)])
        codes = np.concatenate([np.full(s.n_samples, -1), codes[rows]])
        self._fit_rows(Xs, weights, spread, codes, np.ones(len(codes)))
        self.transduction_ = self.predict(arr if chunked else X)
        return self

    def _fit_rows(self, X: np.ndarray, weights: np.ndarray, spread, codes: np.ndarray, label_weights) -> None:
        """One hyperplane per target class (one for two classes) on rows with class ``codes`` (-1 unlabelled)."""
        frame = Frame()
        Z = X
        if self.standardize:
            frame = Frame(*standardisation(X, weights))
            Z = (X - frame.mean) / frame.scale
            if spread is not None:
                spread = spread / np.mean(frame.scale**2)
        data = InMemoryData(Z, weights, spread)
        targets = [1] if self.classes_.size == 2 else range(self.classes_.size)
        coef, intercept, self.stats_, self.n_evaluations_ = [], [], [], 0
        seeds = check_random_state(0 if self.random_state is None else self.random_state)  # a seed per hyperplane
        with single_threaded_blas():
            for target in targets:
                labels = np.where(codes < 0, 0.0, np.where(codes == target, 1.0, -1.0)) * label_weights
                hp = semi_supervised_hyperplane(
                    data, labels, bandwidth=self.bandwidth, alphas=self.alphas, gammas=self.gammas, eta=self.eta,
                    eps=param(self, "penalty_exponent"), maxiter=param(self, "max_iter"), ftol=param(self, "tol"), svm_C=self.svm_C, starts=self.starts,
                    random_state=int(seeds.randint(2**31 - 1)),
                )  # fmt: skip
                v, b = hp.v, hp.b
                if frame.mean is not None:  # z.v = b  <=>  x.(v / scale) = b + (mean / scale).v
                    v, b = v / frame.scale, b + (frame.mean / frame.scale) @ v
                    norm = np.linalg.norm(v)
                    v, b = v / norm, b / norm
                coef.append(v)
                intercept.append(-b)
                self.stats_.append(dict(hp.stats))
                self.n_evaluations_ += hp.n_evaluations
                self.bandwidth_ = hp.params["bandwidth"]
        self.coef_ = np.array(coef)
        self.intercept_ = np.array(intercept)
        self.n_iter_ = self.n_evaluations_  # scikit-learn's name for it in estimators with max_iter

    # ------------------------------------------------------------------ predict
    def decision_function(self, X):
        """Signed distances to the hyperplanes: shape (n,) for two classes (positive: ``classes_[1]``), else
        (n, n_classes). Lazy for Dask or zarr input."""
        check_is_fitted(self)
        if is_chunked_input(X):
            arr = as_dask_array(X, storage_options=self.storage_options)
            scores = arr.map_blocks(
                _decision, self.coef_, self.intercept_, dtype=np.float64, chunks=(arr.chunks[0], (self.coef_.shape[0],))
            )
            return scores[:, 0] if self.coef_.shape[0] == 1 else scores
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=True)
        scores = _decision(X, self.coef_, self.intercept_)
        return scores[:, 0] if self.coef_.shape[0] == 1 else scores

    def predict(self, X):
        """The class of each row (lazy for Dask or zarr input, -1 for rows with NaN/inf there)."""
        check_is_fitted(self)
        if is_chunked_input(X):
            arr = as_dask_array(X, storage_options=self.storage_options)
            return ChunkedData(arr).label_rows(_classes_of, self.coef_, self.intercept_, self.classes_)
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=True)
        return _classes_of(X, self.coef_, self.intercept_, self.classes_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
