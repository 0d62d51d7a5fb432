"""The ``lowdens`` command (issue 10, part): runs listing, errors as one line and a non-zero exit."""

import subprocess
import sys

from lowdens_pipelines import RunsStore


def lowdens(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "lowdens_pipelines.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_runs_list_and_show(tmp_path):
    empty = lowdens("runs", "list", "--store", str(tmp_path / "none"), cwd=tmp_path)
    assert empty.returncode == 0 and empty.stdout == ""
    store = RunsStore(str(tmp_path / "runs"))
    for run_id, path in (("old", "a.zarr"), ("new", "b.zarr")):
        with store.attempt(run_id) as attempt:
            attempt.set_attrs(params={"method": "mdh"}, metrics={"n_leaves": 4}, input={"path": path})
            attempt.commit()
    listing = lowdens("runs", "list", "--store", str(tmp_path / "runs"), cwd=tmp_path)
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["new", "old"] and lines[0].endswith("\tmdh\t4\tb.zarr")
    shown = lowdens("runs", "show", "old", "--store", str(tmp_path / "runs"), cwd=tmp_path)
    assert shown.returncode == 0 and '"path": "a.zarr"' in shown.stdout


def test_errors_are_one_line_and_a_nonzero_exit(tmp_path):
    missing = lowdens("runs", "show", "nope", "--store", str(tmp_path), cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"lowdens: error: No committed run 'nope' in the runs store '{tmp_path}'."
    ]
    bad = lowdens("fit", str(tmp_path / "X.zarr"), "--method", "kmeans", cwd=tmp_path)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "Unknown method 'kmeans'" in bad.stderr
