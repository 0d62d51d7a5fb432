"""The label pass with ``labels_store``: one task per chunk routes it and writes its labels (a region write into
a zarr array made once), in the smallest signed integer type that holds the tree's labels."""

import dask
import dask.array as da
import numpy as np
import pytest
import zarr

from lowdens_dask import MDHClustering
from lowdens_dask.backend import INTEGRITY_ATTRIBUTE
from lowdens_dask.backend.passes import chunks_read
from lowdens_dask.backend.zarr_input import _check_missing_chunks
from lowdens_dask.estimators import _label_pass, _summary_pass
from lowdens_dask.estimators._label_pass import smallest_signed_dtype, store_labels

CHUNK = 1_000


@pytest.fixture(scope="module")
def mixture(tmp_path_factory):
    """16 separated Gaussian groups in 6 dimensions, 16,000 float32 rows with 5 NaN/inf rows, as a zarr store of
    1,000-row chunks; the groups come in blocks of 1,000 rows (each chunk holds one group)."""
    rng = np.random.default_rng(0)
    centres = rng.uniform(-60, 60, size=(16, 6))
    X = np.concatenate([c + rng.normal(size=(CHUNK, 6)) for c in centres]).astype(np.float32)
    X[[3, 2_500, 7_001, 7_002]] = np.nan
    X[12_345, 2] = np.inf
    path = str(tmp_path_factory.mktemp("mixture") / "x.zarr")
    zarr.create_array(path, data=X, chunks=(CHUNK, 6))
    return path, X


@pytest.fixture(scope="module")
def fitted(mixture, tmp_path_factory):
    path, _ = mixture
    labels_store = str(tmp_path_factory.mktemp("labels") / "labels.zarr")
    model = MDHClustering(
        n_clusters=16, random_state=0, nonfinite="skip", labels_store=labels_store, mode="summary"
    ).fit(path)
    return model, labels_store



def write_labels(model, arr):
    """The label pass of a fit: ``arr``'s labels written to ``model.labels_store``."""
    largest = max(model.tree_.leaf_labels().values())
    return store_labels(arr, model._labeller(vars(model)), model.labels_store, model.storage_options, largest)

def test_written_labels_are_the_routed_labels(mixture, fitted):
    """The labels written (and ``labels_``) equal the lazy int64 labels of ``predict`` and of the tree value for
    value, -1 for the NaN/inf rows; the store has the input's row chunks, the manifest, and the int8 type."""
    path, X = mixture
    model, labels_store = fitted
    written = zarr.open_array(labels_store, mode="r")
    assert written.dtype == np.int8 and written.chunks == (CHUNK,) and written.shape == (len(X),)
    expected = model.predict(path).compute()
    assert expected.dtype == np.int64
    np.testing.assert_array_equal(written[:], expected)
    np.testing.assert_array_equal(np.asarray(model.labels_), expected)
    nonfinite = ~np.isfinite(X).all(axis=1)
    np.testing.assert_array_equal(model.tree_.predict(X[~nonfinite]), expected[~nonfinite])
    np.testing.assert_array_equal(expected[nonfinite], -1)
    assert (expected[~nonfinite] >= 0).all() and model.n_clusters_ == 16
    assert model.n_passes_ == 2 and model.timings_["label_pass"] > 0
    # this process's CPU seconds per step: the tree is grown here, so it spends CPU in every step
    assert set(model.client_seconds_) == set(model.timings_) and all(s > 0 for s in model.client_seconds_.values())


def test_dtype_is_the_smallest_signed_type_that_holds_the_labels():
    assert [smallest_signed_dtype(n) for n in (1, 127, 128, 32_767, 32_768, 2**31 - 1, 2**31)] == [
        np.int8, np.int8, np.int16, np.int16, np.int32, np.int32, np.int64,
    ]  # fmt: skip


