"""Test session set-up: Prefect, for the tests that run flows without a server (its temporary server), gets
its own home and database per test process, set before Prefect is imported (it reads its settings once), so
that tests and xdist workers never share a database and nothing is written to ~/.prefect; and the temporary
servers are stopped at the end of the session."""

import os
import sys
import tempfile

import pytest

os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="lowdens-tests-prefect-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


@pytest.fixture(scope="session", autouse=True)
def stop_prefect_temporary_servers():
    """Stop the temporary Prefect servers the flows started (Prefect stops them at exit, which pytest-xdist's
    workers skip, leaving the server processes behind)."""
    yield
    if "prefect.server.api.server" in sys.modules:
        from prefect.server.api.server import SubprocessASGIServer

        for server in list(SubprocessASGIServer._instances.values()):
            server.stop()
