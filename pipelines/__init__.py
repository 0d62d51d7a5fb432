"""lowdens-dask pipelines (installed as ``lowdens_pipelines``): the runs store, and the Prefect flows built
on the library's public API.

The public names are imported on first use (PEP 562), so that ``lowdens --help`` and a refused argument
import nothing heavy."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import importlib
import os

#: Seconds Prefect's temporary server (its ephemeral mode: a flow run with no Prefect API configured) may take
#: to start, unless PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS says otherwise: on a loaded 2-core machine it
#: needed 19.5 s of Prefect's default 20 s, and the flow failed. Set before the flows import Prefect.
EPHEMERAL_STARTUP_SECONDS = 120
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", str(EPHEMERAL_STARTUP_SECONDS))

__all__ = ["Attempt", "Run", "RunsStore", "new_run_id"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module 'lowdens_pipelines' has no attribute {name!r}")
    value = getattr(importlib.import_module(".runs", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
