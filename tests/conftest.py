"""Test session set-up: Prefect, for the tests that run flows without a server (its temporary server), gets
its own home and database per test process, set before Prefect is imported (it reads its settings once), so
that tests and xdist workers never share a database and nothing is written to ~/.prefect; the temporary
servers are stopped at the end of the session; and ``s3_server``, an S3 server (moto) for the tests that use one."""

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


@pytest.fixture(scope="session")
def s3_server():
    """A bucket on a moto S3 server (in a thread, started once per session), configured as users configure S3:
    the standard AWS_* variables, nothing specific to lowdens. Yields the bucket's URL, ``s3://lowdens-tests``;
    each test keeps to a folder of its own in it."""
    pytest.importorskip("s3fs")
    server_module = pytest.importorskip("moto.server")
    import logging

    import s3fs

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request in failure reports
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "AWS_ENDPOINT_URL": f"http://{host}:{port}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            patch.setenv(name, value)
        s3fs.S3FileSystem.clear_instance_cache()
        s3fs.S3FileSystem().mkdir("lowdens-tests")
        yield "s3://lowdens-tests"
        for fs in list(s3fs.S3FileSystem._cache.values()):  # close their aiohttp sessions, not only forget them:
            if getattr(fs, "_s3", None) is not None:  # a session collected unclosed logs "Unclosed client session"
                s3fs.S3FileSystem.close_session(fs.loop, fs._s3)
        s3fs.S3FileSystem.clear_instance_cache()
    server.stop()


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A fresh working directory, with no Prefect API configured."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    return tmp_path
