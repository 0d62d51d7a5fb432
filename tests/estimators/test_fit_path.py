"""Issue 54, item 2: one readable fit. Following ``X`` from the public ``fit`` reaches the grower
(:func:`lowdens_dask.growth.grower.grow`) in at most 6 calls, down a stack that never returns to a file it left, and
the fitted attributes are set once, at the end (:meth:`TreeClustering._set_fitted`)."""

import os
import sys

import dask.array as da
import numpy as np
import pytest

import lowdens_dask
from lowdens_dask.estimators._fit import TreeClustering
from lowdens_dask.growth import grower


def two_blobs():
    X = np.random.default_rng(0).normal(size=(600, 4))
    X[:300] += 6
    return X


def stack_to_grow(est, X) -> list[tuple[str, str]]:
    """``(file, function)`` of each frame from ``est.fit`` down to the first call of ``grow``."""
    chains = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is grower.grow.__code__ and not chains:
            chain, f = [], frame
            while f is not None and not (f.f_code.co_name == "fit" and f.f_locals.get("self") is est):
                chain.append((os.path.basename(f.f_code.co_filename), f.f_code.co_name))
                f = f.f_back
            chains.append([("_fit.py", "fit"), *chain[::-1]])

    sys.setprofile(profile)
    try:
        est.fit(X)
    finally:
        sys.setprofile(None)
    assert chains, "the fit never called grow"
    return chains[0]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    "mode", ["auto", pytest.param("summary", marks=pytest.mark.slow), pytest.param("exact", marks=pytest.mark.slow)]
)
@pytest.mark.parametrize(
    "name", ["MDH", "MDHClustering", "MCClustering", "SCPPClustering", "MSCClustering", "SVMRelabelClustering"]
)
def test_fit_reaches_the_grower_in_six_steps(name, mode):
    cls = getattr(lowdens_dask, name)
    if mode == "exact" and name == "SVMRelabelClustering":
        pytest.skip("SVM-relabel has no exact mode on chunks")
    X = two_blobs() if mode == "auto" else da.from_array(np.tile(two_blobs(), (5, 1)), chunks=600)
    params = {"n_clusters": 2} if "n_clusters" in cls._get_param_names() else {}
    chain = stack_to_grow(cls(mode=mode, **params), X)
    files = [file for file, _ in chain]
    assert len(chain) - 1 <= 6, chain
    left = [file for i, file in enumerate(files[1:], 1) if file in files[:i] and files[i - 1] != file]
    assert not left, f"the stack returns to {left}: {chain}"


def test_fitted_attributes_are_set_in_one_place(monkeypatch):
    """A fit sets its attributes in one call, at the end: nothing is set on the estimator before it (the rows'
    ``n_features_in_``, which scikit-learn's ``validate_data`` sets, aside) and nothing after."""
    est = lowdens_dask.MDHClustering(n_clusters=2)
    calls = []
    original = TreeClustering._set_fitted

    def recording(self, fitted, forget=True):
        calls.append((set(vars(self)), set(fitted)))
        original(self, fitted, forget)

    monkeypatch.setattr(TreeClustering, "_set_fitted", recording)
    est.fit(two_blobs())
    ((before, fitted),) = calls
    assert before - set(est.get_params()) <= {"n_features_in_"}
    assert {"labels_", "tree_", "n_clusters_", "fit_mode_", "n_passes_"} <= fitted
    assert set(vars(est)) - set(est.get_params()) == fitted | {"n_features_in_"}
