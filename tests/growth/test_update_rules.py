"""An update grows by the rules of a fit (issue 32): ``split_index``, ``force_n_clusters``, ``max_clusters`` and an
integer ``n_clusters`` mean the same in ``fit`` and ``partial_fit``, and ``partial_fit`` after ``fit`` (in memory or
in exact mode) updates the fitted tree."""

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import DePDDPClustering, MDHClustering, SCPPClustering
from lowdens_dask.datasets import load_dataset


@pytest.fixture(scope="module")
def pendigits():
    return load_dataset("pendigits")


def blobs(k: int, n: int, seed: int = 0, scale: float = 12.0, d: int = 3):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d)) * scale
    y = rng.integers(0, k, n)
    return centres[y] + rng.normal(size=(n, d)), y


def test_an_update_after_an_in_memory_fit_continues_the_fitted_tree(pendigits):
    X, y = pendigits
    whole = MDHClustering(n_clusters=10, random_state=0).fit(X)
    est = MDHClustering(n_clusters=10, random_state=0).fit(X[:5000])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "starts a new fit"
        est.partial_fit(X[5000:])
    assert est.update_report_["update"] == 1 and est.tree_.n_updates == 1
    assert est.update_report_["n_clusters_before"] == 10 and est.n_clusters_ == 10
    assert est.summary_.n_rows == X.shape[0]
    assert adjusted_rand_score(y, est.predict(X)) >= adjusted_rand_score(y, whole.labels_) - 0.05


def test_an_update_after_an_exact_chunked_fit_continues_the_fitted_tree():
    X, _ = blobs(4, 4000, seed=1)
    est = MDHClustering(n_clusters=4, mode="exact", random_state=0).fit(da.from_array(X[:3000], chunks=500))
    labels = est.labels_.compute()
    est.partial_fit(X[3000:])
    assert est.update_report_["update"] == 1 and est.n_clusters_ == 4
    assert adjusted_rand_score(labels, est.predict(X[:3000])) > 0.99


def test_an_integer_n_clusters_set_between_updates_is_reached(pendigits):
    X, _ = pendigits
    est = MDHClustering(n_clusters=8, random_state=0).partial_fit(X[:5000])
    assert est.n_clusters_ == 8
    est.set_params(n_clusters=10).partial_fit(X[5000:])
    assert est.n_clusters_ == 10 == len(np.unique(est.predict(X)))
    split = [node for node in est.update_report_["nodes"] if node["action"] == "split"]
    assert len(split) == 2
    est.set_params(n_clusters=6).partial_fit(X[:100])  # fewer: the latest splits are merged back
    assert est.n_clusters_ == 6 == est.tree_.n_leaves


def test_an_update_grows_the_leaves_a_summary_fit_grows_with_its_split_index(pendigits):
    X, _ = pendigits
    est = MDHClustering(n_clusters=2, leaf_order="rdepth", random_state=0).partial_fit(X)
    est.set_params(n_clusters=10).partial_fit(X[:200])
    fitted = MDHClustering(n_clusters=10, leaf_order="rdepth", random_state=0, mode="summary").fit(X)
    assert est.n_clusters_ == 10
    assert adjusted_rand_score(fitted.labels_, est.predict(X)) >= 0.95


@pytest.mark.parametrize("force", [True, False])
def test_force_n_clusters_means_the_same_in_an_update(force):
    X = np.random.default_rng(3).normal(size=(3000, 4))  # one Gaussian: dePDDP finds no valid split
    fitted = DePDDPClustering(n_clusters=3, force_n_clusters=force, mode="summary", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted.fit(X)
        est = DePDDPClustering(n_clusters=2, force_n_clusters=force, random_state=0).partial_fit(X[:1500])
        est.set_params(n_clusters=3).partial_fit(X[1500:])
    assert est.n_clusters_ == fitted.n_clusters_ == (3 if force else 1)
    assert sum(node.forced for node in est.tree_) == (2 if force else 0)


def test_max_clusters_caps_an_auto_update_as_it_caps_a_fit():
    X, _ = blobs(6, 10_000, seed=2, scale=40.0)  # six clusters far apart: "auto" finds all six on 5,000 rows
    est = MDHClustering(n_clusters="auto", max_clusters=2, random_state=0).partial_fit(X[:5000])
    assert est.n_clusters_ == 2
    est.set_params(max_clusters=4).partial_fit(X[5000:])
    assert est.n_clusters_ == 4
    assert MDHClustering(n_clusters="auto", max_clusters=4, mode="summary", random_state=0).fit(X).n_clusters_ == 4


def test_a_spectral_update_after_an_in_memory_fit_keeps_the_ids():
    X, _ = blobs(3, 3000, seed=4)
    est = SCPPClustering(n_clusters=3, random_state=0).fit(X[:2000])
    labels = est.labels_.copy()
    est.partial_fit(X[2000:])
    assert est.update_report_["update"] == 1 and est.n_clusters_ == 3
    assert np.mean(est.predict(X[:2000]) == labels) > 0.99
