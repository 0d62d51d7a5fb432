"""Stable cluster ids between runs (issue 10, continuity); damaged previous labels (issue 22, point 3)."""

import dask.array as da
import numpy as np
import pytest
from lowdens_pipelines.continuity import (
    adjusted_rand_index,
    contingency,
    match_cluster_ids,
    relabel,
    stability,
)
from lowdens_pipelines.runs import RunsStore

from lowdens_dask import MDHClustering


def test_contingency_counts_rows_by_pair_of_ids_dask_or_numpy():
    prev = np.array([0, 0, 1, 1, 2, -1, 2])
    cur = np.array([1, 1, 0, 0, 0, 1, -1])
    expected = np.array([[0, 2], [2, 0], [1, 0]])
    np.testing.assert_array_equal(contingency(prev, cur), expected)
    np.testing.assert_array_equal(contingency(da.from_array(prev, chunks=3), da.from_array(cur, chunks=3)), expected)
    with pytest.raises(ValueError, match="differ in length"):
        contingency(prev, cur[:3])


def test_contingency_of_int8_labels_does_not_overflow():
    """labels_ written to a labels_store are int8 up to 128 clusters: the pair codes (previous * 100 + current)
    must not wrap around in int8."""
    prev = np.repeat(np.arange(100), 3)
    cur = np.roll(prev, 1)
    table = contingency(prev.astype(np.int8), da.from_array(cur.astype(np.int8), chunks=50))
    np.testing.assert_array_equal(table, contingency(prev, cur))
    assert table.shape == (100, 100) and table.sum() == 300


def test_ids_follow_the_largest_overlap_and_new_clusters_get_new_ids():
    table = np.array([[0, 90, 5], [80, 0, 0], [2, 0, 60]])
    assert match_cluster_ids(table) == {1: 0, 0: 1, 2: 2}
    # one more cluster than before: the leftover one gets id 3; a vanished cluster's id is not reused
    table = np.array([[50, 0, 0, 40], [0, 70, 0, 0], [0, 0, 0, 0]])
    assert match_cluster_ids(table) == {0: 0, 1: 1, 2: 3, 3: 4}


def test_a_second_run_on_the_same_data_keeps_every_id():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(200, 2)) + [7 * i, 0] for i in range(4)])
    first = MDHClustering(n_clusters=4, random_state=0).fit(X).labels_
    second = MDHClustering(n_clusters=4, random_state=1).fit(X[::-1]).labels_[::-1]  # other order, other ids
    table = contingency(first, second)
    mapping = match_cluster_ids(table)
    np.testing.assert_array_equal(relabel(second, mapping), first)
    assert stability(table, mapping) == {"ari": 1.0, "same_id_fraction": 1.0, "kept": 4, "new": 0, "gone": 0}


def test_replacing_five_percent_of_rows_keeps_the_ids_of_unchanged_clusters():
    """The new rows are routed through the previous tree and compared with their new labels."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(250, 2)) + [8 * i, 0] for i in range(4)])
    previous = MDHClustering(n_clusters=4, random_state=0).fit(X)
    Y = X.copy()
    replaced = rng.choice(len(X), size=len(X) // 20, replace=False)
    Y[replaced] = rng.normal(size=(len(replaced), 2)) + [8 * 3, 0]  # all into the last group
    current = MDHClustering(n_clusters=4, random_state=3).fit(Y[::-1])
    new_labels = current.predict(Y)
    table = contingency(previous.tree_.predict(Y), new_labels)
    stable = relabel(da.from_array(new_labels, chunks=300), match_cluster_ids(table)).compute()
    unchanged = np.setdiff1d(np.arange(len(X)), replaced)
    np.testing.assert_array_equal(stable[unchanged], previous.labels_[unchanged])
    figures = stability(table, match_cluster_ids(table))
    assert figures["ari"] == 1.0 and figures["kept"] == 4


def test_relabel_keeps_minus_one():
    np.testing.assert_array_equal(relabel(np.array([0, -1, 1]), {0: 5, 1: 2}), [5, -1, 2])


def test_adjusted_rand_index_from_the_table_equals_scikit_learns():
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(4)
    for _ in range(20):
        a, b = rng.integers(0, rng.integers(1, 6), size=(2, int(rng.integers(2, 300))))
        assert adjusted_rand_index(contingency(a, b)) == pytest.approx(adjusted_rand_score(a, b), abs=1e-12)


# ------------------------------------------------------------------------ damaged previous labels (issue 22, point 3)
@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """A committed run 'first' on 300 rows sorted by group, in chunks of 50: each group fills two whole chunks, so
    the group with label 0 fills chunks of label 0 alone (the fill value of zarr's default integer arrays)."""
    import zarr
    from lowdens_pipelines.cli import main

    folder = tmp_path_factory.mktemp("continuity")
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 100)
    X = (rng.normal(size=(300, 4)) + 10.0 * np.eye(3, 4)[y]).astype("f4")
    zarr.create_array(str(folder / "X.zarr"), data=X, chunks=(50, 4))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.delenv("PREFECT_API_URL", raising=False)
        assert main(["fit", "X.zarr", "--n-clusters", "3", "--store", "runs", "--run-id", "first"]) == 0
    return folder


