"""Plots of a fitted :class:`~lowdens_dask.tree.ClusterTree`, after PPCI's ``plot.ppci`` (``tree_plot`` and
``node_plot``), with matplotlib's object API (``matplotlib.figure.Figure``; no pyplot state, so they work
headless and in notebooks).

- :func:`plot_tree`: one panel per internal node, its rows on the node's normal v and on the leading
  direction orthogonal to v, with the hyperplane (PPCI's ``tree_plot``, laid out as a grid);
- :func:`plot_node`: the node's index along its projection: the kernel density (and MDH's penalised
  density) for the density indices, the normalised cut or the variance ratio as a function of the split
  point, the histogram for PDDP and iPDDP (PPCI's ``node_plot``);
- :func:`plot_dendrogram`: the tree as a scipy dendrogram;
- :func:`save_plots`: all of them as PNG files.

The tree stores no rows: every plot takes the data X (a numpy array, a Dask array, a zarr array or a zarr
path), draws a random sample of at most ``max_points`` of its rows (rows with NaN or inf are then skipped)
and routes the sample down the tree with the nodes' own split rules. Only the sampled rows are read from
Dask or zarr input.

This module sits above the tree layer and imports matplotlib; ``import lowdens_dask`` does not import it
(the public names resolve to this module on first use).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import dask.array as da
import numpy as np
import zarr
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from .backend import InMemoryData, as_dask_array
from .indices.density import log_penalised_density, penalty_coefficient
from .indices.minimum_density import node_bandwidth
from .indices.ncut import ncut_scale
from .kernels.kde import weighted_moments
from .tree import ClusterTree, HyperplaneRule, NearestCentreRule, Node

__all__ = ["plot_dendrogram", "plot_node", "plot_tree", "save_plots"]

#: Colours of the two sides of a split (child 0: v.x < b, child 1: v.x >= b) when no labels are given.
SIDE_COLOURS = ("tab:blue", "tab:orange")
#: Grid points of the kernel density curves (at most; about 8 per bandwidth otherwise).
KDE_GRID_MAX = 2048
KDE_GRID_MIN = 512

_STAT_NAMES = {"fval": "fval", "relative_depth": "rel. depth", "gap": "gap"}


# ---------------------------------------------------------------------------------------------- input
class _Sample(NamedTuple):
    """Finite sampled rows of X, their true labels (or None), and the rows reaching each node."""

    rows: np.ndarray  #: (m, d) float64, finite
    labels: np.ndarray | None  #: (m,) or None
    routes: dict[int, np.ndarray]  #: node id -> indices into ``rows`` of the rows that reach it
    n_total: int  #: rows of X


def _internal_nodes(tree: ClusterTree) -> list[Node]:
    """The split nodes, level by level (depth first, then tree order); a clear error without any."""
    if not isinstance(tree, ClusterTree):
        raise TypeError(f"tree must be a ClusterTree (e.g. a fitted estimator's tree_); got {type(tree).__name__}.")
    nodes = [node for node in tree if not node.is_leaf]
    if not nodes:
        raise ValueError("The tree has no split to plot: it is a single leaf.")
    for node in nodes:
        if not isinstance(node.rule, (HyperplaneRule, NearestCentreRule)):
            kind = getattr(node.rule, "kind", type(node.rule).__name__)
            raise TypeError(
                f"Node {node.id} splits by a {kind!r} rule; only hyperplane and nearest-projected-centre splits "
                "can be plotted."
            )
    return sorted(nodes, key=lambda node: node.depth)  # stable: tree order within a level


def _internal_node(tree: ClusterTree, node: int | Node) -> Node:
    nodes = _internal_nodes(tree)
    node_id = node.id if isinstance(node, Node) else node
    if isinstance(node_id, (bool, np.bool_)) or not isinstance(node_id, (int, np.integer)):
        raise TypeError(f"node must be a node id (int) or a Node; got {node!r}.")
    ids = sorted(n.id for n in nodes)
    if int(node_id) not in tree.nodes:
        raise ValueError(f"The tree has no node {int(node_id)}; its split nodes are {ids}.")
    found = tree.nodes[int(node_id)]
    if found.is_leaf:
        raise ValueError(f"Node {found.id} is a leaf and has no split to plot; the split nodes are {ids}.")
    return found


def _as_array(X, n_features: int):
    """X as a numpy array or a row-chunked Dask array, with the tree's number of columns."""
    if isinstance(X, (da.Array, zarr.Array, str, os.PathLike)):
        X = as_dask_array(X)
    else:
        X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be two-dimensional (n_samples, {n_features}); got shape {X.shape}.")
    if X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} columns but the tree was fitted on {n_features} features.")
    return X


