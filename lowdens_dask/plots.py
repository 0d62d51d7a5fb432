"""Plots of a fitted :class:`~lowdens_dask.tree.ClusterTree`, after PPCI's ``plot.ppci`` (``tree_plot`` and
``node_plot``), with matplotlib's object API (``matplotlib.figure.Figure``; no pyplot state, so they work
headless and in notebooks).

- :func:`plot_tree`: one panel per internal node, its rows on the coordinate its split thresholds (the
  projection on the node's normal v, or a kernel split's decision function f) and on the leading direction
  orthogonal to v (the first principal component of the node's rows for a kernel split), with the split
  (PPCI's ``tree_plot``, laid out as a grid); a nearest-projected-centre split shows its projection;
- :func:`plot_node`: the node's index along its projection, as the index draws it
  (:meth:`~lowdens_dask.indices.ProjectionIndex.profile`): the kernel density (and MDH's penalised density)
  for the density indices, the normalised cut or the variance ratio as a function of the split point, the
  histogram for PDDP, iPDDP and the splits no projection index describes (PPCI's ``node_plot``);
- :func:`plot_dendrogram`: the tree as a scipy dendrogram;
- :func:`plot_shares`: after an update (``partial_fit``), each cluster's share of the rows seen before and of the
  new rows, from the update's report;
- :func:`save_plots`: all of them as PNG files.

After an update, the tree plot and the dendrogram mark the nodes the update changed (:meth:`ClusterTree.changed_nodes`):
split nodes whose split was re-pursued, made or merged back into at the tree's latest update.

The tree stores no rows: every plot takes the data X (a numpy array, a Dask array, a zarr array or a zarr
path), draws a random sample of at most ``max_points`` of its rows (rows with NaN or inf are then skipped)
and routes the sample down the tree with the nodes' own split rules. Only the sampled rows are read from
Dask or zarr input. True labels keep one colour each in every figure: the colours follow the sorted
distinct values of all the labels given.

This module sits above the tree layer and imports matplotlib; ``import lowdens_dask`` does not import it
(the public names resolve to this module on first use).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dataclasses
import gc
import math
import os
import textwrap
import warnings
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
from matplotlib.ticker import MaxNLocator, PercentFormatter

from ._warnings import warn
from .backend import InMemoryData, as_dask_array
from .indices import INDICES
from .indices.base import Profile
from .tree import ClusterTree, HyperplaneRule, NearestCentreRule, Node, format_stats

__all__ = ["plot_dendrogram", "plot_node", "plot_shares", "plot_tree", "save_plots"]

#: Colours of the two sides of a split (child 0: below the split, child 1: at or above it) without labels.
SIDE_COLOURS = ("tab:blue", "tab:orange")
#: The colour that marks what the tree's latest update changed.
CHANGED_COLOUR = "tab:red"

_STAT_NAMES = {
    "fval": "fval",
    "relative_depth": "rel. depth",
    "gap": "gap",
    "p_value": "dip test",
    "n_test": "test rows",
    "d_eff": "eff. dim.",
}


# ---------------------------------------------------------------------------------------------- input
class _Palette(NamedTuple):
    """One colour per distinct true label (sorted), the same in every figure of a run."""

    classes: np.ndarray
    colours: list

    @classmethod
    def of(cls, labels) -> _Palette:
        classes = np.unique(labels.compute() if isinstance(labels, da.Array) else labels)
        k = len(classes)
        if k <= 10:
            colours = [colormaps["tab10"](i) for i in range(k)]
        elif k <= 20:
            colours = [colormaps["tab20"](i) for i in range(k)]
        else:
            colours = [colormaps["turbo"](i / (k - 1)) for i in range(k)]
        return cls(classes, colours)


class _Sample(NamedTuple):
    """Finite sampled rows of X, their true labels' class indices (or None), and the rows reaching each node."""

    rows: np.ndarray  #: (m, d) float64, finite
    codes: np.ndarray | None  #: (m,) index into ``palette.classes`` of each row's true label, or None
    palette: _Palette | None
    routes: dict[int, np.ndarray]  #: node id -> indices into ``rows`` of the rows that reach it
    n_total: int  #: rows of X


