"""``sample_weight`` in every mode (issue 53, item 10): a weight is a frequency, so an aggregated table (distinct
rows and their counts) fits as its rows repeated would, in summary mode, in exact mode and read into memory."""

import dask.array as da
import numpy as np
import pytest
import zarr
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import PDDPClustering, MDHClustering
from lowdens_dask.datasets import load_dataset


def blobs(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0, 0.0], [9.0, 0.0, 0.0], [0.0, 9.0, 0.0], [0.0, 0.0, 9.0]])
    y = rng.integers(0, 4, n)
    return centres[y] + rng.normal(size=(n, 3)), y


def test_summary_mode_counts_weights_as_repeated_rows():
    X, y = blobs()
    w = np.random.default_rng(1).integers(1, 5, len(X))
    repeated = MDHClustering(n_clusters=4, mode="summary", random_state=0).fit(np.repeat(X, w, 0))
    weighted = MDHClustering(n_clusters=4, mode="summary", random_state=0).fit(X, sample_weight=w)
    assert weighted.summary_.weights.sum() == w.sum()  # the summary stands for the weight, not the rows
    np.testing.assert_allclose(
        weighted.summary_.weights @ weighted.summary_.means / w.sum(), w @ X / w.sum(), rtol=1e-10
    )
    assert abs(weighted.n_microclusters_ - repeated.n_microclusters_) <= 0.1 * repeated.n_microclusters_
    assert weighted.n_clusters_ == repeated.n_clusters_ == 4
    assert adjusted_rand_score(repeated.predict(X), weighted.labels_) == 1.0
    assert adjusted_rand_score(y, weighted.labels_) == 1.0


def test_summary_mode_weights_as_dask_or_zarr(tmp_path):
    X, _ = blobs(4000)
    w = np.random.default_rng(2).integers(0, 4, len(X)).astype(np.float64)
    dX = da.from_array(X, chunks=(1500, 3))
    ref = MDHClustering(n_clusters=4, mode="summary", random_state=0).fit(dX, sample_weight=w)
    store = zarr.open_array(str(tmp_path / "w.zarr"), mode="w", shape=w.shape, chunks=(700,), dtype="f8")
    store[:] = w
    for weights in (da.from_array(w, chunks=900), da.from_zarr(str(tmp_path / "w.zarr"))):  # other chunks
        fit = MDHClustering(n_clusters=4, mode="summary", random_state=0).fit(dX, sample_weight=weights)
        np.testing.assert_array_equal(np.asarray(fit.labels_), np.asarray(ref.labels_))
    unweighted = MDHClustering(n_clusters=4, mode="summary", random_state=0).fit(dX)
    assert unweighted.summary_.weights.sum() == len(X) != ref.summary_.weights.sum() == w.sum()


@pytest.mark.slow
@pytest.mark.parametrize("cls", [MDHClustering, PDDPClustering])
@pytest.mark.parametrize("max_node_bytes", [0, "auto"])  # 0: every node by passes; auto: gathered on a worker
def test_exact_mode_with_weights_is_the_weighted_fit_in_memory(cls, max_node_bytes):
    X, _ = load_dataset("breastcancer", return_X_y=True)
    w = np.random.default_rng(0).integers(0, 4, len(X))
    in_memory = cls(n_clusters=3).fit(X, sample_weight=w)
    dX = da.from_array(X, chunks=(150, X.shape[1]))
    exact = cls(n_clusters=3, mode="exact", max_node_bytes=max_node_bytes).fit(dX, sample_weight=da.from_array(w, 200))
    np.testing.assert_array_equal(np.asarray(exact.labels_), in_memory.labels_)
    assert exact.tree_.nodes[0].size == w.sum()


def test_chunked_input_read_into_memory_keeps_its_weights():
    X, _ = blobs(2000)
    w = np.random.default_rng(3).integers(1, 6, len(X))
    fit = MDHClustering(n_clusters=4).fit(da.from_array(X, chunks=(500, 3)), sample_weight=w)
    assert fit.fit_mode_ == "memory"
    np.testing.assert_array_equal(np.asarray(fit.labels_), MDHClustering(n_clusters=4).fit(X, sample_weight=w).labels_)
    assert fit.tree_.nodes[0].size == w.sum()


@pytest.mark.parametrize("mode", ["summary", "exact"])
def test_chunked_weights_refused_as_in_memory(mode):
    X, _ = blobs(1000)
    dX = da.from_array(X, chunks=(300, 3))
    bad = np.ones(len(X))
    bad[5] = np.nan
    with pytest.raises(ValueError, match="sample_weight contains NaN or infinite values"):
        MDHClustering(mode=mode).fit(dX, sample_weight=da.from_array(bad, 300))
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(1000,\); got \(999,\)"):
        MDHClustering(mode=mode).fit(dX, sample_weight=np.ones(999))
    with pytest.raises(ValueError, match="2 values are negative"):
        MDHClustering(mode=mode).fit(dX, sample_weight=np.r_[-np.ones(2), np.ones(998)])


def test_summary_sample_is_drawn_by_weight():
    """The summary's sample of rows (what summary mode's tests read) is drawn by weight: a row of weight 0 never
    (here the sample's size exceeds the rows: it holds every row of positive weight, once)."""
    X, y = blobs(6000)
    w = np.where(y == 0, 0.0, np.where(y == 1, 9.0, 1.0))
    fit = MDHClustering(n_clusters=3, mode="summary", random_state=0).fit(X, sample_weight=w)
    sample = fit.summary_.sample
    assert len(sample) > 100
    nearest = np.argmin(((sample[:, None, :] - np.array([[0, 0, 0], [9, 0, 0], [0, 9, 0], [0, 0, 9]])) ** 2).sum(-1), 1)
    counts = np.bincount(nearest, minlength=4)
    assert counts[0] == 0
    assert len(sample) == (w > 0).sum()


def test_summary_sample_favours_heavy_rows(monkeypatch):
    """A sample smaller than the rows takes a row of weight 9 about as often as the first of its 9 copies would be."""
    from lowdens_dask.backend import summary_pass

    monkeypatch.setattr(summary_pass, "sample_size", lambda d: 500)
    X, y = blobs(6000)
    w = np.where(y == 1, 9.0, 1.0)
    sample = MDHClustering(n_clusters=3, mode="summary", random_state=0).fit(X, sample_weight=w).summary_.sample
    assert len(sample) == 500
    heavy = np.abs(sample - [9.0, 0.0, 0.0]).max(axis=1) < 4.5
    share = heavy.mean() / (1 - heavy.mean()) * (y != 1).sum() / (y == 1).sum()  # per row, heavy against light
    assert 6 < share < 11, share  # 1 - exp(-9t) against 1 - exp(-t), t = 500 / 24,000: 8.3


@pytest.mark.parametrize("mode", ["exact", "auto"])  # auto: read into memory
def test_the_summary_an_update_merges_into_keeps_the_weights(mode):
    """After a weighted fit of chunked rows (exact mode, or read into memory), the summary the first update merges
    into stands for the weights, not the rows."""
    X, _ = blobs(3000)
    w = np.random.default_rng(4).integers(1, 4, len(X)).astype(np.float64)
    fit = MDHClustering(n_clusters=4, mode=mode).fit(da.from_array(X, chunks=(1000, 3)), sample_weight=w)
    assert fit.summary().weights.sum() == w.sum()
