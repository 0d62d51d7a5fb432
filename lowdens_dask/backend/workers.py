"""Fits that cannot run in the memory the Dask workers have fail with an error, instead of waiting.

A distributed worker pauses (runs no new task) while its process memory is above the pause fraction of its
``memory_limit`` (``distributed.worker.memory.pause``, 80% by default), and resumes once it falls below. A worker
whose footprint at start-up (Python, numpy, scipy, numba, Dask: about 225-260 MiB) is already above that line
never resumes, and a fit sent to such workers waits forever (measured: 2 workers at ``memory_limit="300MB"``
paused at 257 MiB against 229 MiB, and MDHClustering waited 587 s until stopped). So:

- :func:`check_worker_memory`, before a fit's first pass, asks every worker for its memory limit, its pause
  fraction, its threads and its resident memory now, and raises :class:`WorkerMemoryError` when no worker can run
  the fit's tasks: its footprint is at or above its pause threshold, or the footprint plus ``CHUNK_COPIES`` chunks
  per thread reaches its limit (the peak of a pass, README "Memory"). A worker that cannot while others can is
  reported by a warning;
- :func:`compute` (the passes of :func:`~lowdens_dask.backend.passes.map_reduce`) waits for its results in steps,
  and cancels them and raises :class:`WorkerMemoryError` when every worker has been paused, with no task running,
  for ``lowdens.worker-paused-timeout`` (Dask config; 120 s by default).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import functools
import os
import sys
import time

import dask
import numpy as np
from dask.utils import format_bytes, parse_timedelta

from .._warnings import warn

#: A worker's peak during a pass is about its idle footprint plus this many chunks per thread (the chunk as
#: read and working copies; README "Memory").
CHUNK_COPIES = 3
#: Seconds between two looks at the workers while a pass waits.
POLL_SECONDS = 1.0
#: Dask config key: how long every worker may stay paused, with no task running, before a pass gives up.
PAUSED_TIMEOUT_KEY = "lowdens.worker-paused-timeout"
PAUSED_TIMEOUT_DEFAULT = "120s"


class WorkerMemoryError(MemoryError):
    """The Dask workers cannot run a fit in the memory they are given (they are, or would stay, paused)."""


def active_client():
    """The distributed client that ``dask.compute`` sends work to from this process, or None (no client, a local
    scheduler chosen in the Dask config, or code running inside a task on a worker)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return None
    try:
        distributed.get_worker()
        return None  # inside a task: its computations are the worker's business
    except ValueError:
        pass
    try:
        client = distributed.get_client()
    except ValueError:
        return None
    return client if getattr(dask.base.get_scheduler(), "__self__", None) is client else None


def _worker_memory(dask_worker) -> tuple[float | None, float | bool, int, int]:
    """``(memory_limit, pause fraction, resident bytes, threads)`` of a worker (run there by ``client.run``), once
    it has loaded what the fit's first tasks load (numpy, scipy, numba and the compiled summary and routing
    kernels), as they would."""
    from ..kernels import routing  # noqa: F401  (the label pass's kernels)
    from ..kernels.summaries import microclusters

    microclusters(np.zeros((2, 1)), 1, 0, representatives=True)
    manager = dask_worker.memory_manager
    return (
        manager.memory_limit,
        manager.memory_pause_fraction,
        dask_worker.monitor.get_process_memory(),
        dask_worker.state.nthreads,
    )


def _ask_workers(client) -> dict | None:
    """:func:`_worker_memory` of the workers that answer, or None when none does (each was lost meanwhile)."""
    try:
        answers = client.run(_worker_memory, on_error="return")
    except OSError:
        return None
    workers = {address: answer for address, answer in answers.items() if not isinstance(answer, BaseException)}
    return workers or None


