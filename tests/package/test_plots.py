"""Plots of fitted cluster trees (lowdens_dask.plots): what each panel shows is checked against the tree's routing,
the node's recorded statistics and the definitions of the indices."""

import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import dask.array as da
import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import StepPatch
from tolerances import assert_within, rows_atol, sum_rtol

import lowdens_dask
from lowdens_dask import (
    IPDDPClustering,
    PDDPClustering,
    ClusterTree,
    DePDDPClustering,
    MCClustering,
    MDHClustering,
    MSCClustering,
    NCutClustering,
    SVMRelabelClustering,
    plot_dendrogram,
    plot_node,
    plot_shares,
    plot_tree,
    save_plots,
)
from lowdens_dask.datasets import load_dataset
from lowdens_dask.indices import INDICES, ProjectionIndex
from lowdens_dask.indices.base import Profile
from lowdens_dask.indices.ncut import NormalisedCutIndex, ncut_split
from lowdens_dask.indices.variance_ratio import VarianceRatioIndex, variance_ratio_split
from lowdens_dask.tree import HyperplaneRule, SplitRule

ESTIMATORS = {
    "mdh": MDHClustering,
    "ncut": NCutClustering,
    "mc": MCClustering,
    "depddp": DePDDPClustering,
    "pddp": PDDPClustering,
    "ipddp": IPDDPClustering,
}


@pytest.fixture(scope="module")
def dermatology():
    return load_dataset("dermatology")


@pytest.fixture(scope="module")
def trees(dermatology):
    X, _ = dermatology
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return {name: cls(n_clusters=3).fit(X).tree_ for name, cls in ESTIMATORS.items()}


@pytest.fixture(scope="module")
def optidigits_mdh():
    X, y = load_dataset("optidigits")
    idx = np.sort(np.random.default_rng(1).choice(X.shape[0], 600, replace=False))
    X, y = X[idx], y[idx]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # constant columns of the subsample
        return X, y, MDHClustering(n_clusters=4).fit(X).tree_


def internal(tree):
    return [node for node in tree if not node.is_leaf]


def rows_at(tree, X, node):
    """Rows of X reaching ``node``, from ClusterTree.apply: those whose leaf lies under it."""
    below, stack = set(), [node.id]
    while stack:
        n = tree.nodes[stack.pop()]
        below.add(n.id)
        if not n.is_leaf:
            stack.extend(n.children)
    return np.isin(tree.apply(X), list(below))


def panel(fig, node_id):
    (ax,) = [ax for ax in fig.axes if ax.get_gid() == f"node-{node_id}"]
    return ax


def points(ax, prefix=""):
    """The scatter offsets of an axes, by collection gid."""
    return {
        c.get_gid(): np.asarray(c.get_offsets())
        for c in ax.collections
        if isinstance(c, PathCollection) and (c.get_gid() or "").startswith(prefix)
    }


def n_points(ax) -> int:
    return sum(len(xy) for xy in points(ax).values())


def counted(patches) -> float:
    """The rows a histogram counts: each stacked group is a step outline (StepPatch) whose values less its
    baseline are the group's counts per bin."""
    total = 0.0
    for patch in patches:
        assert isinstance(patch, StepPatch), patch
        values, _, baseline = patch.get_data()
        total += float(np.sum(values - baseline))
    return total


def gid_line(ax, gid):
    (line,) = [line for line in ax.lines if line.get_gid() == gid]
    return line


def span_x(patch) -> tuple[float, float]:
    """The data x range of an ``axvspan`` (a Rectangle since matplotlib 3.9, a Polygon before)."""
    xy = patch.get_xy()
    if isinstance(xy, tuple):
        return patch.get_x(), patch.get_x() + patch.get_width()
    return float(np.min(xy[:, 0])), float(np.max(xy[:, 0]))


def profile_axes(fig):
    (ax,) = [ax for ax in fig.axes if ax.get_gid() == "profile"]
    return ax


# ------------------------------------------------------------------------------------------ plot_tree
@pytest.mark.parametrize("method", ["mdh", "ncut", "mc", "depddp"])
def test_plot_tree_one_panel_per_split_with_its_rows(trees, dermatology, method):
    X, _ = dermatology
    tree = trees[method]
    fig = plot_tree(tree, X, max_points=len(X))
    assert isinstance(fig, Figure)
    nodes = internal(tree)
    assert len(fig.axes) == len(nodes) == tree.n_leaves - 1
    for node in nodes:
        ax = panel(fig, node.id)
        rows = rows_at(tree, X, node)
        assert n_points(ax) == rows.sum() == node.size
        sides = points(ax, "side-")
        v, b = node.v, node.b
        assert np.all(sides["side-0"][:, 0] < b) and np.all(sides["side-1"][:, 0] >= b)
        x = np.concatenate([sides["side-0"][:, 0], sides["side-1"][:, 0]])
        # products of rows with v, each a sum of n_features terms (any kernel's order): within their rounding
        assert_within(np.sort(x), np.sort(X[rows] @ v), atol=rows_atol(np.abs(X[rows]) * np.abs(v)).max())
        assert len(sides["side-0"]) == rows_at(tree, X, tree.nodes[node.children[0]]).sum()
        np.testing.assert_array_equal(gid_line(ax, "hyperplane").get_xdata(), [b, b])
        assert f"node {node.id}" in ax.get_title() and method in ax.get_title() and "fval" in ax.get_title()


