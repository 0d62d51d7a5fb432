"""``lowdens serve`` against a real Prefect server (issue acceptance): a ``prefect server start`` on a free
localhost port (its SQLite database in a temporary folder, analytics off), the recluster deployment served
with a cron schedule, the schedule checked through the API, a run triggered, waited for, and read back from
the runs store; then both processes are stopped. With ``--incremental`` (issue 24), two scheduled runs: the
second updates the first."""

import datetime
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import zarr

pytestmark = [pytest.mark.prefect, pytest.mark.distributed]

SERVER_START_TIMEOUT = 180  # the first start migrates a new database; CI machines are slow
DEPLOYMENT_TIMEOUT = 120
RUN_TIMEOUT = 300
CRON = "0 2 * * *"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path, chars: int = 6000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError as exc:
        return f"<{path}: {exc}>"


def _healthy(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=5) as response:
            return response.status == 200
    except OSError:  # URLError is an OSError: refused while the server starts
        return False


def _start(argv: list[str], env: dict, cwd: Path, log: Path) -> subprocess.Popen:
    """A process in a session of its own (so that it and its children can be stopped together), its output in
    ``log`` (a file, never a pipe nobody reads)."""
    with open(log, "wb") as out:
        return subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def _stop(process: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM to the process, its session and every descendant (e.g. a flow run's subprocess and its Dask
    workers in a session of their own); SIGKILL whatever is left after ``timeout`` seconds."""
    import psutil

    try:
        descendants = psutil.Process(process.pid).children(recursive=True)
    except psutil.Error:
        descendants = []

    def signal_all(sig):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for child in descendants:
            try:
                child.send_signal(sig)
            except psutil.Error:
                pass

    if process.poll() is None or descendants:
        signal_all(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        signal_all(signal.SIGKILL)
        process.wait(30)
    _, alive = psutil.wait_procs(descendants, timeout=10)
    for child in alive:
        try:
            child.kill()
        except psutil.Error:
            pass


def _env(home: Path, **extra: str) -> dict:
    """The test's environment without its Prefect settings (a PREFECT_API_URL or PREFECT_HOME of the caller, the
    WARNING log level other tests set) plus ``extra``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_SERVER_UI_ENABLED="false",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def _start_server(folder: Path) -> tuple[subprocess.Popen, str, Path]:
    """``prefect server start`` on a free port, its home, database and log in ``folder``: (process, API URL,
    log)."""
    port = _free_port()
    log = folder / "server.log"
    env = _env(
        folder / "home",
        PREFECT_SERVER_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{folder / 'prefect.db'}",
        PREFECT_SERVER_LOGGING_LEVEL="WARNING",
    )
    argv = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    return _start([*argv, "--analytics-off", "--no-ui"], env, folder, log), f"http://127.0.0.1:{port}/api", log


@pytest.fixture
def blobs(tmp_path):
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(3), 2_000)
    rng.shuffle(y)
    centres = np.array([[0, 0, 0, 0], [8, 0, 0, 0], [0, 8, 0, 0]], dtype="f4")
    X = (rng.normal(size=(6_000, 4)) + centres[y]).astype("f4")
    path = str(tmp_path / "X.zarr")
    zarr.create_array(path, data=X, chunks=(1_000, 4))
    return path, X, y


