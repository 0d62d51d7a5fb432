"""``kill -9`` of a command in the middle of a fit (issue 22, point 4): no process it started outlives it (Prefect's
temporary server above all), nothing half-written is visible in the runs store, and the run id can be fitted
again."""

import os
import select
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest
import zarr
from lowdens_pipelines import RunsStore

pytestmark = [pytest.mark.prefect]

#: The command, stopped in its fit (the fit hangs) after it printed "fitting": ``flow`` runs the recluster flow
#: without a Prefect API (Prefect starts its temporary server), ``cli`` runs ``lowdens fit``.
SCRIPT = """
import sys, time
import lowdens_dask

def hang(self, X, y=None, **kwargs):
    print("fitting", flush=True)
    time.sleep(600)

lowdens_dask.MDHClustering.fit = hang
if sys.argv[1] == "flow":
    from lowdens_pipelines.flows import recluster

    recluster("X.zarr", n_clusters=3, store="runs", run_id="x", cluster={"cluster_kwargs": {"processes": False}})
else:
    from lowdens_pipelines.cli import main

    main(["fit", "X.zarr", "--n-clusters", "3", "--store", "runs", "--run-id", "x"])
"""


def _blobs_zarr(path):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 100)
    X = (rng.normal(size=(300, 4)) + 10.0 * np.eye(3, 4)[y]).astype("f4")
    zarr.create_array(str(path), data=X, chunks=(100, 4))
    return X


def _wait_for_line(process: subprocess.Popen, expected: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 1.0)
        if ready:
            line = process.stdout.readline()
            if line.strip() == expected:
                return
            if not line and process.poll() is not None:
                break
    try:
        for child in psutil.Process(process.pid).children(recursive=True):
            child.kill()
    except psutil.NoSuchProcess:
        pass
    process.kill()
    raise AssertionError(f"no {expected!r} from the command: {process.communicate(timeout=30)[1][-3000:]}")


#: The flow run with Prefect's temporary server costs about a minute on 2 busy cores (imports, the server's start
#: and database): it runs when LOWDENS_SLOW_TESTS is set. The same path is guarded in seconds by the lifeline test
#: below (a real server, kill -9 of its parent) and by test_flow.py's check that the temporary server the flows
#: run on is tied to its process.
SLOW = pytest.mark.skipif(not os.environ.get("LOWDENS_SLOW_TESTS"), reason="about a minute; set LOWDENS_SLOW_TESTS=1")


@pytest.mark.slow
@pytest.mark.parametrize("command", [pytest.param("flow", marks=SLOW), "cli"])
def test_kill_9_mid_fit_leaves_no_process_and_no_partial_run(command, tmp_path, monkeypatch, capsys):
    X = _blobs_zarr(tmp_path / "X.zarr")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # flow: Prefect's temporary server
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, command],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    children = []
    try:
        _wait_for_line(process, "fitting", timeout=300)
        children = psutil.Process(process.pid).children(recursive=True)
        commands = [" ".join(child.cmdline()) for child in children]
        if command == "flow":  # the state of the issue: a temporary server, started for this command
            assert any("uvicorn" in line and "prefect.server" in line for line in commands), commands
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        _, alive = psutil.wait_procs(children, timeout=5)
        assert not alive, f"still running after the kill -9: {commands}"
    finally:
        for child in children:  # none left, unless the test failed (an orphan would hold the pipes open)
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        process.kill()
        process.communicate(timeout=30)
    store = RunsStore(str(tmp_path / "runs"))
    assert store.runs() == [] and store.damaged() == []  # the attempt left behind is invisible
    from lowdens_pipelines.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    capsys.readouterr()
    assert main(["runs", "list", "--store", "runs"]) == 0
    assert capsys.readouterr().out == "no runs in runs\n"
    assert main(["fit", "X.zarr", "--n-clusters", "3", "--store", "runs", "--run-id", "x"]) == 0
    run = store.get("x")
    np.testing.assert_array_equal(run.labels.compute(), run.predict(X))
    assert len(np.unique(run.labels.compute())) == 3


CHILD = """
import sys, time
from lowdens_pipelines.lifeline import lifeline_args
import subprocess
server = subprocess.Popen(lifeline_args([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"]))
print(server.pid, flush=True)
time.sleep(600)
"""


def test_a_server_under_the_lifeline_dies_with_its_parent_on_kill_9(tmp_path):
    """The lifeline itself, on a real server (Python's http.server): kill -9 of the process that started it ends it
    within seconds; and a child whose parent is already gone when it starts exits at once."""
    parent = subprocess.Popen([sys.executable, "-c", CHILD], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        server = psutil.Process(int(parent.stdout.readline()))
        deadline = time.monotonic() + 10  # between fork and exec the child's command line is still empty
        while server.is_running() and "http.server" not in server.cmdline() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.is_running() and "http.server" in server.cmdline()
        parent.kill()
        parent.wait(timeout=10)
        _, alive = psutil.wait_procs([server], timeout=5)
        assert not alive, "the server outlived its parent"
    finally:
        parent.kill()
        parent.communicate()
    late = subprocess.run(
        [sys.executable, "-m", "lowdens_pipelines.lifeline", "1", "http.server", "0"], timeout=30, check=False
    )
    assert late.returncode == 1  # its parent (this test) is not pid 1: taken for gone, it never serves