def check_worker_memory(chunk_bytes: float) -> None:
    """Raise :class:`WorkerMemoryError` when no worker of the active client can run a pass over chunks of
    ``chunk_bytes`` (see the module docstring); warn about the workers that cannot when others can."""
    client = active_client()
    if client is None:
        return
    known = client.scheduler_info()["workers"]
    if not known:  # no worker yet (an adaptive cluster): nothing to measure
        return
    limits = sorted({format_bytes(w["memory_limit"] or 0) for w in known.values()})
    workers = _ask_workers(client)
    if workers is None:
        workers = _ask_workers(client)  # a worker lost at that moment (killed, restarting) is not an answer
    if workers is None:
        raise WorkerMemoryError(
            "The Dask workers were lost twice while loading what the fit's tasks need (numpy, scipy, numba and the "
            f"compiled kernels): a nanny restarts a worker above 95% of its memory_limit (here {', '.join(limits)}). "
            "Give the workers a larger memory_limit."
        )
    problems = {}
    for address, (limit, pause, rss, threads) in workers.items():
        if not limit:
            continue
        peak = rss + CHUNK_COPIES * chunk_bytes * threads
        if pause and rss >= pause * limit:
            problems[address] = (
                f"memory_limit={format_bytes(limit)} pauses it at {pause:.0%} ({format_bytes(pause * limit)}), and its "
                f"start-up footprint (measured before the fit's first task) is already {format_bytes(rss)}: it would "
                "run no task"
            )
        elif peak >= limit:
            problems[address] = (
                f"memory_limit={format_bytes(limit)}, and its start-up footprint (measured before the fit's first "
                f"task) is {format_bytes(rss)}: with {CHUNK_COPIES} chunks of {format_bytes(chunk_bytes)} per thread "
                f"({threads}) a pass needs about {format_bytes(peak)}"
            )
    if not problems:
        return
    lines = "; ".join(f"worker {address}: {text}" for address, text in sorted(problems.items()))
    need = max(
        (rss + CHUNK_COPIES * chunk_bytes * threads) / (pause if pause else 1.0)
        for limit, pause, rss, threads in workers.values()
    )
    remedy = (
        f"Give the workers memory_limit of at least about {format_bytes(need)}, fewer threads per worker, or "
        "smaller chunks."
    )
    if len(problems) < len(workers):
        warn(f"{len(problems)} of {len(workers)} Dask workers cannot run this fit's tasks: {lines}. {remedy}")
        return
    raise WorkerMemoryError(f"The Dask workers cannot run this fit in the memory they are given: {lines}. {remedy}")


def compute(*args):
    """``dask.compute(*args)``; with a distributed client, a wait that gives up (cancels, and raises
    :class:`WorkerMemoryError`) when every worker has stayed paused with no task running for the
    ``lowdens.worker-paused-timeout``."""
    client = active_client()
    if client is None:
        return dask.compute(*args)
    limit = parse_timedelta(dask.config.get(PAUSED_TIMEOUT_KEY, PAUSED_TIMEOUT_DEFAULT))
    futures = client.compute(list(args))
    try:
        return _wait_while_workers_run(client, futures, limit)
    finally:  # as dask.compute: the results leave the cluster once gathered (a later pass must not find them there)
        for future in futures:
            future.release()


def _wait_while_workers_run(client, futures, limit: float) -> tuple:
    from distributed import wait

    paused_since = None
    while True:
        try:
            wait(futures, timeout=POLL_SECONDS)
            break
        except TimeoutError:
            pass
        workers = client.scheduler_info()["workers"]
        stalled = bool(workers) and all(_paused_and_idle(info) for info in workers.values())
        now = time.monotonic()
        paused_since = (paused_since or now) if stalled else None
        if paused_since is not None and now - paused_since >= limit:
            client.cancel(futures)
            memory = "; ".join(
                f"worker {address}: {format_bytes(info['metrics']['memory'])} of memory_limit="
                f"{format_bytes(info['memory_limit'])}"
                for address, info in sorted(workers.items())
            )
            raise WorkerMemoryError(
                f"Every Dask worker has been paused for memory, with no task running, for {now - paused_since:.0f} s "
                f"({PAUSED_TIMEOUT_KEY}={limit:g} s); the fit was cancelled: {memory}. Give the workers a larger "
                "memory_limit, fewer threads per worker, or use smaller chunks."
            )
    return tuple(client.gather(futures))


