"""What the host a run starts on decides: whether its input is fitted in its process, and the ``LocalCluster``
sized to its cores. ``lowdens fit`` applies this where it runs; a deployment that ``lowdens serve`` registers
applies it on the host each run runs on (the flow's ``cluster="auto"``, issue 35).

Nothing but the standard library is imported here (the CLI's start-up cost).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os

#: Input up to this size is fitted in this process (Dask's threaded scheduler); larger input on a Dask cluster.
IN_PROCESS_MAX_BYTES = 2 * 2**30


def local_cluster_kwargs(nbytes: int | None) -> dict:
    """The ``LocalCluster`` for input of ``nbytes`` bytes (None: of unknown size) on this host: up to
    :data:`IN_PROCESS_MAX_BYTES`, one worker in this process with a thread per core; above, one single-threaded
    worker process per core."""
    cores = os.cpu_count() or 1
    if nbytes is not None and nbytes <= IN_PROCESS_MAX_BYTES:
        return {"processes": False, "n_workers": 1, "threads_per_worker": cores}
    return {"n_workers": cores, "threads_per_worker": 1}
