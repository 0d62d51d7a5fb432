"""A progress bar for long fits in interactive use (a terminal or a notebook): the splits made out of those
asked for, the time and the passes over the rows. Non-interactive runs get the ``lowdens_dask`` log lines only."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar

#: Width of the bar in characters.
WIDTH = 30


def interactive(stream=None) -> bool:
    """A terminal, or a Jupyter kernel (whose stderr is not a terminal but is shown)."""
    stream = sys.stderr if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)()) or "ipykernel" in sys.modules


class ProgressBar:
    """``bar(n_leaves)`` redraws ``label [####......] 3/8 clusters, 12.4 s, 40 passes`` on one line."""

    def __init__(self, label: str, total: int | None, passes: Callable[[], int] | None = None, stream=None):
        self.label, self.total, self.passes = label, total, passes
        self.stream = sys.stderr if stream is None else stream
        self.start = time.perf_counter()
        self(1)

    def __call__(self, n_leaves: int) -> None:
        done = f"{n_leaves}/{self.total}" if self.total else str(n_leaves)
        bar = ""
        if self.total:
            filled = int(WIDTH * min(n_leaves / self.total, 1.0))
            bar = "[" + "#" * filled + "." * (WIDTH - filled) + "] "
        passes = f", {self.passes()} passes" if self.passes is not None else ""
        elapsed = time.perf_counter() - self.start
        self.stream.write(f"\r{self.label} {bar}{done} clusters, {elapsed:.1f} s{passes}")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


#: A host that draws the progress itself (the ``lowdens`` command): ``host(label, total)`` returns an object
#: with the bar's ``__call__(n_leaves)`` and ``close()``.
_host: ContextVar[Callable | None] = ContextVar("lowdens_progress_host", default=None)


@contextmanager
def progress_to(host: Callable):
    """Send the progress of the fits in the block to ``host`` instead of drawing a bar."""
    token = _host.set(host)
    try:
        yield
    finally:
        _host.reset(token)


def progress_bar(
    label: str, total: int | None, passes: Callable[[], int] | None = None, draw: bool = True
) -> ProgressBar | None:
    """The host's progress (:func:`progress_to`), else a :class:`ProgressBar` when ``draw`` in interactive use,
    else None."""
    host = _host.get()
    if host is not None:
        return host(label, total)
    return ProgressBar(label, total, passes) if draw and interactive() else None
