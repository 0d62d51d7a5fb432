"""Deadlines that scale with the machine (issue 43, item 4): CI and users run the suite on shared machines, where
other jobs load the cores. A test that bounds a wait in seconds bounds it by :func:`scaled`, and waits for events
rather than for fixed seconds."""

import os


def slowness() -> float:
    """How many times slower than idle this machine runs now: the run queue per core over the last one and five
    minutes (``os.getloadavg``), at least 1. The suite's own two workers count as one core's worth each."""
    cores = os.cpu_count() or 1
    return max(1.0, max(os.getloadavg()[:2]) / cores)


def scaled(seconds: float) -> float:
    """``seconds``, the bound on an idle machine, times :func:`slowness` now."""
    return seconds * slowness()
