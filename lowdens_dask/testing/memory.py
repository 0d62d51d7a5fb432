"""Peak memory of a process, for memory tests and benchmarks (run on Dask workers with ``client.run``)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import resource


def peak_rss_bytes() -> int:
    """Peak resident set size of this process since it started, in bytes.

    On Linux, ``VmHWM`` of ``/proc/self/status``: ``getrusage``'s ``ru_maxrss`` would also count the
    parent's memory at the ``fork`` that started a spawned worker process.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # elsewhere: kB on Linux, bytes on macOS
