"""The ``lowdens`` command as a user meets it (issue 21): Ctrl-C, inputs never silently cut, small inputs, bad
input refused before anything starts, in-process fits without Prefect or distributed, concurrent runs, quiet
success, progress, help and listing."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import zarr
from lowdens_pipelines import RunsStore
from machine import scaled

CLI = [sys.executable, "-m", "lowdens_pipelines.cli"]


def _env() -> dict:
    """The test's environment without a Prefect API: the command runs the job itself."""
    return {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}


def lowdens(*args, cwd, timeout=300):
    return subprocess.run(
        [*CLI, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False, env=_env()
    )


def _blobs(n_per_group: int = 100, d: int = 4, groups: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(groups), n_per_group)
    X = rng.normal(size=(y.size, d)) + 10.0 * np.eye(groups, d)[y]
    return X.astype("f4"), y


# ---------------------------------------------------------------------------------------------------- Ctrl-C
def _group_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def large_zarr(tmp_path_factory):
    """4·10⁶ × 16 float32 in 250,000-row chunks (the issue's Ctrl-C scenario)."""
    path = str(tmp_path_factory.mktemp("ctrl-c") / "X.zarr")
    z = zarr.create_array(path, shape=(4_000_000, 16), chunks=(250_000, 16), dtype="f4")
    rng = np.random.default_rng(0)
    for i in range(16):
        z[i * 250_000 : (i + 1) * 250_000] = rng.normal(size=(250_000, 16)).astype("f4") + 4 * (i % 4)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("where", [[], ["--workers", "2"]], ids=["in-process", "local-cluster"])
def test_ctrl_c_stops_the_whole_group_at_once_and_leaves_no_run(large_zarr, tmp_path, where):
    store = tmp_path / "runs"
    argv = [*CLI, "fit", large_zarr, "--param", "mode=exact", "--param", "max_node_bytes=0"]
    argv += ["--store", str(store), "--run-id", "x", *where]
    fit = subprocess.Popen(
        argv,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=_env(),
    )
    time.sleep(12)
    assert fit.poll() is None, fit.communicate()
    os.killpg(fit.pid, signal.SIGINT)  # as Ctrl-C in a terminal: to every process of the group
    sent = time.monotonic()
    out, err = fit.communicate(timeout=60)
    assert time.monotonic() - sent < scaled(10) and fit.returncode == 130, err
    assert err.strip().splitlines()[-1] == "lowdens: interrupted" and "Traceback" not in err, err
    assert _group_gone(fit.pid, 10), "processes of the command are still running"
    assert not (store / "x").exists() and RunsStore(str(store)).runs() == []


# ---------------------------------------------------------------------------------------------------- input
@pytest.mark.slow
def test_a_csv_without_a_header_keeps_its_first_row(tmp_path):
    X, y = _blobs()
    np.savetxt(tmp_path / "X.csv", X, delimiter=",")
    done = lowdens("fit", "X.csv", "--n-clusters", 3, "--store", "runs", "--run-id", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"X.csv: {len(X)} rows × 4 columns, float64 (csv, no header row)" in done.stderr
    run = RunsStore(str(tmp_path / "runs")).get("r")
    assert run.attrs["input"]["shape"] == [len(X), 4] and run.labels.shape == (len(X),)
    # --header overrides the rule: the first row is then taken as column names
    done = lowdens("fit", "X.csv", "--header", "--store", "runs", "--run-id", "h", cwd=tmp_path)
    assert done.returncode == 0 and f"{len(X) - 1} rows × 4 columns" in done.stderr, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_small_input_is_fitted(tmp_path, suffix):
    X, y = _blobs(n_per_group=10, groups=2)
    if suffix == ".npy":
        np.save(tmp_path / "X.npy", X)
    else:
        zarr.create_array(str(tmp_path / "X.zarr"), data=X, chunks=(7, 4))
    done = lowdens("fit", f"X{suffix}", "--n-clusters", 2, "--store", "runs", "--run-id", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    labels = RunsStore(str(tmp_path / "runs")).get("r").labels.compute()
    assert labels.shape == (20,) and len(set(labels[y == 0])) == 1 and set(labels[y == 0]) != set(labels[y == 1])


def _nan_rows(p):
    X, _ = _blobs()
    X[[3, 50]] = np.nan
    np.save(p / "X.npy", X)
    return "X.npy"


BAD_INPUT = {
    "n_clusters 0": ([], ["--n-clusters", "0"], "argument --n-clusters: must be 'auto' or a positive integer; got '0'"),
    "n_clusters -3": ([], ["--n-clusters", "-3"], "argument --n-clusters: must be 'auto' or a positive integer; got '-3'"),
    "bad mode": ([], ["--param", "mode=exakt"], "--param mode=exakt"),
    "nan rows": (_nan_rows, [], "2 of the 300 rows"),
    "too small": (lambda p: np.save(p / "X.npy", np.ones((3, 2), "f4")) or "X.npy", ["--n-clusters", "5"], "3 row"),
    "empty npy": (lambda p: np.save(p / "X.npy", np.empty((0, 5))) or "X.npy", [], "X.npy"),
    "empty csv": (lambda p: (p / "X.csv").write_text("") or "X.csv", [], "X.csv"),
    "not zarr": (lambda p: (p / "d").mkdir() or "d", [], "is a directory but not a zarr array"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD_INPUT))
@pytest.mark.parametrize("where", [[], ["--workers", "2"]], ids=["in-process", "local-cluster"])
def test_bad_input_fails_in_one_line_before_anything_starts(tmp_path, case, where):
    make, options, message = BAD_INPUT[case]
    path = make(tmp_path) if callable(make) else "X.npy"
    if not callable(make):
        np.save(tmp_path / "X.npy", _blobs()[0])
    started = time.monotonic()
    done = lowdens("fit", path, *options, *where, "--store", "runs", cwd=tmp_path)
    seconds = time.monotonic() - started
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("lowdens: error: "), done.stderr
    assert message in lines[0] and not (tmp_path / "runs").exists()
    if case.startswith("n_clusters"):
        assert seconds < scaled(5)  # refused by the argument parser, before any import
    if case in ("bad mode", "nan rows"):  # in the words of the command line
        assert "'" not in lines[-1].split("--param")[1].split()[0]
    assert not list(tmp_path.glob("dask-scratch-space")), "a Dask worker started"


@pytest.mark.slow
def test_nan_rows_may_be_skipped_as_the_message_says(tmp_path):
    path = _nan_rows(tmp_path)
    done = lowdens("fit", path, "--n-clusters", 3, "--param", "nonfinite=skip", "--store", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (run,) = RunsStore(str(tmp_path / "runs")).runs()
    labels = run.labels.compute()
    assert (labels[[3, 50]] == -1).all() and (labels[np.setdiff1d(np.arange(300), [3, 50])] >= 0).all()


# ---------------------------------------------------------------------------------------------------- speed
@pytest.mark.slow
def test_a_small_fit_runs_in_process_without_prefect_or_distributed(tmp_path):
    """No Prefect API: no server, no LocalCluster, and neither Prefect nor distributed is even imported; the run
    is committed all the same, and --labels prints the scores."""
    X, y = _blobs()
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    script = (
        "import sys; from lowdens_pipelines.cli import main; "
        "status = main(['fit', 'X.npy', '--n-clusters', '3', '--labels', 'y.npy', '--store', 'runs', "
        "'--run-id', 'r']); "
        "print(sorted(m for m in ('prefect', 'distributed') if m in sys.modules)); sys.exit(status)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=_env()
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("r\t3 clusters\t") and out[1].startswith("scores: adjusted rand 1.000")
    assert out[-1] == "[]", "prefect or distributed was imported"
    run = RunsStore(str(tmp_path / "runs")).get("r")
    assert run.attrs["metrics"]["adjusted_rand"] == 1.0 and run.attrs["input"]["true_labels"] == str(tmp_path / "y.npy")
    np.testing.assert_array_equal(run.labels.compute(), run.predict(X))


# ---------------------------------------------------------------------------------------------------- quiet
@pytest.mark.slow
@pytest.mark.parametrize("where", [[], ["--workers", "1"]], ids=["in-process", "local-cluster"])
def test_success_is_quiet(tmp_path, where):
    """What was read and the result: no Dask or Prefect log lines, no telemetry errors, no worker output."""
    X, y = _blobs()
    np.save(tmp_path / "X.npy", X)
    done = lowdens("fit", "X.npy", "--n-clusters", 3, "--store", "runs", "--run-id", "r", *where, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["lowdens: read X.npy: 300 rows × 4 columns, float32 (npy)"], done.stderr
    assert done.stdout.splitlines()[0].startswith("r\t3 clusters\t")


def test_each_distinct_warning_is_shown_once(capsys):
    """Warnings from different places (the estimator warns at each node it fits) with one message: one line."""
    import warnings

    from lowdens_pipelines.cli import _quiet

    with _quiet(verbose=False):
        for _ in range(3):
            warnings.warn("X has 2 constant column(s)")
        warnings.warn("X has 2 constant column(s)")  # another line of code, the same cause
        warnings.warn("another cause")
    assert capsys.readouterr().err.splitlines() == [
        "lowdens: warning: X has 2 constant column(s)",
        "lowdens: warning: another cause",
    ]


# ---------------------------------------------------------------------------------------------------- concurrent
def test_concurrent_fits_of_one_run_id_the_loser_says_so(tmp_path, monkeypatch, capsys):
    """Two ``lowdens fit --run-id x`` at once: the second to start commits first (it runs inside the first's
    fit here); the first then loses at its commit, in one line and exit status 2, and the run left is
    complete."""
    from lowdens_pipelines import job
    from lowdens_pipelines.cli import main

    X, y = _blobs()
    np.save(tmp_path / "X.npy", X)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    fit_tree, statuses = job.fit_tree, []

    def racing_fit(rows, *args):
        if not statuses:  # the first command's fit: the second command runs meanwhile
            statuses.append(None)
            statuses[0] = main(["fit", "X.npy", "--n-clusters", "2", "--run-id", "x", "--store", "runs"])
        return fit_tree(rows, *args)

    monkeypatch.setattr(job, "fit_tree", racing_fit)
    first = main(["fit", "X.npy", "--n-clusters", "3", "--run-id", "x", "--store", "runs"])
    err = capsys.readouterr().err.strip().splitlines()
    assert statuses == [0] and first == 2
    assert err[-1].startswith("lowdens: error: Run 'x' was committed by another attempt"), err
    run = RunsStore("runs").get("x")
    assert run.attrs["metrics"]["n_leaves"] == 2 and run.labels.compute().shape == (300,)
    assert len(list((tmp_path / "runs" / "x").iterdir())) == 1


# ---------------------------------------------------------------------------------------------------- progress
def test_a_long_step_shows_its_progress(monkeypatch, capfd):
    import dask
    import dask.array as da
    from lowdens_pipelines import progress

    from lowdens_dask import MDHClustering

    monkeypatch.setattr(progress, "DELAY", 0.0)
    X, _ = _blobs(n_per_group=2_000)
    with dask.config.set(scheduler="threads"), progress.Progress(enabled=True) as shown:
        with shown.step("fit"):
            MDHClustering(n_clusters=3, mode="summary").fit(da.from_array(X, chunks=(1_000, 4)))
            time.sleep(0.3)  # the display refreshes
    import re

    err = capfd.readouterr().err
    done = [int(n) for n, total in re.findall(r"(\d+)/(\d+)", err) if n == total]
    # all its Dask tasks done: the summarising pass reads its 6 chunks in 3 tasks of 2 (each at least 1,280 rows),
    # and their summaries are combined in one more
    assert "✓\x1b[0m fit" in err and done and max(done) >= 4, err


def test_tree_growth_reports_to_the_host_in_summary_mode():
    import dask.array as da

    from lowdens_dask import MDHClustering
    from lowdens_dask.estimators.progress import progress_to

    seen = []

    class Host:
        def __init__(self, label, total):
            seen.append(("start", label, total))

        def __call__(self, n_leaves):
            seen.append(n_leaves)

        def close(self):
            seen.append("close")

    X, _ = _blobs(n_per_group=2_000)
    with progress_to(Host):
        MDHClustering(n_clusters=3).fit(da.from_array(X, chunks=(1_000, 4)))
    assert seen[0] == ("start", "MDHClustering", 3) and seen[-1] == "close" and 3 in seen


# ---------------------------------------------------------------------------------------------------- help
def _subparsers(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                yield from _subparsers(sub)


def test_every_argument_and_option_has_help():
    import argparse

    from lowdens_pipelines.cli import _parser

    for name, sub in [("lowdens", _parser()), *_subparsers(_parser())]:
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)


def test_help_lists_the_methods_and_how_to_set_their_parameters(capsys):
    from lowdens_pipelines.cli import METHOD_NAMES, main

    from lowdens_dask import METHODS

    assert sorted(METHOD_NAMES) == sorted(METHODS)
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in METHODS) and "repeat" in text and "lowdens params METHOD" in text
    assert "--workers N" in text and "default: none for input up to" in text
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert "no server" not in capsys.readouterr().out
    assert main(["params", "ncut"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("NCutClustering (--method ncut)") and "  min_size=1\n" in out
    # values as --param takes them (a quoted 'null' or '"auto"' was shown before)
    assert "  mode=auto\n" in out and "  random_state=0\n" in out and "  force_n_clusters=true\n" in out
    assert main(["params", "svm-relabel"]) == 0  # each method's rule of mode=auto, where it differs from the others'
    assert "mode=auto fits arrays of at most 5,000,000 values (rows x columns) and 20,000 rows in memory" in (
        capsys.readouterr().out
    )


def test_version(capsys):
    from importlib.metadata import version

    from lowdens_pipelines.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"lowdens {version('lowdens-dask')}"


def test_a_closed_output_pipe_stops_quietly(monkeypatch, capsys):
    """``lowdens params mdh | head -3``: the reader closes the pipe; no error message, the status a shell gives."""
    from lowdens_pipelines.cli import BROKEN_PIPE, main

    class ClosedPipe:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["params", "mdh"]) == BROKEN_PIPE == 141
    assert capsys.readouterr().err == ""
