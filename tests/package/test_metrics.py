"""Tests for lowdens_dask.metrics against hand-computed values and scikit-learn."""

# Authors: The lowdens-dask developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import entropy
from sklearn.metrics import (
    adjusted_rand_score,
    mutual_info_score,
    normalized_mutual_info_score,
    v_measure_score,
)

from lowdens_dask.metrics import (
    _aggregate_binary,
    binary_v_measure,
    cluster_performance,
    purity,
    success_ratio,
)


def _labels(*groups):
    """Concatenate (class, side, count) groups into (y_true, y_pred) arrays."""
    y_true = np.concatenate([np.full(count, cls) for cls, _, count in groups])
    y_pred = np.concatenate([np.full(count, side) for _, side, count in groups])
    return y_true, y_pred


# Class 0 mostly on side 0, class 1 mostly on side 1, class 2 mostly on side 0.
# T = [[4, 1, 3], [1, 4, 1]]: S = min(4 + 3, 4) = 4, E = 1 + 1 + 1 = 3.
MISPLACED = _labels((0, 0, 4), (0, 1, 1), (1, 0, 1), (1, 1, 4), (2, 0, 3), (2, 1, 1))


def test_success_ratio_perfect_split():
    """Whole classes on each side, both sides used: SR = 1 and binary V = 1."""
    y_true, y_pred = [0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 1, 1]
    assert success_ratio(y_true, y_pred) == 1.0
    assert binary_v_measure(y_true, y_pred) == 1.0


def test_success_ratio_all_classes_on_one_side_is_zero():
    """If every class's majority is on the same side, SR and binary V are 0."""
    # T = [[3, 2, 2], [0, 1, 0]]: eq. (28) taken literally would give S = 1 > 0.
    y_true, y_pred = _labels((0, 0, 3), (1, 0, 2), (1, 1, 1), (2, 0, 2))
    assert success_ratio(y_true, y_pred) == 0.0
    assert binary_v_measure(y_true, y_pred) == 0.0


def test_success_ratio_with_misplaced_points():
    """Misplaced points count as errors: SR = S / (S + E) = 4 / 7."""
    assert success_ratio(*MISPLACED) == pytest.approx(4 / 7)


def test_success_ratio_follows_reference_code_not_eq28():
    """A side holding more misplaced than correct points uses the reference S."""
    # T = [[6, 1, 5], [0, 2, 4]], classes assigned to sides (0, 1, 0).
    # Reference code: S = min(6 + 5, 2) = 2, E = 0 + 1 + 4 = 5, SR = 2/7.
    # Eq. (28) literally: S = min(max(11, 1), max(4, 2)) = 4, SR = 4/9.
    y_true, y_pred = _labels(
        (0, 0, 6), (1, 0, 1), (1, 1, 2), (2, 0, 5), (2, 1, 4)
    )
    assert success_ratio(y_true, y_pred) == pytest.approx(2 / 7)


@pytest.mark.parametrize(
    "groups, expected_assign, expected_sr",
    [
        # Sides have 5 and 4 points: the tied class 1 goes to side 1.
        # S = min(4, 1 + 3) = 4, E = 1 -> 0.8 (side 0 would give 3/4).
        (((0, 0, 4), (1, 0, 1), (1, 1, 1), (2, 1, 3)), [0, 1, 1], 0.8),
        # Sides have 4 and 5 points: the tied class 1 goes to side 0.
        # S = min(3 + 1, 4) = 4, E = 1 -> 0.8 (side 1 would give 3/4).
        (((0, 0, 3), (1, 0, 1), (1, 1, 1), (2, 1, 4)), [0, 0, 1], 0.8),
        # Sides have 4 and 4 points: the tied class 1 goes to side 0.
        # S = min(2 + 1, 3) = 3, E = 1 + 1 -> 0.6 (side 1 would give 2/4).
        (((0, 0, 2), (1, 0, 1), (1, 1, 1), (2, 0, 1), (2, 1, 3)), [0, 0, 1], 0.6),
    ],
)
def test_tie_goes_to_smaller_side(groups, expected_assign, expected_sr):
    """A class split evenly is assigned to the smaller side, side 0 if equal."""
    y_true, y_pred = _labels(*groups)
    agg = _aggregate_binary(y_true, y_pred)
    assert_array_equal(agg.assign, expected_assign)
    assert success_ratio(y_true, y_pred) == pytest.approx(expected_sr)
    aggregated = np.asarray(expected_assign)[y_true]
    assert binary_v_measure(y_true, y_pred) == pytest.approx(
        v_measure_score(aggregated, y_pred)
    )


def test_binary_v_measure_uses_aggregated_classes():
    """Binary V equals sklearn's V-measure of the hand-aggregated labels."""
    y_true, y_pred = MISPLACED
    aggregated = np.array([0, 1, 0])[y_true]
    expected = v_measure_score(aggregated, y_pred)
    assert binary_v_measure(y_true, y_pred) == pytest.approx(expected)
    assert binary_v_measure(y_true, y_pred) != pytest.approx(
        v_measure_score(y_true, y_pred)
    )


