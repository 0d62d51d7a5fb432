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

The CI profile of ``tests/estimators/test_properties.py`` applies (derandomised, a fixed budget).
"""

import warnings

import dask.array as da
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score
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


@pytest.mark.slow
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


# ---------------------------------------------------------------------------------------------------------------
# Issue 34: the classes of case the third fuzz found. Structure a fit must find whatever the storage: point masses
# (rows repeated exactly), a common offset far larger than the clusters' spread, irregular row chunks; and update
# sequences with batches of one row, of identical rows, and with decay.

#: The methods whose auto fits these properties hold for (PDDP splits at the mean and may cut a cluster).
STRUCTURE = [name for name in ("mdh", "ncut", "mc", "ipddp") if name in METHODS]


def irregular_chunks(draw, n: int) -> tuple[int, ...]:
    """A random partition of ``n`` rows into 1 to 10 chunks, some of a row or a few."""
    cuts = sorted(set(draw(st.lists(st.integers(1, n - 1), min_size=0, max_size=9))))
    return tuple(np.diff([0, *cuts, n]).tolist())


@st.composite
def separated(draw):
    """``(X, truth, chunks)``: 2 or 3 groups 30 apart along a random direction in 1 to 4 columns, as point masses
    (every row of a group the same) or as unit Gaussians, plus a common offset up to 1e9, in irregular chunks."""
    k = draw(st.integers(2, 3))
    d = draw(st.integers(1, 4))
    n = draw(st.integers(300, 900))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    truth = np.sort(rng.integers(0, k, size=n))
    direction = rng.normal(size=d)
    centres = 30.0 * np.arange(k)[:, None] * direction / np.linalg.norm(direction)
    X = centres[truth]
    if draw(st.sampled_from(["point masses", "gaussian"])) == "gaussian":
        X = X + rng.normal(size=(n, d))
    X = X + draw(st.sampled_from([-1e9, 0.0, 1e6])) * np.ones(d)
    return X, truth, irregular_chunks(draw, n)


@pytest.mark.parametrize("name", STRUCTURE)
def test_separated_structure_is_found_in_every_mode(name):
    """Items 1, 2 and 4 of issue 34: point masses were one cluster under auto, a common offset of 1e9 lost
    clusters in summary mode, and irregular chunks gave exact mode 4 clusters and summary mode 1. Groups 30 sd apart
    (or point masses) are found exactly in memory, in exact and in summary mode."""

    kinds = set()

    @settings(settings.get_profile(PROFILE), max_examples=6)
    @given(data=separated(), mode=st.sampled_from(["summary", "exact"]))
    def check(data, mode):
        X, truth, chunks = data
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            memory = METHODS[name].clustering(n_clusters="auto").fit(X)
            chunked = METHODS[name].clustering(n_clusters="auto", mode=mode).fit(
                da.from_array(X, chunks=(chunks, X.shape[1]))
            )
        for model in (memory, chunked):
            labels = np.asarray(model.labels_)
            assert model.n_clusters_ == len(np.unique(truth)), (type(model).__name__, mode, model.n_clusters_)
            kinds.add("point masses" if np.unique(X, axis=0).shape[0] == len(np.unique(truth)) else "gaussian")
            assert adjusted_rand_score(truth, labels) == 1.0

    check()
    assert kinds == {"point masses", "gaussian"}, kinds


@st.composite
def update_sequences(draw):
    """``(first fit's rows, batches, decay)``: two groups 12 apart, then 1 to 4 batches, each of one row, of
    identical rows, or of the same mixture, in memory or as a Dask array in irregular chunks."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d = draw(st.integers(1, 3))

    def mixture(n):
        return rng.normal(size=(n, d)) + 12.0 * (rng.random(n) < 0.3)[:, None]

    batches = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["one row", "identical rows", "mixture"]))
        rows = {"one row": 1, "identical rows": draw(st.integers(2, 400)), "mixture": draw(st.integers(2, 600))}[kind]
        batch = np.repeat(mixture(1), rows, axis=0) if kind != "mixture" else mixture(rows)
        if draw(st.booleans()):
            batch = da.from_array(batch, chunks=(irregular_chunks(draw, rows) if rows > 1 else (1,), d))
        batches.append(batch)
    return mixture(draw(st.integers(300, 800))), batches, draw(st.sampled_from([None, 0.5, 0.99]))


@pytest.mark.parametrize("name", ["mdh", "pddp"])
def test_update_sequences_keep_their_contracts(name):
    """Items 7, 10 and 11 of issue 34: a batch of one row or of identical rows is merged (it was refused), an update
    after decay took every old row reports no made-up drift, and every update keeps its contracts: ids never reused,
    ``predict`` of the batch equals ``labels_``, the report's numbers are finite, and the updates are counted."""

    @settings(settings.get_profile(PROFILE), max_examples=8)
    @given(data=update_sequences())
    def check(data):
        first, batches, decay = data
        model = METHODS[name].clustering(n_clusters="auto", decay=decay)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model.fit(first)
            ids_seen = set(np.unique(model.labels_).tolist())
            for number, batch in enumerate(batches, start=1):
                leaves_before = set(model.tree_.leaf_labels().values())
                model.partial_fit(batch)
                labels = np.asarray(model.labels_)
                np.testing.assert_array_equal(np.asarray(model.predict(batch)), labels)
                leaves = set(model.tree_.leaf_labels().values())
                assert not (leaves - leaves_before) & ids_seen, "an id was reused"
                ids_seen |= leaves
                assert model.tree_.n_updates == number and model.summary_.n_updates == number
                report = model.update_report_
                assert all(np.isfinite(list(_numbers(report)))), report
                if report["drift"] is None:  # no old weight left to compare with: said, not made up
                    assert report["drift_note"] and all(leaf["share_before"] is None for leaf in report["leaves"])

    check()


def _numbers(value):
    """Every number in a report (nested dicts and lists)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        yield float(value)
