"""Passes on a distributed cluster (backend/workers.py): workers too small for their memory limit, or paused, fail
the fit instead of leaving it waiting; a pass releases its results from the cluster once gathered."""

import dask
import dask.array as da
import numpy as np
import pytest

from lowdens_dask import (
    MDHClustering,
    PDDPClustering,
)
from lowdens_dask.backend import WorkerMemoryError

pytestmark = [pytest.mark.distributed]


@pytest.mark.slow
def test_workers_too_small_fail_instead_of_waiting():
    """Issue 22, point 18: workers whose start-up footprint is above their pause threshold get a WorkerMemoryError
    naming the limit and the footprint, at once; and a pass whose workers all stay paused, with no task running,
    is cancelled after lowdens.worker-paused-timeout instead of waiting forever."""
    import psutil
    from distributed import Client, LocalCluster
    from distributed.core import Status

    X = da.from_array(np.random.default_rng(0).normal(size=(400, 3)), chunks=(100, 3))
    footprint = psutil.Process().memory_info().rss  # in-process workers measure this process
    small = {"n_workers": 2, "threads_per_worker": 1, "processes": False, "dashboard_address": ":0"}
    with LocalCluster(memory_limit=int(footprint / 2), **small) as cluster, Client(cluster):
        with pytest.raises(WorkerMemoryError, match=r"memory_limit=.* start-up footprint .* is already") as err:
            MDHClustering(n_clusters=2, random_state=0).fit(X)
        assert "pauses it at 80%" in str(err.value)
    with LocalCluster(memory_limit=0, **small) as cluster, Client(cluster) as client:
        client.run(lambda dask_worker: setattr(dask_worker, "status", Status.paused))
        timeout = dask.config.set({"lowdens.worker-paused-timeout": "2s"})
        with timeout, pytest.raises(WorkerMemoryError, match="paused for memory, with no task running"):
            PDDPClustering(n_clusters=2, mode="exact").fit(X)


def test_a_pass_that_waits_leaves_no_results_on_the_cluster():
    """A pass on a distributed client (``backend.workers.compute``) that outlasts one look at the workers releases
    its results once gathered, as ``dask.compute`` does: a later fit of the same keys must run its tasks again (the
    worker-loss tests kill a worker at one of them)."""
    import time

    import dask
    from distributed import Client, LocalCluster

    from lowdens_dask.backend.workers import POLL_SECONDS, compute

    slow = dask.delayed(lambda: time.sleep(POLL_SECONDS * 1.5) or 1)()
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    with cluster, Client(cluster) as client:
        assert compute(slow) == (1,)

        def tasks_held():
            return client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))

        deadline = time.monotonic() + 5.0
        while tasks_held() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tasks_held() == 0
