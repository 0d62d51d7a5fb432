"""Issue 9, defect 6: damaged zarr stores fail loudly, naming the store and the chunk. A missing chunk is damage
when the array carries a lowdens integrity manifest (issue 22, point 12: zarr itself leaves fill-value chunks
unwritten), or with missing_chunks="raise"."""

import os

import numpy as np
import pytest
import zarr

from lowdens_dask import (
    MDHClustering,
    PDDPClustering,
)
from lowdens_dask.backend import (
    INTEGRITY_ATTRIBUTE,
    ChunkReadError,
    as_dask_array,
    write_integrity_manifest,
)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(size=(1000, 3)), rng.normal(size=(1000, 3)) + [8, 0, 0]]).astype(np.float32)


def test_a_deleted_chunk_is_refused_naming_it(data, tmp_path):
    path = tmp_path / "X.zarr"
    write_integrity_manifest(zarr.create_array(str(path), data=data, chunks=(200, 3)))
    os.remove(path / "c" / "3" / "0")
    with pytest.raises(ValueError, match=r"1 of 10 row chunks missing: 3 \(rows 600-799\)") as err:
        MDHClustering(n_clusters=2, random_state=0).fit(str(path))
    assert str(path) in str(err.value) and "fill value (0.0)" in str(err.value)
    # a store that is sparse on purpose: the fill value is accepted explicitly, and is what is read
    X = as_dask_array(str(path), missing_chunks="fill")
    np.testing.assert_array_equal(X[600:800].compute(), 0.0)
    model = MDHClustering(n_clusters=2, random_state=0).fit(X)
    assert model.labels_.shape == (2000,)


def test_a_missing_shard_and_a_missing_column_chunk_are_found(data, tmp_path):
    sharded = zarr.create_array(str(tmp_path / "s.zarr"), data=data, chunks=(100, 3), shards=(500, 3))
    write_integrity_manifest(sharded)
    os.remove(tmp_path / "s.zarr" / "c" / "2" / "0")
    with pytest.raises(ValueError, match=r"1 of 4 row chunks missing: 2 \(rows 1000-1499\)"):
        as_dask_array(sharded)
    zarr.create_array(str(tmp_path / "c.zarr"), data=data, chunks=(500, 2), zarr_format=2)
    os.remove(tmp_path / "c.zarr" / "3.1")
    with pytest.raises(ValueError, match=r"1 of 4 row chunks missing: 3 \(rows 1500-1999\)"):
        as_dask_array(str(tmp_path / "c.zarr"), missing_chunks="raise")  # no manifest: every chunk asked for


def test_a_corrupt_chunk_names_the_store_and_the_chunk(data, tmp_path):
    path = tmp_path / "X.zarr"
    zarr.create_array(str(path), data=data, chunks=(200, 3), compressors=zarr.codecs.ZstdCodec())
    (path / "c" / "5" / "0").write_bytes(b"overwritten" * 8)
    with pytest.raises(ChunkReadError, match=r"row chunk 5 \(rows from 1000\)") as err:
        MDHClustering(n_clusters=2, random_state=0).fit(str(path))
    assert str(path) in str(err.value) and "Zstd" in str(err.value)
    (path / "c" / "5" / "0").write_bytes((path / "c" / "5" / "0").read_bytes()[:4])  # truncated
    with pytest.raises(ChunkReadError, match="row chunk 5"):
        as_dask_array(str(path)).compute()


def test_group_messages(tmp_path):
    zarr.open_group(str(tmp_path / "empty.zarr"), mode="w")
    with pytest.raises(ValueError, match="holds no array"):
        MDHClustering().fit(str(tmp_path / "empty.zarr"))
    with pytest.raises(ValueError, match="missing_chunks must be"):
        as_dask_array(str(tmp_path / "empty.zarr"), missing_chunks="zeros")


def test_fill_value_chunk_is_not_damage(tmp_path):
    """Issue 22, point 12: zarr does not write a chunk of fill values (rows 40-49 all zero); without a manifest it
    reads as zeros, as zarr means it. A lowdens integrity manifest (written by labels_store, or by
    write_integrity_manifest) lists it as unwritten, and a chunk deleted after that is still refused."""
    X = np.random.default_rng(0).normal(size=(90, 3)) + 20.0
    X[40:50] = 0.0
    path = tmp_path / "X.zarr"
    zarr.create_array(str(path), data=X, chunks=(10, 3))
    assert not (path / "c" / "4" / "0").exists()  # zarr left it unwritten
    np.testing.assert_array_equal(as_dask_array(str(path)).compute(), X)
    model = PDDPClustering(n_clusters=2, labels_store=str(tmp_path / "labels.zarr")).fit(str(path))
    assert sorted(np.bincount(model.labels_.compute())) == [10, 80]  # the zero rows are a cluster of their own
    manifest = zarr.open_array(str(tmp_path / "labels.zarr"), mode="r").attrs[INTEGRITY_ATTRIBUTE]
    assert manifest["shape"] == [90] and manifest["chunks"] == [10]
    assert write_integrity_manifest(str(path))["unwritten"] == [[4, 0]]
    np.testing.assert_array_equal(as_dask_array(str(path)).compute(), X)  # the unwritten chunk is known
    (path / "c" / "7" / "0").unlink()
    with pytest.raises(ValueError, match=r"is damaged: 1 of 9 row chunks missing: 7 \(rows 70-79\)"):
        PDDPClustering(n_clusters=2).fit(str(path))


def test_truncated_input_metadata_names_the_damaged_store(tmp_path):
    """Issue 22, point 17 (input): a truncated zarr.json of an input array, of its group, or of an array in a group
    is a ValueError that names the store and says it is damaged, not the bare JSON decoder message."""
    X = np.random.default_rng(0).normal(size=(300, 3))
    zarr.create_array(str(tmp_path / "a.zarr"), data=X, chunks=(100, 3))
    zarr.open_group(str(tmp_path / "g.zarr"), mode="w").create_array("X", data=X, chunks=(100, 3))
    for meta, target in [
        ("a.zarr/zarr.json", "a.zarr"),
        ("g.zarr/zarr.json", "g.zarr"),
        ("g.zarr/X/zarr.json", "g.zarr/X"),
    ]:
        text = (tmp_path / meta).read_bytes()
        (tmp_path / meta).write_bytes(text[: len(text) // 2])
        with pytest.raises(ValueError, match="is damaged") as err:
            MDHClustering(n_clusters=2).fit(str(tmp_path / target))
        assert str(tmp_path / target.split("/")[0]) in str(err.value) and "zarr.json" in str(err.value)
        (tmp_path / meta).write_bytes(text)