def _serve(argv: list[str], api_url: str, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """``lowdens serve`` with these arguments, against the server at ``api_url``: (process, log)."""
    log = tmp_path / "serve.log"
    env = _env(tmp_path / "serve-home", PREFECT_API_URL=api_url, PREFECT_RUNNER_POLL_FREQUENCY="2")
    return _start([sys.executable, "-m", "lowdens_pipelines.cli", "serve", *argv], env, tmp_path, log), log


def _deployment(client, name: str, serve: subprocess.Popen, failed):
    """The deployment ``name`` once ``serve`` has registered it with its schedule."""
    from prefect.exceptions import ObjectNotFound

    deadline = time.monotonic() + DEPLOYMENT_TIMEOUT
    while True:
        assert serve.poll() is None, failed("lowdens serve exited")
        try:
            deployment = client.read_deployment_by_name(name)
        except ObjectNotFound:  # until serve has registered it
            deployment = None
        if deployment is not None and deployment.schedules:
            return deployment
        assert time.monotonic() < deadline, failed(f"no deployment {name}")
        time.sleep(0.5)


def _run(client, deployment, serve: subprocess.Popen, failed, **parameters):
    """A run of the deployment scheduled for now, as its schedule makes them (``parameters``: any of its own),
    once the serving process has run it to a final state."""
    started = time.monotonic()
    flow_run = client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
    while True:
        flow_run = client.read_flow_run(flow_run.id)
        if flow_run.state is not None and flow_run.state.is_final():
            break
        assert serve.poll() is None, failed("lowdens serve exited during the run")
        assert time.monotonic() - started < RUN_TIMEOUT, failed(
            f"flow run not done after {RUN_TIMEOUT} s: {flow_run.state!r}"
        )
        time.sleep(1)
    assert flow_run.state.is_completed(), failed(f"flow run {flow_run.state!r}")
    assert flow_run.deployment_id == deployment.id
    print(f"served flow run: {time.monotonic() - started:.1f} s from trigger to Completed")
    return flow_run


@pytest.mark.slow
def test_serve_on_a_prefect_server(prefect_server, blobs, tmp_path):
    from lowdens_pipelines import RunsStore
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from sklearn.metrics import adjusted_rand_score

    path, X, y = blobs
    store = str(tmp_path / "runs")
    argv = [path, "--n-clusters", "3", "--store", store, "--workers", "1", "--cron", CRON, "--name", "nightly"]
    serve, log = _serve([*argv, "--timezone", "Europe/Paris"], prefect_server, tmp_path)

    def failed(message: str) -> str:
        return f"{message}\n--- lowdens serve (exit status {serve.poll()}) ---\n{_tail(log)}"

    try:
        # the test process talks to the server only (no ephemeral server of its own)
        with temporary_settings(updates={PREFECT_API_URL: prefect_server}), get_client(sync_client=True) as client:
            assert str(client.api_url).rstrip("/") == prefect_server
            deployment = _deployment(client, "recluster/nightly", serve, failed)

            # the schedule and the parameters, as the server has them; the schedule in the time zone asked for,
            # which serve's first line names (issue 35, item 5)
            assert [s.schedule.cron for s in deployment.schedules] == [CRON]
            assert [s.schedule.timezone for s in deployment.schedules] == ["Europe/Paris"]
            assert f"with cron '{CRON}' (Europe/Paris)" in _tail(log), failed("no time zone printed")
            assert all(s.active for s in deployment.schedules)
            parameters = deployment.parameters
            assert parameters["input_path"] == path and parameters["n_clusters"] == 3
            assert parameters["store"] == store and parameters["method"] == "mdh"
            assert parameters["cluster"] == {"cluster_kwargs": {"n_workers": 1}}
            assert parameters["series"] == "nightly" and parameters["refit_every"] is None  # a full fit each run

            # a manual run (scheduled for now): the serving process picks it up and runs the flow
            flow_run = _run(client, deployment, serve, failed, run_id="served-1")
            assert flow_run.parameters["run_id"] == "served-1"
            # serve says when the run started and when it finished (issue 53, item 9)
            said = f"run served-1 ({flow_run.name})"
            deadline = time.monotonic() + 30
            while f"{said} completed after" not in _tail(log) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert f"{said} started" in _tail(log) and f"{said} completed after" in _tail(log), failed("run not said")

            # the result in the Prefect UI: a summary and a table of the cluster sizes (issue 21, point 13)
            artifacts = {a.key: a for a in client.read_artifacts() if a.flow_run_id == flow_run.id}
            summary, sizes = artifacts["run-served-1"], artifacts["sizes-served-1"]
            assert summary.type == "markdown" and "clusters: **3**" in summary.data and store in summary.data
            table = json.loads(sizes.data) if isinstance(sizes.data, str) else sizes.data
            assert sizes.type == "table" and sorted(row["rows"] for row in table) == [2_000, 2_000, 2_000]

            # a run of the deployment given a relative local path: refused in one line (issue 35, item 2)
            refused = client.create_flow_run_from_deployment(
                deployment.id, parameters={"input_path": "X.zarr", "run_id": "relative"}
            )
            started = time.monotonic()
            while not (refused := client.read_flow_run(refused.id)).state.is_final():
                assert time.monotonic() - started < RUN_TIMEOUT, failed(f"run not done: {refused.state!r}")
                time.sleep(1)
            assert refused.state.is_failed(), failed(f"a relative input_path ran: {refused.state!r}")
            assert "input_path 'X.zarr' is a relative path, relative to an unknown working directory on the worker" in (
                refused.state.message or ""
            ), refused.state.message
    finally:
        _stop(serve)

    # the persisted run
    run = RunsStore(store).get("served-1")
    labels = run.labels.compute()
    assert labels.shape == (6_000,)
    assert run.attrs["metrics"]["n_leaves"] == 3
    np.testing.assert_array_equal(labels, run.predict(X))
    assert adjusted_rand_score(y, labels) > 0.99
    assert run.attrs["input"]["path"] == path and run.attrs["params"]["n_clusters"] == 3
    assert [r.run_id for r in RunsStore(store).runs()] == ["served-1"]  # the refused run left nothing


@pytest.mark.slow
def test_serve_incremental_on_a_prefect_server(prefect_server, blobs, tmp_path):
    """Issue 24: ``lowdens serve --incremental``; two runs scheduled from the deployment, each after the night's
    rows were written to the deployment's input: the first fits, the second updates the first (its parent) and
    keeps its cluster ids."""
    from lowdens_pipelines import RunsStore
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from sklearn.metrics import adjusted_rand_score

    path, X1, y1 = blobs
    rng = np.random.default_rng(2)  # night 2: the same three groups, new rows
    y2 = rng.integers(0, 3, size=6_000)
    X2 = (rng.normal(size=(6_000, 4)) + np.array([[0, 0, 0, 0], [8, 0, 0, 0], [0, 8, 0, 0]], dtype="f4")[y2]).astype(
        "f4"
    )
    store = str(tmp_path / "runs")
    # no cluster option: the deployment's runs size their cluster on the host that runs them (issue 35, item 2)
    argv = [path, "--n-clusters", "3", "--store", store, "--cron", CRON, "--name", "incremental"]
    started = datetime.datetime.now(datetime.timezone.utc)  # the server is the session's: only this test's runs count
    serve, log = _serve([*argv, "--incremental", "--refit-every", "3"], prefect_server, tmp_path)

    def failed(message: str) -> str:
        return f"{message}\n--- lowdens serve (exit status {serve.poll()}) ---\n{_tail(log)}"

    try:
        with temporary_settings(updates={PREFECT_API_URL: prefect_server}), get_client(sync_client=True) as client:
            deployment = _deployment(client, "recluster/incremental", serve, failed)
            assert deployment.parameters["series"] == "incremental" and deployment.parameters["refit_every"] == 3
            assert deployment.parameters["cluster"] == "auto"  # not this host's core count
            _run(client, deployment, serve, failed)  # night 1: the rows the fixture wrote
            zarr.create_array(path, data=X2, chunks=(1_000, 4), overwrite=True)  # night 2's rows
            _run(client, deployment, serve, failed)
            # no flow run's parameters hold a tree (issue 35, item 8: the update's subflow got its parent's tree as
            # JSON); the subflows name the runs they start from
            flow_runs = [
                run
                for run in client.read_flow_runs()
                if run.created >= started and run.state is not None and run.state.is_completed()
            ]
            assert len(flow_runs) == 4, [run.name for run in flow_runs]  # 2 runs of recluster, 2 of its subflow
            for flow_run in flow_runs:
                assert "nodes" not in json.dumps(flow_run.parameters), flow_run.parameters
            (resumed,) = [run.parameters["resume"] for run in flow_runs if run.parameters.get("resume")]
            assert sorted(resumed) == ["run_id", "url"]
    finally:
        _stop(serve)

    second, first = RunsStore(store).runs()  # newest first
    assert first.parent is None and second.parent == first.run_id
    assert first.attrs["series"] == second.attrs["series"] == "incremental"
    assert second.tree.n_updates == 1 and second.attrs["metrics"]["update"]["n_rows"] == 6_000
    assert second.attrs["params"] == first.attrs["params"] and second.summary.n_rows == 12_000
    labels = second.labels.compute()
    assert adjusted_rand_score(y2, labels) > 0.99
    for k in range(3):  # each group keeps the id it had on night 1
        assert np.bincount(labels[y2 == k]).argmax() == np.bincount(first.labels.compute()[y1 == k]).argmax()