def _internal_nodes(tree: ClusterTree) -> list[Node]:
    """The split nodes, level by level (depth first, then tree order); a clear error without any."""
    if not isinstance(tree, ClusterTree):
        raise TypeError(f"tree must be a ClusterTree (e.g. a fitted estimator's tree_); got {type(tree).__name__}.")
    nodes = [node for node in tree if not node.is_leaf]
    if not nodes:
        raise ValueError("The tree has no split to plot: it is a single leaf.")
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
    or zarr input as sorted row indices; rows with NaN or inf skipped; routed down the tree. The palette covers
    every distinct label given, sampled or not."""
    max_points = _check_max_points(max_points)
    X = _as_array(X, tree.n_features)
    n = int(X.shape[0])
    palette = None
    if labels is not None:
        labels = labels if isinstance(labels, da.Array) else np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != n:
            raise ValueError(f"labels must have one entry per row of X ({n}); got shape {labels.shape}.")
        palette = _Palette.of(labels)
    if n <= max_points:
        idx = np.arange(n)
    else:
        idx = np.sort(np.random.default_rng(random_state).choice(n, size=max_points, replace=False))
    chunked = isinstance(X, da.Array)
    full = idx.size == n
    rows = X if full else X[idx]
    rows = np.asarray(rows.compute() if chunked else rows, dtype=np.float64)
    codes = None
    if labels is not None:
        labels = labels if full else labels[idx]
        labels = np.asarray(labels.compute() if isinstance(labels, da.Array) else labels)
        codes = np.searchsorted(palette.classes, labels)
    finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        rows = rows[finite]
        codes = None if codes is None else codes[finite]
    rows = np.ascontiguousarray(rows)
    return _Sample(rows, codes, palette, _route(tree, rows), n)


# ---------------------------------------------------------------------------------------------- helpers
def _orthogonal_direction(Z: np.ndarray, v: np.ndarray | None) -> np.ndarray:
    """The first principal direction of the rows Z after removing their component along v (unit, orthogonal
    to v, largest-magnitude entry positive; without v, Z's first principal direction); a zero vector when the
    rows have no such spread."""
    v = np.zeros(Z.shape[1]) if v is None else v
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


def _stats_text(node: Node, update: int) -> str:
    parts = format_stats(node.stats, _STAT_NAMES, digits=3)
    recorded = "recorded at fit" if not update else "recorded (fit or update)"
    return f"{recorded}: " + ", ".join(parts) if parts else "no statistics recorded"


def _node_title(node: Node, shown: int, update: int, width: int = 60) -> str:
    """A panel's title: the node, its size at the tree's fit or latest ``update``, and its statistics."""
    forced = " (forced)" if node.forced else ""
    when = "fit" if not update else f"update {update}"
    head = f"node {node.id}: {node.method}{forced}, {node.size:g} rows at {when} ({shown} shown)"
    return "\n".join([head, *textwrap.wrap(_stats_text(node, update), width)])


def _split_line(ax, rule) -> None:
    """The split's threshold as a dashed vertical line (gid ``hyperplane``)."""
    t = rule.threshold
    label = f"b = {t:.4g}" if isinstance(rule, HyperplaneRule) else f"{rule.coordinate_label} = {t:.4g}"
    ax.axvline(t, color="black", linestyle="--", linewidth=1.2, gid="hyperplane", label=label)


def _grid_shape(k: int) -> tuple[int, int]:
    ncols = min(k, 3)
    return math.ceil(k / ncols), ncols


def _scatter(ax, x, y, sample: _Sample, idx: np.ndarray, above: np.ndarray, size: float, alpha: float) -> None:
    """Points coloured by side (gid ``side-<0|1>``) or, with labels, by true label (gid ``label-<class index>``)."""
    if sample.palette is None:
        for side in (0, 1):
            keep = above if side else ~above
            ax.scatter(x[keep], y[keep], s=size, color=SIDE_COLOURS[side], alpha=alpha, linewidths=0,
                       gid=f"side-{side}")  # fmt: skip
        return
    codes = sample.codes[idx]
    for c, colour in enumerate(sample.palette.colours):
        keep = codes == c
        if keep.any():
            ax.scatter(x[keep], y[keep], s=size, color=colour, alpha=alpha, linewidths=0, gid=f"label-{c}")


def _unplotted(ax, node: Node, error: Exception, skipped: dict[str, str], where: str) -> None:
    """A split that cannot be drawn: a note in its axes, a warning, and an entry in ``skipped``."""
    reason = f"{type(error).__name__}: {error}"
    skipped[where] = reason
    warn(f"{where} (node {node.id}, a {getattr(node.rule, 'kind', '?')!r} split) cannot be drawn: {reason}")
    ax.text(0.5, 0.5, textwrap.fill(f"cannot be drawn: {reason}", 40), transform=ax.transAxes, ha="center",
            va="center", fontsize=8)  # fmt: skip


# ---------------------------------------------------------------------------------------------- plot_tree
def plot_tree(tree: ClusterTree, X, *, labels=None, max_points: int = 2000, random_state: int | None = 0) -> Figure:
    """The rows at every split node on the node's split (PPCI's ``tree_plot``, as a grid of panels).

    One panel per internal node, level by level: the node's rows among a random sample of at most
    ``max_points`` rows of X (rows with NaN/inf skipped), on the coordinate the split thresholds (x axis: the
    projection on the node's normal v, or a kernel split's decision function f(x)) and on the first principal
    component of those rows orthogonal to v (y axis; for a kernel split, of the rows themselves), with the
    split ``v.x = b`` (``f(x) = 0``) as a dashed vertical line; titled with the node's id, method, size at fit
    (``node.size``) and recorded statistics (``fval``, ...). A nearest-projected-centre split (SCPP, LMSC)
    shows its projection and its projected microcluster centres. A panel that cannot be drawn says why (and
    a warning is issued). After an update (``partial_fit``), the panels of the splits the latest update changed
    (:meth:`ClusterTree.changed_nodes`) are framed in red and say so (text gid ``changed``).

    Points are coloured by the side of the split (child 0 below it, child 1 at or above it); with ``labels``
    (the true label of each row of X) they are coloured by true label instead (the side is then given by the
    dashed line), with one legend for the figure.

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
    return _tree_figure(tree, nodes, _sample(tree, X, labels, max_points, random_state), {})


def _tree_figure(tree: ClusterTree, nodes: list[Node], sample: _Sample, skipped: dict[str, str]) -> Figure:
    palette = sample.palette
    changed = set(tree.changed_nodes())
    shown = sample.rows.shape[0]
    title = f"Cluster tree ({tree.method}, {tree.n_leaves} leaves): {shown} of {sample.n_total} rows shown"
    if tree.n_updates:
        n_changed = sum(node.id in changed for node in nodes)
        title += f"\nafter update {tree.n_updates}: {n_changed} of the {len(nodes)} splits changed by it (framed in red)"
    titles = [_node_title(node, sample.routes[node.id].size, tree.n_updates) for node in nodes]
    legend_columns = 0 if palette is None else 1 if len(palette.classes) <= 25 else 2
    fig, axes, legend_at = _tree_grid(
        len(nodes), max(t.count("\n") + 1 for t in titles), title.count("\n") + 1, legend_columns
    )
    size = 10.0 if shown <= 1000 else 5.0
    for ax, node, panel_title in zip(axes, nodes, titles):
        idx = sample.routes[node.id]
        ax.set_title(panel_title, fontsize=9)
        ax.set_gid(f"node-{node.id}")
        ax.tick_params(labelsize=8)
        try:
            _tree_panel(ax, node, sample, idx, size)
        except Exception as error:  # noqa: BLE001 - one panel must not cost the figure
            _unplotted(ax, node, error, skipped, f"tree, panel of node {node.id}")
        if node.id in changed:
            _mark_changed(ax, tree.n_updates)
    fig.suptitle(title, fontsize=11, y=1.0 - _TREE_FIGURE["pad"] / fig.get_size_inches()[1], va="top")
    kinds = {"hyperplane": "v.x = b", "kernel-expansion": "f(x) = 0"}
    drawn = [text for kind, text in kinds.items() if any(node.rule.kind == kind for node in nodes)]
    line = Line2D([], [], color="black", linestyle="--", label=f"split {' or '.join(drawn)}")
    if palette is None:
        handles = [
            Line2D([], [], linestyle="", marker="o", color=SIDE_COLOURS[0], label="below the split (child 0)"),
            Line2D([], [], linestyle="", marker="o", color=SIDE_COLOURS[1], label="at or above it (child 1)"),
            line,
        ]
        fig.legend(handles=handles, loc="lower center", bbox_to_anchor=legend_at, ncols=3, fontsize=9, frameon=False)
    else:
        handles = [
            Line2D([], [], linestyle="", marker="o", color=c, label=str(k))
            for k, c in zip(palette.classes, palette.colours)
        ]
        fig.legend(
            handles=[*handles, line],
            loc="upper left",
            bbox_to_anchor=legend_at,
            title="true label",
            fontsize=8,
            title_fontsize=9,
            ncols=legend_columns,
            frameon=False,
        )
    return fig


#: The tree figure's fixed layout, in inches: a panel's size; its margins left and below (tick labels and axis
#: labels) and right; a line of a panel's title (fontsize 9) and of the figure's (11); the room above each; a
#: column of the labels' legend, and the row of the sides' legend below the panels.
_TREE_FIGURE = {"panel_width": 4.4, "panel_height": 3.9, "left": 0.7, "bottom": 0.5, "right": 0.45, "title_line": 0.15,
                "suptitle_line": 0.22, "pad": 0.1, "legend_column": 1.6, "legend_row": 0.4}  # fmt: skip


def _tree_grid(n_panels: int, title_lines: int, suptitle_lines: int, legend_columns: int):
    """The tree figure and its panels' axes, at fixed margins sized for the titles' lines and the legend (a column
    of the labels on the right, ``legend_columns`` of them; else a row of the sides below): no layout engine is
    needed (the constrained layout took about a third of the figure's drawing time). Returns the figure, the axes
    of the panels, and where the legend goes (figure coordinates)."""
    size = _TREE_FIGURE
    nrows, ncols = _grid_shape(n_panels)
    legend_width = size["legend_column"] * legend_columns
    legend_height = 0.0 if legend_columns else size["legend_row"]
    above = size["pad"] + size["suptitle_line"] * suptitle_lines  # the figure's title
    header = size["pad"] + size["title_line"] * title_lines  # each panel's
    width = ncols * size["panel_width"] + legend_width
    height = nrows * size["panel_height"] + above + legend_height
    fig = Figure(figsize=(width, height))
    cell_width, cell_height = size["panel_width"], size["panel_height"]
    axes_width = cell_width - size["left"] - size["right"]
    axes_height = cell_height - size["bottom"] - header
    grid = fig.add_gridspec(
        nrows,
        ncols,
        left=size["left"] / width,
        right=(ncols * cell_width - size["right"]) / width,
        top=1.0 - (above + header) / height,
        bottom=(legend_height + size["bottom"]) / height,
        wspace=(size["left"] + size["right"]) / axes_width,
        hspace=(size["bottom"] + header) / axes_height,
    )
    axes = [fig.add_subplot(grid[i // ncols, i % ncols]) for i in range(n_panels)]
    legend_at = ((ncols * cell_width + 0.05) / width, 1.0 - above / height) if legend_columns else (0.5, 0.0)
    return fig, axes, legend_at


def _mark_changed(ax, update: int) -> None:
    """A panel of a split the tree's latest update changed: a thick frame and a note (gid ``changed``)."""
    for spine in ax.spines.values():
        spine.set_edgecolor(CHANGED_COLOUR)
        spine.set_linewidth(2.5)
    box = {"facecolor": "white", "alpha": 0.8, "edgecolor": "none"}
    ax.text(0.02, 0.98, f"changed at update {update}", transform=ax.transAxes, ha="left", va="top", fontsize=8,
            color=CHANGED_COLOUR, gid="changed", bbox=box)  # fmt: skip


def _tree_panel(ax, node: Node, sample: _Sample, idx: np.ndarray, size: float) -> None:
    Z = sample.rows[idx]
    if isinstance(node.rule, NearestCentreRule):
        _centres_panel(ax, node, Z, sample, idx, size)
        return
    rule = node.rule
    x = rule.coordinate(Z)
    y = Z @ _orthogonal_direction(Z, rule.normal)
    _scatter(ax, x, y, sample, idx, x >= rule.threshold, size, 0.6 if sample.palette is None else 0.7)
    _split_line(ax, rule)
    if idx.size == 0:
        ax.text(0.5, 0.5, "no sampled rows reach this node", transform=ax.transAxes, ha="center", va="center")
    ax.set_xlabel(rule.coordinate_label, fontsize=9)
    ax.set_ylabel("first PC orthogonal to v" if rule.normal is not None else "first PC of the node's rows", fontsize=9)


def _centres_panel(ax, node: Node, Z: np.ndarray, sample: _Sample, idx: np.ndarray, size: float) -> None:
    """A nearest-projected-centre split (SCPP, LMSC): the rows on the split's projection (its first two
    columns; with one column, the first PC orthogonal to it as y), coloured by side or by true label, and
    the projected microcluster centres marked by their side (x: child 0, +: child 1)."""
    rule = node.rule
    V = rule.V
    P = Z @ V
    C = rule.centres
    if V.shape[1] == 1:
        w = _orthogonal_direction(Z, V[:, 0] / np.linalg.norm(V[:, 0]))
        P = np.column_stack([P[:, 0], Z @ w])
        C = np.column_stack([C[:, 0], np.full(len(C), np.median(P[:, 1]) if len(P) else 0.0)])
    above = rule.side(Z) if len(Z) else np.zeros(0, bool)
    _scatter(ax, P[:, 0], P[:, 1], sample, idx, above, size, 0.5 if sample.palette is None else 0.6)
    for side, marker in enumerate("x+"):  # in black where the colours are the labels'
        colour = SIDE_COLOURS[side] if sample.palette is None else "black"
        keep = rule.sides == bool(side)
        ax.scatter(C[keep, 0], C[keep, 1], marker=marker, s=18, color=colour, linewidths=1.0, alpha=0.7,
                   gid=f"centres-{side}")  # fmt: skip
    ax.set_xlabel("projection, column 1", fontsize=9)
    ax.set_ylabel("projection, column 2" if V.shape[1] > 1 else "first PC orthogonal to it", fontsize=9)


# ---------------------------------------------------------------------------------------------- plot_node
def plot_node(
    tree: ClusterTree, node: int | Node, X, *, labels=None, max_points: int = 20000, random_state: int | None = 0
) -> Figure:
    """The node's projection index along its split coordinate (PPCI's ``node_plot``), from the node's rows among
    a random sample of at most ``max_points`` rows of X (rows with NaN/inf skipped).

    The top panel is drawn by the node's projection index (:meth:`~lowdens_dask.indices.ProjectionIndex.profile`,
    the index set up from the node's recorded parameters; any it does not record, e.g. in a tree written by
    hand, recomputed from the rows by the index's default rule):

    - ``mdh``: the Gaussian kernel density of the projections with the recorded ``bandwidth`` (solid) and MDH's
      penalised density f_CL (eq. 10, dotted, with the recorded ``alpha``, ``eta``, ``eps``), the interval
      ``[mean - alpha sd, mean + alpha sd]`` of these rows' projections shaded;
    - ``depddp``: the kernel density with the recorded bandwidth, b at its lowest interior minimum;
    - ``ncut``: the normalised cut of the split at each point between consecutive distinct projections, with
      the recorded similarity ``scale`` (splits leaving less than the tree's ``min_size`` on a side are left
      out, as the index does), over a faint histogram of the projections;
    - ``mc``: the variance ratio ``B / (V - B)`` of the split at each such point, likewise;
    - ``pddp``, ``ipddp`` and the splits no projection index describes (SVM-relabel and MSC's kernel splits
      along their decision function f(x), SCPP/LMSC hyperplanes): the histogram of the coordinate by side
      (iPDDP: the widest gap shaded and the outer ``percentile`` of the rows on each side marked). A
      nearest-projected-centre split shows its projection and projected centres instead.

    The curves are those of the sampled rows, with unit weights. The node's statistics in the title are those
    recorded at fit, on the points the split was fitted on: with all of the node's rows (exact mode) they are
    the curve's value at b; in summary mode they are the microclusters' (MDH's ``fval`` with the bandwidth
    widened by their spread, which the curve of the rows also uses), so they differ, and the legend gives the
    rows' own value at b. A tree fitted with ``standardize=True`` records its bandwidth or scale in the
    standardised coordinates, which the tree does not keep, so the profile of such a node uses the wrong
    bandwidth/scale.

    With ``labels`` (true labels of the rows of X) a second panel underneath shows the histogram of the
    coordinate stacked by true label.

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
    sampled = f"sample of {sample.rows.shape[0]} of the {sample.n_total} rows of X"
    if isinstance(node.rule, NearestCentreRule):  # no one-dimensional profile: the projection itself
        fig = Figure(figsize=(7.0, 5.6))
        fig.set_layout_engine("constrained")
        ax = fig.subplots(1, 1)
        _centres_panel(ax, node, sample.rows[idx], sample, idx, 8.0)
        head = _node_title(node, idx.size, tree.n_updates, 90)
        ax.set_title(f"{head}\n{sampled}; projected microclusters: x to child 0, + to child 1", fontsize=10)
        ax.set_gid("profile")
        return fig
    rule = node.rule
    rows = sample.rows[idx]
    p = rule.coordinate(rows)
    with_labels = sample.palette is not None
    profile = _profile(tree, node, p, rows) if p.size >= 2 else None
    note = "too few rows to draw a profile" if profile is None else profile.note
    title = "\n".join(
        [_node_title(node, p.size, tree.n_updates, 100), *textwrap.wrap(f"{sampled}; {note}" if note else sampled, 100)]
    )
    twin = profile is not None and bool(profile.curves)  # the histogram's own axis, on the right
    fig = Figure(figsize=(_NODE_FIGURE["width"], 7.2 if with_labels else 4.8))
    ax, ax_labels, legend_x = _node_axes(fig, title.count("\n") + 1, twin, with_labels)
    ax.set_gid("profile")
    if profile is None:
        ax.text(0.5, 0.5, f"{p.size} sampled row(s) reach this node", transform=ax.transAxes, ha="center")
        _split_line(ax, rule)
    else:
        _draw_profile(ax, profile, p, rule)
    ax.set_title(title, fontsize=9)
    # beside the axes and the twin's ticks, not over them: loc="best" sees none of the histogram drawn on the twin
    # axes, and covered it
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(legend_x, 1.0), borderaxespad=0.0, frameon=False)
    if ax_labels is None:
        ax.set_xlabel(rule.coordinate_label)
    else:
        _labels_histogram(ax_labels, p, sample, idx, rule, legend_x)
    return fig


#: The node figure's fixed layout, in inches: its width; the margins left of the axes and below them; the room
#: right of the axes for a twin axis' ticks and label, or without one; the legends' column; the gap between the
#: profile and the labels histogram; a line of the title (fontsize 9) and the room above it.
_NODE_FIGURE = {"width": 9.4, "left": 0.8, "bottom": 0.55, "twin": 0.65, "no_twin": 0.1, "legends": 2.85,
                "gap": 0.5, "title_line": 0.155, "title_pad": 0.15}  # fmt: skip


def _node_axes(fig: Figure, title_lines: int, twin: bool, with_labels: bool):
    """The node figure's axes, the profile's and (``with_labels``) the labels histogram's under it sharing its x
    axis, at fixed margins sized for the title's lines, the twin axis' ticks and the legends' column: no layout
    engine is needed (the constrained layout took about a third of the figure's drawing time). Returns the two
    axes (None for the second without labels) and where the legends start, in the profile axes' x coordinates."""
    size = _NODE_FIGURE
    width, height = fig.get_size_inches()
    right = size["twin"] if twin else size["no_twin"]
    axes_width = width - size["left"] - right - size["legends"]
    top = size["title_pad"] + size["title_line"] * title_lines
    panels = height - top - size["bottom"] - (size["gap"] if with_labels else 0.0)
    grid = fig.add_gridspec(
        2 if with_labels else 1,
        1,
        height_ratios=(3, 2) if with_labels else None,
        left=size["left"] / width,
        right=(size["left"] + axes_width) / width,
        bottom=size["bottom"] / height,
        top=1.0 - top / height,
        hspace=size["gap"] / (panels / 2) if with_labels else 0.0,
    )
    ax = fig.add_subplot(grid[0])
    ax_labels = None
    if with_labels:
        ax_labels = fig.add_subplot(grid[1], sharex=ax)
        ax.tick_params(labelbottom=False)
    return ax, ax_labels, 1.0 + (right + 0.05) / axes_width


def _profile(tree: ClusterTree, node: Node, p: np.ndarray, rows: np.ndarray) -> Profile:
    """The node's projection index along p, set up from the node's recorded parameters (those it lacks from the
    rows); a split that no projection index describes gets the histogram."""
    index_type = INDICES.get(node.method)
    if index_type is None or not isinstance(node.rule, HyperplaneRule):
        rule = node.rule
        return Profile(note=f"a {rule.kind} split: rows with {rule.coordinate_label} >= {rule.threshold:g} go to "
                            "child 1")  # fmt: skip
    data = InMemoryData(rows)
    vals, vecs = data.leading_eigenvectors(1)
    setup = {key: node.params[key] for key in index_type.setup_params if key in node.params}
    with warnings.catch_warnings():  # the set-up's warnings were given at fit
        warnings.simplefilter("ignore", UserWarning)
        index = index_type.for_node(data, vals, vecs, min_size=float(tree.params.get("min_size", 1)), **setup)
    profile = index.profile(p, np.ones_like(p), node.rule.b, node.params)
    missing = sorted(set(index.record) - set(node.params))
    if missing:
        note = f"{', '.join(missing)} not recorded: recomputed from these rows by the index's default rule"
        profile = dataclasses.replace(profile, note=f"{note}; {profile.note}" if profile.note else note)
    return profile


def _bins(p: np.ndarray) -> np.ndarray:
    return np.histogram_bin_edges(p, bins=min(80, max(10, int(np.sqrt(p.size)))))


def _draw_profile(ax, profile: Profile, p: np.ndarray, rule) -> None:
    """The profile's curves (over a faint histogram of p) or, without curves, the histogram of p by side; its
    spans and lines, the split, and the curve's value at it."""
    t = rule.threshold
    if profile.curves:
        twin = ax.twinx()
        twin.set_gid("histogram")
        _stacked_histogram(twin, [p], _bins(p), ["0.6"], alpha=0.3)
        twin.set_ylabel("rows", color="0.45")
        twin.tick_params(axis="y", colors="0.45", labelsize=8)
        ax.set_zorder(twin.get_zorder() + 1)
        ax.patch.set_visible(False)
        (gid, (label, y)), *others = profile.curves.items()
        ax.plot(profile.x, y, color="tab:purple", linewidth=1.5, gid=gid, label=label)
        ylim = ax.get_ylim()  # the index's own curve sets the scale
        for i, (gid, (label, other)) in enumerate(others):
            ax.plot(profile.x, other, color=f"C{i + 3}", linestyle=":", gid=gid, label=label)
        ax.set_ylim(ylim)
        if profile.best and y.size:
            j = int(np.argmin(y) if profile.best == "min" else np.argmax(y))
            label = f"{profile.best}imum on these rows: {y[j]:.3g}"
            ax.plot(profile.x[j], y[j], "o", color="tab:purple", markersize=5, gid="optimum", label=label)
    else:
        above = p >= t
        _stacked_histogram(ax, [p[~above], p[above]], _bins(p), list(SIDE_COLOURS),
                           labels=["below the split (child 0)", "at or above it (child 1)"])  # fmt: skip
    for gid, (label, (lo, hi)) in profile.spans.items():
        ax.axvspan(lo, hi, color="tab:green", alpha=0.15, gid=gid, label=label)
    for gid, (label, xs) in profile.lines.items():
        for j, x in enumerate(xs):
            ax.axvline(x, color="0.4", linestyle=":", linewidth=1.0, gid=gid, label=None if j else label)
    _split_line(ax, rule)
    if profile.at_b is not None:
        label, value = profile.at_b
        ax.plot([t], [value], "o", color="black", markersize=5, gid="at-b", label=f"{label}: {value:.3g}")
    ax.set_ylabel(profile.ylabel)


def _stacked_histogram(ax, groups, bins, colours, *, labels=None, gids=None, alpha: float = 1.0) -> None:
    """Histograms of the groups stacked, each as one filled step outline (a ``StepPatch`` whose values less its
    baseline are the group's counts): ``ax.hist``'s stacked bars drew one rectangle per bin and group, which took
    most of a node figure's time."""
    base = np.zeros(len(bins) - 1)
    for i, group in enumerate(groups):
        top = base + np.histogram(group, bins=bins)[0]
        ax.stairs(top, bins, baseline=base, fill=True, color=colours[i], alpha=alpha,
                  label=None if labels is None else labels[i], gid=None if gids is None else gids[i])  # fmt: skip
        base = top


def _labels_histogram(ax, p: np.ndarray, sample: _Sample, idx: np.ndarray, rule, legend_x: float) -> None:
    """The coordinate stacked by true label, in the run's colours (the bars of class c have gid ``label-<c>``), the
    legend at ``legend_x`` (axes coordinates)."""
    ax.set_gid("labels")
    codes, palette = sample.codes[idx], sample.palette
    present = np.unique(codes)
    _stacked_histogram(ax, [p[codes == c] for c in present], _bins(p), [palette.colours[c] for c in present],
                       gids=[f"label-{c}" for c in present])  # fmt: skip
    _split_line(ax, rule)
    ax.set_xlabel(rule.coordinate_label)
    ax.set_ylabel("rows")
    ax.set_title("by true label", fontsize=10)
    handles = [Patch(color=palette.colours[c], label=str(palette.classes[c])) for c in present]
    ax.legend(
        handles=handles,
        title="true label",
        fontsize=7,
        title_fontsize=8,
        loc="upper left",
        bbox_to_anchor=(legend_x, 1.0),
        ncols=1 if len(present) <= 15 else 2,
        frameon=False,
    )


# ---------------------------------------------------------------------------------------------- dendrogram
def plot_dendrogram(tree: ClusterTree, *, ax: Any = None) -> Figure:
    """The tree as a :func:`scipy.cluster.hierarchy.dendrogram` of :meth:`ClusterTree.to_linkage`.

    PPCI has no dendrogram; this complements its ``tree_plot``. Leaves are labelled ``"<cluster label>
    (node <id>)"`` (``tree.leaf_labels()``), each split is annotated with its node id (in red, and saying so, for a
    split the tree's latest update changed), and the height of a split is the height of its subtree
    (``to_linkage``). Draws into ``ax`` if given (and returns its figure).
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
    # observation i of the linkage is the leaf with the i-th smallest label (labels need not be 0..K-1)
    observation = {leaf: i for i, (leaf, _) in enumerate(by_label)}
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
    x = {leaf: 5.0 + 10.0 * out["leaves"].index(observation[leaf]) for leaf in leaf_labels}
    changed = set(tree.changed_nodes())
    height = dict.fromkeys(leaf_labels, 0.0)
    for node in reversed(list(tree)):
        if node.is_leaf:
            continue
        a, b = node.children
        x[node.id] = 0.5 * (x[a] + x[b])
        height[node.id] = max(height[a], height[b]) + 1.0
        ax.annotate(
            f"node {node.id}" + (f", changed at update {tree.n_updates}" if node.id in changed else ""),
            (x[node.id], height[node.id]),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=8,
            color=CHANGED_COLOUR if node.id in changed else "black",
            gid=f"split-{node.id}",
        )
    ax.set_ylim(0.0, max(height.values()) + 0.6)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("levels of splits below")
    ax.set_xlabel("cluster label (leaf node id)")
    ax.set_title(f"Cluster tree: {tree.method}, {len(names)} leaves", fontsize=11)
    return fig


# ---------------------------------------------------------------------------------------------- plot_shares
def plot_shares(report: dict) -> Figure:
    """Each cluster's share of the rows seen before an update and of the update's new rows, as paired bars by
    cluster id, from the update's report (``partial_fit``'s ``update_report_``, a run's ``metrics["update"]``).

    The bars of the rows before have gid ``before``, those of the new rows gid ``new``; a cluster the update made
    (a split's new cluster) is marked "new" above its bars (gid ``new-cluster-<id>``). The title gives the update's
    number, the clusters before and after, and the partition's drift (PSI and the chi-square test of the new
    rows' counts against the shares before). A report without leaves (the first call, a fit) is a ValueError.
    """
    leaves = report.get("leaves") or []
    if not leaves:
        raise ValueError("The report has no per-cluster shares: it is a fit's (update 0), not an update's.")
    ids = [leaf["label"] for leaf in leaves]
    before = np.array([leaf["share_before"] or 0.0 for leaf in leaves])  # None: no old weight left (no bar)
    new = np.array([leaf["share_new"] for leaf in leaves])
    made = {
        node["new_label"] for node in report.get("nodes", []) if node.get("action") == "split" and "new_label" in node
    }
    fig = Figure(figsize=(max(5.0, 0.7 * len(ids) + 2.5), 4.2))
    fig.set_layout_engine("constrained")
    ax = fig.add_subplot()
    x = np.arange(len(ids))
    ax.bar(x - 0.2, before, width=0.4, color="0.6", label="rows seen before", gid="before")
    ax.bar(x + 0.2, new, width=0.4, color="tab:blue", label=f"new rows ({report['n_rows']:,})", gid="new")
    for i, label in enumerate(ids):
        if label in made:
            ax.annotate("new", (x[i], max(before[i], new[i])), xytext=(0, 3), textcoords="offset points",
                        ha="center", fontsize=8, color=CHANGED_COLOUR, gid=f"new-cluster-{label}")  # fmt: skip
    ax.set_xticks(x, [str(label) for label in ids])
    ax.set_xlabel("cluster id")
    ax.set_ylabel("share of the rows")
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(0.0, 1.15 * max(before.max(), new.max()))
    ax.legend(fontsize=8, frameon=False, loc="upper center", ncols=2)
    title = f"Update {report['update']}: {report['n_clusters_before']} clusters before, {report['n_clusters']} now"
    drift = report.get("drift")
    if drift:
        title += (f"\ndrift: PSI {drift['psi']:.3g}, chi-square {drift['chi2']:.4g} on {drift['dof']} d.o.f. "
                  f"(p = {drift['p_value']:.3g})")  # fmt: skip
    elif report.get("drift_note"):
        title += f"\nno drift: {report['drift_note']}"
    ax.set_title(title, fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------------- save_plots
class SavedPlots(dict):
    """File name without its suffix (``"tree"``, ``"dendrogram"``, ``"node-0"``, ...) -> path of each PNG
    written; :attr:`skipped` maps what could not be drawn (a file, or a panel of ``tree.png``) to why."""

    def __init__(self):
        super().__init__()
        self.skipped: dict[str, str] = {}


def save_plots(
    tree: ClusterTree,
    X,
    out_dir,
    *,
    labels=None,
    max_points: int = 2000,
    random_state: int | None = 0,
    n_jobs: int = 1,
    update_report: dict | None = None,
) -> SavedPlots:
    """Write every plot of the tree as a PNG into ``out_dir`` (created if missing): ``tree.png``
    (:func:`plot_tree`), ``dendrogram.png`` (:func:`plot_dendrogram`) and ``node-<id>.png``
    (:func:`plot_node`) for every split node (PPCI's ``plot.ppci`` for the whole solution); with the
    ``update_report`` of the update that made the tree (``partial_fit``'s ``update_report_``), ``shares.png``
    (:func:`plot_shares`) too.

    One random sample of at most ``max_points`` rows of X, and one colour per true label, serve every figure
    (so Dask or zarr input is read once). A figure (or a panel of ``tree.png``) that cannot be drawn is skipped
    with a warning and noted in the result's ``skipped``; the others are written. Each figure is cleared after
    it is written (no pyplot registry holds it). ``n_jobs`` > 1 draws the figures in that many processes at once
    (forked from this one, where the platform forks). Returns a :class:`SavedPlots` (file name -> path).
    """
    nodes = _internal_nodes(tree)
    sample = _sample(tree, X, labels, max_points, random_state)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = SavedPlots()
    jobs: list[tuple[str, Callable[[], Figure]]] = [
        ("tree", lambda: _tree_figure(tree, nodes, sample, written.skipped)),
        ("dendrogram", lambda: plot_dendrogram(tree)),
    ]
    jobs += [(f"node-{node.id}", lambda node=node: _node_figure(tree, node, sample)) for node in nodes]
    if update_report is not None:
        jobs.append(("shares", lambda: plot_shares(update_report)))

    def draw(share) -> None:
        for name, make in share:
            try:
                fig = make()
            except Exception as error:  # noqa: BLE001 - one figure must not cost the others
                written.skipped[name] = reason = f"{type(error).__name__}: {error}"
                warn(f"{name}.png was not written: {reason}")
                continue
            path = out_dir / f"{name}.png"
            try:
                fig.savefig(path, dpi=110)
            finally:
                fig.clear()
            written[name] = path

    # the objects alive now (the sample, the tree, the modules) outlive the drawing: kept out of the cyclic garbage
    # collector's scans while it runs (they took about a sixth of the drawing time), and shared unchanged with the
    # forked processes; unfrozen after, unless the program had frozen objects itself (then all stay frozen, as
    # gc.unfreeze cannot tell its objects from these; reference counting still frees them)
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        _in_processes(draw, jobs, n_jobs, written)
    finally:
        if frozen_before == 0:
            gc.unfreeze()
    return written


def _balanced_shares(jobs: list, n_jobs: int) -> list[list]:
    """The jobs in ``n_jobs`` shares of about equal drawing time, the longest first to the least loaded share:
    ``tree.png`` costs about one node figure per three of its panels (measured: 4.5 s for 13 panels where a node
    figure takes 1 s to 1.5 s), every other figure about one."""
    panels = sum(name.startswith("node-") for name, _ in jobs)
    costs = [max(1.0, panels / 3) if name == "tree" else 1.0 for name, _ in jobs]
    shares: list[list] = [[] for _ in range(n_jobs)]
    loads = [0.0] * n_jobs
    for i in sorted(range(len(jobs)), key=lambda i: -costs[i]):
        least = loads.index(min(loads))
        shares[least].append(jobs[i])
        loads[least] += costs[i]
    return shares


def _in_processes(draw: Callable, jobs: list, n_jobs: int, written: SavedPlots) -> None:
    """``draw(share)`` for ``n_jobs`` shares of the jobs, all but the first in forked processes that send back
    what they wrote (Agg rendering holds the GIL: threads would not run at once)."""
    import json

    n_jobs = max(1, min(n_jobs, len(jobs))) if hasattr(os, "fork") else 1
    shares = _balanced_shares(jobs, n_jobs)
    children = []
    for share in shares[1:]:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: draw its share, report, and leave at once (no clean-up of the parent's state)
            os.close(read)
            status = 1
            try:
                written.clear()
                written.skipped.clear()
                draw(share)
                report = {"written": {k: str(v) for k, v in written.items()}, "skipped": written.skipped}
                with os.fdopen(write, "w") as out:
                    json.dump(report, out)
                status = 0
            finally:
                os._exit(status)
        os.close(write)
        children.append((pid, read, share))
    draw(shares[0])
    for pid, read, share in children:
        with os.fdopen(read) as reported:
            text = reported.read()
        _, status = os.waitpid(pid, 0)
        if status == 0 and text:
            report = json.loads(text)
            written.update({name: Path(path) for name, path in report["written"].items()})
            written.skipped.update(report["skipped"])
        else:  # the process failed as a whole: draw its share here
            draw(share)