def _check_max_points(max_points) -> int:
    if isinstance(max_points, (bool, np.bool_)) or not isinstance(max_points, (int, np.integer)) or max_points < 1:
        raise ValueError(f"max_points must be a positive integer; got {max_points!r}.")
    return int(max_points)


def _route(tree: ClusterTree, rows: np.ndarray) -> dict[int, np.ndarray]:
    """The rows reaching every node, by the nodes' own split rules (as :meth:`ClusterTree.apply` routes)."""
    routes: dict[int, np.ndarray] = {}
    stack = [(0, np.arange(rows.shape[0]))]
    while stack:
        node_id, idx = stack.pop()
        routes[node_id] = idx
        node = tree.nodes[node_id]
        if node.is_leaf:
            continue
        above = node.rule.side(rows[idx])
        stack.append((node.children[0], idx[~above]))
        stack.append((node.children[1], idx[above]))
    return routes


def _sample(tree: ClusterTree, X, labels, max_points: int, random_state) -> _Sample:
    """At most ``max_points`` rows of X drawn without replacement (all rows when X has no more), read from Dask
    or zarr input as sorted row indices; rows with NaN or inf skipped; routed down the tree."""
    max_points = _check_max_points(max_points)
    X = _as_array(X, tree.n_features)
    n = int(X.shape[0])
    if labels is not None:
        labels = labels if isinstance(labels, da.Array) else np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != n:
            raise ValueError(f"labels must have one entry per row of X ({n}); got shape {labels.shape}.")
    if n <= max_points:
        idx = np.arange(n)
    else:
        idx = np.sort(np.random.default_rng(random_state).choice(n, size=max_points, replace=False))
    chunked = isinstance(X, da.Array)
    full = idx.size == n
    rows = X if full else X[idx]
    rows = np.asarray(rows.compute() if chunked else rows, dtype=np.float64)
    if labels is not None:
        labels = labels if full else labels[idx]
        labels = np.asarray(labels.compute() if isinstance(labels, da.Array) else labels)
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        rows = rows[finite]
        labels = None if labels is None else labels[finite]
    rows = np.ascontiguousarray(rows)
    return _Sample(rows, labels, _route(tree, rows), n)