def test_binary_v_measure_equals_sklearn_for_two_classes():
    """With two classes on different sides, aggregation is the identity."""
    y_true = ["a"] * 6 + ["b"] * 5
    y_pred = [0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1]
    assert binary_v_measure(y_true, y_pred) == pytest.approx(
        v_measure_score(y_true, y_pred)
    )


@pytest.mark.parametrize("sides", [(0, 1), (-1, 1), ("left", "right")])
def test_binary_scores_invariant_to_label_values(sides):
    """String classes, and side values including -1, give the same scores."""
    y_true, y_pred = MISPLACED
    classes = np.array(["x", "y", "z"])[y_true]
    relabelled = np.array(sides, dtype=object)[y_pred]
    assert success_ratio(classes, relabelled) == pytest.approx(4 / 7)
    assert binary_v_measure(classes, relabelled) == pytest.approx(
        binary_v_measure(y_true, y_pred)
    )


def test_purity_hand_example():
    """Purity counts the majority class in each cluster, -1 included: 7/8."""
    y_true = [0, 0, 0, 1, 1, 2, 2, 2]
    y_pred = [0, 0, 1, 1, 1, 2, 2, -1]
    assert purity(y_true, y_pred) == pytest.approx(7 / 8)
    assert purity(y_true, [5] * 8) == pytest.approx(3 / 8)


def test_cluster_performance_matches_sklearn():
    """Keys come in PPCI's order and values equal the reference scores."""
    rng = np.random.default_rng(0)
    y_true = rng.integers(0, 4, size=200)
    y_pred = np.where(rng.random(200) < 0.7, y_true, rng.integers(-1, 3, size=200))

    scores = cluster_performance(y_true, y_pred)

    assert list(scores) == ["adjusted_rand", "purity", "v_measure", "nmi"]
    assert all(type(value) is float for value in scores.values())
    assert scores["adjusted_rand"] == pytest.approx(adjusted_rand_score(y_true, y_pred))
    assert scores["purity"] == pytest.approx(purity(y_true, y_pred))
    assert scores["v_measure"] == pytest.approx(v_measure_score(y_true, y_pred))
    # PPCI's NMI: I(X; Y) / sqrt(H(X) H(Y)).
    h_true = entropy(np.unique(y_true, return_counts=True)[1])
    h_pred = entropy(np.unique(y_pred, return_counts=True)[1])
    expected_nmi = mutual_info_score(y_true, y_pred) / np.sqrt(h_true * h_pred)
    assert_allclose(scores["nmi"], expected_nmi, rtol=1e-12)
    assert scores["nmi"] != pytest.approx(
        normalized_mutual_info_score(y_true, y_pred, average_method="arithmetic")
    )


def test_cluster_performance_perfect_clustering_with_strings():
    """A relabelled perfect clustering of string classes scores 1 everywhere."""
    y_true = ["cat", "cat", "dog", "dog", "eel"]
    y_pred = [7, 7, -1, -1, 3]
    assert cluster_performance(y_true, y_pred) == {
        "adjusted_rand": 1.0,
        "purity": 1.0,
        "v_measure": 1.0,
        "nmi": 1.0,
    }


ALL_METRICS = [success_ratio, binary_v_measure, purity, cluster_performance]


@pytest.mark.parametrize("metric", ALL_METRICS)
@pytest.mark.parametrize(
    "y_true, y_pred, match",
    [
        ([0, 1, 1], [0, 1], r"same length\. Got len\(y_true\)=3 and len\(y_pred\)=2"),
        ([], [], r"empty"),
        ([[0, 1], [1, 0]], [[0, 1], [0, 1]], r"y_true must be a 1-D array.*\(2, 2\)"),
        ([0, 1, 1, 0], [[0, 1], [0, 1]], r"y_pred must be a 1-D array.*\(2, 2\)"),
    ],
)
def test_invalid_labels_raise(metric, y_true, y_pred, match):
    """Length mismatch, empty input and non-1-D input are refused with the reason."""
    with pytest.raises(ValueError, match=match):
        metric(y_true, y_pred)


@pytest.mark.parametrize("metric", [success_ratio, binary_v_measure])
@pytest.mark.parametrize(
    "y_pred, n_values", [([0, 1, 2, 2], 3), ([1, 1, 1, 1], 1), ([-1, 0, 1, 0], 3)]
)
def test_non_binary_partition_raises(metric, y_pred, n_values):
    """SR and binary V refuse y_pred without exactly two values, naming the count."""
    with pytest.raises(
        ValueError, match=rf"exactly 2 distinct values\. Got {n_values} distinct"
    ):
        metric([0, 0, 1, 1], y_pred)