def _second_fit(first_run, tmp_path, monkeypatch, capsys, damage=None):
    """Copy the first run's folder, ``damage(labels folder, labels)`` its labels, fit 'second' on the same rows;
    (the second run, the first's labels as written, the command's warnings)."""
    import shutil

    from lowdens_pipelines import RunsStore
    from lowdens_pipelines.cli import main

    shutil.copytree(first_run, tmp_path, dirs_exist_ok=True)
    store = RunsStore(str(tmp_path / "runs"))
    first = store.get("first")
    labels = first.labels.compute()
    if damage is not None:
        damage(tmp_path / "runs" / "first" / first.url.rsplit("/", 1)[-1] / "labels", labels)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    capsys.readouterr()
    # the first run's input, which the copy's run records (absolute, issue 35): the same rows, the same input
    assert main(["fit", str(first_run / "X.zarr"), "--n-clusters", "3", "--store", "runs", "--run-id", "second"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("lowdens: warning:")]
    return store.get("second"), labels, warnings


def test_labels_are_written_whole_so_a_clean_previous_run_gives_continuity(first_run, tmp_path, monkeypatch, capsys):
    """The rule of the runs store's labels: fill value -2 and every chunk written, so a chunk of label 0 alone is
    in the store (zarr's default would skip it), and a second fit on the same rows keeps every id, silently."""
    second, labels, warnings = _second_fit(first_run, tmp_path, monkeypatch, capsys)
    zero_chunks = [c for c in range(6) if (labels[50 * c : 50 * (c + 1)] == 0).all()]
    assert len(zero_chunks) == 2
    written = sorted(p.name for p in (tmp_path / "runs" / "first").glob("attempt-*/labels/c/*"))
    assert written == [str(c) for c in range(6)], written
    assert warnings == []
    assert second.attrs["metrics"]["stability"]["ari"] == 1.0 and second.attrs["stable_ids"] == [0, 1, 2]


def _changed_chunk(labels):
    """A chunk that holds a label other than 0 (read back as zarr's default fill value, it would pass for 0)."""
    return next(c for c in range(6) if (labels[50 * c : 50 * (c + 1)] != 0).any())


def _delete_a_chunk(labels_dir, labels):
    chunk = _changed_chunk(labels)
    (labels_dir / "c" / str(chunk)).unlink()
    return f"row chunk {chunk} (rows {50 * chunk}-{50 * chunk + 49}) is missing from the store"


def _garble_a_chunk(labels_dir, labels):
    chunk = _changed_chunk(labels)
    path = labels_dir / "c" / str(chunk)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return f"row chunk {chunk} (rows {50 * chunk}-{50 * chunk + 49}) cannot be read (ValueError: Stored and computed"


def _truncate_the_metadata(labels_dir, labels):
    text = (labels_dir / "zarr.json").read_bytes()
    (labels_dir / "zarr.json").write_bytes(text[: len(text) // 2])
    return "they cannot be opened (JSONDecodeError: "


@pytest.mark.parametrize(
    "damage", [_delete_a_chunk, _garble_a_chunk, _truncate_the_metadata], ids=["deleted", "garbled", "zarr.json"]
)
def test_damaged_previous_labels_give_a_warning_and_no_continuity(first_run, tmp_path, monkeypatch, capsys, damage):
    """A label chunk of the previous run deleted or garbled, or its labels' zarr.json cut short: the next fit
    warns, naming the run, its labels and the chunk, and falls back to no continuity (fresh ids, no stability
    figures computed from what the store reads)."""
    said = []
    second, _, warnings = _second_fit(
        first_run, tmp_path, monkeypatch, capsys, damage=lambda d, l: said.append(damage(d, l))
    )
    url = RunsStore(str(tmp_path / "runs")).get("first").url
    assert len(warnings) == 1, warnings
    expected = (
        f"lowdens: warning: No continuity with the previous run 'first': The labels at {url}/labels are damaged: "
    )
    assert warnings[0].startswith(expected + said[0]), warnings
    assert warnings[0].endswith("The new run's cluster ids start afresh.")
    stability = second.attrs["metrics"]["stability"]
    assert stability["previous_run"] == "first" and said[0] in stability["skipped"]
    assert "ari" not in stability and second.attrs["stable_ids"] == [0, 1, 2]
    np.testing.assert_array_equal(second.labels.compute(), second.predict(zarr_rows(tmp_path)))


def zarr_rows(folder):
    import zarr

    return zarr.open_array(str(folder / "X.zarr"), mode="r")[...]


def test_labels_written_by_older_code_still_give_continuity(first_run, tmp_path, monkeypatch, capsys):
    """Labels written before the rule (zarr's defaults: fill value 0, chunks of label 0 not written, no checksum)
    still read, and continuity works on them."""

    def rewrite_the_old_way(labels_dir, labels):
        da.from_array(labels, chunks=50).to_zarr(str(labels_dir.parent), component="labels", overwrite=True)
        assert len(list((labels_dir / "c").iterdir())) == 4  # the two chunks of label 0 are not written

    second, _, warnings = _second_fit(first_run, tmp_path, monkeypatch, capsys, damage=rewrite_the_old_way)
    assert warnings == []
    assert second.attrs["metrics"]["stability"]["ari"] == 1.0 and second.attrs["stable_ids"] == [0, 1, 2]
