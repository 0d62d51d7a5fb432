"""Ctrl-C stops ``lowdens serve`` (issue 21, point 1): a SIGINT to the command's process group, as a terminal
sends it, ends the command within 10 s with status 130 and one line saying "interrupted", and leaves the served
deployment paused with no scheduled runs, whether its output is a terminal (a pty) or a pipe into ``tee``
(which dies with the same SIGINT, so that stdout is a broken pipe; with ``2>&1 |`` stderr too).

Against a real ``prefect server start`` on a free localhost port (its own PREFECT_HOME and SQLite database in a
temporary folder); skipped when that server cannot start. The three commands run at once. The runner's poll
interval is an hour and the deployment's cron fires hourly, half an hour after the test starts: a flow run in
progress is not what is tested here."""

import os
import pty
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from machine import scaled
from test_prefect_server import _env, _tail  # the same server set-up

SERVER_START_TIMEOUT = 90  # on an idle machine; each wait is scaled by the machine's load (tests/machine.py)
DEPLOYMENT_TIMEOUT = 60
EXIT_LIMIT = 10.0  # the bound on an idle machine, from the SIGINT to the command's exit


def _kill_group(process: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM to the process's session (it leads its own), SIGKILL after ``timeout`` seconds."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def prefect_api(prefect_server):
    """The session's ``prefect server start`` (tests/system/conftest.py); the deployments here have names of their
    own and their runs are read by deployment."""
    return prefect_server


@pytest.fixture(scope="module")
def small_npy(tmp_path_factory):
    path = tmp_path_factory.mktemp("input") / "X.npy"
    rng = np.random.default_rng(0)
    np.save(path, np.concatenate([rng.normal(size=(100, 3)), rng.normal(8, 1, size=(100, 3))]).astype("f4"))
    return path


def _serve_argv(path: Path, name: str) -> list[str]:
    # hourly, half an hour from now: the server schedules runs at once, and none falls due (into the runner's
    # prefetch window) while the test runs, however late a loaded machine makes the runner's first poll
    cron = f"{(time.gmtime().tm_min + 30) % 60} * * * *"
    return [sys.executable, "-m", "lowdens_pipelines.cli", "serve", str(path), "--n-clusters", "2",
            "--cron", cron, "--name", name, "--store", str(path.parent / "runs")]  # fmt: skip


def _scheduled_runs(client, deployment_id) -> list:
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    return client.read_flow_runs(
        flow_run_filter=FlowRunFilter(
            deployment_id=FlowRunFilterDeploymentId(any_=[deployment_id]),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED])),
        )
    )


class _Pty:
    """A pseudo-terminal for the command's stdout and stderr; what it prints is read (and kept) in a thread."""

    def __init__(self):
        self.master, self.slave = pty.openpty()
        self.data = bytearray()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                return
            if not chunk:
                return
            self.data += chunk

    def text(self) -> str:
        return self.data.decode(errors="replace").replace("\r\n", "\n")

    def close(self):
        for fd in (self.slave, self.master):
            try:
                os.close(fd)
            except OSError:
                pass


