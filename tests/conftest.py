"""Test session set-up: Prefect, for the tests that run flows without a server (its temporary server), gets
its own home and database per test process, set before Prefect is imported (it reads its settings once), so
that tests and xdist workers never share a database and nothing is written to ~/.prefect."""

import os
import tempfile

os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="lowdens-tests-prefect-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
