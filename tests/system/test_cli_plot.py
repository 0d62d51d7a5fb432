"""``lowdens plot RUN`` (issue 21, points 6 and 7): it colours the rows by the true labels the run was fitted with,
and it plots every method's splits (here MSC's kernel expansions). The run store is replaced by a stand-in holding
a fitted tree and the attributes a run records, so that only the command's own logic runs."""

import argparse
import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from lowdens_pipelines import cli, runs

import lowdens_dask.plots
from lowdens_dask import MSCClustering


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    rng = np.random.default_rng(0)
    y = np.repeat([3, 5, 9], 40)
    X = rng.normal(size=(120, 3)) + 6 * np.eye(3)[np.searchsorted([3, 5, 9], y)]
    folder = tmp_path_factory.mktemp("run")
    np.save(folder / "X.npy", X)
    np.save(folder / "y.npy", y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tree = MSCClustering(n_clusters=3, random_state=0).fit(X).tree_
    return folder, y, tree


class _Run:
    def __init__(self, tree, attrs):
        self.tree, self.attrs = tree, attrs


def _plot(monkeypatch, tmp_path, tree, attrs, draw=False, **options):
    """Run ``lowdens plot`` on a run with these attributes: the labels save_plots was given, and the files
    written (with ``draw``; else nothing is drawn)."""
    store = type("Store", (), {"__init__": lambda self, url: None, "get": lambda self, run_id: _Run(tree, attrs)})
    monkeypatch.setattr(runs, "RunsStore", store)
    monkeypatch.setattr(cli, "RunsStore", store, raising=False)
    calls, save = [], lowdens_dask.plots.save_plots
    (tmp_path / "plots").mkdir(exist_ok=True)

    def record(tree, X, out, *, labels=None, **kwargs):
        calls.append(labels)
        return save(tree, X, out, labels=labels, **kwargs) if draw else lowdens_dask.plots.SavedPlots()

    monkeypatch.setattr(lowdens_dask.plots, "save_plots", record)
    args = {"store": "unused", "run": "r1", "input": None, "labels": None, "out": str(tmp_path / "plots")}
    assert cli._plot(argparse.Namespace(**{**args, "max_points": 2000, **options})) == 0
    (labels,) = calls
    return labels, sorted(path.name for path in (tmp_path / "plots").iterdir())


@pytest.mark.parametrize("where", ["input", "params"])
def test_plot_colours_by_the_runs_true_labels(fitted, monkeypatch, tmp_path, where, capsys):
    folder, y, tree = fitted
    attrs = {"input": {"path": str(folder / "X.npy")}}
    if where == "input":
        attrs["input"]["true_labels"] = str(folder / "y.npy")
    else:
        attrs["params"] = {"true_labels": str(folder / "y.npy")}
    labels, files = _plot(monkeypatch, tmp_path, tree, attrs, draw=True)
    np.testing.assert_array_equal(labels, y)
    nodes = [f"node-{node.id}.png" for node in tree if not node.is_leaf]
    assert files == sorted(["dendrogram.png", "tree.png", *nodes])  # kernel-expansion splits plot too
    assert capsys.readouterr().out.split() == [str(tmp_path / "plots" / name) for name in files]


def test_plot_without_recorded_labels_or_with_other_rows(fitted, monkeypatch, tmp_path):
    folder, y, tree = fitted
    labels, _ = _plot(monkeypatch, tmp_path, tree, {"input": {"path": str(folder / "X.npy")}})
    assert labels is None
    # other rows than the run's: the run's labels are not theirs
    np.save(folder / "other.npy", np.load(folder / "X.npy")[::-1])
    attrs = {"input": {"path": str(folder / "X.npy"), "true_labels": str(folder / "y.npy")}}
    labels, _ = _plot(monkeypatch, tmp_path, tree, attrs, input=str(folder / "other.npy"))
    assert labels is None
    # --labels wins over the run's
    np.save(folder / "mine.npy", y[::-1])
    labels, _ = _plot(monkeypatch, tmp_path, tree, attrs, labels=str(folder / "mine.npy"))
    np.testing.assert_array_equal(labels, y[::-1])


def test_plot_says_when_the_runs_labels_are_gone(fitted, monkeypatch, tmp_path, capsys):
    folder, _, tree = fitted
    attrs = {"input": {"path": str(folder / "X.npy"), "true_labels": str(folder / "moved.npy")}}
    labels, _ = _plot(monkeypatch, tmp_path, tree, attrs)
    assert labels is None
    assert "the run's true labels cannot be read" in capsys.readouterr().err


def test_plot_of_an_update_run_draws_the_shares_before_and_after(fitted, monkeypatch, tmp_path, capsys):
    """Issue 24, point 5: ``lowdens plot`` of an update run adds the clusters' shares before and after the update,
    from the report the run keeps (``metrics["update"]``)."""
    folder, _, tree = fitted
    leaves = [{"label": label, "node": leaf, "share_before": 1 / 3, "share_new": [0.5, 0.3, 0.2][label]}
              for leaf, label in tree.leaf_labels().items()]  # fmt: skip
    report = {"update": 1, "n_rows": 120, "decay": None, "n_clusters_before": 3, "n_clusters": 3, "nodes": [],
              "leaves": leaves, "drift": {"psi": 0.1, "chi2": 9.0, "dof": 2, "p_value": 0.011}}  # fmt: skip
    attrs = {"input": {"path": str(folder / "X.npy")}, "parent": "r0", "metrics": {"update": report}}
    _, files = _plot(monkeypatch, tmp_path, tree, attrs, draw=True)
    assert "shares.png" in files and "tree.png" in files
    assert str(tmp_path / "plots" / "shares.png") in capsys.readouterr().out.split()