# ---------------------------------------------------------------------------------------------- helpers
def _classes(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """Distinct labels (sorted), each row's class index, and one colour per class."""
    classes, codes = np.unique(labels, return_inverse=True)
    k = len(classes)
    if k <= 10:
        colours = [colormaps["tab10"](i) for i in range(k)]
    elif k <= 20:
        colours = [colormaps["tab20"](i) for i in range(k)]
    else:
        colours = [colormaps["turbo"](i / (k - 1)) for i in range(k)]
    return classes, codes.reshape(-1), colours


def _orthogonal_direction(Z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The first principal direction of the rows Z after removing their component along v (unit, orthogonal
    to v, largest-magnitude entry positive); a zero vector when the rows have no spread orthogonal to v."""
    if Z.shape[0] < 2 or Z.shape[1] < 2:
        return np.zeros_like(v)
    R = Z - Z.mean(axis=0)
    R -= np.outer(R @ v, v)
    _, s, vt = np.linalg.svd(R, full_matrices=False)
    if not s[0] > 1e-12 * max(1.0, float(np.abs(Z).max())):
        return np.zeros_like(v)
    u = vt[0] - (vt[0] @ v) * v
    u /= np.linalg.norm(u)
    return -u if u[np.argmax(np.abs(u))] < 0 else u


def _stats_text(node: Node) -> str:
    parts = [f"{_STAT_NAMES.get(key, key)} {value:.3g}" for key, value in node.stats.items()]
    return ", ".join(parts) if parts else "no statistics recorded"


def _node_title(node: Node, shown: int) -> str:
    forced = " (forced)" if node.forced else ""
    return f"node {node.id}: {node.method}{forced}, size {node.size:g} ({shown} shown)\n{_stats_text(node)}"


def _hyperplane_line(ax, b: float) -> None:
    ax.axvline(b, color="black", linestyle="--", linewidth=1.2, gid="hyperplane", label=f"b = {b:.4g}")


def _grid_shape(k: int) -> tuple[int, int]:
    ncols = min(k, 3)
    return math.ceil(k / ncols), ncols


# ---------------------------------------------------------------------------------------------- plot_tree
def plot_tree(tree: ClusterTree, X, *, labels=None, max_points: int = 2000, random_state: int | None = 0) -> Figure:
    """The rows at every split node on the node's hyperplane (PPCI's ``tree_plot``, as a grid of panels).

    One panel per internal node, level by level: the node's rows among a random sample of at most
    ``max_points`` rows of X (rows with NaN/inf skipped), projected on the node's normal v (x axis) and on
    the first principal component of those rows after removing their component along v (y axis), with the
    hyperplane ``v.x = b`` as a dashed vertical line; titled with the node's id, method, training size
    (``node.size``) and recorded statistics (``fval``, ...).

    Points are coloured by the side of the split (``v.x < b``: child 0, ``v.x >= b``: child 1); with
    ``labels`` (the true label of each row of X) they are coloured by true label instead (the side is then
    given by the dashed line), with one legend for the figure.

    Parameters
    ----------
    tree : ClusterTree
        A fitted tree (e.g. ``estimator.tree_``).
    X : array of shape (n_samples, n_features), Dask array, zarr array or zarr path
        The data (in the tree's coordinates). Only the sampled rows are computed from Dask or zarr input.
    labels : array of shape (n_samples,), optional
        True labels of the rows of X.
    max_points : int, default=2000
        Most rows drawn (all of X when it has no more, else sorted random row indices).
    random_state : int or None, default=0
        Seed of the row sample.

    Returns
    -------
    matplotlib.figure.Figure
    """
    nodes = _internal_nodes(tree)
    return _tree_figure(tree, nodes, _sample(tree, X, labels, max_points, random_state))


def _tree_figure(tree: ClusterTree, nodes: list[Node], sample: _Sample) -> Figure:
    nrows, ncols = _grid_shape(len(nodes))
    fig = Figure(figsize=(4.4 * ncols + (1.6 if sample.labels is not None else 0.0), 3.9 * nrows + 0.6))
    fig.set_layout_engine("constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    classes = codes = colours = None
    if sample.labels is not None:
        classes, codes, colours = _classes(sample.labels)
    size = 10.0 if sample.rows.shape[0] <= 1000 else 5.0
    for ax, node in zip(axes, nodes):
        idx = sample.routes[node.id]
        Z = sample.rows[idx]
        if isinstance(node.rule, NearestCentreRule):
            _centres_panel(ax, node, Z, None if classes is None else codes[idx], colours, size)
            ax.set_title(_node_title(node, idx.size), fontsize=10)
            ax.set_gid(f"node-{node.id}")
            continue
        v, b = node.rule.v, node.rule.b
        x = Z @ v
        y = Z @ _orthogonal_direction(Z, v)
        if classes is None:
            above = x >= b
            for side in (0, 1):
                keep = above if side else ~above
                ax.scatter(
                    x[keep], y[keep], s=size, color=SIDE_COLOURS[side], alpha=0.6, linewidths=0, gid=f"side-{side}"
                )
        else:
            node_codes = codes[idx]
            for c, colour in enumerate(colours):
                keep = node_codes == c
                if keep.any():
                    ax.scatter(x[keep], y[keep], s=size, color=colour, alpha=0.7, linewidths=0, gid=f"label-{c}")
        _hyperplane_line(ax, b)
        if idx.size == 0:
            ax.text(0.5, 0.5, "no sampled rows reach this node", transform=ax.transAxes, ha="center", va="center")
        ax.set_title(_node_title(node, idx.size), fontsize=10)
        ax.set_xlabel("projection on v (node's normal)", fontsize=9)
        ax.set_ylabel("first PC orthogonal to v", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.set_gid(f"node-{node.id}")
    for ax in axes[len(nodes) :]:
        ax.remove()
    shown = sample.rows.shape[0]
    fig.suptitle(
        f"Cluster tree ({tree.method}, {tree.n_leaves} leaves): {shown} of {sample.n_total} rows shown", fontsize=11
    )
    line = Line2D([], [], color="black", linestyle="--", label="hyperplane v.x = b")
    if classes is None:
        handles = [
            Line2D([], [], linestyle="", marker="o", color=SIDE_COLOURS[0], label="v.x < b (child 0)"),
            Line2D([], [], linestyle="", marker="o", color=SIDE_COLOURS[1], label="v.x >= b (child 1)"),
            line,
        ]
        fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=9, frameon=False)
    else:
        handles = [Line2D([], [], linestyle="", marker="o", color=c, label=str(k)) for k, c in zip(classes, colours)]
        fig.legend(
            handles=[*handles, line],
            loc="outside right upper",
            title="true label",
            fontsize=8,
            title_fontsize=9,
            ncols=1 if len(classes) <= 25 else 2,
            frameon=False,
        )
    return fig


def _centres_panel(ax, node: Node, Z: np.ndarray, codes, colours, size: float) -> None:
    """A nearest-projected-centre split (SCPP, LMSC): the rows on the split's projection (its first two
    columns; with one column, the first PC orthogonal to it as y), coloured by side or by true label, and
    the projected microcluster centres as crosses coloured by their side."""
    rule = node.rule
    V = rule.V
    P = Z @ V
    C = rule.centres
    if V.shape[1] == 1:
        w = _orthogonal_direction(Z, V[:, 0] / np.linalg.norm(V[:, 0]))
        P = np.column_stack([P[:, 0], Z @ w])
        C = np.column_stack([C[:, 0], np.full(len(C), np.median(P[:, 1]) if len(P) else 0.0)])
    if codes is None:
        above = rule.side(Z) if len(Z) else np.zeros(0, bool)
        for side in (0, 1):
            keep = above if side else ~above
            ax.scatter(P[keep, 0], P[keep, 1], s=size, color=SIDE_COLOURS[side], alpha=0.5, linewidths=0,
                       gid=f"side-{side}")
    else:
        for c, colour in enumerate(colours):
            keep = codes == c
            if keep.any():
                ax.scatter(P[keep, 0], P[keep, 1], s=size, color=colour, alpha=0.6, linewidths=0, gid=f"label-{c}")
    for side in (0, 1):
        keep = rule.sides == bool(side)
        ax.scatter(C[keep, 0], C[keep, 1], marker="x", s=18, color=SIDE_COLOURS[side], edgecolors="black",
                   linewidths=1.0, gid=f"centres-{side}")
    ax.set_xlabel("projection, column 1", fontsize=9)
    ax.set_ylabel("projection, column 2" if V.shape[1] > 1 else "first PC orthogonal to it", fontsize=9)
    ax.tick_params(labelsize=8)


# ---------------------------------------------------------------------------------------------- plot_node
class _Profile(NamedTuple):
    """What a profile drew (for the caption)."""

    note: str


def plot_node(
    tree: ClusterTree, node: int | Node, X, *, labels=None, max_points: int = 20000, random_state: int | None = 0
) -> Figure:
    """The node's projection index along its normal v (PPCI's ``node_plot``), from the node's rows among a
    random sample of at most ``max_points`` rows of X (rows with NaN/inf skipped).

    What the top panel shows, by the node's method:

    - ``mdh``: the Gaussian kernel density of the projections with the node's recorded ``bandwidth`` (solid)
      and MDH's penalised density f_CL (eq. 10, dotted, with the recorded ``alpha``, ``eta``, ``eps``), the
      interval ``[mean - alpha sd, mean + alpha sd]`` shaded. The tree does not record the interval's centre
      and scale: they are the weighted mean and standard deviation (divisor n - 1) of the sampled rows'
      projections, as the index computes them on the node's rows (the same when the sample holds all of them);
    - ``depddp``: the kernel density with the recorded bandwidth, b at its lowest interior minimum;
    - ``ncut``: the normalised cut of the split at each point between consecutive distinct projections, with
      the recorded similarity ``scale`` (splits leaving less than the tree's ``min_size`` on a side are left
      out, as the index does), over a faint histogram of the projections;
    - ``mc``: the variance ratio ``B / (V - B)`` of the split at each such point, likewise;
    - ``pddp``, ``ipddp`` and any other method: the histogram of the projections by side, b marked (iPDDP: the
      recorded gap shaded and the outer ``percentile`` of the rows on each side marked).

    Densities and penalised densities are evaluated by the index's own kernels
    (:func:`~lowdens_dask.indices.density.log_penalised_density`). Where a node does not record its bandwidth
    or scale (e.g. a tree written by hand), it is recomputed from the sampled rows by the index's default
    rule. The values are those of the sampled rows; with all of the node's rows they reproduce the recorded
    ``fval`` at b (exact mode). A tree grown in summary mode recorded its bandwidth and ``fval`` for the
    microclusters (the bandwidth widened by their spread), so the rows' density at b differs from ``fval``
    (the legend gives both). A tree fitted with ``standardize=True`` records its bandwidth or scale in the
    standardised coordinates, which the tree does not keep, so the profile of such a node uses the wrong
    bandwidth/scale. Rows count with unit weight (plots take no sample weights).

    With ``labels`` (true labels of the rows of X) a second panel underneath shows the histogram of the
    projections stacked by true label.

    Parameters
    ----------
    tree : ClusterTree
    node : int or Node
        An internal node of the tree.
    X, labels, random_state
        As for :func:`plot_tree`.
    max_points : int, default=20000
        Most rows of X drawn.

    Returns
    -------
    matplotlib.figure.Figure
    """
    node = _internal_node(tree, node)
    return _node_figure(tree, node, _sample(tree, X, labels, max_points, random_state))


def _node_figure(tree: ClusterTree, node: Node, sample: _Sample) -> Figure:
    idx = sample.routes[node.id]
    if isinstance(node.rule, NearestCentreRule):  # no one-dimensional profile: the projection itself
        fig = Figure(figsize=(7.0, 5.6))
        fig.set_layout_engine("constrained")
        ax = fig.subplots(1, 1)
        codes = colours = None
        if sample.labels is not None:
            _, codes, colours = _classes(sample.labels[idx])
        _centres_panel(ax, node, sample.rows[idx], codes, colours, 8.0)
        ax.set_title(f"{_node_title(node, idx.size)}\nsample of {sample.rows.shape[0]} of the {sample.n_total} rows "
                     "of X; crosses: projected microclusters, by side", fontsize=10)
        ax.set_gid("profile")
        return fig
    p = sample.rows[idx] @ node.rule.v
    b = node.rule.b
    with_labels = sample.labels is not None
    fig = Figure(figsize=(8.0, 7.0 if with_labels else 4.6))
    fig.set_layout_engine("constrained")
    if with_labels:
        ax, ax_labels = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    else:
        ax, ax_labels = fig.subplots(1, 1), None
    ax.set_gid("profile")
    if p.size < 2:
        ax.text(0.5, 0.5, f"{p.size} sampled row(s) reach this node", transform=ax.transAxes, ha="center")
        _hyperplane_line(ax, b)
        profile = _Profile("too few rows to draw a profile")
    else:
        draw = _PROFILES.get(node.method, _histogram_profile)
        profile = draw(ax, tree, node, p, sample.rows[idx])
    sampled = f"sample of {sample.rows.shape[0]} of the {sample.n_total} rows of X"
    ax.set_title(f"{_node_title(node, p.size)}\n{sampled}" + (f"; {profile.note}" if profile.note else ""), fontsize=10)
    ax.legend(fontsize=8, loc="best", framealpha=0.8)
    if ax_labels is None:
        ax.set_xlabel("projection on v (node's normal)")
    else:
        _labels_histogram(ax_labels, p, sample.labels[idx], b)
    return fig


def _labels_histogram(ax, p: np.ndarray, labels: np.ndarray, b: float) -> None:
    ax.set_gid("labels")
    classes, codes, colours = _classes(labels)
    bins = np.histogram_bin_edges(p, bins=min(80, max(10, int(np.sqrt(p.size)))))
    groups = [p[codes == c] for c in range(len(classes))]
    ax.hist(groups, bins=bins, stacked=True, color=colours, label=[str(k) for k in classes])
    _hyperplane_line(ax, b)
    ax.set_xlabel("projection on v (node's normal)")
    ax.set_ylabel("rows")
    ax.set_title("projections by true label", fontsize=10)
    handles = [Patch(color=c, label=str(k)) for k, c in zip(classes, colours)]
    ax.legend(
        handles=handles,
        title="true label",
        fontsize=7,
        title_fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        ncols=1 if len(classes) <= 15 else 2,
        frameon=False,
    )


def _kde_grid(p: np.ndarray, h: float, b: float) -> np.ndarray:
    """About eight points per bandwidth (512 to 2048 points) over the projections' range and b, widened by 3 h."""
    a = min(float(p.min()), b) - 3.0 * h
    c = max(float(p.max()), b) + 3.0 * h
    m = int(np.clip(math.ceil((c - a) / (h / 8.0)) + 1, KDE_GRID_MIN, KDE_GRID_MAX))
    return np.linspace(a, c, m)


