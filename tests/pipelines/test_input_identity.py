"""The input identity recorded with every run (issue 10)."""

import numpy as np
import zarr
from lowdens_pipelines.identity import input_identity


def test_the_fingerprint_follows_the_content(tmp_path):
    X = np.random.default_rng(0).normal(size=(1000, 4)).astype(np.float32)
    path = str(tmp_path / "X.zarr")
    zarr.create_array(path, data=X, chunks=(100, 4))
    first = input_identity(path)
    assert first == input_identity(path)  # the same store: the same identity
    assert first["shape"] == [1000, 4] and first["dtype"] == "<f4" and first["row_chunks"] == 100
    zarr.open_array(path, mode="a")[999, 0] = 5.0  # the last chunk is always sampled
    assert input_identity(path)["fingerprint"] != first["fingerprint"]
    other = str(tmp_path / "Y.zarr")
    zarr.create_array(other, data=X.astype(np.float64), chunks=(100, 4))
    assert input_identity(other)["fingerprint"] != first["fingerprint"]
