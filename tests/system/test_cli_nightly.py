"""Issue 35, items 3 and 8, through the ``lowdens`` command run in this process: an update line refuses rows it
already holds (unless ``--allow-same-input``); labels files by content; p-values at the table's floor; what ``fit``
prints; ``lowdens params``' defaults; the node plot's legend."""

import shutil

import numpy as np
import pytest
from cli_helpers import blobs as _blobs
from cli_helpers import lowdens
from cli_helpers import one_error_line as _one_error_line
from lowdens_pipelines import RunsStore, job


# ------------------------------------------------------------------------------------------------ item 3
@pytest.fixture
def line(here, capsys):
    """night-1 fitted on X1.npy, night-2 an update of it with X2.npy."""
    X = _blobs()
    np.save("X1.npy", X[::2])
    np.save("X2.npy", X[1::2])
    assert lowdens(capsys, "fit", "X1.npy", "--n-clusters", "2", "--run-id", "night-1")[0] == 0
    assert lowdens(capsys, "fit", "X2.npy", "--update-from", "night-1", "--run-id", "night-2")[0] == 0
    return here


def test_the_same_nightly_file_twice_is_refused_naming_the_run_that_holds_it(line, capsys):
    """Before: the second update of X2.npy passed silently (PSI 0, no warning)."""
    status, out, err = lowdens(capsys, "fit", "X2.npy", "--update-from", "night-2", "--run-id", "night-3")
    assert status == 2 and out == [], err
    assert _one_error_line(err) == (
        "lowdens: error: X2.npy: run 'night-2' already holds these rows, in the line of run 'night-2'; an update "
        "adds new rows (--allow-same-input adds them again)."
    )
    assert not RunsStore("lowdens-runs").committed("night-3")
    # an earlier run of the line: night-1's rows, fed to an update of night-2
    status, _, err = lowdens(capsys, "fit", "X1.npy", "--update-from", "night-2", "--run-id", "night-3")
    assert status == 2 and "run 'night-1' already holds these rows" in _one_error_line(err), err


def test_the_same_rows_under_another_name_are_refused(line, capsys):
    shutil.copy("X2.npy", "X2-again.npy")
    status, _, err = lowdens(capsys, "fit", "X2-again.npy", "--update-from", "night-2", "--run-id", "night-3")
    assert status == 2 and _one_error_line(err) == (
        "lowdens: error: X2-again.npy: run 'night-2' (X2.npy) already holds these rows, in the line of run "
        "'night-2'; an update adds new rows (--allow-same-input adds them again)."
    ), err


def test_allow_same_input_adds_them_again_and_new_rows_pass(line, capsys):
    status, out, err = lowdens(
        capsys, "fit", "X2.npy", "--update-from", "night-2", "--run-id", "night-3", "--allow-same-input"
    )
    assert status == 0 and out[0].startswith("night-3\t"), err
    assert RunsStore("lowdens-runs").get("night-3").parent == "night-2"
    np.save("X3.npy", _blobs(seed=1))
    status, out, err = lowdens(capsys, "fit", "X3.npy", "--update-from", "night-3", "--run-id", "night-4")
    assert status == 0 and out[0].startswith("night-4\t"), err
    # a sibling is no ancestor: X3 again as an update of night-3 is refused only by the line it joins
    status, _, err = lowdens(capsys, "fit", "X3.npy", "--update-from", "night-4", "--run-id", "night-5")
    assert status == 2 and "run 'night-4' already holds these rows" in _one_error_line(err), err
    status, _, err = lowdens(capsys, "fit", "X3.npy", "--allow-same-input", "--run-id", "night-5")
    assert status == 2 and "--allow-same-input goes with --update-from" in _one_error_line(err), err


def test_the_job_refuses_it_too_as_the_flow_does(line):
    """The check is in :func:`job.start_point`, which the Prefect flow runs too (``plan_run(allow_same_input=)``)."""
    with pytest.raises(job.SameInputError, match="same rows as the input of run 'night-2'") as refused:
        job.run_job("X2.npy", update_from="night-2", run_id="night-3")
    assert refused.value.run_id == "night-2"
    assert not RunsStore("lowdens-runs").committed("night-3")
    assert job.run_job("X2.npy", update_from="night-2", run_id="night-3", allow_same_input=True) == "night-3"