def _log_densities(p, w, h, grid, lo=-math.inf, hi=math.inf, eta=1.0, eps=0.0):
    """log KDE and log f_CL at each grid point, by the index's exact kernel sums (``log_penalised_density``).

    Outside the interval [lo, hi] f_CL adds MDH's penalty (eq. 10); with the default (-inf, inf) it is the
    density itself.
    """
    total = float(w.sum())
    coef = float(penalty_coefficient(h, eta, eps)) if math.isfinite(lo) else 0.0
    kbuf = np.empty_like(p)
    log_i = np.empty(grid.size)
    log_f = np.empty(grid.size)
    for j, x in enumerate(grid):
        res = log_penalised_density(p, w, total, h, float(x), lo, hi, coef, eps, kbuf)
        log_f[j], log_i[j] = res[0], res[3]
    return log_i, log_f


def _bandwidth(node: Node, rows: np.ndarray) -> tuple[float, str]:
    h = node.params.get("bandwidth")
    if h is not None and math.isfinite(float(h)) and float(h) > 0:
        return float(h), "recorded"
    data = InMemoryData(rows)
    vals, _ = data.leading_eigenvectors(1)
    return node_bandwidth(None, data, math.sqrt(max(float(vals[0]), 0.0))), "recomputed (Silverman's rule)"


