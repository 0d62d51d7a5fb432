"""lowdens-dask pipelines (installed as ``lowdens_pipelines``): the runs store, and the Prefect flows built
on the library's public API."""

# SPDX-License-Identifier: BSD-3-Clause

from .runs import Attempt, Run, RunsStore, new_run_id

__all__ = ["Attempt", "Run", "RunsStore", "new_run_id"]