def test_plot_tree_y_axis_is_the_leading_direction_orthogonal_to_v(trees, dermatology):
    X, _ = dermatology
    tree = trees["mdh"]
    fig = plot_tree(tree, X, max_points=len(X))
    for node in internal(tree):
        Z = X[rows_at(tree, X, node)]
        R = Z - Z.mean(axis=0)
        R -= np.outer(R @ node.v, node.v)
        _, eigvecs = np.linalg.eigh(R.T @ R)
        u = eigvecs[:, -1]
        xy = np.vstack(list(points(panel(fig, node.id)).values()))
        order = np.lexsort((xy[:, 1], xy[:, 0]))
        ref = np.column_stack([Z @ node.v, Z @ u])
        ref_order = np.lexsort((ref[:, 1], ref[:, 0]))
        y, y_ref = xy[order, 1], ref[ref_order, 1]
        assert_within(xy[order, 0], ref[ref_order, 0], atol=rows_atol(np.abs(Z) * np.abs(node.v)).max())
        # u is an eigenvector of R'R, determined to twice that product's rounding over its eigengap (Davis-Kahan)
        vals = np.linalg.eigvalsh(R.T @ R)
        error = np.linalg.norm(rows_atol(np.abs(R)[:, :, None] * np.abs(R)[:, None, :], axis=0), 2)
        atol = 2 * error / (vals[-1] - vals[-2]) * np.linalg.norm(Z, axis=1).max()
        sign = np.sign(np.dot(y - y.mean(), y_ref - y_ref.mean()))
        assert_within(y - y.mean(), sign * (y_ref - y_ref.mean()), atol=2 * atol)
        assert abs(u @ node.v) < 1e-8


def test_plot_tree_sample_is_routed_consistently(trees, dermatology):
    X, _ = dermatology
    tree = trees["mdh"]
    fig = plot_tree(tree, X, max_points=150, random_state=3)
    root = panel(fig, 0)
    assert n_points(root) == 150
    for node in internal(tree):
        sides = points(panel(fig, node.id), "side-")
        for side, child in enumerate(node.children):
            if not tree.nodes[child].is_leaf:  # a child's panel holds exactly its parent's rows on that side
                assert n_points(panel(fig, child)) == len(sides[f"side-{side}"])
    again = plot_tree(tree, X, max_points=150, random_state=3)
    other = plot_tree(tree, X, max_points=150, random_state=4)
    np.testing.assert_array_equal(points(panel(again, 0))["side-0"], points(root)["side-0"])
    assert not np.array_equal(np.sort(points(panel(other, 0))["side-0"][:, 0]), np.sort(points(root)["side-0"][:, 0]))


def test_plot_tree_colours_by_true_label(trees, dermatology):
    X, y = dermatology
    tree = trees["ncut"]
    fig = plot_tree(tree, X, labels=y, max_points=len(X))
    classes = np.unique(y)
    for node in internal(tree):
        rows = rows_at(tree, X, node)
        groups = points(panel(fig, node.id), "label-")
        assert sum(len(xy) for xy in groups.values()) == rows.sum()
        for c, k in enumerate(classes):
            assert len(groups.get(f"label-{c}", ())) == np.sum(y[rows] == k)
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()][: len(classes)] == [str(k) for k in classes]


def test_nonfinite_rows_are_skipped(trees, dermatology):
    X, y = dermatology
    Xbad = X.copy()
    Xbad[[5, 17], [0, 3]] = [np.nan, np.inf]
    fig = plot_tree(trees["mdh"], Xbad, labels=y, max_points=len(X))
    assert n_points(panel(fig, 0)) == len(X) - 2
    fig = plot_node(trees["mdh"], 0, Xbad, labels=y)
    (hist,) = [ax for ax in fig.axes if ax.get_gid() == "labels"]
    assert counted(hist.patches) == pytest.approx(len(X) - 2)


