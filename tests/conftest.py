"""Test session set-up: Prefect, for the tests that run flows without a server (its temporary server), gets
its own home and database per test process, set before Prefect is imported (it reads its settings once), so
that tests and xdist workers never share a database and nothing is written to ~/.prefect; the temporary
servers are stopped at the end of the session; ``s3_server``, an S3 server (moto) for the tests that use one;
``dask_cluster`` and ``dask_client``, one two-worker LocalCluster per test process (per xdist worker) for the tests
that need a distributed cluster and do nothing to its workers; and a guard that closes the distributed clients a
test module left registered (a client whose cluster has gone makes every later ``compute()`` in that process
wait forever)."""

import os
import sys
import tempfile

import pytest

os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="lowdens-tests-prefect-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """With ``-n`` and no ``--dist``, xdist's ``worksteal``: an idle worker takes queued tests from the busy one,
    so that a run does not end on one worker still holding a queue of long tests (xdist's ``load`` otherwise).
    Not in addopts, where ``--dist`` would break ``-p no:xdist``."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", None) == "no":
        config.option.dist = "worksteal"


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


@pytest.fixture(scope="session")
def dask_cluster():
    """One LocalCluster for the session (two worker processes of one thread each), shared by the tests that run
    on a distributed cluster without killing, pausing or resizing its workers (those make their own). Tests
    connect to it with ``dask_client`` or through ``dask_cluster.scheduler_address``."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        yield cluster


@pytest.fixture
def dask_client(dask_cluster):
    """A client of the session's cluster for one test, the default client while the test runs; the cluster has
    both its workers when the test starts and holds no keys of an earlier test."""
    from distributed import Client

    with Client(dask_cluster) as client:
        client.wait_for_workers(2, timeout=60)
        yield client


@pytest.fixture(scope="module", autouse=True)
def close_clients_left_registered():
    """Close the distributed clients a test module created and left registered when it ends (with a warning
    that names the module), so that no later test in this process computes on a client whose cluster is gone."""
    before = _registered_clients()
    yield
    left = [client for key, client in _registered_clients().items() if key not in before]
    if left:
        import warnings

        warnings.warn(f"closing {len(left)} distributed client(s) left registered by the module", stacklevel=1)
        for client in left:
            try:
                client.close(timeout=10)
            except Exception:  # a client of a cluster that has gone: forgetting it is what matters
                pass


def _registered_clients() -> dict:
    module = sys.modules.get("distributed.client")
    if module is None:  # distributed never imported: no client anywhere
        return {}
    return dict(module._global_clients)