def test_a_leaf_label_above_127_widens_the_labels_to_int16(mixture, fitted, tmp_path):
    """Stable cluster ids can be sparse and large (after partial_fit): a leaf labelled 300 is written as int16,
    with the labels the tree gives."""
    path, _ = mixture
    model, _ = fitted
    tree = model.tree_
    tree.stabilise_labels()
    leaf = tree.leaves()[3]
    old_label, leaf.label = leaf.label, 300
    try:
        arr = _summary_pass.as_chunked(model, path)
        model.labels_store = str(tmp_path / "wide.zarr")
        labels = write_labels(model, arr)
        written = zarr.open_array(model.labels_store, mode="r")
        assert written.dtype == np.int16 and labels.dtype == np.int16
        expected = tree.predict(path).compute()
        assert (expected == 300).sum() > 0
        np.testing.assert_array_equal(written[:], expected)
    finally:
        leaf.label = old_label


def test_one_task_of_ours_per_input_chunk(mixture, fitted, monkeypatch):
    """The label pass computes one lowdens task per input chunk (route and write together), and nothing else of
    ours: no separate routing or store layer."""
    path, _ = mixture
    model, _ = fitted
    arr = _summary_pass.as_chunked(model, path)
    seen = []

    def compute(*args):
        seen.append({key: task for a in args for key, task in dict(a.__dask_graph__()).items()})
        return dask.compute(*args)

    monkeypatch.setattr(_label_pass, "compute", compute)
    write_labels(model, arr)
    (graph,) = seen
    ours = [key for key in graph if str(key[0] if isinstance(key, tuple) else key).startswith("lowdens-")]
    assert len(ours) == arr.numblocks[0] == 16
    assert all(key[0].startswith("lowdens-write-labels-") and chunks_read(key) == 1 for key in ours)


def test_predict_chunked_with_out_gives_one_task_per_chunk(mixture, fitted, tmp_path):
    path, X = mixture
    model, _ = fitted
    arr = _summary_pass.as_chunked(model, path)
    out = zarr.create_array(str(tmp_path / "l.zarr"), shape=(len(X),), chunks=(CHUNK,), dtype=np.int8)
    tasks = model.tree_.predict_chunked(arr, out)
    assert len(tasks) == arr.numblocks[0] and len({t.key for t in tasks}) == len(tasks)
    dask.compute(*tasks)
    np.testing.assert_array_equal(out[:], model.predict(path).compute())


def test_irregular_row_chunks_are_written_through_to_zarr(mixture, fitted, tmp_path):
    """Row chunks a zarr array cannot have (a short chunk before the last) are written rechunked, same labels."""
    _, X = mixture
    model, _ = fitted
    arr = da.from_array(X, chunks=((500,) + (CHUNK,) * 15 + (500,), 6))
    model.labels_store = str(tmp_path / "irregular.zarr")
    with pytest.warns(UserWarning, match="irregular chunk"):
        labels = write_labels(model, arr)
    assert labels.dtype == np.int8
    np.testing.assert_array_equal(np.asarray(labels), model.predict(arr).compute())


def test_manifest_lists_zero_chunks_and_a_deleted_label_chunk_is_refused(mixture, fitted, tmp_path):
    """zarr writes no chunk whose labels are all 0 (the fill value); the manifest lists exactly those, and a label
    chunk deleted later is refused as damage."""
    path, _ = mixture
    model, _ = fitted
    labels_store = tmp_path / "labels.zarr"
    MDHClustering(n_clusters=16, random_state=0, nonfinite="skip", labels_store=str(labels_store)).fit(path)
    labels = model.predict(path).compute()
    zero_chunks = [[i] for i in range(16) if not labels[i * CHUNK : (i + 1) * CHUNK].any()]
    assert zero_chunks  # one group is cluster 0, and its chunk holds only it
    assert zarr.open_array(str(labels_store), mode="r").attrs[INTEGRITY_ATTRIBUTE]["unwritten"] == zero_chunks
    _check_missing_chunks(zarr.open_array(str(labels_store), mode="r"), "auto")  # the unwritten chunks are no damage
    victim = next(i for i in range(16) if [i] not in zero_chunks)
    (labels_store / "c" / str(victim)).unlink()
    with pytest.raises(ValueError, match="is damaged: 1 of 16 row chunks missing"):
        _check_missing_chunks(zarr.open_array(str(labels_store), mode="r"), "auto")
