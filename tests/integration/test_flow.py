"""The recluster flow (issue 10, part): Prefect without a server (its ephemeral mode), a real Dask cluster
(DaskTaskRunner), a real zarr store and runs store."""


import numpy as np
import pytest
import zarr
from cli_helpers import blobs as _blobs
from lowdens_pipelines import RunsStore, job

pytestmark = [pytest.mark.prefect]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=30_000)
    X = (rng.normal(size=(30_000, 5)) + 7 * np.eye(5)[y]).astype("f4")
    path = str(tmp_path_factory.mktemp("input") / "X.zarr")
    zarr.create_array(path, data=X, chunks=(5_000, 5))
    return path, X, y


LOCAL = {"cluster_kwargs": {"n_workers": 2, "threads_per_worker": 1, "dashboard_address": ":0"}}


def flow_on_local_cluster():
    from functools import partial

    from lowdens_pipelines.flows import recluster

    return partial(recluster, cluster=LOCAL)


def flow_on_session_cluster(dask_cluster):
    """The flow on the session's LocalCluster (tests/conftest.py), through its address, as a deployment on a
    standing cluster runs (test_lowdens_fit_runs_the_flow makes a cluster of its own)."""
    from functools import partial

    from lowdens_pipelines.flows import recluster

    return partial(recluster, cluster={"address": dask_cluster.scheduler_address})


@pytest.mark.distributed
@pytest.mark.slow
def test_recluster_persists_a_complete_run(data, tmp_path, dask_cluster):
    from lowdens_pipelines import RunsStore

    from lowdens_dask import MDHClustering

    path, X, y = data
    store = str(tmp_path / "runs")
    flow = flow_on_session_cluster(dask_cluster)
    assert flow(path, n_clusters=3, store=store, run_id="night-1", true_labels=y.tolist()) == "night-1"
    run = RunsStore(store).get("night-1")
    labels = run.labels.compute()
    assert labels.shape == (len(X),) and run.labels.chunks[0][0] == 5_000
    np.testing.assert_array_equal(run.tree.predict(X), labels)
    assert run.attrs["metrics"]["adjusted_rand"] > 0.99 and run.attrs["metrics"]["n_leaves"] == 3
    metrics = run.attrs["metrics"]
    # no previous run on this input: no continuity step
    assert set(metrics["seconds"]) == {"load_and_validate", "fit", "write_labels", "metrics"}
    # exact mode (mode=auto: the 30,000 rows fit in memory): the fit's passes over the chunks (and the one that
    # summarises the rows for later updates), one to write the labels
    assert metrics["fit_mode"] == "memory" and "read in" in metrics["fit_mode_reason"]  # a small store: read in one pass
    assert metrics["passes"]["write_labels"] == 1.0 and metrics["passes"]["fit"] > 1
    assert metrics["stability"] is None and run.attrs["stable_ids"] == [0, 1, 2]
    assert run.attrs["input"]["shape"] == [30_000, 5] and run.attrs["params"]["method"] == "mdh"
    assert run.attrs["versions"]["lowdens-dask"]
    # the same fit through the estimator directly gives the same tree
    model = MDHClustering(n_clusters=3, random_state=0).fit(path)
    np.testing.assert_array_equal(model.tree_.predict(X), labels)
    # re-running the run id replaces it: one run, complete
    flow(path, n_clusters=3, store=store, run_id="night-1")
    assert [r.run_id for r in RunsStore(store).runs()] == ["night-1"]


BAD_ARRAYS = {
    "1-D": lambda p: zarr.create_array(p, data=np.arange(10.0)),
    "empty": lambda p: zarr.create_array(p, shape=(0, 4), dtype="f8"),
    "complex": lambda p: zarr.create_array(p, data=np.ones((5, 2), dtype=complex)),
    "one row": lambda p: zarr.create_array(p, data=np.ones((1, 2))),
}


