"""Tests for the bundled data sets in lowdens_dask.datasets."""

# Authors: The lowdens-dask developers
# SPDX-License-Identifier: BSD-3-Clause

from importlib.resources import as_file, files

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from lowdens_dask.datasets import dataset_info, list_datasets, load_dataset

# (n_samples, n_features, n_classes), counted from the CSV files themselves.
EXPECTED = {
    "breastcancer": (699, 9, 2),
    "chart": (600, 60, 6),
    "dermatology": (366, 34, 6),
    "imageseg": (2310, 19, 7),
    "mfdigits": (2000, 216, 10),
    "optidigits": (5620, 64, 10),
    "pendigits": (10992, 16, 10),
    "satellite": (6435, 36, 6),
    "yale": (2000, 600, 10),
    "yeast": (698, 72, 5),
}
FROM_PPCI = {"breastcancer", "dermatology", "optidigits", "pendigits", "yale"}


def test_list_datasets_matches_bundled_files():
    """list_datasets is sorted and names exactly the bundled CSV files."""
    data_dir = files("lowdens_dask.datasets") / "data"
    shipped = sorted(
        entry.name.removesuffix(".csv.gz")
        for entry in data_dir.iterdir()
        if entry.name.endswith(".csv.gz")
    )
    assert list_datasets() == sorted(EXPECTED)
    assert list_datasets() == shipped


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_load_dataset_shape_dtype_and_info(name):
    """Each data set loads as finite C-contiguous float64 X and 1-D y, as described."""
    n_samples, n_features, n_classes = EXPECTED[name]
    X, y = load_dataset(name)

    assert X.shape == (n_samples, n_features)
    assert X.dtype == np.float64
    assert X.flags.c_contiguous
    assert np.isfinite(X).all()
    assert y.shape == (n_samples,)
    assert np.unique(y).size == n_classes

    info = dataset_info(name)
    assert list(info) == ["n_samples", "n_features", "n_classes", "source"]
    assert (info["n_samples"], info["n_features"], info["n_classes"]) == EXPECTED[name]
    assert info["source"].endswith("PPCI" if name in FROM_PPCI else "SCPP")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_load_dataset_matches_independent_parser(name):
    """Features and labels equal those read by pandas from the same bundled file."""
    pd = pytest.importorskip("pandas")
    resource = files("lowdens_dask.datasets") / "data" / f"{name}.csv.gz"
    with as_file(resource) as path:
        frame = pd.read_csv(path)
    X, y = load_dataset(name)

    assert frame.columns[-1] == "label"
    features = frame.drop(columns="label").to_numpy(dtype=np.float64)
    assert_allclose(X, features, rtol=1e-14, atol=0)
    assert_array_equal(y, frame["label"].to_numpy())


def test_labels_are_int_except_imageseg():
    """Integer class codes load as int64; imageseg keeps its string labels."""
    for name in list_datasets():
        _, y = load_dataset(name)
        if name == "imageseg":
            assert y.dtype.kind == "U"
            assert "BRICKFACE" in set(y.tolist())
        else:
            assert y.dtype == np.int64
    _, y = load_dataset("satellite")
    assert sorted(set(y.tolist())) == [1, 2, 3, 4, 5, 7]


def test_load_dataset_returns_fresh_arrays():
    """Modifying a returned array does not affect later loads."""
    X1, y1 = load_dataset("breastcancer")
    X1[:] = 0.0
    y1[:] = -1
    X2, y2 = load_dataset("breastcancer")
    assert np.any(X2 != 0.0)
    assert set(y2.tolist()) == {2, 4}


def test_load_dataset_bunch():
    """return_X_y=False gives a Bunch holding the same arrays plus metadata."""
    X, y = load_dataset("dermatology")
    bunch = load_dataset("dermatology", return_X_y=False)

    assert_array_equal(bunch.data, X)
    assert_array_equal(bunch.target, y)
    assert bunch.feature_names == [f"x{i}" for i in range(1, 35)]
    assert_array_equal(bunch.target_names, [1, 2, 3, 4, 5, 6])
    assert bunch.source == dataset_info("dermatology")["source"]


@pytest.mark.parametrize("func", [load_dataset, dataset_info])
def test_unknown_name_lists_available(func):
    """An unknown name raises a ValueError that lists the available data sets."""
    with pytest.raises(
        ValueError, match=r"Unknown dataset 'iris'\. Available datasets: breastcancer, "
    ) as excinfo:
        func("iris")
    for name in EXPECTED:
        assert name in str(excinfo.value)