# ------------------------------------------------------------------------------------------ plot_node
def _check_mdh_node(tree, X, node):
    fig = plot_node(tree, node.id, X)
    ax = profile_axes(fig)
    p = X[rows_at(tree, X, node)] @ node.v
    h, alpha = node.params["bandwidth"], node.params["alpha"]
    curve = gid_line(ax, "profile")
    grid, dens = np.asarray(curve.get_xdata()), np.asarray(curve.get_ydata())
    # the curve is the Gaussian KDE with the recorded bandwidth (checked against a direct sum at a few points)
    for j in (0, len(grid) // 3, len(grid) // 2, len(grid) - 1):
        ref = np.exp(-0.5 * ((grid[j] - p) / h) ** 2).sum() / (p.size * h * np.sqrt(2 * np.pi))
        np.testing.assert_allclose(dens[j], ref, rtol=1e-9, atol=1e-300)
    # the shaded interval is mean -/+ alpha sd of the node's projections (sd with divisor n - 1)
    (span,) = [patch for patch in ax.patches if patch.get_gid() == "alpha-interval"]
    lo, hi = p.mean() - alpha * p.std(ddof=1), p.mean() + alpha * p.std(ddof=1)
    np.testing.assert_allclose(span_x(span), [lo, hi], rtol=1e-10, atol=1e-10)
    # b is the density's minimum over the interval, within a grid step, and the recorded density at b
    step = grid[1] - grid[0]
    inside = (grid > lo) & (grid < hi)
    assert abs(grid[inside][np.argmin(dens[inside])] - node.b) <= step
    j = int(np.argmin(np.abs(grid - node.b)))
    assert dens[j] <= min(dens[j - 2], dens[j + 2])
    np.testing.assert_allclose(gid_line(ax, "at-b").get_ydata(), [node.fval], rtol=1e-6)
    np.testing.assert_array_equal(gid_line(ax, "hyperplane").get_xdata(), [node.b, node.b])


def test_plot_node_mdh_density_interval_and_b(trees, dermatology, optidigits_mdh):
    X, _ = dermatology
    for node in internal(trees["mdh"]):
        _check_mdh_node(trees["mdh"], X, node)
    Xo, _, tree = optidigits_mdh
    assert tree.n_leaves == 4
    for node in internal(tree):
        _check_mdh_node(tree, Xo, node)


def test_plot_node_depddp_b_at_the_density_minimum(trees, dermatology):
    X, _ = dermatology
    tree = trees["depddp"]
    for node in internal(tree):
        ax = profile_axes(plot_node(tree, node, X))
        curve = gid_line(ax, "profile")
        grid, dens = np.asarray(curve.get_xdata()), np.asarray(curve.get_ydata())
        j = int(np.argmin(np.abs(grid - node.b)))
        assert dens[j] <= min(dens[j - 2], dens[j + 2])  # a local minimum of the plotted density
        np.testing.assert_allclose(gid_line(ax, "at-b").get_ydata(), [node.fval], rtol=1e-6)


def brute_force_ncut(p, scale, m):
    """NCut of the split {the m smallest} | {the rest}, from the similarity matrix (the definition)."""
    x = np.sort(p)
    K = np.exp(-np.abs(x[:, None] - x[None, :]) / scale)
    cut = K[:m, m:].sum()
    return cut / K[:m].sum() + cut / K[m:].sum()


def brute_force_variance_ratio(p, m):
    x = np.sort(p)
    left, right = x[:m], x[m:]
    between = (m * (left.mean() - x.mean()) ** 2 + (x.size - m) * (right.mean() - x.mean()) ** 2) / x.size
    return between / (x.var(ddof=1) - between)


def test_profiles_match_the_index_definitions_and_the_library():
    """The curves the NCut and variance-ratio indices give plots are their definitions at every split, and their
    optimum is the split the index finds (``ncut_split``, ``variance_ratio_split``)."""
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.normal(-2, 1, 120), rng.normal(2.5, 0.7, 80)])
    ones = np.ones_like(p)
    scale = 1.3
    x = np.sort(p)

    def curve(index):
        profile = index.profile(p, ones, 0.0, {})
        return profile.x, profile.curves["profile"][1]

    points, values = curve(NormalisedCutIndex(scale))
    # the brute force sums n^2 positive similarities, the index n cumulative ones: the cut and both volumes within
    # the rounding of n^2 positive terms, and the normalised cut (two of their ratios) within twice that
    ncut_rtol = 2 * sum_rtol(np.ones(p.size**2))
    for m in (1, 50, 120, 199):
        j = int(np.argmin(np.abs(points - 0.5 * (x[m - 1] + x[m]))))
        np.testing.assert_allclose(values[j], brute_force_ncut(p, scale, m), rtol=ncut_rtol)
    value, b, _ = ncut_split(p, ones, scale, 1.0, np.empty_like(p))
    np.testing.assert_allclose(values.min(), value, rtol=ncut_rtol)
    assert points[np.argmin(values)] == pytest.approx(b)
    points, values = curve(VarianceRatioIndex())
    for m in (1, 50, 120, 199):
        j = int(np.argmin(np.abs(points - 0.5 * (x[m - 1] + x[m]))))
        np.testing.assert_allclose(values[j], brute_force_variance_ratio(p, m), rtol=1e-10)
    value, b, _ = variance_ratio_split(p, ones, 1.0, np.empty_like(p))
    np.testing.assert_allclose(values.max(), value, rtol=1e-10)
    assert points[np.argmax(values)] == pytest.approx(b)
    points, values = curve(NormalisedCutIndex(scale, min_size=30))
    assert points.size == p.size - 1 - 2 * 29


