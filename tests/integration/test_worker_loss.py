"""Issue 9, defect 1: losing a worker at any moment of a fit costs only recomputation.

A worker is SIGKILLed (its nanny restarts it) when a chosen task finishes on it, so that task's result
and whatever else the worker held are lost. Every fit must complete with the labels of the undisturbed
run, and the scheduler must have computed some task twice (work was lost and redone). The moments cover
every phase of a summary-mode fit (the summarising pass, the tree's split tasks, the labelling pass and
its writes) and three phases of an exact-mode fit.
"""

import dask.array as da
import numpy as np
import pytest
import zarr
from distributed import Client, LocalCluster

from lowdens_dask import DePDDPClustering, MDHClustering
from lowdens_dask.growth import hyperplane_splitter as hyperplanes
from lowdens_dask.testing import kill_worker_at

pytestmark = [pytest.mark.distributed]

ROWS, CHUNK = 200_000, 10_000  # 20 row chunks

#: (key pattern, occurrence): the moment the worker is killed, in the order of the fit's phases
SUMMARY_MOMENTS = [
    ("lowdens-summarise-", 0),  # pass 1: first chunk summarised
    ("lowdens-summarise-", 10),  # pass 1: half way
    ("-combine-1-0", 0),  # pass 1: the summaries combined
    ("lowdens-node-data-", 0),  # tree: the first children's rows in the graph
    ("lowdens-split-node-", 0),  # tree: the first restart done
    ("lowdens-split-node-", 6),  # tree: second round of splits
    ("lowdens-split-node-", 11),  # tree: last round of splits
    ("lowdens-write-labels-", 0),  # labelling pass: first chunk routed and its labels written
    ("lowdens-write-labels-", 10),  # labelling pass: half the labels written
    ("lowdens-write-labels-", 19),  # labelling pass: the last chunk written
]
#: (task name prefix, occurrence, max_node_bytes): passes over the chunks (0), and a node gathered to a worker.
EXACT_MOMENTS = [
    ("lowdens-chunk_stats-", 2, 0),
    ("lowdens-project-", 40, 0),
    ("lowdens-route-", 3, 0),
    ("lowdens-node-rows-", 1, "auto"),
    ("lowdens-split-node-", 2, "auto"),
]


class Cluster:
    """A 2-worker LocalCluster whose killed workers are restarted by their nannies. Now and then a nanny's
    restarted worker never registers (seen about once in 20 kills, outside the library); then the cluster
    is replaced, so that every test starts with two workers."""

    def __init__(self):
        self.cluster = self.client = None
        self.replace()

    def replace(self):
        self.close()
        self.cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
        self.client = Client(self.cluster)

    def ready(self):
        for _ in range(3):
            try:
                self.client.wait_for_workers(2, timeout=30)
                return self.cluster.scheduler
            except (TimeoutError, OSError):  # a restarted worker that never registered, or a broken cluster
                self.replace()
        raise RuntimeError("no cluster with two workers after three tries")

    def close(self):
        """Close, with a time limit: a cluster whose worker was killed can fail to close cleanly (its
        processes then end with the test process)."""
        if self.client is None:
            return
        for closing in (self.client.close, lambda: self.cluster.close(timeout=30)):
            try:
                closing()
            except Exception:  # noqa: BLE001
                pass
        self.client = self.cluster = None


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster()
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=6.0, size=(8, 16))
    X = (centres[rng.integers(0, 8, size=ROWS)] + rng.normal(size=(ROWS, 16))).astype(np.float32)
    path = tmp_path_factory.mktemp("loss") / "X.zarr"
    zarr.create_array(str(path), data=X, chunks=(CHUNK, 16))
    return str(path)


def fit_summary(store, labels_path):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hyperplanes, "TASK_MIN_ROWS", 0)  # every split in tasks on the cluster, as for large summaries
        model = MDHClustering(n_clusters=8, random_state=0, labels_store=str(labels_path), mode="summary").fit(store)
    return np.asarray(model.labels_)


def fit_exact(X, max_node_bytes):
    return DePDDPClustering(n_clusters=3, mode="exact", max_node_bytes=max_node_bytes).fit(X).labels_.compute()


def run(cluster, fit, pattern, occurrence):
    with kill_worker_at(cluster.ready(), pattern, occurrence) as killer:
        labels = fit()
    return labels, killer


@pytest.fixture(scope="module")
def summary_baseline(cluster, store, tmp_path_factory):
    labels, killer = run(cluster, lambda: fit_summary(store, tmp_path_factory.mktemp("l") / "l.zarr"), "none", 0)
    assert killer.killed is None
    assert len(np.unique(labels)) == 8
    return labels, killer.redone


@pytest.mark.slow
@pytest.mark.parametrize("pattern, occurrence", SUMMARY_MOMENTS)
def test_summary_fit_survives_a_worker_kill(cluster, store, summary_baseline, tmp_path, pattern, occurrence):
    expected, redone_anyway = summary_baseline
    labels, killer = run(cluster, lambda: fit_summary(store, tmp_path / "labels.zarr"), pattern, occurrence)
    assert killer.killed is not None, f"no task matching {pattern!r} finished {occurrence + 1} times"
    assert killer.redone - redone_anyway, "the kill cost no recomputation: nothing was lost"
    np.testing.assert_array_equal(labels, expected)


@pytest.fixture(scope="module")
def exact_data():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(10_000, 4)) + [6 * i, 0, 0, 0] for i in range(3)])
    return da.from_array(X, chunks=(5000, 4))


@pytest.mark.slow
@pytest.mark.parametrize("pattern, occurrence, max_node_bytes", EXACT_MOMENTS)
def test_exact_fit_survives_a_worker_kill(cluster, exact_data, pattern, occurrence, max_node_bytes):
    expected, baseline = run(cluster, lambda: fit_exact(exact_data, max_node_bytes), "none", 0)
    labels, killer = run(cluster, lambda: fit_exact(exact_data, max_node_bytes), pattern, occurrence)
    assert killer.killed is not None, f"no task matching {pattern!r} finished {occurrence + 1} times"
    assert killer.redone - baseline.redone, "the kill cost no recomputation: nothing was lost"
    np.testing.assert_array_equal(labels, expected)
