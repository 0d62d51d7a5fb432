"""Test utilities: fault injection for Dask clusters (used by the test suite and the reliability benchmark)."""

# SPDX-License-Identifier: BSD-3-Clause

from .faults import KillWorkerAt, kill_worker_at

__all__ = ["KillWorkerAt", "kill_worker_at"]
