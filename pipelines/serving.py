"""``lowdens serve``: a flow served as a Prefect deployment until Ctrl-C or SIGTERM, which pause the deployment
and delete its scheduled runs before the command exits with status 130 (issue 21, point 1).

Prefect's own shutdown is not relied on (``Flow.serve`` with ``pause_on_shutdown``):

- it logs "Pausing all deployments..." before it pauses, through a rich ``Console`` on stderr. With
  ``lowdens serve ... 2>&1 | tee log`` (or ``|&``) tee dies with the same Ctrl-C, the write fails with
  ``BrokenPipeError``, and rich's ``Console.on_broken_pipe`` raises ``SystemExit(1)``, which logging's
  ``except Exception`` lets through: the pause is skipped, the scheduled runs stay (61 for a per-minute cron),
  and the command exits 1;
- ``Flow.serve`` swallows the ``KeyboardInterrupt``: the command exits 0, and says nothing;
- the pause comes only after the runner's task groups have wound down. With a flow run in progress, and a
  SIGINT handler other than Python's default one (as ``lowdens`` installs, so that ``asyncio.run`` no longer turns
  SIGINT into a cancellation of its main task), the ``KeyboardInterrupt`` surfaced inside the event loop and the
  deployment was left unpaused; the runner also joins each run's subprocess in a thread that cancellation cannot
  interrupt, and each HTTP call retries with backoff.

So the runner runs in a daemon thread, and the main thread only waits. The SIGINT/SIGTERM handler sets a flag
(nothing else: no output, no exception in the middle of Prefect's code). On the flag the main thread:

1. sends stdout and stderr to ``os.devnull`` (keeping a duplicate of stderr for one line), so that no write can
   fail or print a traceback from here on, whatever the pipes' readers did;
2. tells the runner to submit no new runs;
3. pauses the deployment and deletes its flow runs in the SCHEDULED state that never started, in a thread given
   at most :data:`CLEANUP_SECONDS`: a Prefect client with a short HTTP timeout, its own retries (seconds of
   backoff) off, each request tried again every 0.1-0.5 s until that deadline (the server answers 503 while its
   SQLite database is locked);
4. meanwhile gives the flow-run subprocesses still running (each got the SIGINT with the terminal's process
   group; a SIGTERM is passed on to them) :data:`CHILDREN_GRACE_SECONDS` to report their crash and exit; then
   SIGTERM, and SIGKILL after :data:`CHILDREN_SECONDS`;
5. writes one line, ``lowdens: interrupted ...``, to the original stderr if it is still writable, and returns
   :data:`INTERRUPTED` (130).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any

INTERRUPTED = 130
CLEANUP_SECONDS = 5.0  # the pause and the deletions, all requests together
REQUEST_SECONDS = 3.0  # one HTTP request of the clean-up
CHILDREN_GRACE_SECONDS = 3.0  # flow-run subprocesses: time to report their crash after the SIGINT, then SIGTERM
CHILDREN_SECONDS = 1.5  # and SIGKILL this long after the SIGTERM
REGISTRATION_SECONDS = 2.0  # after an interrupt, how long to wait for a registration in flight


class _Served:
    """What the serving thread shares with the main thread."""

    def __init__(self):
        self.runner = None
        self.deployment_id = None
        self.error: BaseException | None = None
        self.registered = threading.Event()


def _run_runner(
    served: _Served, flow, *, name: str, cron, parameters: dict, entrypoint_type, announce, timezone: str = "UTC"
) -> None:
    """The serving thread: register the deployment, then poll for its runs until stopped (``Flow.serve``'s steps,
    with the runner and the deployment id kept for the main thread). The cron schedule is in ``timezone`` (an IANA
    name)."""
    import asyncio

    from prefect.runner import Runner
    from prefect.schedules import Cron

    try:
        runner = Runner(name=name, pause_on_shutdown=True)
        served.runner = runner
        schedules = [Cron(cron, timezone=timezone)] if cron else None
        served.deployment_id = runner.add_flow(
            flow, name=name, schedules=schedules, parameters=parameters, entrypoint_type=entrypoint_type
        )
        served.registered.set()
        if announce:
            try:
                announce(served.deployment_id)
            except Exception:  # noqa: BLE001 (e.g. stdout's reader gone: serving goes on)
                pass
        asyncio.run(runner.start())
    except BaseException as exc:  # noqa: BLE001 (handed to the main thread)
        served.error = exc
    finally:
        served.registered.set()


#: ``lowdens serve`` looks for its deployment's runs starting and finishing this often (seconds).
WATCH_SECONDS = 2.0


def _run_line(flow_run, finished: bool) -> str:
    """One line for a run of the deployment that started or finished: its run id, Prefect's name for it, and
    (finished) its final state, how long it ran and, for a run that did not complete, the state's message."""
    run_id = (flow_run.parameters or {}).get("run_id")
    who = f"run {run_id} ({flow_run.name})" if run_id else f"run {flow_run.name}"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    if not finished:
        return f"{stamp} {who} started"
    seconds = getattr(flow_run, "total_run_time", None)
    took = f" after {seconds.total_seconds():.0f} s" if seconds is not None else ""
    state = flow_run.state
    message = "" if state.is_completed() or not state.message else f": {state.message.splitlines()[0]}"
    return f"{stamp} {who} {state.name.lower()}{took}{message}"


