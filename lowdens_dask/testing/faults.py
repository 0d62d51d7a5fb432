"""Fault injection: kill a worker at a chosen moment of a computation, and see what was redone."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from distributed.diagnostics.plugin import SchedulerPlugin


class KillWorkerAt(SchedulerPlugin):
    """A scheduler plugin that SIGKILLs a worker at a chosen moment, and counts task completions.

    The moment is the ``occurrence``-th (from 0) task whose key contains ``pattern`` to finish: the worker
    that reported its result is killed at once, so that result and everything else on that worker is lost.
    ``completed`` counts how often each key reached memory; keys counted more than once were computed
    again (:attr:`redone`). ``scheduler`` is an in-process scheduler (``LocalCluster(...).scheduler``);
    see :func:`kill_worker_at`. With ``spare``, a worker that is running a task whose key contains ``spare``
    is never killed (the moment moves to the next such task that finishes elsewhere): for example the
    worker that runs the Prefect task driving the computation.
    """

    def __init__(self, scheduler, pattern: str, occurrence: int = 0, spare: str | None = None):
        self.name = f"lowdens-kill-worker-{pattern}-{occurrence}"
        self.scheduler = scheduler
        self.pattern = pattern
        self.occurrence = occurrence
        self.spare = spare
        self.completed: Counter = Counter()
        self.killed: tuple[str, str] | None = None  #: (key, worker address) once the kill happened
        self._seen = 0

    def transition(self, key, start, finish, *args, **kwargs) -> None:
        if finish != "memory":
            return
        name = str(key)
        self.completed[name] += 1
        if self.killed is not None or self.pattern not in name:
            return
        if self._seen == self.occurrence:
            address = kwargs.get("worker")  # the worker that reported the result
            worker = self.scheduler.workers.get(address) if address else None
            if worker is not None and self.spare is not None:
                if any(self.spare in str(ts.key) for ts in worker.processing):
                    return  # not this one: the next matching task to finish elsewhere is the moment
            if worker is not None:
                os.kill(worker.pid, signal.SIGKILL)
                self.killed = (name, address)
        self._seen += 1

    @property
    def redone(self) -> set[str]:
        """Keys that reached memory more than once."""
        return {key for key, count in self.completed.items() if count > 1}


@contextmanager
def kill_worker_at(
    scheduler, pattern: str, occurrence: int = 0, spare: str | None = None
) -> Iterator[KillWorkerAt]:
    """Install :class:`KillWorkerAt` on ``scheduler`` for the duration of the block."""
    plugin = KillWorkerAt(scheduler, pattern, occurrence, spare)
    scheduler.add_plugin(plugin)
    try:
        yield plugin
    finally:
        scheduler.remove_plugin(name=plugin.name)
