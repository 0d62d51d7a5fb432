"""Stable cluster ids between runs (issue 10, continuity)."""

import dask.array as da
import numpy as np
import pytest
from lowdens_pipelines.continuity import (
    adjusted_rand_index,
    contingency,
    match_cluster_ids,
    relabel,
    stability,
)

from lowdens_dask import MDHClustering


def test_contingency_counts_rows_by_pair_of_ids_dask_or_numpy():
    prev = np.array([0, 0, 1, 1, 2, -1, 2])
    cur = np.array([1, 1, 0, 0, 0, 1, -1])
    expected = np.array([[0, 2], [2, 0], [1, 0]])
    np.testing.assert_array_equal(contingency(prev, cur), expected)
    np.testing.assert_array_equal(contingency(da.from_array(prev, chunks=3), da.from_array(cur, chunks=3)), expected)
    with pytest.raises(ValueError, match="differ in length"):
        contingency(prev, cur[:3])


def test_ids_follow_the_largest_overlap_and_new_clusters_get_new_ids():
    table = np.array([[0, 90, 5], [80, 0, 0], [2, 0, 60]])
    assert match_cluster_ids(table) == {1: 0, 0: 1, 2: 2}
    # one more cluster than before: the leftover one gets id 3; a vanished cluster's id is not reused
    table = np.array([[50, 0, 0, 40], [0, 70, 0, 0], [0, 0, 0, 0]])
    assert match_cluster_ids(table) == {0: 0, 1: 1, 2: 3, 3: 4}


def test_a_second_run_on_the_same_data_keeps_every_id():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(200, 2)) + [7 * i, 0] for i in range(4)])
    first = MDHClustering(n_clusters=4, random_state=0).fit(X).labels_
    second = MDHClustering(n_clusters=4, random_state=1).fit(X[::-1]).labels_[::-1]  # other order, other ids
    table = contingency(first, second)
    mapping = match_cluster_ids(table)
    np.testing.assert_array_equal(relabel(second, mapping), first)
    assert stability(table, mapping) == {"ari": 1.0, "same_id_fraction": 1.0, "kept": 4, "new": 0, "gone": 0}


def test_replacing_five_percent_of_rows_keeps_the_ids_of_unchanged_clusters():
    """The new rows are routed through the previous tree and compared with their new labels."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(250, 2)) + [8 * i, 0] for i in range(4)])
    previous = MDHClustering(n_clusters=4, random_state=0).fit(X)
    Y = X.copy()
    replaced = rng.choice(len(X), size=len(X) // 20, replace=False)
    Y[replaced] = rng.normal(size=(len(replaced), 2)) + [8 * 3, 0]  # all into the last group
    current = MDHClustering(n_clusters=4, random_state=3).fit(Y[::-1])
    new_labels = current.predict(Y)
    table = contingency(previous.tree_.predict(Y), new_labels)
    stable = relabel(da.from_array(new_labels, chunks=300), match_cluster_ids(table)).compute()
    unchanged = np.setdiff1d(np.arange(len(X)), replaced)
    np.testing.assert_array_equal(stable[unchanged], previous.labels_[unchanged])
    figures = stability(table, match_cluster_ids(table))
    assert figures["ari"] == 1.0 and figures["kept"] == 4


def test_relabel_keeps_minus_one():
    np.testing.assert_array_equal(relabel(np.array([0, -1, 1]), {0: 5, 1: 2}), [5, -1, 2])


def test_adjusted_rand_index_from_the_table_equals_scikit_learns():
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(4)
    for _ in range(20):
        a, b = rng.integers(0, rng.integers(1, 6), size=(2, int(rng.integers(2, 300))))
        assert adjusted_rand_index(contingency(a, b)) == pytest.approx(adjusted_rand_score(a, b), abs=1e-12)