def _watch_runs(served: _Served, stop: threading.Event, say=print) -> None:
    """Print a line (:func:`_run_line`) when a run of the served deployment starts and when it finishes, by
    asking the server every :data:`WATCH_SECONDS` (the runs are subprocesses of the runner, whose own logs stay
    quiet). Runs already final when watching starts are not reported. Errors of the server are skipped: serving
    goes on without these lines."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
    from prefect.client.schemas.sorting import FlowRunSort

    reported: dict = {}  # flow run id -> "started" or "finished"
    first, delay = True, 0.0
    while not stop.wait(delay):
        delay = WATCH_SECONDS
        try:
            with get_client(sync_client=True) as client:
                runs = client.read_flow_runs(
                    deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[served.deployment_id])),
                    sort=FlowRunSort.EXPECTED_START_TIME_DESC,
                    limit=50,
                )
        except Exception:  # noqa: BLE001 (the server busy or gone: the next poll, or the main thread, sees it)
            continue
        try:
            _report(runs, reported, first, say)
        except (OSError, ValueError):  # stdout's reader gone (or closed): serving goes on, silently
            return
        first = False


def _report(runs, reported: dict, first: bool, say) -> None:
    """:func:`_watch_runs`' lines for the runs read (latest first), each run's start and finish said once."""
    for flow_run in reversed(runs):
        state = flow_run.state
        if state is None or reported.get(flow_run.id) == "finished":
            continue
        if state.is_final():
            if not first:
                if flow_run.id not in reported:
                    say(_run_line(flow_run, finished=False), flush=True)
                say(_run_line(flow_run, finished=True), flush=True)
            reported[flow_run.id] = "finished"
        elif state.is_running() and flow_run.id not in reported:
            say(_run_line(flow_run, finished=False), flush=True)
            reported[flow_run.id] = "started"


def _silence_output() -> int | None:
    """stdout and stderr to ``os.devnull`` at the file-descriptor level (Python's buffers, Prefect's loggers and
    the runner thread's prints included); returns a duplicate of the original stderr, or ``None``."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a broken pipe: what was buffered is lost either way
            pass
    try:
        saved = os.dup(2)
    except OSError:
        saved = None
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass
    return saved


def _say(fd: int | None, line: str) -> None:
    """One line on the original stderr, if it can still be written (a dead pipe's reader: nothing)."""
    if fd is None:
        return
    try:
        os.write(fd, (line + "\n").encode())
    except OSError:
        pass
    finally:
        try:
            os.close(fd)
        except OSError:
            pass


_no_retries_lock = threading.Lock()
_no_retries: list = []


def _settings_without_retries():
    """Prefect's settings context (profile and settings) with the client's retries off: built once (half a
    second of pydantic validation, more on a busy machine), ahead of any interrupt by :func:`serve`."""
    with _no_retries_lock:
        if not _no_retries:
            import prefect.client.orchestration
            import prefect.client.schemas.filters  # noqa: F401
            from prefect.context import get_settings_context
            from prefect.settings import PREFECT_CLIENT_MAX_RETRIES

            context = get_settings_context()
            _no_retries.append(
                (context.profile, context.settings.copy_with_update(updates={PREFECT_CLIENT_MAX_RETRIES: 0}))
            )
        return _no_retries[0]


_PASSING_STATUSES = {408, 429, 500, 502, 503, 504}


def _until(deadline: float, call, *args, **kwargs):
    """``call(*args, **kwargs)``, tried again after a failure that may pass (a 503 while the server's SQLite
    database is locked, a 429, a timeout, a refused connection) every 0.1 to 0.5 s until ``deadline`` (Prefect's
    own retries wait seconds between tries: they are off here)."""
    import httpx

    delay = 0.1
    while True:
        try:
            return call(*args, **kwargs)
        except (httpx.TransportError, httpx.HTTPStatusError) as exc:
            passing = isinstance(exc, httpx.TransportError) or exc.response.status_code in _PASSING_STATUSES
            if not passing or time.monotonic() + delay >= deadline:
                raise
        time.sleep(delay)
        delay = min(2 * delay, 0.5)


def withdraw(
    deployment_id, deployment_name: str, deadline: float | None = None, timeout: float = REQUEST_SECONDS
) -> int | None:
    """Pause a deployment (``deployment_id``, or found by ``"flow/deployment"`` name when ``None``) and delete
    its flow runs that are in the SCHEDULED state and have never run; returns how many were deleted, or ``None``
    when there is no such deployment. Each request times out after ``timeout`` seconds, and is tried again until
    ``deadline`` (``time.monotonic()``; :data:`CLEANUP_SECONDS` from now by default)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.context import SettingsContext
    from prefect.exceptions import ObjectNotFound

    if deadline is None:
        deadline = time.monotonic() + CLEANUP_SECONDS
    profile, settings = _settings_without_retries()
    with (
        SettingsContext(profile=profile, settings=settings),
        get_client(sync_client=True, httpx_settings={"timeout": timeout}) as client,
    ):
        if deployment_id is None:  # interrupted while it was being registered
            try:
                deployment_id = _until(deadline, client.read_deployment_by_name, deployment_name).id
            except ObjectNotFound:
                return None
        # the server deletes the future auto-scheduled runs as it pauses; the rest (late, or made by hand) below
        _until(deadline, client.pause_deployment, deployment_id)
        flow_run_filter = FlowRunFilter(
            deployment_id=FlowRunFilterDeploymentId(any_=[deployment_id]),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED])),
        )
        deleted, kept, batch = 0, 0, 200
        while True:
            runs = _until(deadline, client.read_flow_runs, flow_run_filter=flow_run_filter, limit=batch, offset=kept)
            for run in runs:
                if run.run_count:  # scheduled for a retry: it has run, it is not ours to delete
                    kept += 1
                    continue
                try:
                    _until(deadline, client.delete_flow_run, run.id)
                    deleted += 1
                except ObjectNotFound:  # the server deleted it meanwhile
                    pass
            if len(runs) < batch:
                return deleted


def _flow_run_processes() -> list:
    """The flow-run subprocesses this process started (``multiprocessing`` processes: the runner starts each
    run so), not multiprocessing's resource tracker."""
    import multiprocessing

    return multiprocessing.active_children()


def _stop_flow_runs(processes: list, signum: int, deadline: float, term_seconds: float = CHILDREN_SECONDS) -> None:
    """Stop the flow-run subprocesses ``processes``: a SIGINT reached them with the terminal's process group, so
    they get until ``deadline`` to report their crash and exit; a SIGTERM is passed on to them first. Then SIGTERM,
    and SIGKILL (their own children too) after ``term_seconds``."""
    if signum != signal.SIGINT:
        for process in processes:
            try:
                os.kill(process.pid, signum)
            except OSError:
                pass
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    alive = [process for process in processes if process.is_alive()]
    if not alive:
        return
    try:
        import psutil

        descendants = []
        for process in alive:
            try:
                descendants += psutil.Process(process.pid).children(recursive=True)
            except psutil.Error:
                pass
    except ImportError:
        psutil, descendants = None, []
    for process in alive:
        process.terminate()
    until = time.monotonic() + term_seconds
    for process in alive:
        process.join(max(0.0, until - time.monotonic()))
    for process in alive:
        if process.is_alive():
            process.kill()
    for child in descendants:
        try:
            child.kill()
        except psutil.Error:
            pass


def _withdraw_in_background(
    deployment_id, deployment_name: str, deadline: float
) -> tuple[threading.Thread, dict[str, Any]]:
    """:func:`withdraw` in a daemon thread (join it with a timeout); its outcome, once done: ``deleted`` or
    ``error``."""
    outcome: dict[str, Any] = {}

    def cleanup():
        try:
            outcome["deleted"] = withdraw(deployment_id, deployment_name, deadline)
        except Exception as exc:  # noqa: BLE001 (reported by the caller)
            outcome["error"] = exc

    worker = threading.Thread(target=cleanup, name="lowdens-serve-withdraw", daemon=True)
    worker.start()
    return worker, outcome


def _interrupted(served: _Served, deployment_name: str, signum: int) -> int:
    saved_stderr = _silence_output()
    processes = _flow_run_processes()  # before the runner is asked to stop (and reaps them)
    # no new runs from here on (the flags Prefect's own SIGTERM handling sets). Not ``runner.astop()``: it
    # cancels the runs in flight through the control channel, which keeps them from reporting their crash
    for target in (served.runner, getattr(served.runner, "_scheduled_run_poller", None)):
        if target is not None:
            try:
                target.stopping = True
            except Exception:  # noqa: BLE001 (best effort)
                pass
    deadline = time.monotonic() + CLEANUP_SECONDS
    served.registered.wait(REGISTRATION_SECONDS)
    worker, outcome = _withdraw_in_background(served.deployment_id, deployment_name, deadline)
    _stop_flow_runs(processes, signum, time.monotonic() + CHILDREN_GRACE_SECONDS)
    worker.join(max(0.0, deadline - time.monotonic()))
    # a run submitted between the signal and the pause got no SIGINT
    _stop_flow_runs([p for p in _flow_run_processes() if p not in processes], signal.SIGTERM, time.monotonic(), 1.0)
    what = "interrupted" if signum == signal.SIGINT else f"interrupted by {signal.Signals(signum).name}"
    if "deleted" in outcome and outcome["deleted"] is None:
        line = f"lowdens: {what}: no deployment {deployment_name} was registered"
    elif "deleted" in outcome:
        line = f"lowdens: {what}: deployment {deployment_name} paused, its scheduled runs deleted"
    elif "error" in outcome:
        error = outcome["error"]
        line = f"lowdens: {what}: could not pause deployment {deployment_name}: {type(error).__name__}: {error}"
    else:
        line = f"lowdens: {what}: could not pause deployment {deployment_name} within {CLEANUP_SECONDS:g} s"
    _say(saved_stderr, line)
    return INTERRUPTED


def serve(flow, *, name: str, cron, parameters: dict, entrypoint_type, announce=None, timezone: str = "UTC") -> int:
    """Serve ``flow`` as the deployment ``flow.name/name`` until SIGINT or SIGTERM; then withdraw it (see the
    module's docstring) and return 130. ``cron``: its schedule, in ``timezone`` (an IANA name; UTC by default).
    ``announce(deployment_id)`` is called once the deployment is registered. An error of the runner (registration
    refused, server unreachable) is raised here."""
    served = _Served()
    signals: list[int] = []

    def on_signal(signum, frame):  # the flag only: the main thread does the rest
        signals.append(signum)

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        options = dict(
            name=name,
            cron=cron,
            parameters=parameters,
            entrypoint_type=entrypoint_type,
            announce=announce,
            timezone=timezone,
        )
        thread = threading.Thread(
            target=_run_runner, args=(served, flow), kwargs=options, name="lowdens-serve-runner", daemon=True
        )
        thread.start()
        threading.Thread(target=_settings_without_retries, name="lowdens-serve-prepare", daemon=True).start()
        watching, watcher = threading.Event(), None  # watching set: stop watching the runs
        while thread.is_alive() and not signals:
            if served.deployment_id is not None and watcher is None:
                watcher = threading.Thread(target=_watch_runs, args=(served, watching), name="lowdens-serve-watch")
                watcher.daemon = True
                watcher.start()
            thread.join(0.2)
        watching.set()
        if not signals and served.error is not None:
            # a dead pipe's reader killed by the same Ctrl-C can stop the runner (rich's SystemExit on a broken
            # pipe) just before the SIGINT is handled here
            time.sleep(0.5)
        if signals:
            return _interrupted(served, f"{flow.name}/{name}", signals[0])
        if served.deployment_id is not None:
            # the runner stopped without a signal: nobody serves the deployment any more, so pause it as well
            deadline = time.monotonic() + CLEANUP_SECONDS
            worker, _ = _withdraw_in_background(served.deployment_id, f"{flow.name}/{name}", deadline)
            worker.join(CLEANUP_SECONDS)
        if isinstance(served.error, SystemExit):
            return served.error.code if isinstance(served.error.code, int) else 1
        if served.error is not None and not isinstance(served.error, KeyboardInterrupt):
            raise served.error
        return 0
    finally:
        for sig, handler in previous.items():
            try:
                signal.signal(sig, handler)
            except (TypeError, ValueError):
                pass