def _paused_and_idle(info: dict) -> bool:
    executing = info.get("metrics", {}).get("task_counts", {}).get("executing", 0)
    return info.get("status") == "paused" and not executing


def chunk_bytes(arr) -> float:
    """Bytes of the largest row chunk of a 2-D Dask array, in its dtype."""
    return float(max(arr.chunks[0], default=0)) * arr.shape[1] * np.dtype(arr.dtype).itemsize


#: glibc's mallopt parameters M_TRIM_THRESHOLD and M_MMAP_THRESHOLD.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Freed heap kept for reuse: at most this, and at most 1/16 of the worker's memory limit.
_KEEP_FREED_BYTES = 256 * 2**20


@functools.cache
def large_allocations_from_the_heap() -> bool:
    """Let glibc serve large arrays from the heap and keep some freed heap for reuse (once per process).

    Dask's workers start with ``MALLOC_TRIM_THRESHOLD_=65536``, which also freezes glibc's mmap threshold at
    128 KiB: every array above that is mapped and unmapped, and its pages faulted in again, on each allocation.
    An in-memory pursuit allocates a few arrays of n floats per objective evaluation; on a worker that doubled
    the time of a split (measured: 5.1 s against 2.3 s at n = 200,000). The freed heap kept is at most 256 MB
    and 1/16 of the worker's memory limit (a quarter of that for the mmap threshold): memory kept for reuse
    still counts against the limit, and a worker over Dask's pause threshold runs no task. Returns whether the
    settings were made (glibc only)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        settings = zip((_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD), malloc_thresholds(_worker_memory_limit()))
        return all(libc.mallopt(param, value) == 1 for param, value in settings)
    except (OSError, AttributeError):  # not glibc
        return False


def malloc_thresholds(memory_limit: float | None) -> tuple[int, int]:
    """``(trim threshold, mmap threshold)`` in bytes for a worker with this memory limit (None: no limit): the
    freed heap kept is 256 MB and at most 1/16 of the limit, the mmap threshold a quarter of that (128 KiB at
    least)."""
    keep = _KEEP_FREED_BYTES if not memory_limit else int(min(_KEEP_FREED_BYTES, memory_limit / 16))
    return keep, max(keep // 4, 128 * 2**10)


def _client():
    """This process's distributed client, or None. Without ``distributed`` imported there is none, and importing
    it only to find that out costs about a second."""
    distributed = sys.modules.get("distributed")
    try:
        return None if distributed is None else distributed.get_client()
    except ValueError:
        return None


def _worker_memory_limit() -> float | None:
    """The memory limit of the Dask worker this runs on, or None (no worker, or no limit)."""
    distributed = sys.modules.get("distributed")
    try:
        return None if distributed is None else distributed.get_worker().memory_manager.memory_limit or None
    except (ValueError, AttributeError):
        return None


def default_max_node_bytes() -> float:
    """A quarter of the smallest worker's memory limit (of the machine's memory without a distributed client):
    the in-memory fit of a node holds its rows, a centred copy and a few vectors per row."""
    client = _client()
    if client is not None:
        limits = [w["memory_limit"] for w in client.scheduler_info()["workers"].values()]
        limits = [limit for limit in limits if limit]
        if limits:
            return min(limits) / 4
    try:
        import psutil

        return psutil.virtual_memory().total / 4
    except ImportError:  # pragma: no cover - psutil comes with distributed
        return 2.0**30


def task_slots() -> int:
    """Tasks that run at once where ``dask.compute`` sends them: the worker threads of the distributed client,
    or this machine's cores for Dask's local schedulers."""
    client = _client()
    if client is None:
        return os.cpu_count() or 1
    return max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))
