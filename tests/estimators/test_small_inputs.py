"""Small Dask and zarr input (issue 21, point 3): input of at most ``SMALL_INPUT_ROWS`` rows is read into memory and
fitted by the in-memory path, for every method and in every mode, with the tree and labels of the numpy array's fit
and the Dask-input contract kept; a message that refuses input names the real limit (rows, or microclusters and
``rows_per_microcluster``), never a microcluster count presented as rows."""

import warnings

import dask.array as da
import numpy as np
import pytest
import zarr
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import METHODS
from lowdens_dask.estimators import _summary_pass

#: The documented threshold (``_summary_pass.SMALL_INPUT_ROWS``).
SMALL_INPUT_ROWS = 256
NAMES = sorted(METHODS)
#: Methods with an exact mode on chunked input (an SVM needs its points in memory: summary mode only).
EXACT = [name for name in NAMES if name != "svm-relabel"]


def two_groups(n: int, d: int = 3, seed: int = 0):
    """Two Gaussian groups 10 apart along the first axis, interleaved in row order (so no chunk holds one group)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, d))
    X[:, 0] += 10.0 * y
    return X, y


def fitted(name: str, X, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a forced split on 2 or 3 rows, as in memory
        return METHODS[name].clustering(n_clusters=2, random_state=0, **params).fit(X)


def assert_as_in_memory(model, reference, X, y):
    assert isinstance(model.labels_, da.Array) and model.labels_.shape == (len(X),)
    labels = model.labels_.compute()
    assert model.n_clusters_ == 2
    assert adjusted_rand_score(y, labels) == 1.0
    np.testing.assert_array_equal(labels, reference.labels_)
    assert model.tree_.to_json() == reference.tree_.to_json()  # the same tree as the numpy array's fit
    np.testing.assert_array_equal(model.predict(da.from_array(X, chunks=(7, X.shape[1]))).compute(), labels)


@pytest.mark.parametrize("name", NAMES)
def test_small_dask_input_is_fitted_as_in_memory(name):
    """20 rows in one chunk (as the CLI reads a small file): the summary had one microcluster, and the fit
    failed with "X has 20 finite rows; at least 2 are needed"."""
    X, y = two_groups(20)
    model = fitted(name, da.from_array(X, chunks=(20, 3)))
    assert_as_in_memory(model, fitted(name, X), X, y)


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize("n", [2, 3, 30])
def test_small_dask_input_in_exact_mode_is_fitted_as_in_memory(name, n):
    X, y = two_groups(n)
    model = fitted(name, da.from_array(X, chunks=(10, 3)), mode="exact")
    assert_as_in_memory(model, fitted(name, X), X, y)


def test_small_zarr_input_keeps_the_contract(tmp_path):
    """From a zarr path with NaN rows set aside: labels written chunk-aligned to ``labels_store``, -1 for the NaN
    rows, the others those of the finite rows' in-memory fit; the summary is the rows."""
    X, y = two_groups(30)
    X[[4, 17]] = np.nan
    path = str(tmp_path / "x.zarr")
    zarr.create_array(path, data=X, chunks=(10, 3))
    model = fitted("mdh", path, nonfinite="skip", labels_store=str(tmp_path / "labels.zarr"), mode="summary")
    labels = model.labels_.compute()
    assert model.labels_.chunks == ((10, 10, 10),) and model.n_nonfinite_ == 2
    assert model.n_microclusters_ == 28 and set(model.timings_) == {"summary_pass", "tree", "label_pass"}
    finite = np.isfinite(X).all(axis=1)
    reference = fitted("mdh", X[finite])
    np.testing.assert_array_equal(labels[~finite], -1)
    np.testing.assert_array_equal(labels[finite], reference.labels_)
    assert adjusted_rand_score(y[finite], labels[finite]) == 1.0


def test_the_threshold_is_the_documented_row_count():
    """At most SMALL_INPUT_ROWS rows: fitted on the rows (each its own microcluster); one more: summarised."""
    assert _summary_pass.SMALL_INPUT_ROWS == SMALL_INPUT_ROWS
    X, _ = two_groups(SMALL_INPUT_ROWS + 1)
    small = fitted("pddp", da.from_array(X[:SMALL_INPUT_ROWS], chunks=(100, 3)), mode="summary")
    assert small.n_microclusters_ == SMALL_INPUT_ROWS
    large = fitted("pddp", da.from_array(X, chunks=(100, 3)), mode="summary")
    assert large.n_microclusters_ <= np.ceil(len(X) / 20) + 2


@pytest.mark.parametrize("name", NAMES)
def test_too_few_rows_names_the_rows(name):
    X, _ = two_groups(4)
    X[1:] = np.nan
    with pytest.raises(ValueError, match=r"^X has 1 finite row \(3 of 4 set aside for NaN/inf\); at least 2 are"):
        fitted(name, da.from_array(X, chunks=(2, 3)), nonfinite="skip")


@pytest.mark.parametrize("name", NAMES)
def test_a_summary_too_small_names_microclusters_not_rows(name):
    """Above the threshold, a summary of one microcluster is refused in terms the user controls."""
    X, _ = two_groups(SMALL_INPUT_ROWS + 44)
    with pytest.raises(ValueError, match=r"has 1 microcluster \(one per rows_per_microcluster=1000 rows") as error:
        fitted(name, da.from_array(X, chunks=(len(X), 3)), mode="summary", rows_per_microcluster=1000)
    assert "300 finite rows; at least 2 are needed" not in str(error.value)


@pytest.mark.parametrize("mode", ["exact", "summary"])
@pytest.mark.parametrize("n_clusters", ["auto", 3])
def test_identical_rows_in_chunks_are_refused_as_in_memory(mode, n_clusters):
    """Issue 34, item 12: 3,000 identical rows in 500-row chunks were "fitted" as one cluster in exact and summary
    mode (with n_clusters=3, only a warning); in memory they get the constant-features error, and now in every
    mode."""
    X = np.full((3000, 3), 3.3)
    with pytest.raises(ValueError, match="Every feature of X is constant"):
        METHODS["mdh"].clustering(n_clusters=n_clusters, mode=mode).fit(da.from_array(X, chunks=500))