def _default_sigint() -> None:
    """In the child before it runs the command: SIGINT's default action, as a terminal's foreground job has it. A
    suite started in the background of a shell script (``pytest ... &``, or under ``nohup``) inherits SIGINT
    ignored, and ``tee`` then outlived the SIGINT and exited 0 (bash cannot trap a signal ignored on entry)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class _Serve:
    """One ``lowdens serve`` in a process group of its own, its output in a terminal, or piped into ``tee``."""

    def __init__(self, output: str, api_url: str, path: Path, folder: Path):
        self.output, self.name = output, f"interrupt-{output}"
        folder.mkdir()
        self.err, self.log, self.status_file = folder / "stderr", folder / "tee.log", folder / "status"
        env = _env(folder / "home", PREFECT_API_URL=api_url, PREFECT_RUNNER_POLL_FREQUENCY="3600")
        argv = _serve_argv(path, self.name)
        self.terminal = None
        if output == "terminal":
            self.terminal = _Pty()
            self.process = subprocess.Popen(argv, env=env, cwd=folder, stdin=subprocess.DEVNULL,
                                            stdout=self.terminal.slave, stderr=self.terminal.slave,
                                            start_new_session=True, preexec_fn=_default_sigint)  # fmt: skip
            os.close(self.terminal.slave)
            self.terminal.slave = -1
        else:
            # the group holds bash, lowdens and tee, as a terminal's foreground job `lowdens serve ... | tee log`
            # does; bash traps SIGINT (a handler: its children keep the default) to record lowdens's exit status
            redirect = "2>&1" if output == "pipe-both" else f'2>"{self.err}"'
            script = (
                f'trap : INT; "$@" {redirect} | tee "{self.log}" >/dev/null; s=("${{PIPESTATUS[@]}}"); '
                f'echo "${{s[0]}} ${{s[1]}}" > "{self.status_file}"; exit "${{s[0]}}"'
            )
            self.process = subprocess.Popen(["bash", "-c", script, "bash", *argv], env=env, cwd=folder,
                                            stdin=subprocess.DEVNULL, start_new_session=True,
                                            preexec_fn=_default_sigint)  # fmt: skip
        self.deployment = None
        self.before = ""
        self.elapsed = None
        self.limit = EXIT_LIMIT  # scaled by the load at the SIGINT

    def stderr_text(self) -> str:
        """What the command wrote on its stderr that the test can read (in a terminal: stdout too)."""
        if self.terminal is not None:
            return self.terminal.text()
        return _tail(self.err, 10**6) if self.output == "pipe" else ""

    def failed(self, message: str) -> str:
        shown = self.stderr_text() + ("" if self.terminal is not None else _tail(self.log))
        return f"{message}\n--- lowdens serve ({self.output}, exit status {self.process.poll()}) ---\n{shown[-4000:]}"

    def interrupt(self) -> None:
        self.before = self.stderr_text()
        self.signalled = time.monotonic()
        os.killpg(self.process.pid, signal.SIGINT)

    def exited(self) -> bool:
        """Whether the command has exited (its exit time noted on the first call that sees it)."""
        if self.elapsed is None and self.process.poll() is not None:
            self.elapsed = time.monotonic() - self.signalled
        return self.elapsed is not None

    def close(self) -> None:
        if self.process.poll() is None:
            _kill_group(self.process)
        if self.terminal is not None:
            self.terminal.thread.join(5)
            self.terminal.close()


OUTPUTS = ["pipe", "pipe-both", "terminal"]


@pytest.mark.prefect
@pytest.mark.slow
def test_sigint_to_the_group_pauses_the_deployment_and_exits_130(prefect_api, small_npy, tmp_path):
    """The three outputs at once (each command takes seconds to start on a small machine)."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound
    from prefect.settings import PREFECT_API_URL, temporary_settings

    serves = []
    try:
        for output in OUTPUTS:
            serves.append(_Serve(output, prefect_api, small_npy, tmp_path / output))
        with temporary_settings(updates={PREFECT_API_URL: prefect_api}), get_client(sync_client=True) as client:
            deadline = time.monotonic() + scaled(DEPLOYMENT_TIMEOUT)
            while any(serve.deployment is None for serve in serves):
                for serve in serves:
                    if serve.deployment is not None:
                        serve.exited()  # its exit time, if it has exited (late by at most a loop)
                        continue
                    assert serve.process.poll() is None, serve.failed("lowdens serve exited")
                    try:
                        deployment = client.read_deployment_by_name(f"recluster/{serve.name}")
                    except ObjectNotFound:
                        continue
                    # served: active, and the server has scheduled its cron runs (a loaded machine may show the
                    # deployment before the runner has resumed it; the test waits for that, not for seconds)
                    if not deployment.paused and _scheduled_runs(client, deployment.id):
                        serve.deployment = deployment
                        serve.interrupt()
                        serve.limit = scaled(EXIT_LIMIT)
                assert time.monotonic() < deadline, "\n".join(
                    serve.failed("no deployment with scheduled runs") for serve in serves if serve.deployment is None
                )
                time.sleep(0.5)

            while not all(serve.exited() for serve in serves):  # each one's exit time to within 0.05 s
                if any(time.monotonic() - serve.signalled > 3 * serve.limit for serve in serves if not serve.exited()):
                    break
                time.sleep(0.05)
            for serve in serves:
                took = f"still running {3 * serve.limit:.0f} s" if serve.elapsed is None else f"{serve.elapsed:.1f} s"
                said = serve.stderr_text()[len(serve.before) :].strip()
                print(f"{serve.output}: {took} after the SIGINT, exit status {serve.process.returncode}: {said!r}")
            problems = []  # every case's, so that a failure says all that went wrong
            for serve in serves:
                if serve.elapsed is None:
                    problems.append(serve.failed(f"still running {3 * serve.limit:.0f} s after SIGINT"))
                elif serve.elapsed >= serve.limit:
                    limit = f"limit {serve.limit:.0f} s"
                    problems.append(serve.failed(f"exit {serve.elapsed:.1f} s after SIGINT ({limit})"))
                if serve.process.returncode != 130:
                    problems.append(serve.failed(f"exit status {serve.process.returncode}, not 130"))
                if serve.output != "terminal" and serve.status_file.exists():  # lowdens's own, and tee's (SIGINT)
                    statuses = serve.status_file.read_text().split()
                    if statuses != ["130", str(128 + signal.SIGINT)]:
                        problems.append(f"{serve.output}: exit statuses (lowdens, tee) {statuses}")
                deployment = client.read_deployment(serve.deployment.id)
                if not deployment.paused:
                    problems.append(f"{serve.output}: the deployment is not paused")
                left = _scheduled_runs(client, deployment.id)
                if left:
                    problems.append(f"{serve.output}: {len(left)} scheduled run(s) of the deployment left")
            assert not problems, "\n".join(problems)
    finally:
        for serve in serves:
            serve.close()

    # one line after the SIGINT, saying so, on stderr: the terminal, or a file (with `2>&1 | tee` stderr was the
    # pipe that tee, killed, no longer read)
    for serve in serves:
        if serve.output == "pipe-both":
            continue
        after = serve.stderr_text()[len(serve.before) :]
        lines = [line for line in after.splitlines() if line.strip()]
        assert len(lines) == 1 and "interrupted" in lines[0], f"{serve.output}: {after!r}"


def test_cleanup_requests_are_tried_again_until_the_deadline():
    """The clean-up's requests: a 503 (the server's SQLite database locked) or a refused connection is tried
    again within the deadline, a 404 is not, and the deadline holds."""
    import httpx
    from lowdens_pipelines.serving import _until

    request = httpx.Request("PATCH", "http://127.0.0.1/api/deployments/x")

    def failing(statuses):
        def call():
            status = statuses.pop(0)
            if status == "refused":
                raise httpx.ConnectError("refused", request=request)
            if status != 200:
                response = httpx.Response(status, request=request)
                raise httpx.HTTPStatusError(str(status), request=request, response=response)
            return "done"

        return call

    assert _until(time.monotonic() + 5, failing([503, "refused", 503, 200])) == "done"
    with pytest.raises(httpx.HTTPStatusError):
        _until(time.monotonic() + 5, failing([404, 200]))
    started = time.monotonic()
    with pytest.raises(httpx.HTTPStatusError):
        _until(started + 1, failing([503] * 100))
    assert time.monotonic() - started < 1 + scaled(0.5)
