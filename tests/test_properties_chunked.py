"""Property-based tests of the estimators that take Dask and zarr input, over odd storage (issue 22).

Inputs: n in [2, 120] rows in 1 to 5 columns (a few groups, sometimes a column at rounding level or
constant), stored as a Dask array or a zarr array of dtype float64, float32, float16, int8 or bool, in
1-row chunks, ragged row chunks or column chunks, with weights absent or spanning 1e-300 to 1e300.
Properties of every fit, in summary and exact mode:

- it succeeds, or raises ``ValueError`` (bool is refused: X must hold numbers; a total weight above 1e30
  is refused);
- ``n_clusters_`` equals the number of distinct labels (a leaf no row reaches is not reported);
- ``predict`` on the same stored array equals ``labels_``;
- exact mode gives the in-memory fit's labels, label for label (the hyperplane methods: SCPP's exact mode
  builds each node's microclusters from its rows' chunks, which memory does not).

The CI profile of ``tests/test_properties.py`` applies (derandomised, a fixed budget).
"""

import warnings

import dask.array as da
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import PROFILE

from lowdens_dask import METHODS
from lowdens_dask.estimators import _summary_pass

#: Divisive methods with a Dask and zarr path (the kernel-expansion methods fit in memory only or are slower
#: than this budget allows; they have their own chunked tests).
CHUNKED = [name for name in ("mdh", "pddp", "depddp", "ipddp", "ncut", "mc", "scpp") if name in METHODS]


@st.composite
def stored(draw):
    """``(X, chunks, dtype, weights)``: the rows as float64, how to chunk them, the stored dtype, weights."""
    n = draw(st.integers(2, 120))
    d = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, draw(st.integers(1, 3)), size=n)
    X = 4.0 * groups[:, None] + rng.normal(size=(n, d))
    column = draw(st.sampled_from(["plain", "plain", "rounding", "constant"]))
    if column == "rounding":  # a column that varies only in its last bits
        X[:, -1] = np.nextafter(1.0, 2.0) ** rng.integers(0, 3, size=n)
    elif column == "constant":
        X[:, -1] = 3.0
    dtype = draw(st.sampled_from(["float64", "float32", "float16", "int8", "bool"]))
    if dtype == "int8":
        X = np.clip(np.round(X * 10), -128, 127)
    chunking = draw(st.sampled_from(["one-row", "ragged", "columns"]))
    if chunking == "one-row":
        n = min(n, 30)  # a task per row: keep the graph small
        X, groups = X[:n], groups[:n]
        chunks = (1, d)
    elif chunking == "ragged":
        chunks = (draw(st.integers(2, max(2, n - 1))), d)
    else:
        chunks = (draw(st.integers(1, n)), 1)
    weights = draw(st.sampled_from([None, (-300, 300), (-300, 2)]))  # log10 range of the weights
    if weights is not None:
        weights = 10.0 ** rng.uniform(*weights, size=n)
    return X, chunks, dtype, weights


def to_storage(X, chunks, dtype, where, tmp_path):
    if where == "zarr":
        arr = zarr.create_array(str(tmp_path / f"x-{np.random.default_rng().integers(1 << 62)}.zarr"),
                                shape=X.shape, chunks=chunks, dtype=dtype)
        arr[:] = X.astype(dtype)
        return arr
    return da.from_array(X.astype(dtype), chunks=chunks)


def make(name, mode, n_clusters):
    params = {"n_clusters": n_clusters, "random_state": 0, "mode": mode}
    return METHODS[name].clustering(**params)


@pytest.mark.parametrize("name", CHUNKED)
def test_chunked_fit_properties(name, tmp_path_factory, monkeypatch):
    """Small input is fitted in memory (at most ``SMALL_INPUT_ROWS`` rows); these small arrays take the
    chunked path by lowering that limit, so that odd chunkings cost little."""
    monkeypatch.setattr(_summary_pass, "SMALL_INPUT_ROWS", 1)
    fitted = 0

    @settings(settings.get_profile(PROFILE))
    @given(data=stored(), n_clusters=st.integers(2, 4), mode=st.sampled_from(["summary", "exact"]),
           where=st.sampled_from(["dask", "zarr"]))
    def check(data, n_clusters, mode, where):
        nonlocal fitted
        X, chunks, dtype, weights = data
        source = to_storage(X, chunks, dtype, where, tmp_path_factory.mktemp("fuzz"))
        model = make(name, mode, n_clusters)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            try:
                model.fit(source, sample_weight=weights)
            except ValueError:
                return
            fitted += 1
            labels = np.asarray(model.labels_)
            predicted = np.asarray(model.predict(source))
        found = np.unique(labels[labels >= 0])
        assert model.n_clusters_ == len(found), (model.n_clusters_, np.bincount(labels[labels >= 0]))
        np.testing.assert_array_equal(predicted, labels)
        if mode == "exact" and name != "scpp":
            in_memory = make(name, "auto", n_clusters)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                in_memory.fit(np.asarray(source[:], dtype=np.float64) if where == "zarr" else X.astype(dtype),
                              sample_weight=weights)
            np.testing.assert_array_equal(labels, np.asarray(in_memory.labels_))

    check()
    assert fitted > 0, "every example raised ValueError: the generator exercises nothing"
