"""External evaluation of clusterings and of binary (hyperplane) partitions.

All functions take the true labels first and the predicted labels second. Labels may
be integers or strings. Every distinct value of `y_pred`, including ``-1``, is an
ordinary cluster label here: it is not treated as noise.
"""

# Authors: The lowdens-dask developers
# SPDX-License-Identifier: BSD-3-Clause

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import (
    adjusted_rand_score,
    normalized_mutual_info_score,
    v_measure_score,
)
from sklearn.metrics.cluster import contingency_matrix

__all__ = ["binary_v_measure", "cluster_performance", "purity", "success_ratio"]


def _check_labels(y_true: ArrayLike, y_pred: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validate a pair of label vectors.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_pred : array-like of shape (n_samples,)
        Predicted cluster labels.

    Returns
    -------
    y_true, y_pred : ndarray of shape (n_samples,)
        The inputs as numpy arrays.

    Raises
    ------
    ValueError
        If either input is not 1-D, if their lengths differ, or if they are empty.
    """
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if y.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array of labels. Got an array of shape {y.shape} instead.")
    if y_true.shape[0] != y_pred.shape[0]:
        raise ValueError(
            "y_true and y_pred must have the same length. Got "
            f"len(y_true)={y_true.shape[0]} and len(y_pred)={y_pred.shape[0]}."
        )
    if y_true.shape[0] == 0:
        raise ValueError("y_true and y_pred are empty; at least 1 sample is required.")
    return y_true, y_pred


class _Aggregation(NamedTuple):
    """Classes of a binary partition merged into two aggregate clusters."""

    table: np.ndarray  # (2, n_classes) int: table[k, j] = |side k ∩ class j|
    assign: np.ndarray  # (n_classes,) int in {0, 1}: side each class is assigned to
    class_index: np.ndarray  # (n_samples,) int: class of each point
    side_index: np.ndarray  # (n_samples,) int in {0, 1}: side of each point


def _aggregate_binary(y_true: ArrayLike, y_pred: ArrayLike) -> _Aggregation:
    """Assign every true class to one side of a binary partition.

    Each class goes to the side that holds the majority of its members. On a tie it
    goes to the smaller side (fewer points in total), and to side 0 if both sides
    have the same size. Side 0 is the smaller value of ``np.unique(y_pred)``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels.
    y_pred : array-like of shape (n_samples,)
        Binary partition: exactly two distinct values.

    Returns
    -------
    aggregation : _Aggregation
        The side-by-class contingency table, the side assigned to each class, and
        the class and side index of each point.

    Raises
    ------
    ValueError
        If the inputs are invalid or `y_pred` does not take exactly two values.
    """
    y_true, y_pred = _check_labels(y_true, y_pred)
    classes, class_index = np.unique(y_true, return_inverse=True)
    sides, side_index = np.unique(y_pred, return_inverse=True)
    if sides.size != 2:
        raise ValueError(
            "y_pred must be a binary partition with exactly 2 distinct values. "
            f"Got {sides.size} distinct value(s) instead."
        )
    n_classes = classes.size
    table = np.bincount(side_index * n_classes + class_index, minlength=2 * n_classes).reshape(2, n_classes)
    smaller_side = int(np.argmin(table.sum(axis=1)))  # argmin picks side 0 on ties
    assign = np.where(table[0] > table[1], 0, np.where(table[1] > table[0], 1, smaller_side))
    return _Aggregation(table, assign, class_index, side_index)


def success_ratio(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    r"""Success ratio of a binary partition.

    The success ratio (SR) of Pavlidis, Hofmeyr & Tasoulis (2016, eqs. 27-29)
    measures how well a binary partition separates whole classes from each other.
    Each true class is assigned to the side holding the majority of its members; a
    tie goes to the smaller side, and to the first side (in sorted order of the
    values of `y_pred`) if both sides have the same size. With
    :math:`T_{kj} = |\Pi_k \cap C_j|`:

    .. math::

        S = \min\Big( \sum_{j \to 0} T_{0j}, \sum_{j \to 1} T_{1j} \Big),
        \qquad E = \sum_j \min_k T_{kj},
        \qquad \mathrm{SR} = \frac{S}{S + E},

    where :math:`j \to k` means class :math:`j` is assigned to side :math:`k`.
    SR is 0 when every class is assigned to the same side, i.e. when the partition
    separates no class from the rest; in particular it is 0 when `y_true` has a
    single class. SR is 1 when every class lies entirely on one side and both sides
    receive a class.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (ints or strings).
    y_pred : array-like of shape (n_samples,)
        Binary partition, e.g. the side of a hyperplane: exactly two distinct values.

    Returns
    -------
    score : float
        Success ratio in [0, 1].

    Raises
    ------
    ValueError
        If the inputs are not 1-D, differ in length or are empty, or if `y_pred`
        does not take exactly two distinct values.

    See Also
    --------
    binary_v_measure : V-measure of the same aggregated partition.

    Notes
    -----
    Equation (28) of the paper, taken literally, is not 0 when every class lands on
    one side. This function follows the authors' reference implementation
    (``success_ratio`` in the PPCI R package) instead, with the paper's tie rule.

    References
    ----------
    .. [1] N. G. Pavlidis, D. P. Hofmeyr and S. K. Tasoulis, "Minimum Density
       Hyperplanes", Journal of Machine Learning Research, 17(156):1-33, 2016.

    Examples
    --------
    >>> from lowdens_dask.metrics import success_ratio
    >>> success_ratio([0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 1, 1])
    1.0
    >>> success_ratio([0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1])
    0.6666666666666666
    """
    agg = _aggregate_binary(y_true, y_pred)
    # If every class is assigned to one side, the other side's sum is empty, so
    # S = 0; E > 0 because that other side is non-empty. Hence SR = 0, as in the
    # reference code's explicit check.
    success = min(agg.table[0, agg.assign == 0].sum(), agg.table[1, agg.assign == 1].sum())
    error = agg.table.min(axis=0).sum()
    return float(success / (success + error))


def binary_v_measure(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """V-measure of a binary partition against aggregated classes.

    The true classes are first merged into two aggregate clusters exactly as in
    :func:`success_ratio` (each class goes to the side holding the majority of its
    members; ties go to the smaller side). The score is the V-measure (β = 1) of
    Rosenberg & Hirschberg (2007) between these aggregate labels and `y_pred`, as
    used by Pavlidis, Hofmeyr & Tasoulis (2016, Section 5.1). It is 0 when every
    class is assigned to the same side.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (ints or strings).
    y_pred : array-like of shape (n_samples,)
        Binary partition, e.g. the side of a hyperplane: exactly two distinct values.

    Returns
    -------
    score : float
        Binary V-measure in [0, 1].

    Raises
    ------
    ValueError
        If the inputs are not 1-D, differ in length or are empty, or if `y_pred`
        does not take exactly two distinct values.

    See Also
    --------
    success_ratio : Success ratio of the same aggregated partition.
    sklearn.metrics.v_measure_score : The V-measure without aggregation.

    References
    ----------
    .. [1] N. G. Pavlidis, D. P. Hofmeyr and S. K. Tasoulis, "Minimum Density
       Hyperplanes", Journal of Machine Learning Research, 17(156):1-33, 2016.
    .. [2] A. Rosenberg and J. Hirschberg, "V-Measure: A conditional entropy-based
       external cluster evaluation measure", EMNLP-CoNLL, 2007.

    Examples
    --------
    >>> from lowdens_dask.metrics import binary_v_measure
    >>> binary_v_measure([0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 1, 1])
    1.0
    """
    agg = _aggregate_binary(y_true, y_pred)
    return float(v_measure_score(agg.assign[agg.class_index], agg.side_index))


def purity(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    r"""Purity of a clustering.

    Each cluster is credited with the number of points of its most frequent true
    class:

    .. math::

        \mathrm{purity} = \frac{1}{n} \sum_k \max_j |\Pi_k \cap C_j|.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (ints or strings).
    y_pred : array-like of shape (n_samples,)
        Cluster labels. ``-1`` is an ordinary cluster label.

    Returns
    -------
    score : float
        Purity in (0, 1]. It is 1 when every cluster holds a single class.

    Raises
    ------
    ValueError
        If the inputs are not 1-D, differ in length or are empty.

    Examples
    --------
    >>> from lowdens_dask.metrics import purity
    >>> purity([0, 0, 1, 1], [0, 0, 0, 1])
    0.75
    """
    y_true, y_pred = _check_labels(y_true, y_pred)
    table = contingency_matrix(y_true, y_pred)  # (n_classes, n_clusters)
    return float(table.max(axis=0).sum() / y_true.shape[0])


def cluster_performance(y_true: ArrayLike, y_pred: ArrayLike) -> dict[str, float]:
    """External performance measures of a clustering.

    Mirrors ``cluster_performance`` of the PPCI R package: adjusted Rand index,
    purity, V-measure (β = 1) and normalised mutual information.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True class labels (ints or strings).
    y_pred : array-like of shape (n_samples,)
        Cluster labels. ``-1`` is an ordinary cluster label.

    Returns
    -------
    scores : dict of str to float
        In this order: ``"adjusted_rand"``
        (:func:`sklearn.metrics.adjusted_rand_score`), ``"purity"``
        (:func:`purity`), ``"v_measure"`` (:func:`sklearn.metrics.v_measure_score`)
        and ``"nmi"`` (:func:`sklearn.metrics.normalized_mutual_info_score` with
        ``average_method="geometric"``).

    Raises
    ------
    ValueError
        If the inputs are not 1-D, differ in length or are empty.

    Notes
    -----
    The NMI divides the mutual information by the geometric mean of the two
    entropies, as PPCI does, rather than by scikit-learn's default arithmetic mean.

    Examples
    --------
    >>> from lowdens_dask.metrics import cluster_performance
    >>> cluster_performance([0, 0, 1, 1], [1, 1, 0, 0])
    {'adjusted_rand': 1.0, 'purity': 1.0, 'v_measure': 1.0, 'nmi': 1.0}
    """
    y_true, y_pred = _check_labels(y_true, y_pred)
    return {
        "adjusted_rand": float(adjusted_rand_score(y_true, y_pred)),
        "purity": purity(y_true, y_pred),
        "v_measure": float(v_measure_score(y_true, y_pred)),
        "nmi": float(normalized_mutual_info_score(y_true, y_pred, average_method="geometric")),
    }