def test_weighted_profiles_equal_the_repeated_rows():
    """A row of weight 2 is two identical rows in the profiles too (as in the indices); weight 0 is no row."""
    rng = np.random.default_rng(1)
    p = np.concatenate([rng.normal(-2, 1, 40), rng.normal(2.5, 0.7, 30)])
    w = rng.integers(0, 3, p.size).astype(float)
    for index in (NormalisedCutIndex(1.1), VarianceRatioIndex()):
        weighted = index.profile(p, w, 0.0, {})
        repeated = index.profile(np.repeat(p, w.astype(int)), np.ones(int(w.sum())), 0.0, {})
        np.testing.assert_array_equal(weighted.x, repeated.x)
        np.testing.assert_allclose(weighted.curves["profile"][1], repeated.curves["profile"][1], rtol=1e-10)
        value = index.evaluate(p, w, None).stats["fval"]
        best = np.min if index.name == "ncut" else np.max
        np.testing.assert_allclose(best(weighted.curves["profile"][1]), value, rtol=1e-10)


@pytest.mark.parametrize(("method", "best"), [("ncut", np.argmin), ("mc", np.argmax)])
def test_plot_node_cut_and_variance_ratio_curves_peak_at_b(trees, dermatology, method, best):
    X, _ = dermatology
    tree = trees[method]
    for node in internal(tree):
        ax = profile_axes(plot_node(tree, node.id, X))
        curve = gid_line(ax, "profile")
        xs, values = np.asarray(curve.get_xdata()), np.asarray(curve.get_ydata())
        p = np.sort(X[rows_at(tree, X, node)] @ node.v)
        assert xs.size == np.unique(p).size - 1  # one value per gap between distinct projections
        j = int(best(values))
        np.testing.assert_allclose(values[j], node.fval, rtol=1e-8)
        k = np.searchsorted(p, node.b)  # b lies in the gap (p[k-1], p[k]) whose midpoint is the optimum
        assert p[k - 1] < xs[j] < p[k] and p[k - 1] < node.b <= p[k]
        np.testing.assert_array_equal(gid_line(ax, "hyperplane").get_xdata(), [node.b, node.b])


@pytest.mark.parametrize("method", ["pddp", "ipddp"])
def test_plot_node_histograms(trees, dermatology, method):
    X, _ = dermatology
    tree = trees[method]
    for node in internal(tree):
        ax = profile_axes(plot_node(tree, node.id, X))
        bars = [patch for patch in ax.patches if patch.get_gid() != "gap"]
        assert counted(bars) == pytest.approx(node.size)
        np.testing.assert_array_equal(gid_line(ax, "hyperplane").get_xdata(), [node.b, node.b])
        if method == "pddp":
            p = X[rows_at(tree, X, node)] @ node.v
            assert node.b == pytest.approx(p.mean(), abs=1e-9)
        else:
            (gap,) = [patch for patch in ax.patches if patch.get_gid() == "gap"]
            lo, hi = span_x(gap)
            assert hi - lo == pytest.approx(node.stats["gap"]) and lo < node.b < hi


