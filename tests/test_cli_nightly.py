"""Issue 35, items 3 and 8, through the ``lowdens`` command run in this process: an update line refuses rows it
already holds (unless ``--allow-same-input``); labels files by content; p-values at the table's floor; what ``fit``
prints; ``lowdens params``' defaults; the node plot's legend."""

import shutil

import numpy as np
import pytest
from lowdens_pipelines import RunsStore, job
from lowdens_pipelines.cli import main


def _blobs(n: int = 100, d: int = 3, seed: int = 0) -> np.ndarray:
    """Two well-separated groups of ``n`` rows each."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(size=(n, d)), rng.normal(size=(n, d)) + 10.0]).astype("f4")


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    return tmp_path


def lowdens(capsys, *args) -> tuple[int, list[str], list[str]]:
    """(exit status, stdout lines, stderr lines) of ``lowdens ARGS`` run in this process."""
    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err.splitlines()


def _one_error_line(err: list[str]) -> str:
    errors = [line for line in err if line.startswith("lowdens: error:")]
    assert len(errors) == 1 and not any("Traceback" in line for line in err), err
    return errors[0]


# ------------------------------------------------------------------------------------------------ item 3
@pytest.fixture
def line(here, capsys):
    """night-1 fitted on X1.npy, night-2 an update of it with X2.npy."""
    X = _blobs()
    np.save("X1.npy", X[::2])
    np.save("X2.npy", X[1::2])
    assert lowdens(capsys, "fit", "X1.npy", "--n-clusters", "2", "--run-id", "night-1")[0] == 0
    assert lowdens(capsys, "fit", "X2.npy", "--update-from", "night-1", "--run-id", "night-2")[0] == 0
    return here


def test_the_same_nightly_file_twice_is_refused_naming_the_run_that_holds_it(line, capsys):
    """Before: the second update of X2.npy passed silently (PSI 0, no warning)."""
    status, out, err = lowdens(capsys, "fit", "X2.npy", "--update-from", "night-2", "--run-id", "night-3")
    assert status == 2 and out == [], err
    assert _one_error_line(err) == (
        "lowdens: error: X2.npy: run 'night-2' already holds these rows, in the line of run 'night-2'; an update "
        "adds new rows (--allow-same-input adds them again)."
    )
    assert not RunsStore("lowdens-runs").committed("night-3")
    # an earlier run of the line: night-1's rows, fed to an update of night-2
    status, _, err = lowdens(capsys, "fit", "X1.npy", "--update-from", "night-2", "--run-id", "night-3")
    assert status == 2 and "run 'night-1' already holds these rows" in _one_error_line(err), err


def test_the_same_rows_under_another_name_are_refused(line, capsys):
    shutil.copy("X2.npy", "X2-again.npy")
    status, _, err = lowdens(capsys, "fit", "X2-again.npy", "--update-from", "night-2", "--run-id", "night-3")
    assert status == 2 and _one_error_line(err) == (
        "lowdens: error: X2-again.npy: run 'night-2' (X2.npy) already holds these rows, in the line of run "
        "'night-2'; an update adds new rows (--allow-same-input adds them again)."
    ), err


def test_allow_same_input_adds_them_again_and_new_rows_pass(line, capsys):
    status, out, err = lowdens(
        capsys, "fit", "X2.npy", "--update-from", "night-2", "--run-id", "night-3", "--allow-same-input"
    )
    assert status == 0 and out[0].startswith("night-3\t"), err
    assert RunsStore("lowdens-runs").get("night-3").parent == "night-2"
    np.save("X3.npy", _blobs(seed=1))
    status, out, err = lowdens(capsys, "fit", "X3.npy", "--update-from", "night-3", "--run-id", "night-4")
    assert status == 0 and out[0].startswith("night-4\t"), err
    # a sibling is no ancestor: X3 again as an update of night-3 is refused only by the line it joins
    status, _, err = lowdens(capsys, "fit", "X3.npy", "--update-from", "night-4", "--run-id", "night-5")
    assert status == 2 and "run 'night-4' already holds these rows" in _one_error_line(err), err
    status, _, err = lowdens(capsys, "fit", "X3.npy", "--allow-same-input", "--run-id", "night-5")
    assert status == 2 and "--allow-same-input goes with --update-from" in _one_error_line(err), err


def test_the_job_refuses_it_too_as_the_flow_does(line):
    """The check is in :func:`job.start_point`, which the Prefect flow runs too (``plan_run(allow_same_input=)``)."""
    with pytest.raises(job.SameInputError, match="same rows as the input of run 'night-2'") as refused:
        job.run_job("X2.npy", update_from="night-2", run_id="night-3")
    assert refused.value.run_id == "night-2"
    assert not RunsStore("lowdens-runs").committed("night-3")
    assert job.run_job("X2.npy", update_from="night-2", run_id="night-3", allow_same_input=True) == "night-3"
