"""Issue 35, item 1: the recluster flow run's logs reach the Prefect server (the UI shows them), while the terminal
of ``lowdens serve`` stays quiet: a run served against a real ``prefect server start`` (as in
tests/system/test_prefect_server.py), its logs read back through the API (``POST /logs/filter``): the input read, the
mode and resolution, each split with its p-value, and the commit; and no ``distributed`` INFO line on the serving
process's stderr."""

import re

import pytest
from test_prefect_server import CRON, _deployment, _run, _serve, _stop, _tail, blobs  # noqa: F401

pytestmark = [pytest.mark.prefect, pytest.mark.distributed]


def _flow_run_logs(client, flow_run_id) -> list:
    """Every log line the server holds for the flow run and its task runs (and its subflow's), oldest first."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterParentFlowRunId,
        LogFilter,
        LogFilterFlowRunId,
    )
    from prefect.client.schemas.sorting import LogSort

    ids = [flow_run_id]
    ids += [
        run.id
        for run in client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id]))
        )
    ]
    logs, offset = [], 0
    while True:
        batch = client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids)), limit=200, offset=offset,
            sort=LogSort.TIMESTAMP_ASC,
        )
        logs += batch
        offset += len(batch)
        if len(batch) < 200:
            return logs


@pytest.mark.slow
def test_flow_run_logs_reach_the_server(prefect_server, blobs, tmp_path):  # noqa: F811 (blobs)
    import time

    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    path, _, _ = blobs
    store = str(tmp_path / "runs")
    argv = [path, "--n-clusters", "auto", "--store", store, "--workers", "1", "--cron", CRON, "--name", "logged"]
    serve, log = _serve(argv, prefect_server, tmp_path)

    def failed(message: str) -> str:
        return f"{message}\n--- lowdens serve (exit status {serve.poll()}) ---\n{_tail(log)}"

    try:
        with temporary_settings(updates={PREFECT_API_URL: prefect_server}), get_client(sync_client=True) as client:
            deployment = _deployment(client, "recluster/logged", serve, failed)
            flow_run = _run(client, deployment, serve, failed, run_id="logged-1")
            # the logs are sent in batches: wait until the commit's line has come
            deadline = time.monotonic() + 30
            while True:
                logs = _flow_run_logs(client, flow_run.id)
                text = "\n".join(f"{entry.name} {entry.level} {entry.message}" for entry in logs)
                if "committed" in text or time.monotonic() > deadline:
                    break
                time.sleep(1)
    finally:
        _stop(serve)

    messages = [entry.message for entry in logs]
    assert all(entry.level >= 20 for entry in logs), text
    info = "\n".join(entry.message for entry in logs if entry.level == 20)
    print(f"{len(logs)} log lines on the server:\n{text}")
    # what was read
    assert f"read {path}: 6,000 rows x 4 columns, float32" in info, text
    # the mode and the resolution
    assert re.search(r"fit: mode: (memory|exact|summary) \(", info), text  # and why, in brackets
    # each split with its p-value (n_clusters="auto": a dip test at each split; 3 clusters, 2 splits)
    splits = [m for m in messages if m.startswith("split: node ")]
    assert len(splits) == 2 and all(re.search(r"p [=<] \S+", m) for m in splits), text
    # the commit
    assert re.search(rf"committed run logged-1 in {re.escape(store)}", info), text
    # the serving process's terminal: no distributed INFO lines (nor Prefect's INFO lines)
    output = log.read_text(errors="replace")
    assert not re.search(r"INFO\s*\|\s*distributed", output), _tail(log)
    assert not re.search(r"\bINFO\b", output), _tail(log)
    print(f"lowdens serve wrote:\n{output}")
