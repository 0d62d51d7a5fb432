"""A run's metrics (issue 10)."""

import json

import numpy as np
import pytest
from lowdens_pipelines.metrics import label_metrics, tree_metrics
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import MDHClustering


def test_tree_and_label_metrics():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 200)
    X = rng.normal(size=(600, 3)) + np.array([[0, 0, 0], [7, 0, 0], [0, 7, 0]])[y]
    model = MDHClustering(n_clusters=3, random_state=0).fit(X)
    tree = tree_metrics(model.tree_)
    assert tree["n_leaves"] == 3 and tree["n_nodes"] == 5 and len(tree["splits"]) == 2
    root = tree["splits"][0]
    assert root["id"] == 0 and root["size"] == 600 and root["relative_depth"] > 0 and root["fval"] >= 0
    labels = model.labels_.copy()
    labels[:5] = -1
    scores = label_metrics(labels, y)
    assert sum(scores["cluster_sizes"]) == 595 and scores["n_unlabelled"] == 5
    assert scores["adjusted_rand"] == pytest.approx(adjusted_rand_score(y[5:], labels[5:]))
    json.dumps({**tree, **scores})  # JSON-ready
    with pytest.raises(ValueError, match="true labels have 10 rows"):
        label_metrics(labels, y[:10])