@pytest.mark.slow  # the first flow run of a process starts Prefect's temporary server (20-40 s)
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "kmeans"}, "Unknown method 'kmeans'"),
        ({"params": {"alpha": 3}}, "Unknown parameters \\['alpha'\\]"),
        ({"cluster": {"adress": "tcp://x:8786"}}, "Unknown cluster settings \\['adress'\\]"),
        ({"true_labels": [0, 1]}, "The true labels have shape \\(2,\\); the input has 30000 rows"),
        ({"input_path": "missing.zarr"}, "missing.zarr"),
        ({"input_path": "1-D"}, "must be 2-D"),
        ({"input_path": "empty"}, "the array is empty"),
        ({"input_path": "complex"}, "must hold real numbers"),
        ({"input_path": "one row"}, "has 1 row\\(s\\); at least 2 are needed"),
    ],
)
def test_bad_input_fails_before_any_cluster_and_leaves_no_run(data, tmp_path, monkeypatch, kwargs, message):
    from lowdens_pipelines import RunsStore, flows

    def cluster_work(*args, **kwargs):
        raise AssertionError("the cluster work started")

    monkeypatch.setattr(flows.recluster_on_dask, "with_options", cluster_work)
    path, _, _ = data
    store = str(tmp_path / "runs")
    arguments = {"input_path": path, "n_clusters": 3, "store": store, "run_id": "bad", **kwargs}
    if arguments["input_path"] in BAD_ARRAYS:
        BAD_ARRAYS[arguments["input_path"]](str(tmp_path / "X.zarr"))
        arguments["input_path"] = str(tmp_path / "X.zarr")
    elif arguments["input_path"] == "missing.zarr":
        arguments["input_path"] = str(tmp_path / "missing.zarr")
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        flow_on_local_cluster()(**arguments)
    assert RunsStore(store).runs() == []


@pytest.mark.distributed
@pytest.mark.slow
def test_lowdens_fit_runs_the_flow(data, tmp_path, capsys):
    from lowdens_pipelines import RunsStore
    from lowdens_pipelines.cli import main

    _, X, y = data
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    store = str(tmp_path / "runs")
    arguments = ["fit", str(tmp_path / "X.npy"), "--n-clusters", "3", "--labels", str(tmp_path / "y.npy")]
    assert main([*arguments, "--store", store, "--run-id", "cli-1", "--workers", "2"]) == 0
    assert capsys.readouterr().out.startswith("cli-1\t3 clusters\t")
    run = RunsStore(store).get("cli-1")
    np.testing.assert_array_equal(run.tree.predict(X), run.labels.compute())
    assert run.attrs["metrics"]["adjusted_rand"] > 0.99 and run.attrs["input"]["path"] == str(tmp_path / "X.npy")


def test_the_temporary_prefect_server_is_tied_to_the_flows_process(data):
    """Issue 22, point 4: the temporary server Prefect starts for flow runs without an API (the tests above ran
    on it) runs under lowdens' lifeline, so that it dies with this process even on kill -9
    (tests/system/test_kill_9.py kills one)."""
    import os
    import sys

    import psutil
    from lowdens_pipelines import flows  # noqa: F401 (ties the server before Prefect starts it)
    from prefect.client.orchestration import get_client
    from prefect.server.api.server import SubprocessASGIServer

    with get_client(sync_client=True) as client:  # starts the server, unless the tests above did
        assert client.api_healthcheck() is None
    server = SubprocessASGIServer._instances[None].server_process
    assert server.args[:5] == [sys.executable, "-m", "lowdens_pipelines.lifeline", str(os.getpid()), "uvicorn"]
    assert "prefect.server.api.server:create_app" in server.args
    process = psutil.Process(server.pid)
    assert process.ppid() == os.getpid() and process.cmdline()[2] == "lowdens_pipelines.lifeline"