def _density_at_b(ax, b: float, p, w, h, node: Node) -> None:
    density = math.exp(_log_densities(p, w, h, np.array([b]))[0][0])
    recorded = node.stats.get("fval")
    extra = f"; recorded fval {recorded:.3g}" if recorded is not None and math.isfinite(recorded) else ""
    label = f"density at b: {density:.3g}{extra}"
    ax.plot([b], [density], "o", color="black", markersize=5, gid="density-at-b", label=label)


def _mdh_profile(ax, tree: ClusterTree, node: Node, p: np.ndarray, rows: np.ndarray) -> _Profile:
    w = np.ones_like(p)
    h, origin = _bandwidth(node, rows)
    _, mean, sd, _, _ = weighted_moments(p, w)
    alpha = node.params.get("alpha")
    eta = float(node.params.get("eta", 1e-2))
    eps = float(node.params.get("eps", 1.0 - 1e-6))
    if alpha is not None:
        lo, hi = mean - float(alpha) * sd, mean + float(alpha) * sd
    else:
        lo, hi = -math.inf, math.inf
    grid = _kde_grid(p, h, node.rule.b)
    log_i, log_f = _log_densities(p, w, h, grid, lo, hi, eta, eps)
    density = np.exp(log_i)
    ax.plot(grid, density, color="tab:blue", linewidth=1.5, gid="profile", label=f"kernel density (h = {h:.3g})")
    top = float(density.max()) * 1.15
    if alpha is not None:
        ax.axvspan(
            lo,
            hi,
            color="tab:green",
            alpha=0.12,
            gid="alpha-interval",
            label=f"mean \u00b1 \u03b1 sd, \u03b1 = {float(alpha):.3g}",
        )
        outside = np.where((grid < lo) | (grid > hi), np.minimum(np.exp(log_f), 10.0 * top), np.nan)
        ax.plot(grid, outside, ":", color="tab:red", gid="penalised", label="f_CL outside the interval")
    _hyperplane_line(ax, node.rule.b)
    _density_at_b(ax, node.rule.b, p, w, h, node)
    ax.set_ylim(0.0, top)
    ax.set_ylabel("density")
    note = f"bandwidth {origin}"
    if alpha is None:
        note += "; no alpha recorded, interval not drawn"
    return _Profile(note)