@pytest.mark.parametrize("with_labels", [True, False])
def test_the_figures_have_a_fixed_layout_and_nothing_leaves_them_or_covers_the_twin_axis(
    trees, dermatology, with_labels
):
    """Issue 35, item 6: the node and tree figures are laid out at fixed margins (the constrained layout took about a
    third of their drawing time), and item 8: the node figure's legend no longer covers the histogram's axis (its
    tick labels and "rows", which the legend beside the profile overlapped)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    X, y = dermatology
    tree = trees["mdh"]
    labels = y if with_labels else None
    for fig in (plot_node(tree, 0, X, labels=labels), plot_tree(tree, X, labels=labels)):
        assert fig.get_layout_engine() is None
        renderer = FigureCanvasAgg(fig).get_renderer()
        inside = fig.bbox.padded(1.0)  # a pixel's rounding
        legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]
        titles = [ax.title for ax in fig.axes if ax.get_title()]
        for artist in [*legends, *titles, *(fig.texts)]:
            box = artist.get_window_extent(renderer)
            assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1, artist
    fig = plot_node(tree, 0, X, labels=labels)
    renderer = FigureCanvasAgg(fig).get_renderer()
    (twin,) = [ax for ax in fig.axes if ax.get_gid() == "histogram"]
    legend = profile_axes(fig).get_legend()
    assert twin.get_tightbbox(renderer).x1 <= legend.get_window_extent(renderer).x0


def test_plot_node_with_labels_adds_a_stacked_histogram(trees, dermatology):
    X, y = dermatology
    tree = trees["mc"]
    node = tree.nodes[internal(tree)[-1].id]
    fig = plot_node(tree, node, X, labels=y)
    (hist,) = [ax for ax in fig.axes if ax.get_gid() == "labels"]
    assert counted(hist.patches) == pytest.approx(node.size)
    assert len(hist.get_legend().get_texts()) == np.unique(y[rows_at(tree, X, node)]).size


# ------------------------------------------------------------------------------------------ dendrogram
def test_plot_dendrogram_leaves_and_splits(trees, optidigits_mdh):
    _, _, tree = optidigits_mdh
    fig = plot_dendrogram(tree)
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(labels) == tree.n_leaves == 4
    assert labels == [
        f"{label} (node {leaf})" for leaf, label in sorted(tree.leaf_labels().items(), key=lambda i: i[1])
    ]
    assert sorted(t.get_gid() for t in ax.texts) == sorted(f"split-{node.id}" for node in internal(tree))
    other = Figure()
    target = other.add_subplot()
    assert plot_dendrogram(trees["ncut"], ax=target) is other
    assert len(target.get_xticklabels()) == trees["ncut"].n_leaves


# ------------------------------------------------------------------------------------------ after an update
@pytest.fixture(scope="module")
def updated():
    """An MDH tree updated once (``partial_fit``): night 1 has four of five components, night 2 all five, so the
    update splits a leaf; (tree, night 2's rows, the update's report)."""
    centres = 10.0 * np.eye(6)[:5]
    rng = np.random.default_rng(0)
    y1, y2 = rng.integers(0, 4, size=20_000), rng.integers(0, 5, size=20_000)
    X1, X2 = (centres[y] + rng.normal(size=(y.size, 6)) for y in (y1, y2))
    model = MDHClustering(n_clusters="auto", random_state=0)
    model.partial_fit(da.from_array(X1, chunks=(2_000, 6)))
    model.partial_fit(da.from_array(X2, chunks=(2_000, 6)))
    report = model.update_report_
    assert "split" in [node["action"] for node in report["nodes"]], report["nodes"]
    return model.tree_, X2, report


@pytest.mark.slow
def test_plot_tree_frames_the_splits_the_latest_update_changed(updated, dermatology, trees):
    tree, X, _ = updated
    changed = set(tree.changed_nodes())
    fig = plot_tree(tree, X, max_points=500)
    panels = {int(ax.get_gid().split("-")[1]): ax for ax in fig.axes if (ax.get_gid() or "").startswith("node-")}
    framed = {node for node, ax in panels.items() if any(t.get_gid() == "changed" for t in ax.texts)}
    assert framed == changed & set(panels) and framed and framed != set(panels)
    for node, ax in panels.items():
        colours = {to_rgba(spine.get_edgecolor()) for spine in ax.spines.values()}
        assert (colours == {to_rgba("tab:red")}) == (node in framed)
    assert f"after update 1: {len(framed)} of the {len(panels)} splits changed by it" in fig._suptitle.get_text()
    assert "update" not in plot_tree(trees["mdh"], dermatology[0], max_points=100)._suptitle.get_text()


def test_plot_shares_draws_the_update_reports_shares(updated):
    _, _, report = updated
    fig = plot_shares(report)
    (ax,) = fig.axes
    before = [p.get_height() for p in ax.patches if p.get_gid() == "before"]
    new = [p.get_height() for p in ax.patches if p.get_gid() == "new"]
    assert before == [leaf["share_before"] for leaf in report["leaves"]]
    assert new == [leaf["share_new"] for leaf in report["leaves"]]
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(leaf["label"]) for leaf in report["leaves"]]
    (split,) = [node for node in report["nodes"] if node["action"] == "split"]
    assert [t.get_gid() for t in ax.texts] == [f"new-cluster-{split['new_label']}"]
    assert ax.get_title().startswith("Update 1: 4 clusters before, 5 now\ndrift: PSI ")
    with pytest.raises(ValueError, match="it is a fit's"):
        plot_shares({**report, "update": 0, "leaves": []})


def test_plot_dendrogram_with_ids_that_are_not_0_to_k(updated):
    def merged(leaf):  # the merged leaf takes the id of the larger of the two: the other id is gone
        tree = ClusterTree.from_json(updated[0].to_json())
        tree.merge_leaf(leaf.id)
        return tree

    leaves = ClusterTree.from_json(updated[0].to_json()).leaves()
    tree = next(tree for tree in map(merged, leaves) if sorted(tree.leaf_labels().values()) != [0, 1, 2, 3])
    labels = sorted(tree.leaf_labels().values())
    (ax,) = plot_dendrogram(tree).axes
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert sorted(int(t.split()[0]) for t in ticks) == labels


@pytest.mark.slow
def test_save_plots_adds_the_shares_of_an_update(updated, tmp_path):
    tree, X, report = updated
    written = save_plots(tree, X, tmp_path, max_points=300, update_report=report)
    assert written["shares"] == tmp_path / "shares.png" and (tmp_path / "shares.png").read_bytes()[:4] == b"\x89PNG"


# ------------------------------------------------------------------------------------------ save_plots
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_save_plots_writes_valid_pngs(trees, dermatology, tmp_path, n_jobs):
    import matplotlib.pyplot as plt

    X, y = dermatology
    tree = trees["mdh"]
    out = tmp_path / "new" / "plots"
    written = save_plots(tree, X, out, labels=y, max_points=200, n_jobs=n_jobs)  # n_jobs 2: half in a child
    expected = {"tree", "dendrogram", *(f"node-{node.id}" for node in internal(tree))}
    assert set(written) == expected
    assert sorted(path.name for path in out.iterdir()) == sorted(f"{name}.png" for name in expected)
    for name, path in written.items():
        assert path == out / f"{name}.png"
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert plt.get_fignums() == []  # no figure left in pyplot's registry


# ------------------------------------------------------------------------------------------ every split rule
@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 40)
    return rng.normal(size=(120, 3)) + 6 * np.eye(3)[y], y


@pytest.fixture(scope="module")
def kernel_trees(blobs):
    """MSC and SVM-relabel trees: their splits are kernel expansions, with no normal v."""
    X, _ = blobs
    svm = SVMRelabelClustering(n_clusters=3, n_anneal_steps=10, n_null=200, random_state=0)
    trees = {"msc": MSCClustering(n_clusters=3, random_state=0).fit(X).tree_, "svm-relabel": svm.fit(X).tree_}
    for tree in trees.values():
        assert {node.rule.kind for node in internal(tree)} == {"kernel-expansion"}
    return trees


@pytest.mark.parametrize("method", ["msc", "svm-relabel"])
def test_kernel_expansion_splits_plot_along_their_decision_function(kernel_trees, blobs, tmp_path, method):
    X, y = blobs
    tree = kernel_trees[method]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is skipped
        written = save_plots(tree, X, tmp_path, labels=y)
    assert set(written) == {"tree", "dendrogram", *(f"node-{node.id}" for node in internal(tree))}
    assert written.skipped == {}
    fig = plot_tree(tree, X)
    for node in internal(tree):
        rows = rows_at(tree, X, node)
        f = node.rule.decision_function(X[rows])
        sides = points(panel(fig, node.id), "side-")
        np.testing.assert_allclose(np.sort(np.concatenate([sides["side-0"][:, 0], sides["side-1"][:, 0]])), np.sort(f))
        assert np.all(sides["side-0"][:, 0] < 0) and np.all(sides["side-1"][:, 0] >= 0)
        assert panel(fig, node.id).get_xlabel() == "decision function f(x)"
        ax = profile_axes(plot_node(tree, node.id, X))
        assert counted(ax.patches) == pytest.approx(rows.sum())
        np.testing.assert_array_equal(gid_line(ax, "hyperplane").get_xdata(), [0.0, 0.0])
        assert "kernel-expansion split" in ax.get_title()


class _Unplottable(SplitRule):
    """A rule with no coordinate to draw along."""

    kind = "unplottable"

    def side(self, X):
        return X[:, 0] >= 0.0


@pytest.mark.parametrize("n_jobs", [1, 3])
def test_a_split_that_cannot_be_drawn_is_skipped_with_a_note(dermatology, tmp_path, n_jobs):
    X, y = dermatology
    X = X - X.mean(axis=0)
    tree = ClusterTree(X.shape[1], root_size=len(X))
    right = X[:, 0] >= 0
    root = tree.add_rule_split(0, "unplottable", _Unplottable(), (np.sum(~right), np.sum(right)), {}, {})
    v = np.eye(X.shape[1])[1]
    child = tree.add_rule_split(root.children[1], "pddp", HyperplaneRule(v, 0.0), (1, 1), {}, {})
    with pytest.warns(UserWarning, match="cannot be drawn|was not written"):
        written = save_plots(tree, X, tmp_path, labels=y, n_jobs=n_jobs)  # n_jobs 3: node-0 fails in a child
    assert set(written) == {"tree", "dendrogram", f"node-{child.id}"}
    assert set(written.skipped) == {"node-0", "tree, panel of node 0"}
    assert "no one-dimensional coordinate" in written.skipped["node-0"]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(f"{name}.png" for name in written)
    with pytest.warns(UserWarning, match="cannot be drawn"):
        fig = plot_tree(tree, X)
    assert any("cannot be drawn" in text.get_text() for text in panel(fig, 0).texts)
    assert n_points(panel(fig, child.id)) == right.sum()


class _ToyIndex(ProjectionIndex):
    """An index known only to this test: its profile is what plot_node must draw."""

    name = "toy"
    record = {}

    @classmethod
    def for_node(cls, data, vals, vecs, *, min_size=1, **params):
        return cls()

    def profile(self, p, w, b, params):
        x = np.linspace(p.min(), p.max(), 50)
        return Profile(x, {"profile": ("toy curve", (x - b) ** 2)}, "toy value", "min", ("toy at b", 0.0),
                       spans={"toy-span": ("toy span", (b - 1, b + 1))}, note="the toy's own note")  # fmt: skip


def test_a_new_index_brings_its_plot(dermatology, monkeypatch):
    X, _ = dermatology
    monkeypatch.setitem(INDICES, "toy", _ToyIndex)
    tree = ClusterTree(X.shape[1], root_size=len(X))
    v, b = np.eye(X.shape[1])[0], float(np.median(X[:, 0])) + 0.5
    tree.add_rule_split(0, "toy", HyperplaneRule(v, b), (1, 1), {}, {})
    ax = profile_axes(plot_node(tree, 0, X))
    p = X @ v
    curve = gid_line(ax, "profile")
    np.testing.assert_allclose(curve.get_xdata(), np.linspace(p.min(), p.max(), 50))
    np.testing.assert_allclose(curve.get_ydata(), (curve.get_xdata() - b) ** 2)
    assert curve.get_label() == "toy curve" and ax.get_ylabel() == "toy value"
    np.testing.assert_array_equal(gid_line(ax, "at-b").get_xydata(), [[b, 0.0]])
    (span,) = [patch for patch in ax.patches if patch.get_gid() == "toy-span"]
    np.testing.assert_allclose(span_x(span), [b - 1, b + 1])
    assert "the toy's own note" in ax.get_title()


# ------------------------------------------------------------------------------------------ agreement
def _label_colours(fig) -> dict[str, dict]:
    """The colour of each true label in a figure: from its legends (label text -> RGB) and from the artists
    drawn for it (gid ``label-<c>`` -> the set of RGB of its scatter points and bars)."""
    legend, artists = {}, {}
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]
    for leg in legends:
        for handle, text in zip(leg.legend_handles, leg.get_texts()):
            colour = handle.get_facecolor() if hasattr(handle, "get_facecolor") else handle.get_color()
            legend[text.get_text()] = to_rgba(colour)[:3]
    for ax in fig.axes:
        for artist in [*ax.collections, *ax.patches]:
            gid = artist.get_gid() or ""
            if gid.startswith("label-"):
                colours = np.atleast_2d(artist.get_facecolor())[:, :3]
                artists.setdefault(gid, set()).update(map(tuple, colours))
    return {"legend": legend, "artists": artists}


def test_one_colour_per_true_label_in_every_file(trees, dermatology, tmp_path, monkeypatch):
    X, y = dermatology
    tree = trees["mdh"]
    seen, save = {}, Figure.savefig

    def record(fig, path, **kwargs):
        seen[Path(path).stem] = _label_colours(fig)
        return save(fig, path, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    save_plots(tree, X, tmp_path, labels=y)
    nodes = [f"node-{node.id}" for node in internal(tree)]
    assert set(seen) == {"tree", "dendrogram", *nodes}
    reference = seen["tree"]["legend"]  # every label of y, in the tree's legend
    assert {str(k) for k in np.unique(y)} <= set(reference)
    for name in nodes:
        legend = seen[name]["legend"]
        labels = [text for text in legend if text in reference]
        assert labels  # the node's labels histogram has a legend
        assert {text: legend[text] for text in labels} == {text: reference[text] for text in labels}, name
    by_gid: dict[str, set] = {}
    for name in ["tree", *nodes]:
        assert seen[name]["artists"], name
        for gid, colours in seen[name]["artists"].items():
            by_gid.setdefault(gid, set()).update(colours)
    assert all(len(colours) == 1 for colours in by_gid.values()), by_gid  # one colour per label across files
    assert len({next(iter(c)) for c in by_gid.values()}) == len(by_gid)  # and a different one for each label


def test_a_label_keeps_its_colour_when_a_sample_lacks_others(dermatology, trees):
    """The colours follow every label given, not those the sample happens to draw."""
    X, y = dermatology
    tree = trees["ncut"]
    small = _label_colours(plot_tree(tree, X, labels=y, max_points=12, random_state=5))
    full = _label_colours(plot_tree(tree, X, labels=y, max_points=len(X)))
    assert small["legend"] == full["legend"]
    for gid, colours in small["artists"].items():
        assert colours == full["artists"][gid]


@pytest.fixture(scope="module")
def summary_mdh():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(3000, 4)), rng.normal(size=(3000, 4)) + [5, 0, 0, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return X, MDHClustering(n_clusters=3, mode="summary", random_state=0).fit(X)


def test_density_at_b_and_recorded_fval_say_what_they_are(summary_mdh):
    """In summary mode the recorded fval is the microclusters' density at b, not the rows': the plot says which
    number is which (in exact mode they are equal, test_plot_node_mdh_density_interval_and_b)."""
    X, model = summary_mdh
    node = model.tree_.root
    ax = profile_axes(plot_node(model.tree_, node.id, X, max_points=len(X)))
    marker = gid_line(ax, "at-b")
    density = float(marker.get_ydata()[0])
    assert abs(density - node.fval) > 1e-3 * node.fval  # two different quantities ...
    assert marker.get_label() == f"density of these rows at b: {density:.3g}"  # ... each named
    title = " ".join(ax.get_title().split())
    assert f"recorded at fit: fval {node.fval:.3g}" in title
    assert "recorded fval: the density at b of the points the split was fitted on (rows in memory; in summary" in title


def test_describe_sizes_are_rows_at_fit(summary_mdh):
    """describe() names its sizes for what they are: the rows a node held at fit (summary mode: its microclusters'
    rows), which need not be the rows predict routes to it."""
    X, model = summary_mdh
    tree = model.tree_
    text = tree.describe()
    labels, routed = tree.leaf_labels(), np.bincount(model.labels_, minlength=tree.n_leaves)
    for leaf in tree.leaves():
        assert f"leaf {leaf.id} -> cluster {labels[leaf.id]} ({leaf.size:g} rows at fit)" in text
    assert "size" not in text
    assert f"node 0: mdh split, {tree.root.size:g} rows at fit" in text
    assert any(leaf.size != routed[labels[leaf.id]] for leaf in tree.leaves())  # the case describe() names


# ------------------------------------------------------------------------------------------ dask input
def test_dask_input_gives_the_numpy_panels(trees, dermatology):
    X, y = dermatology
    tree = trees["mdh"]
    Xd = da.from_array(X, chunks=(50, -1))
    for max_points in (len(X), 120):
        a = plot_tree(tree, X, labels=y, max_points=max_points)
        b = plot_tree(tree, Xd, labels=da.from_array(y, chunks=50), max_points=max_points)
        for node in internal(tree):
            pa, pb = points(panel(a, node.id)), points(panel(b, node.id))
            assert pa.keys() == pb.keys()
            for gid in pa:
                np.testing.assert_array_equal(pa[gid], pb[gid])
    a = gid_line(profile_axes(plot_node(tree, 1, X)), "profile").get_ydata()
    b = gid_line(profile_axes(plot_node(tree, 1, Xd)), "profile").get_ydata()
    np.testing.assert_array_equal(a, b)


def test_dask_input_reads_only_the_sampled_chunks(trees, dermatology):
    X, _ = dermatology
    seen = []

    def record(block, block_info=None):
        seen.append(block_info[0]["chunk-location"][0])
        return block

    Xd = da.from_array(X, chunks=(10, -1)).map_blocks(record, dtype=X.dtype, meta=np.empty((0, 0)))
    fig = plot_tree(trees["mdh"], Xd, max_points=4)
    assert n_points(panel(fig, 0)) == 4
    assert 1 <= len(set(seen)) <= 4 < Xd.numblocks[0]


# ------------------------------------------------------------------------------------------ errors
def test_a_single_leaf_has_nothing_to_plot(dermatology, tmp_path):
    X, _ = dermatology
    tree = ClusterTree(X.shape[1], root_size=len(X))
    for call in (
        lambda: plot_tree(tree, X),
        lambda: plot_node(tree, 0, X),
        lambda: plot_dendrogram(tree),
        lambda: save_plots(tree, X, tmp_path / "none"),
    ):
        with pytest.raises(ValueError, match="no split to plot"):
            call()
    assert not (tmp_path / "none").exists()


def test_bad_node_and_bad_input_are_refused(trees, dermatology):
    X, y = dermatology
    tree = trees["mdh"]
    with pytest.raises(ValueError, match=r"no node 99; its split nodes are \[0, 1\]"):
        plot_node(tree, 99, X)
    leaf = tree.leaves()[0].id
    with pytest.raises(ValueError, match=f"Node {leaf} is a leaf"):
        plot_node(tree, leaf, X)
    with pytest.raises(TypeError, match="node id"):
        plot_node(tree, "0", X)
    d = X.shape[1]
    for call in (plot_tree, lambda t, Z: plot_node(t, 0, Z)):
        with pytest.raises(ValueError, match=f"X has {d - 1} columns but the tree was fitted on {d} features"):
            call(tree, X[:, :-1])
        with pytest.raises(ValueError, match=f"X has {d - 1} columns"):
            call(tree, da.from_array(X[:, :-1], chunks=100))
    with pytest.raises(ValueError, match="two-dimensional"):
        plot_tree(tree, X[0])
    with pytest.raises(ValueError, match="labels must have one entry per row"):
        plot_tree(tree, X, labels=y[:-1])
    with pytest.raises(ValueError, match="max_points must be a positive integer"):
        plot_tree(tree, X, max_points=0)
    with pytest.raises(TypeError, match="ClusterTree"):
        plot_tree(object(), X)


# ------------------------------------------------------------------------------------------ packaging
def test_public_names_resolve_lazily_without_importing_matplotlib():
    code = "import sys, lowdens_dask; print('matplotlib' in sys.modules, 'lowdens_dask.plots' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
    from lowdens_dask import plots

    for name in ("plot_tree", "plot_node", "plot_dendrogram", "plot_shares", "save_plots"):
        assert getattr(lowdens_dask, name) is getattr(plots, name)
        assert name in lowdens_dask.__all__