def test_the_summary_artifact_shows_the_clusters_as_a_table(tmp_path, monkeypatch):
    """Issue 35, item 8: the summary's clusters were one bullet line ('- cluster sizes: 0: 100, 1: 100'); they are a
    markdown table (a header, the separator row a renderer needs, a row per cluster), and the table artifact is a
    list of rows with the same columns."""
    from lowdens_pipelines import RunsStore, flows, job

    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(150, 2)) + shift for shift in ((0, 0), (12, 0), (0, 12))]).astype("f4")
    np.save(tmp_path / "X.npy", X)
    store = str(tmp_path / "runs")
    job.run_job(str(tmp_path / "X.npy"), n_clusters=3, store=store, run_id="sizes")
    published = {}
    monkeypatch.setattr(flows, "create_markdown_artifact", lambda text, **kw: published.setdefault("markdown", text))
    monkeypatch.setattr(flows, "create_table_artifact", lambda table, **kw: published.setdefault("table", table))
    flows.publish_artifacts(RunsStore(store).get("sizes"), store)

    table = published["table"]
    assert isinstance(table, list) and [sorted(row) for row in table] == [["cluster", "rows", "share"]] * 3
    assert sorted(row["rows"] for row in table) == [150, 150, 150]
    assert all(type(row["cluster"]) is int and type(row["rows"]) is int for row in table)
    lines = published["markdown"].splitlines()
    at = lines.index("| cluster | rows | share |")
    assert lines[at - 1] == "" and lines[at + 1] == "|---:|---:|---:|"
    rows = [line for line in lines[at + 2 :] if line.startswith("|")]
    assert rows == [f"| {row['cluster']} | 150 | 33.3% |" for row in table]
    assert not any(line.startswith("- cluster sizes") for line in lines)


def test_a_deployment_run_refuses_a_relative_local_path(tmp_path, monkeypatch):
    """Issue 35, item 2: a flow run of a deployment (prefect.runtime's deployment id set) given a relative local
    path refuses it in one line before anything starts: the worker's working directory is nobody's choice. Run
    outside a deployment, the flow makes it absolute (tests/system/test_paths.py)."""
    from lowdens_pipelines import flows
    from lowdens_pipelines.paths import refuse_relative_in_deployment

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "00000000-0000-0000-0000-000000000001")
    for arguments, name, value in (
        ({"input_path": "night-1.csv", "store": str(tmp_path / "runs")}, "input_path", "night-1.csv"),
        ({"input_path": str(tmp_path / "night-1.csv")}, "store", "./lowdens-runs"),  # the default store
        ({"input_path": "s3://b/x.zarr", "store": "s3://b/runs", "true_labels": "y.npy"}, "true_labels", "y.npy"),
    ):
        with pytest.raises(ValueError) as refused:
            flows.recluster.fn(**arguments)
        message = str(refused.value)
        assert message == (
            f"{name} {value!r} is a relative path, relative to an unknown working directory on the worker that runs "
            "this deployment; give an absolute path or a URL (s3://..., gs://...)."
        )
    refuse_relative_in_deployment(input_path="s3://b/x.zarr", store=str(tmp_path), true_labels=None)  # no error


@pytest.mark.distributed
@pytest.mark.slow
def test_the_flow_retries_a_commit_that_failed_and_reuses_the_run_id(here, monkeypatch, dask_cluster):
    """Prefect's retries of the persist task (a transient failure before the commit marker): the attempt that
    never committed commits on the retry, under its run id; a second flow run at that id replaces the run (the
    flow's default, as before)."""
    from lowdens_pipelines.flows import recluster
    from lowdens_pipelines.runs import Attempt

    np.save("X.npy", _blobs())
    claim, failures = Attempt._claim, []

    def flaky(self):
        if not failures:
            failures.append(self.name)
            raise OSError("transient: the store did not answer")
        claim(self)

    monkeypatch.setattr(Attempt, "_claim", flaky)
    local = {"address": dask_cluster.scheduler_address}  # the session's LocalCluster (tests/conftest.py)
    assert recluster("X.npy", n_clusters=2, store="runs", run_id="night-1", cluster=local) == "night-1"
    assert failures and RunsStore("runs").get("night-1").url.endswith(failures[0])
    assert recluster("X.npy", n_clusters=2, store="runs", run_id="night-1", cluster=local) == "night-1"
    assert [run.run_id for run in RunsStore("runs").runs()] == ["night-1"]
    assert len(list((here / "runs" / "night-1").iterdir())) == 1
    with pytest.raises(job.RunIdTaken, match="already committed"):  # as lowdens fit without --replace
        recluster("X.npy", n_clusters=2, store="runs", run_id="night-1", cluster=local, replace=False)
