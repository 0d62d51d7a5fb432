"""Issue 35, items 2 and 5, what ``lowdens serve`` registers, in this process and without a server (the serving
itself is replaced by a stand-in; tests/system/test_prefect_server.py registers on a real server): the schedule's time zone,
a bad one refused first; local paths registered absolute; no setting of the registering host (its core count), the
flow sizing its cluster on the host it runs on."""

import json
import os

import numpy as np
import pytest
from cli_helpers import blobs as _blobs
from cli_helpers import lowdens
from cli_helpers import one_error_line as _one_error_line


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "", "../etc/passwd", "utc+2"])
def test_a_bad_timezone_is_refused_in_one_line_before_anything_else(here, capsys, name):
    """Before: no --timezone (argparse's 'unrecognized arguments'); the input need not exist, nor a Prefect API."""
    status, out, err = lowdens(capsys, "serve", "missing.npy", "--timezone", name)
    assert status == 2 and out == []
    assert _one_error_line(err) == (
        f"lowdens: error: --timezone {name!r} is not a time zone; give an IANA name such as UTC, Europe/Paris or "
        "America/New_York."
    )


def _serve(capsys, monkeypatch, *options: str):
    """``lowdens serve night-1.npy --store runs --labels y.npy OPTIONS`` in the working directory, against a Prefect
    API that is never called (the serving is replaced by a stand-in): (status, the keyword arguments the serving
    got, stdout's lines, stderr's lines)."""
    import prefect  # noqa: F401 (Prefect's settings are made when it is first imported: not from the URL below,

    # which would then stay this test process's Prefect API for the tests after this one)
    from lowdens_pipelines import serving

    X = _blobs()
    np.save("night-1.npy", X)
    np.save("y.npy", np.repeat([0, 1], len(X) // 2))
    got = {}
    monkeypatch.setattr(serving, "serve", lambda flow, **kwargs: got.update(kwargs) or 0)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    status, out, err = lowdens(capsys, "serve", "night-1.npy", "--store", "runs", "--labels", "y.npy", *options)
    return status, got, out, err


@pytest.fixture
def registered(here, capsys, monkeypatch):
    """``lowdens serve night-1.npy --store runs --labels y.npy --timezone Europe/Paris`` in ``here``, with a stand-in
    for the serving: (the keyword arguments it got, stdout's lines)."""
    status, got, out, err = _serve(capsys, monkeypatch, "--timezone", "Europe/Paris")
    assert status == 0, err
    return got, out


def test_serve_passes_allow_same_input_to_an_incremental_deployment(here, capsys, monkeypatch):
    """Issue 35, item 3: the nightly file not replaced is refused by an incremental deployment's run unless it was
    served with --allow-same-input (before: serve had no such option)."""
    status, got, _, err = _serve(capsys, monkeypatch, "--incremental", "--allow-same-input")
    assert status == 0, err
    assert got["parameters"]["allow_same_input"] is True and got["parameters"]["refit_every"] == 7
    status, got, _, err = _serve(capsys, monkeypatch, "--incremental")
    assert status == 0 and "allow_same_input" not in got["parameters"], err  # the flow's default: refused
    status, _, _, err = _serve(capsys, monkeypatch, "--allow-same-input")
    assert status == 2 and _one_error_line(err) == (
        "lowdens: error: --allow-same-input goes with --incremental: it lets an update add rows its line holds."
    )


def test_serve_registers_absolute_paths_and_the_schedules_time_zone(registered, here):
    got, out = registered
    parameters = got["parameters"]
    assert parameters["input_path"] == str(here / "night-1.npy")
    assert parameters["store"] == str(here / "runs") and parameters["true_labels"] == str(here / "y.npy")
    assert got["cron"] == "0 2 * * *" and got["timezone"] == "Europe/Paris"
    assert out[0].endswith(" with cron '0 2 * * *' (Europe/Paris)"), out


def test_serve_registers_no_setting_of_its_own_host(registered):
    """Before: ``cluster={"cluster_kwargs": {"processes": False, "n_workers": 1, "threads_per_worker": <this host's
    cores>}}``, the in-process choice made from the input's size at registration."""
    got, _ = registered
    assert got["parameters"]["cluster"] == "auto"
    assert "threads_per_worker" not in json.dumps(got["parameters"])


def test_the_flow_sizes_an_auto_cluster_on_the_host_it_runs_on(monkeypatch):
    from lowdens_pipelines import flows

    monkeypatch.setattr(os, "cpu_count", lambda: 5)
    small, large = 10 * 2**20, 3 * 2**30
    assert flows.host_cluster("auto", small) == {
        "cluster_kwargs": {"processes": False, "n_workers": 1, "threads_per_worker": 5}
    }
    assert flows.host_cluster("auto", large) == {"cluster_kwargs": {"n_workers": 5, "threads_per_worker": 1}}
    assert flows.host_cluster({"address": "tcp://x:8786"}, small) == {"address": "tcp://x:8786"}
    assert flows._nbytes({"shape": [1_000, 4], "dtype": "<f4"}) == 16_000
    runner = flows.dask_task_runner("auto")  # of unknown size: one worker process per core
    assert runner.cluster_kwargs["n_workers"] == 5 and runner.cluster_kwargs["threads_per_worker"] == 1
    with pytest.raises(ValueError, match="Unknown cluster setting 'big'"):
        flows.dask_task_runner("big")


def test_serve_reports_each_run_once_when_it_starts_and_when_it_finishes():
    """Issue 53, item 9: ``lowdens serve`` says when its runs start and finish (the lines of its run watcher, here
    from made-up runs; tests/system/test_prefect_server.py reads them from a real server's runs)."""
    import datetime
    from types import SimpleNamespace

    from lowdens_pipelines.serving import _report

    def state(name, final=False, completed=False, running=False, message=None):
        return SimpleNamespace(
            name=name,
            message=message,
            is_final=lambda: final,
            is_completed=lambda: completed,
            is_running=lambda: running,
        )

    def run(id_, run_id, st, seconds=0):
        return SimpleNamespace(id=id_, name=f"flow-{id_}", parameters={"run_id": run_id} if run_id else {},
                               state=st, total_run_time=datetime.timedelta(seconds=seconds))  # fmt: skip

    lines, reported = [], {}

    def say(line, flush):
        lines.append(line.split(" ", 2)[2])  # less the time stamp

    old = run(0, "night-0", state("Completed", final=True, completed=True), 5)
    _report([old], reported, True, say)  # final before watching: not reported
    assert lines == []
    _report([run(1, "night-1", state("Running", running=True)), old], reported, False, say)
    _report([run(1, "night-1", state("Running", running=True)), old], reported, False, say)  # said once
    _report([run(2, None, state("Failed", final=True, message="input missing\nmore")),
             run(1, "night-1", state("Completed", final=True, completed=True), 12), old], reported, False, say)  # fmt: skip
    assert lines == [
        "run night-1 (flow-1) started",
        "run night-1 (flow-1) completed after 12 s",
        "run flow-2 started",
        "run flow-2 failed after 0 s: input missing",
    ]
