"""Issue 43, the fourth reliability round: each test is written from the round's reproducer."""

import copy
import io
import pickle

import joblib
import numpy as np
import pytest

from lowdens_dask import (
    IPDDP,
    LMSC,
    MCH,
    MDH,
    MSC,
    PDDP,
    SCPP,
    DePDDP,
    MCClustering,
    MCProjection,
    MDHClassifier,
    MDHClustering,
    MDHProjection,
    MSCClustering,
    NCutClustering,
    NCutH,
    NCutProjection,
    SCPPClustering,
    SupportVectorClustering,
    SVMRelabelClustering,
)

ESTIMATORS = [
    IPDDP,
    LMSC,
    MCH,
    MDH,
    MSC,
    PDDP,
    SCPP,
    DePDDP,
    MCClustering,
    MCProjection,
    MDHClassifier,
    MDHClustering,
    MDHProjection,
    MSCClustering,
    NCutClustering,
    NCutH,
    NCutProjection,
    SCPPClustering,
    SupportVectorClustering,
    SVMRelabelClustering,
]


def two_blobs(n=500):
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(size=(n, 2)), rng.normal(size=(n, 2)) + [8.0, 0.0]])


def fitted(cls, X):
    if cls is MDHClassifier:
        y = np.full(len(X), -1)
        y[:10], y[-10:] = 0, 1
        return cls().fit(X, y)
    params = {"n_clusters": 2} if "n_clusters" in cls().get_params() else {}
    return cls(**params).fit(X)


def joblib_dump(est):
    joblib.dump(est, io.BytesIO())


#: fitted on fewer rows: their fits take seconds on 1,000 rows
SLOW = (LMSC, SVMRelabelClustering, SupportVectorClustering)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_saving_a_fitted_estimator_changes_nothing(cls):
    """Item 1: pickle.dumps(est) emptied the live estimator's reference to its fitted rows (sklearn's __getstate__
    returns self.__dict__ itself on Python 3.11), so the next partial_fit fitted the batch alone, warning that the
    estimator "was unpickled". After pickle.dumps, copy.deepcopy and joblib.dump, every attribute is the same object
    with the same content, and the next update continues the fitted tree."""
    X = two_blobs(100 if cls in SLOW else 500)
    est = fitted(cls, X)
    before = dict(est.__dict__)
    content = {name: joblib.hash(value) for name, value in before.items()}
    for save in (pickle.dumps, copy.deepcopy, joblib_dump):
        save(est)
        assert est.__dict__.keys() == before.keys(), save
        for name, value in before.items():
            assert est.__dict__[name] is value, (save, name)
            assert joblib.hash(est.__dict__[name]) == content[name], (save, name)
    if hasattr(est, "partial_fit"):
        est.partial_fit(X[:50])
        assert est.update_report_["update"] == 1 and est.summary_.n_rows == len(X) + 50


@pytest.mark.parametrize("cls", [MDHClustering, NCutClustering], ids=lambda cls: cls.__name__)
def test_a_deep_copy_updates_the_fitted_tree_and_an_unpickled_one_says_it_starts_afresh(cls):
    X = two_blobs()
    est = cls(n_clusters=2).fit(X)
    twin = copy.deepcopy(est)
    twin.partial_fit(X[:50])
    assert twin.update_report_["update"] == 1 and twin.summary_.n_rows == 1050
    assert not hasattr(est, "summary_")  # the copy's update left the original as it was
    revived = pickle.loads(pickle.dumps(est))
    with pytest.warns(UserWarning, match="unpickled"):
        revived.partial_fit(X[:50])
    assert revived.update_report_["update"] == 0 and revived.summary_.n_rows == 50