def _depddp_profile(ax, tree: ClusterTree, node: Node, p: np.ndarray, rows: np.ndarray) -> _Profile:
    w = np.ones_like(p)
    h, origin = _bandwidth(node, rows)
    grid = _kde_grid(p, h, node.rule.b)
    density = np.exp(_log_densities(p, w, h, grid)[0])
    ax.plot(grid, density, color="tab:blue", linewidth=1.5, gid="profile", label=f"kernel density (h = {h:.3g})")
    _hyperplane_line(ax, node.rule.b)
    _density_at_b(ax, node.rule.b, p, w, h, node)
    ax.set_ylim(0.0, float(density.max()) * 1.15)
    ax.set_ylabel("density")
    return _Profile(f"b at the lowest interior density minimum; bandwidth {origin}")


def _split_points(xs: np.ndarray, min_size: float) -> tuple[np.ndarray, np.ndarray]:
    """Admissible splits of sorted projections: the first index k of the right side, and the split point
    (midpoint of x[k-1] and x[k]), where x[k-1] < x[k] and each side holds at least ``min_size`` rows."""
    k = np.arange(1, xs.size)
    ok = (xs[:-1] < xs[1:]) & (k >= min_size) & (xs.size - k >= min_size)
    k = k[ok]
    return k, 0.5 * (xs[k - 1] + xs[k])


def ncut_profile(p: np.ndarray, scale: float, min_size: float = 1) -> tuple[np.ndarray, np.ndarray]:
    """The normalised cut of every admissible split of the projections p (unit weights): ``(points, ncut)``.

    The same quantity as :func:`lowdens_dask.indices.ncut.ncut_split` minimises (whose module docstring gives
    the formulas; the index exposes only the minimum): Laplace similarity ``exp(-|x - y| / scale)``, the cut
    from the recursions ``A_k = 1 + exp(-(x_k - x_{k-1}) / s) A_{k-1}`` and their mirror, the volumes as
    within-side sums plus the cut.
    """
    xs = np.sort(np.asarray(p, dtype=np.float64))
    n = xs.size
    e = np.zeros(n)
    e[1:] = np.exp(-np.diff(xs) / scale)
    big_a = np.empty(n)
    big_b = np.empty(n)
    a = 0.0
    for k in range(n):
        a = 1.0 + e[k] * a
        big_a[k] = a
    b = 0.0
    for k in range(n - 1, -1, -1):
        b = 1.0 + (e[k + 1] * b if k + 1 < n else 0.0)
        big_b[k] = b
    w_ll = np.cumsum(2.0 * big_a - 1.0)  # W_LL of L = [0, k]
    w_rr = np.cumsum((2.0 * big_b - 1.0)[::-1])[::-1]  # W_RR of R = [k, n)
    k, points = _split_points(xs, min_size)
    cut = big_a[k - 1] * e[k] * big_b[k]
    value = cut * (1.0 / (w_ll[k - 1] + cut) + 1.0 / (w_rr[k] + cut))
    return points, value