# ------------------------------------------------------------------------------------------------ item 8
def test_a_p_value_at_the_tables_floor_is_printed_as_below_it():
    """Before: 'split (dip test p = 0.00025)', the floor of the dip table printed as if it were the p-value; and
    the pursued null's floor (which depends on the rows and the effective dimension) as 'p_value 0.0003161' by
    ClusterTree.describe and 'dip test p 0.000316' in the plots' titles."""
    from lowdens_pipelines.metrics import describe_update, tree_metrics

    from lowdens_dask import MDHClustering
    from lowdens_dask.plots import _stats_text

    X = np.vstack([np.random.default_rng(0).normal(0, 1, (300, 2)), np.random.default_rng(1).normal(30, 1, (300, 2))])
    tree = MDHClustering(n_clusters="auto", random_state=0).fit(X).tree_
    root = tree.root.stats
    assert root["p_value"] == pytest.approx(root["p_floor"]) and root["p_floor"] > 0  # far apart: at the floor
    below = f"p < {root['p_floor']:.3g}"
    assert f"{below}," in tree.describe().splitlines()[0] and "p_value" not in tree.describe()
    assert f"dip test {below}" in _stats_text(tree.root, 0) and "p_floor" not in _stats_text(tree.root, 0)
    (split,) = tree_metrics(tree)["splits"]
    assert split["p_floor"] == root["p_floor"]

    report = {"update": 1, "n_rows": 10, "n_clusters_before": 1, "n_clusters": 2}
    nodes = [
        {"node": 0, "action": "split", "p_value": 0.00025, "p_floor": 0.00025},
        {"node": 1, "action": "kept", "p_value": 0.0123, "p_floor": 0.00025},
        {"node": 2, "action": "kept", "p_value": 0.00025},  # recorded before the floor was: as it was printed
    ]
    lines = describe_update({**report, "nodes": nodes})
    assert lines[1:] == [
        "node 0: split (dip test p < 0.00025)",
        "node 1: kept (dip test p = 0.0123)",
        "node 2: kept (dip test p = 0.00025)",
    ]


def test_labels_one_integer_per_line_are_read_whatever_the_extension(here, capsys):
    """Before: '--labels truth.labels' was refused (taken for a zarr array)."""
    X = _blobs()
    np.save("X.npy", X)
    truth = np.repeat([0, 1], 100)
    with open("truth.labels", "w") as file:
        file.write("\n".join(map(str, truth)) + "\n")
    status, out, err = lowdens(capsys, "fit", "X.npy", "--labels", "truth.labels", "--run-id", "r")
    assert status == 0 and out[1].startswith("scores: adjusted rand 1.000"), err
    with open("bad.labels", "w") as file:
        file.write("0\n1 1\n")
    status, _, err = lowdens(capsys, "fit", "X.npy", "--labels", "bad.labels", "--run-id", "s")
    assert status == 2 and "bad.labels: expected labels, one integer per line" in _one_error_line(err), err


def test_fit_prints_the_run_not_its_attempt_folder(here, capsys):
    """Before: 'r\t2 clusters\truns/r/attempt-…'."""
    np.save("X.npy", _blobs())
    status, out, err = lowdens(capsys, "fit", "X.npy", "--run-id", "r", "--store", "runs")
    assert status == 0 and out[0] == "r\t2 clusters\truns/r", (out, err)
    assert "attempt-" not in "\n".join(out + err)


def test_params_shows_the_commands_defaults(capsys):
    """Before: 'lowdens params mdh' showed n_clusters=8 and random_state=null, the library's defaults."""
    status, out, _ = lowdens(capsys, "params", "mdh")
    assert status == 0 and "  n_clusters=auto" in out and "  random_state=0" in out, out
    assert "  n_clusters=8" not in out and "  random_state=null" not in out
    # the renamed parameters by their new names only (the old ones work for one release, unlisted)
    assert "  max_iter=50" in out and "  leaf_order=size" in out and not any("deprecated" in line for line in out)


@pytest.mark.parametrize("with_labels", [False, True], ids=["rows", "true labels"])
def test_the_node_plots_legend_leaves_the_histogram_clear(with_labels):
    """Before: the profile's legend (loc='best', blind to the histogram on the twin axes) covered its bars."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from lowdens_dask import MDHClustering
    from lowdens_dask.plots import plot_node

    X = _blobs(400, d=2)
    tree = MDHClustering(n_clusters=2).fit(X).tree_
    fig = plot_node(tree, 0, X, labels=np.repeat([0, 1], 400) if with_labels else None)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    (ax,) = [ax for ax in fig.axes if ax.get_gid() == "profile"]
    legend = ax.get_legend().get_window_extent(renderer)
    bars = [patch for a in fig.axes for patch in a.patches if a.get_gid() in ("histogram", "profile")]
    assert bars
    assert not any(legend.overlaps(bar.get_window_extent(renderer)) for bar in bars)
    assert not legend.overlaps(ax.get_window_extent(renderer))  # beside the axes
