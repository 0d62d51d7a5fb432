"""The system tests' shared Prefect server: one real ``prefect server start`` per test process (per xdist worker),
for the tests that serve deployments on a server (tests/system/test_prefect_server.py, test_prefect_logs.py,
test_serve_interrupt.py). Each test serves deployments of names of its own and reads back only its own runs."""

import time

import pytest
from test_prefect_server import SERVER_START_TIMEOUT, _healthy, _start_server, _stop, _tail


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A real ``prefect server start`` on a free port (its SQLite database, home and log in a temporary folder):
    yields its API URL; stopped (and checked stopped) at the end of the session."""
    folder = tmp_path_factory.mktemp("prefect-server")
    server, api_url, log = _start_server(folder)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            if server.poll() is not None:
                pytest.fail(f"prefect server start exited ({server.returncode}) before it was healthy:\n{_tail(log)}")
            if _healthy(api_url):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"prefect server start not healthy after {SERVER_START_TIMEOUT} s:\n{_tail(log)}")
            time.sleep(0.5)
        yield api_url
    finally:
        _stop(server)
    assert server.returncode is not None, "the Prefect server is still running"
