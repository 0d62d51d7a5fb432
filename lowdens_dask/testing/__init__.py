"""Test utilities: fault injection for Dask clusters, peak memory and generated cases with a known answer (used by
the tests and benchmarks)."""

# SPDX-License-Identifier: BSD-3-Clause

from .cases import separated_groups
from .faults import KillWorkerAt, kill_worker_at
from .memory import peak_rss_bytes

__all__ = ["KillWorkerAt", "kill_worker_at", "peak_rss_bytes", "separated_groups"]
