"""Progress of the ``lowdens`` command's steps (rich): a line for each step that lasts more than ``DELAY``
seconds, with the Dask tasks done out of those submitted when the step runs them in this process, and the
clusters grown so far while a tree grows."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

#: Seconds a step runs before its line appears.
DELAY = 2.0


class Progress:
    """``with Progress() as progress: with progress.step("fit"): ...``: drawn on stderr when ``enabled`` (by default
    when stderr is a terminal)."""

    def __init__(self, enabled: bool | None = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._rich = None

    def __enter__(self) -> Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._rich = Progress(
                SpinnerColumn(finished_text="[green]✓"),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=sys.stderr, force_terminal=True),
                redirect_stdout=False,  # stdout is the result's; warnings on stderr print above the lines
            )
        return self

    def __exit__(self, *exc) -> None:
        if self._rich is not None and self._rich.live.is_started:
            self._rich.stop()

    @contextmanager
    def step(self, name: str):
        """A step: its line appears after ``DELAY`` seconds and shows its Dask tasks and the tree's growth."""
        if self._rich is None:
            yield
            return
        from dask.callbacks import Callback

        from lowdens_dask import progress_to

        rich, task = self._rich, self._rich.add_task(name, total=None, visible=False)
        state = {"total": 0, "visible": False}

        def show():  # the display starts with the first line it shows
            state["visible"] = True
            rich.update(task, visible=True)
            if not rich.live.is_started:
                rich.start()

        shown = threading.Timer(DELAY, show)
        shown.daemon = True

        class Tasks(Callback):
            def _start_state(self, dsk, dask_state):
                state["total"] += len(dask_state["ready"]) + len(dask_state["waiting"])
                rich.update(task, total=state["total"])

            def _posttask(self, key, result, dsk, state, worker_id):
                rich.advance(task)

        class Growth:
            def __init__(self, label, total):
                self.total = total

            def __call__(self, n_leaves):
                of = f"/{self.total}" if self.total else ""
                rich.update(task, description=f"{name}: growing the tree, {n_leaves}{of} clusters")

            def close(self):
                rich.update(task, description=name)

        shown.start()
        try:
            with Tasks(), progress_to(Growth):
                yield
        except BaseException:
            rich.update(task, description=f"{name}: stopped")
            raise
        else:
            done = state["total"] or 1
            rich.update(task, completed=done, total=done)
        finally:
            shown.cancel()
            if state["visible"]:
                rich.stop_task(task)
            else:
                rich.remove_task(task)