def variance_ratio_profile(p: np.ndarray, min_size: float = 1) -> tuple[np.ndarray, np.ndarray]:
    """The variance ratio ``B / (V - B)`` of every admissible split of the projections p (unit weights):
    ``(points, ratio)``, the quantity :func:`lowdens_dask.indices.variance_ratio.variance_ratio_split`
    maximises (the index exposes only the maximum; its module docstring gives B and V)."""
    xs = np.sort(np.asarray(p, dtype=np.float64))
    n = xs.size
    c = xs - xs.mean()
    denom = n - 1.0 if n > 1 else 1.0
    var = float(c @ c) / denom
    k, points = _split_points(xs, min_size)
    s_left = np.cumsum(c)[k - 1]
    between = s_left * s_left / (k * (n - k))  # B = (W_L / W)(m_L - m)^2 + (W_R / W)(m_R - m)^2
    return points, between / np.maximum(var - between, 1e-300)


def _min_size(tree: ClusterTree) -> float:
    return float(tree.params.get("min_size", 1))


def _curve_profile(ax, node: Node, p: np.ndarray, points, values, ylabel: str, best: str) -> None:
    twin = ax.twinx()
    twin.set_gid("histogram")
    twin.hist(p, bins=min(80, max(10, int(np.sqrt(p.size)))), color="0.6", alpha=0.35)
    twin.set_ylabel("rows", color="0.45")
    twin.tick_params(axis="y", colors="0.45", labelsize=8)
    ax.set_zorder(twin.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.plot(points, values, color="tab:purple", linewidth=1.3, gid="profile", label=ylabel)
    if points.size:
        j = int(np.argmin(values) if best == "min" else np.argmax(values))
        ax.plot(points[j], values[j], "o", color="tab:purple", markersize=5, gid="optimum", label=f"{best}imum")
    _hyperplane_line(ax, node.rule.b)
    ax.set_ylabel(ylabel)


def _ncut_profile(ax, tree: ClusterTree, node: Node, p: np.ndarray, rows: np.ndarray) -> _Profile:
    scale = node.params.get("scale")
    origin = "recorded"
    if scale is None:
        vals, _ = InMemoryData(rows).leading_eigenvectors(1)
        scale, origin = ncut_scale(math.sqrt(max(float(vals[0]), 0.0)), p.size), "recomputed (PPCI's default)"
    points, values = ncut_profile(p, float(scale), _min_size(tree))
    _curve_profile(ax, node, p, points, values, "normalised cut", "min")
    return _Profile(f"similarity scale {float(scale):.3g} ({origin})")


def _mc_profile(ax, tree: ClusterTree, node: Node, p: np.ndarray, rows: np.ndarray) -> _Profile:
    points, values = variance_ratio_profile(p, _min_size(tree))
    _curve_profile(ax, node, p, points, values, "variance ratio B / (V - B)", "max")
    return _Profile("")


def _histogram_profile(ax, tree: ClusterTree, node: Node, p: np.ndarray, rows: np.ndarray) -> _Profile:
    b = node.rule.b
    bins = np.histogram_bin_edges(p, bins=min(80, max(10, int(np.sqrt(p.size)))))
    above = p >= b
    ax.hist(
        [p[~above], p[above]],
        bins=bins,
        stacked=True,
        color=list(SIDE_COLOURS),
        label=["v.x < b (child 0)", "v.x >= b (child 1)"],
        gid="profile",
    )
    _hyperplane_line(ax, b)
    ax.set_ylabel("rows")
    notes = {"pddp": "b at the mean of the node's rows along its first principal component"}
    note = notes.get(node.method, "")
    if node.method == "ipddp":
        gap = node.stats.get("gap")
        if gap is not None and math.isfinite(gap):
            ax.axvspan(b - gap / 2, b + gap / 2, color="tab:green", alpha=0.25, gid="gap", label=f"gap {gap:.3g}")
        percentile = node.params.get("percentile")
        if percentile:
            for q in np.quantile(p, [percentile, 1.0 - percentile]):
                ax.axvline(q, color="0.4", linestyle=":", linewidth=1.0, gid="percentile")
            ax.lines[-1].set_label(f"outer {percentile:.0%} each side (not searched)")
        note = "b at the midpoint of the widest gap"
    return _Profile(note)


#: The 1-D profile of each method; any other method gets the histogram.
_PROFILES: dict[str, Callable[..., _Profile]] = {
    "mdh": _mdh_profile,
    "depddp": _depddp_profile,
    "ncut": _ncut_profile,
    "mc": _mc_profile,
    "pddp": _histogram_profile,
    "ipddp": _histogram_profile,
}


# ---------------------------------------------------------------------------------------------- dendrogram
def plot_dendrogram(tree: ClusterTree, *, ax: Any = None) -> Figure:
    """The tree as a :func:`scipy.cluster.hierarchy.dendrogram` of :meth:`ClusterTree.to_linkage`.

    PPCI has no dendrogram; this complements its ``tree_plot``. Leaves are labelled ``"<cluster label>
    (node <id>)"`` (``tree.leaf_labels()``), each split is annotated with its node id, and the height of a
    split is the height of its subtree (``to_linkage``). Draws into ``ax`` if given (and returns its figure).
    A tree with a single leaf has no dendrogram: ValueError.
    """
    if not isinstance(tree, ClusterTree):
        raise TypeError(f"tree must be a ClusterTree; got {type(tree).__name__}.")
    if tree.n_leaves < 2:
        raise ValueError("The tree has no split to plot: it is a single leaf (a dendrogram needs two leaves).")
    from scipy.cluster.hierarchy import dendrogram

    leaf_labels = tree.leaf_labels()
    by_label = sorted(leaf_labels.items(), key=lambda item: item[1])
    names = [f"{label} (node {leaf})" for leaf, label in by_label]
    if ax is None:
        fig = Figure(figsize=(max(5.0, 0.6 * len(names) + 2.0), 4.5))
        fig.set_layout_engine("constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.get_figure()
    many = len(names) > 8
    out = dendrogram(
        tree.to_linkage(),
        ax=ax,
        labels=names,
        leaf_rotation=90.0 if many else 0.0,
        leaf_font_size=8 if many else 9,
        color_threshold=0.0,
        above_threshold_color="tab:blue",
    )
    # scipy places leaf i (left to right) at 5 + 10 i and a merge midway between its two children.
    x = {leaf: 5.0 + 10.0 * out["leaves"].index(label) for leaf, label in leaf_labels.items()}
    height = dict.fromkeys(leaf_labels, 0.0)
    for node in reversed(list(tree)):
        if node.is_leaf:
            continue
        a, b = node.children
        x[node.id] = 0.5 * (x[a] + x[b])
        height[node.id] = max(height[a], height[b]) + 1.0
        ax.annotate(
            f"node {node.id}",
            (x[node.id], height[node.id]),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=8,
            gid=f"split-{node.id}",
        )
    ax.set_ylim(0.0, max(height.values()) + 0.6)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("levels of splits below")
    ax.set_xlabel("cluster label (leaf node id)")
    ax.set_title(f"Cluster tree: {tree.method}, {len(names)} leaves", fontsize=11)
    return fig


# ---------------------------------------------------------------------------------------------- save_plots
def save_plots(
    tree: ClusterTree, X, out_dir, *, labels=None, max_points: int = 2000, random_state: int | None = 0
) -> dict[str, Path]:
    """Write every plot of the tree as a PNG into ``out_dir`` (created if missing): ``tree.png``
    (:func:`plot_tree`), ``dendrogram.png`` (:func:`plot_dendrogram`) and ``node-<id>.png``
    (:func:`plot_node`) for every split node (PPCI's ``plot.ppci`` for the whole solution).

    One random sample of at most ``max_points`` rows of X serves every figure (so Dask or zarr input is read
    once). Each figure is cleared after it is written (no pyplot registry holds it). Returns the file name without its suffix (``"tree"``,
    ``"dendrogram"``, ``"node-0"``, ...) -> path.
    """
    nodes = _internal_nodes(tree)
    sample = _sample(tree, X, labels, max_points, random_state)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[str, Callable[[], Figure]]] = [
        ("tree", lambda: _tree_figure(tree, nodes, sample)),
        ("dendrogram", lambda: plot_dendrogram(tree)),
    ]
    jobs += [(f"node-{node.id}", lambda node=node: _node_figure(tree, node, sample)) for node in nodes]
    written: dict[str, Path] = {}
    for name, make in jobs:
        fig = make()
        path = out_dir / f"{name}.png"
        try:
            fig.savefig(path, dpi=110)
        finally:
            fig.clear()
        written[name] = path
    return written
