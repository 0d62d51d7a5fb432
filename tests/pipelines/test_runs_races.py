"""The runs store under concurrent attempts at one run id (issue 21 point 9, issue 22 point 1) and with a
damaged run (issue 22 point 2), on a local path, fsspec's ``memory://`` and an S3 server (moto)."""

import json
import secrets
from concurrent.futures import ThreadPoolExecutor

import dask.array as da
import numpy as np
import pytest
from lowdens_pipelines.runs import Attempt, RunsStore

LABELS_A = np.arange(100) % 3
LABELS_B = np.arange(100) % 5
RUN_X = r"Run 'x' "
CLAIM = "CLAIM"


@pytest.fixture(params=["local", "memory", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        yield RunsStore(str(tmp_path / "runs"))
    elif request.param == "memory":
        store = RunsStore(f"memory://lowdens-races-{secrets.token_hex(4)}")
        yield store
        store.fs.rm(store.path, recursive=True)
    else:
        yield RunsStore(f"{request.getfixturevalue('s3_server')}/runs-{secrets.token_hex(4)}")


def attempts_of(store, run_id):
    """The names of the run's attempt folders, from a fresh listing."""
    store.fs.invalidate_cache()
    try:
        entries = store.fs.ls(f"{store.path}/{run_id}", detail=False)
    except FileNotFoundError:
        return []
    return sorted(name for name in (e.rstrip("/").rsplit("/", 1)[-1] for e in entries) if name.startswith("attempt-"))


def commit_run(store, run_id, labels, **attrs):
    with store.attempt(run_id) as attempt:
        attempt.write_labels(da.from_array(labels, chunks=30))
        attempt.set_attrs(**attrs)
        return attempt.commit()


@pytest.mark.slow
def test_two_interleaved_attempts_the_first_to_commit_wins(store):
    """The sequence of issue 22 point 1: B opens and writes; A opens inside B's block, writes and commits;
    then B commits. A's run stays whole, B's commit says it lost, and B leaves nothing behind."""
    previous = commit_run(store, "x", np.zeros(100, dtype=int), metrics={"which": "previous"})
    with store.attempt("x") as b:
        b.write_labels(da.from_array(LABELS_B, chunks=30))
        with store.attempt("x") as a:  # opening a second attempt neither fails nor blocks
            a.write_labels(da.from_array(LABELS_A, chunks=30))
            a.set_attrs(metrics={"which": "a"})
            run_a = a.commit()
        # A's commit removed the older complete run, and never B, which was still running.
        after_a = attempts_of(store, "x")
        try:
            b.set_attrs(metrics={"which": "b"})
            b.commit()
            outcome = None
        except Exception as error:  # noqa: BLE001 - asserted below, after the run is checked
            outcome = error
    run = store.get("x")
    np.testing.assert_array_equal(run.labels.compute(), LABELS_A)  # today: ArrayNotFoundError on memory://
    assert run.url == run_a.url == a.url != previous.url and run.attrs["metrics"] == {"which": "a"}
    assert after_a == sorted([a.name, b.name])
    assert isinstance(outcome, ValueError), repr(outcome)
    assert str(outcome) == (
        f"Run 'x' was committed by another attempt ({a.name}) while this one was running; this attempt is discarded."
    )
    assert attempts_of(store, "x") == [a.name]  # the loser removed its own folder
    assert [r.run_id for r in store.runs()] == ["x"] and store.damaged() == []


def test_a_later_rerun_replaces_a_committed_run(store):
    """Sequential re-runs still replace: the attempt opened after a commit wins and removes the older run."""
    first = commit_run(store, "x", LABELS_A)
    second = commit_run(store, "x", LABELS_B)
    assert store.get("x").url == second.url != first.url
    np.testing.assert_array_equal(store.get("x").labels.compute(), LABELS_B)
    assert attempts_of(store, "x") == [second.url.rsplit("/", 1)[-1]]


def open_two(store):
    """Two attempts at 'x', both written, opened before either commits; (smaller key, larger key) once
    both have claimed."""
    a, b = Attempt(store, "x"), Attempt(store, "x")  # opened outside a with block: never discarded
    for attempt, labels in ((a, LABELS_A), (b, LABELS_B)):
        attempt.write_labels(da.from_array(labels, chunks=30))
        attempt.set_attrs(metrics={})
        attempt.test_labels = labels
    a._claim()
    b._claim()
    return sorted((a, b), key=lambda attempt: (attempt.claimed_at, attempt.name))


@pytest.mark.slow
def test_claims_that_see_each_other_the_larger_withdraws_and_the_smaller_wins(store):
    """Both claims are written before either attempt lists the claims: the larger key loses at once; the
    smaller, settling after it, finds no rival left and wins. Readers see the previous run until then."""
    previous = commit_run(store, "x", np.zeros(100, dtype=int))
    first, second = open_two(store)
    assert store.get("x").url == previous.url  # claims are invisible to readers
    lost = rf"^{RUN_X}is being committed by another attempt \({first.name}\) .*discarded"
    with pytest.raises(ValueError, match=lost):
        second._settle()
    assert attempts_of(store, "x") == sorted([previous.url.rsplit("/", 1)[-1], first.name])
    run = first._settle()
    assert store.get("x").url == run.url == first.url
    assert attempts_of(store, "x") == [first.name]
    np.testing.assert_array_equal(store.get("x").labels.compute(), first.test_labels)


def test_racing_commits_in_two_threads_exactly_one_wins(store):
    """Both claimed, then both settle at once: the smaller key waits for the larger to withdraw, then wins."""
    first, second = open_two(store)
    with ThreadPoolExecutor(2) as pool:
        futures = {attempt.name: pool.submit(attempt._settle) for attempt in (second, first)}
    assert futures[first.name].result().url == first.url
    with pytest.raises(ValueError, match="this attempt is discarded"):
        futures[second.name].result()
    assert store.get("x").url == first.url and attempts_of(store, "x") == [first.name]
    np.testing.assert_array_equal(store.get("x").labels.compute(), first.test_labels)


def test_a_rival_that_won_without_seeing_a_smaller_claim_wins(store):
    """A claims and commits before B's claim exists. B's claim has the smaller key (a clock behind, say):
    B must still lose, since A has committed."""
    a, b = Attempt(store, "x"), Attempt(store, "x")
    a.write_labels(da.from_array(LABELS_A, chunks=30))
    a.commit()
    b.claimed_at = "2000-01-01T00:00:00.000000+00:00"
    store._put(f"{b.path}/{CLAIM}", b._record(claimed_at=b.claimed_at))
    with pytest.raises(ValueError, match=rf"^{RUN_X}was committed by another attempt \({a.name}\)"):
        b._settle()
    assert store.get("x").url == a.url and attempts_of(store, "x") == [a.name]
    np.testing.assert_array_equal(store.get("x").labels.compute(), LABELS_A)


@pytest.mark.slow
def test_a_rival_that_died_after_claiming_makes_the_commit_lose_in_time(store):
    """The larger claim's writer died before deciding: the smaller waits race_timeout, then loses; the
    previous run stays visible. An attempt opened after the dead claim is not held up by it."""
    previous = commit_run(store, "x", LABELS_A)
    first, second = open_two(store)
    first.race_timeout = 0.3
    with pytest.raises(ValueError, match=rf"{second.name}\) that neither committed nor withdrew within 0.3 s"):
        first._settle()
    assert store.get("x").url == previous.url
    later = commit_run(store, "x", LABELS_B)  # the dead claim is in its base: no wait, no conflict
    assert store.get("x").url == later.url
    assert second.name in attempts_of(store, "x")  # in progress as far as anyone knows: never removed


def truncate(store, path):
    text = store.fs.cat_file(path)
    store.fs.pipe_file(path, text[: len(text) // 2])


@pytest.mark.slow
def test_a_damaged_run_is_reported_and_the_others_stay_usable(store):
    """Issue 22 point 2: a truncated zarr.json of one committed run."""
    for run_id, path in (("r1", "a.zarr"), ("r2", "a.zarr"), ("r3", "b.zarr")):
        commit_run(store, run_id, LABELS_A, input={"path": path})
    damaged_url = store.get("r2").url
    truncate(store, f"{store.path}/r2/{damaged_url.rsplit('/', 1)[-1]}/zarr.json")
    assert [run.run_id for run in store.runs()] == ["r3", "r1"]
    np.testing.assert_array_equal(store.get("r1").labels.compute(), LABELS_A)
    [damaged] = store.damaged()
    assert type(damaged).__name__ == "DamagedRun" and damaged.run_id == "r2" and damaged.url == damaged_url
    assert f"{damaged_url}/zarr.json" in damaged.error and "JSONDecodeError" in damaged.error
    assert "\n" not in damaged.error
    with pytest.raises(ValueError, match=r"Run 'r2' is damaged .*zarr\.json"):
        store.get("r2")
    with pytest.warns(UserWarning, match=rf"damaged run 'r2' \({damaged_url}\)"):
        assert store.latest_on("a.zarr").run_id == "r1"


def test_a_damaged_commit_marker_is_reported(store):
    commit_run(store, "good", LABELS_A)
    bad = commit_run(store, "bad", LABELS_A)
    store.fs.pipe_file(f"{store.path}/bad/{bad.url.rsplit('/', 1)[-1]}/COMMITTED", b'{"committed_at": "20')
    assert [run.run_id for run in store.runs()] == ["good"]
    [damaged] = store.damaged()
    assert damaged.run_id == "bad" and "COMMITTED is damaged" in damaged.error


def test_a_marker_of_the_old_format_still_reads(tmp_path):
    """Stores written before the claims: COMMITTED held the commit time alone."""
    store = RunsStore(str(tmp_path / "runs"))
    run = commit_run(store, "old", LABELS_A)
    marker = tmp_path / "runs" / "old" / run.url.rsplit("/", 1)[-1] / "COMMITTED"
    marker.write_text("2026-01-02T03:04:05.000006+00:00")
    (marker.parent / CLAIM).unlink(missing_ok=True)
    assert store.get("old").committed_at == "2026-01-02T03:04:05.000006+00:00"
    newer = commit_run(store, "old", LABELS_B)  # a re-run replaces it
    assert store.get("old").url == newer.url and attempts_of(store, "old") == [newer.url.rsplit("/", 1)[-1]]
    assert json.loads((tmp_path / "runs" / "old" / newer.url.rsplit("/", 1)[-1] / "COMMITTED").read_text())[
        "base"
    ] == [run.url.rsplit("/", 1)[-1]]


def test_the_command_lists_a_damaged_run_apart_and_fits_past_it(tmp_path, monkeypatch, capsys):
    """Issue 22, points 2 and 17, as the command meets them: one run's zarr.json truncated. ``runs list`` lists
    the others and the damaged one (its path and the error), ``runs show`` of it says it is damaged and where, and
    a later ``fit`` on the store warns, skips it for continuity and compares with the run before it."""
    import shutil

    from lowdens_pipelines.cli import main

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 100)
    np.save(tmp_path / "X.npy", (rng.normal(size=(300, 4)) + 10.0 * np.eye(3, 4)[y]).astype("f4"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    fit = ["fit", "X.npy", "--n-clusters", "3", "--store", "runs", "--run-id"]
    assert main([*fit, "good"]) == 0
    shutil.copytree(tmp_path / "runs" / "good", tmp_path / "runs" / "bad")  # a second run, newer by its name
    store = RunsStore("runs")
    bad_url = store.get("bad").url
    truncate(store, f"{bad_url}/zarr.json")
    capsys.readouterr()

    assert main(["runs", "list", "--store", "runs"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0].split("\t") == ["run", "committed", "method", "clusters", "input"]
    assert listing[1].split("\t")[::2] == ["good", "mdh", str(tmp_path / "X.npy")]  # recorded absolute (issue 35)
    assert listing[2].startswith(f"bad\tdamaged\t{bad_url}/zarr.json: JSONDecodeError: ") and len(listing) == 3

    assert main(["runs", "show", "bad", "--store", "runs"]) == 2
    assert capsys.readouterr().err.startswith(f"lowdens: error: Run 'bad' is damaged ({bad_url}): {bad_url}/zarr.json")

    assert main([*fit, "next"]) == 0
    warned = f"lowdens: warning: Skipping the damaged run 'bad' ({bad_url}) for continuity: {bad_url}/zarr.json: "
    assert any(line.startswith(warned) for line in capsys.readouterr().err.splitlines())
    assert store.get("next").attrs["metrics"]["stability"]["previous_run"] == "good"
    assert [run.run_id for run in store.runs()] == ["next", "good"]
