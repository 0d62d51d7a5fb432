"""A temporary server dies with the command that started it, even after ``kill -9`` (issue 22, point 4).

When a flow runs without a Prefect API (no ``PREFECT_API_URL``), Prefect starts a temporary server for it:
``python -m uvicorn ... prefect.server.api.server:create_app`` in a subprocess (``SubprocessASGIServer``), and
stops it at exit (``atexit``). A ``kill -9`` of the process that ran the flow skips ``atexit``, and the server
lived on, an orphan holding its port and its database.

:func:`guard_prefect_temporary_server` (called when :mod:`.flows` is imported) makes Prefect start that server as

    python -m lowdens_pipelines.lifeline PARENT_PID uvicorn ARGS...

which runs ``uvicorn ARGS...`` in the same process after starting a daemon thread that checks every
:data:`POLL_SECONDS` whether its parent is still ``PARENT_PID``. When the parent has gone, by any signal, the
process is reparented and the thread sends the server a SIGTERM (uvicorn shuts down in order), and ends the process
:data:`GRACE_SECONDS` later if it is still there. A child whose parent is already gone when it starts exits at
once. Polling the parent, rather than Linux's ``PR_SET_DEATHSIG``, holds on every POSIX system, needs no
``preexec_fn`` (unsafe in a process with threads, as a flow's is), and does not fire when the *thread* that started
the server ends (``PR_SET_DEATHSIG`` follows the thread: Prefect starts its server from whichever thread first
needs an API client).

A server the user starts on purpose (``prefect server start``, which ``lowdens serve`` and the deployments use) is
not started through this path and is left alone. Dask's worker processes already die with their parent
(``distributed`` gives each a pipe to its parent and exits when it closes).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import signal
import subprocess
import sys
import threading
import time

#: How often the child checks that its parent is alive, and how long SIGTERM has before the process ends.
POLL_SECONDS = 0.25
GRACE_SECONDS = 5.0
#: The module that starts Prefect's temporary server.
PREFECT_SERVER_MODULE = "prefect.server.api.server"


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_SECONDS)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE_SECONDS)
    os._exit(1)


def main(argv: list[str]) -> None:
    """``PARENT_PID MODULE ARGS...``: run ``python -m MODULE ARGS...`` here, for as long as ``PARENT_PID`` lives."""
    parent, module, *args = argv
    if os.getppid() != int(parent):  # the parent died before this process could watch it
        os._exit(1)
    threading.Thread(target=_watch, args=(int(parent),), name="lowdens-lifeline", daemon=True).start()
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def lifeline_args(args: list[str]) -> list[str]:
    """``[python, "-m", MODULE, ...]`` as it runs under :func:`main`, tied to this process; other commands as
    they are."""
    args = [os.fspath(arg) for arg in args]
    if len(args) >= 3 and args[0] == sys.executable and args[1] == "-m":
        return [sys.executable, "-m", __name__, str(os.getpid()), *args[2:]]
    return args


class _TiedPopen(subprocess.Popen):
    """``subprocess.Popen`` that runs a Python module (``python -m MODULE ...``) under a lifeline."""

    def __init__(self, args, *rest, **kwargs):
        super().__init__(lifeline_args(list(args)), *rest, **kwargs)


class _TiedSubprocess:
    """The ``subprocess`` module as Prefect's server module sees it: its ``Popen`` is :class:`_TiedPopen`;
    everything else is the module's own."""

    Popen = _TiedPopen

    def __getattr__(self, name: str):
        return getattr(subprocess, name)


def _tie(module) -> None:
    module.subprocess = _TiedSubprocess()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then(module)`` once the module ``name`` has been imported (by whoever imports it, whenever)."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return None
        loader, then = spec.loader, self.then

        class Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                then(module)

        spec.loader = Loader()
        return spec


def guard_prefect_temporary_server() -> None:
    """Tie the temporary server Prefect starts in this process (a flow run without an API) to this process: it
    exits when this process dies, whatever kills it. Safe to call more than once; imports nothing of Prefect's
    server (a heavy import) until Prefect does."""
    if isinstance(sys.modules.get(PREFECT_SERVER_MODULE), type(sys)):
        _tie(sys.modules[PREFECT_SERVER_MODULE])
    elif not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(PREFECT_SERVER_MODULE, _tie))


if __name__ == "__main__":
    main(sys.argv[1:])
