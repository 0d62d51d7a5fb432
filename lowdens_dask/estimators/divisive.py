"""Divisive clustering by recursive bi-partition: MDHClustering (PPCI's mddc), PDDP and DePDDP."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import dask
import numpy as np
from dask.base import tokenize
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..backend import InMemoryData, as_dask_array
from ..backend.chunked import ChunkedNode
from ..pursuit import DEFAULT_ALPHAS, Hyperplane, best_of_starts, find_hyperplane
from ..tree import ClusterTree
from ._scale_out import (
    change_frame,
    check_scale_out_params,
    exact_frame,
    fit_exact_chunked,
    fit_in_summary_mode,
    is_chunked_input,
    polish,
    route_rows,
    use_summary_mode,
)
from ._validation import (
    check_fit_input,
    check_mdh_params,
    check_positive_int,
    single_threaded_blas,
    standardisation,
    to_original_coordinates,
)


class _DivisiveClustering(ClusterMixin, BaseEstimator):
    """Grow a ClusterTree by repeatedly splitting the leaf with the largest split index.

    Each node is re-centred and its hyperplane (PCs, bandwidth) recomputed from its own rows. A leaf
    whose hyperplane is not valid (fewer than ``min_size`` points on a side, or for MDH no density
    minimum) is never split. With ``split_index="size"`` a leaf's hyperplane is computed only when it
    is the largest splittable leaf, which gives the same tree as computing every leaf eagerly.
    """

    _method: str
    _split_indices: tuple[str, ...]

    def _hyperplane_params(self) -> dict:
        raise NotImplementedError

    def _check_params(self) -> None:
        check_positive_int(self.n_clusters, "n_clusters", allow_none=True)
        if not (callable(self.split_index) or self.split_index in self._split_indices):
            raise ValueError(
                f"split_index must be one of {self._split_indices} or a callable; got {self.split_index!r}."
            )
        if not self.min_size > 0:
            raise ValueError(f"min_size must be a positive number; got {self.min_size!r}.")

    def fit(self, X, y=None, sample_weight=None):
        """Grow the tree on X; ``labels_`` are the leaves' labels (tree order).

        X may be an array, a Dask array or a zarr store; see ``mode`` and
        :mod:`lowdens_dask.estimators._scale_out` for the summary and exact modes of the latter two.
        """
        self._check_params()
        check_scale_out_params(self)
        if use_summary_mode(self, X):
            return fit_in_summary_mode(self, X, sample_weight, self._grow, lambda arr: route_rows(self.tree_, arr))
        if is_chunked_input(X):
            return fit_exact_chunked(
                self, X, sample_weight, self._grow_chunked, lambda arr: route_rows(self.tree_, arr)
            )
        X, weights = check_fit_input(self, X, sample_weight)
        self._grow(X, weights)
        self.labels_ = self.tree_.predict(X)
        return self

    def _grow(self, X: np.ndarray, weights: np.ndarray, spread: np.ndarray | None = None, rows=None) -> None:
        """Build ``tree_`` and ``n_clusters_`` from (weighted) rows in memory.

        In summary mode (``spread`` given) the two children of every split are split at once, each
        restart a concurrent Dask task, so the tree grows in parallel on a cluster; with the "size"
        index this gives the same tree as the lazy serial order. With ``rows`` (the chunked array, for
        ``refine``) every split is polished by exact passes over its node's rows before it is made.
        """
        mean = scale = None
        Z = X
        if self.standardize:
            mean, scale = standardisation(X, weights)
            Z = (X - mean) / scale
            if spread is not None:  # per-dimension variance, approximately, in z-scored units
                spread = spread / np.mean(scale**2)
        exact = None if rows is None else exact_frame(self, ChunkedNode(rows))
        with single_threaded_blas():
            self._grow_tree(InMemoryData(Z, weights, spread), mean, scale, parallel=spread is not None, exact=exact)

    def _grow_chunked(self, root: ChunkedNode) -> None:
        """Build ``tree_`` in exact mode over chunked rows: every node's pursuit passes over its rows."""
        with single_threaded_blas():
            self._grow_tree(*exact_frame(self, root), parallel=False)

    def _grow_tree(self, root, mean, scale, parallel: bool, exact=None) -> None:
        """Grow the tree on ``root`` (rows or summaries, standardised by ``mean``/``scale`` if given).

        ``exact = (node, mean, scale)``: the chunked rows in their own standardisation, for ``refine``.
        """
        params = self._hyperplane_params()
        tree = ClusterTree(root.n_features, self._method, params, root_size=root.total_weight)
        leaves = {0: root}  # leaf id -> its rows (in the coordinates the finder sees)
        exact_leaves = {} if exact is None else {0: exact[0]}  # leaf id -> its chunked rows (refine)
        found: dict[int, Hyperplane | None] = {}  # leaf id -> would-be split in those coordinates, or None
        target = math.inf if self.n_clusters is None else self.n_clusters
        token = tokenize(root.token, params)[:8]

        def compute(leaf_id: int) -> Hyperplane | None:
            return _valid_split(self._method, leaves[leaf_id], params, self.min_size)

        def compute_children(node_id: int) -> None:
            """Summary mode: split both new leaves at once, each restart of each leaf a named Dask task."""
            children = tree.nodes[node_id].children
            jobs = [(c, j) for c in children for j in _restarts(self._method, params, leaves[c])]
            keys = [f"lowdens-split-node-{c}-start-{j}-{token}" for c, j in jobs]
            client = _distributed_client()
            if client is not None:  # ship the leaves' rows once, not inside the task graph
                data = dict(zip(children, client.scatter([leaves[c] for c in children])))
                futures = [
                    client.submit(_split_from_start, self._method, data[c], params, self.min_size, j, key=k)
                    for (c, j), k in zip(jobs, keys)
                ]
                results = client.gather(futures)
            else:
                tasks = [
                    dask.delayed(_split_from_start, pure=True)(
                        self._method, leaves[c], params, self.min_size, j, dask_key_name=k
                    )
                    for (c, j), k in zip(jobs, keys)
                ]
                results = dask.compute(*tasks)
            for c in children:
                found[c] = _valid_best([r for (cc, _), r in zip(jobs, results) if cc == c])

        n_leaves = 1
        while n_leaves < target:
            candidates = [leaf for leaf in leaves if found.get(leaf, True) is not None]
            if not candidates:
                break
            if self.split_index != "size":
                for leaf in candidates:
                    if leaf not in found:
                        found[leaf] = compute(leaf)
                candidates = [leaf for leaf in candidates if found[leaf] is not None]
                if not candidates:
                    break
            leaf = max(candidates, key=lambda k: self._index_value(tree.nodes[k], leaves[k], found.get(k)))
            if leaf not in found:
                found[leaf] = compute(leaf)
            hp = found[leaf]
            if hp is None:
                continue
            data = leaves.pop(leaf)
            original = self._to_original(hp, mean, scale)
            row_parts = None
            if exact is not None:  # refine: polish the split on the node's rows, then split both
                rows = exact_leaves.pop(leaf)
                polished = polish(rows, hp, (mean, scale), exact[1:], params, self.refine)
                if polished is not None:
                    original = self._to_original(polished[0], *exact[1:])
                    hp = polished[1]
                row_parts = rows.split(*change_frame(original.v, original.b, (None, None), exact[1:]))
            parts = data.split(hp.v, hp.b)
            sizes = [part.total_weight for part in (row_parts or parts)]
            node = tree.add_split(leaf, self._method, original, sizes)
            leaves.update(zip(node.children, parts))
            if row_parts is not None:
                exact_leaves.update(zip(node.children, row_parts))
            n_leaves += 1
            if parallel and n_leaves < target:
                compute_children(node.id)
        for leaf, hp in found.items():  # keep computed would-be splits on the final leaves
            if hp is not None and leaf in leaves:
                tree.nodes[leaf].set_hyperplane(self._method, self._to_original(hp, mean, scale))
        if self.n_clusters is not None and n_leaves < self.n_clusters:
            warnings.warn(
                f"Only {n_leaves} clusters could be formed (n_clusters={self.n_clusters}): no remaining leaf "
                f"has a valid {self._method} split.",
                UserWarning,
                stacklevel=3,
            )
        self.tree_ = tree
        self.n_clusters_ = n_leaves

    def _to_original(self, hp: Hyperplane, mean, scale) -> Hyperplane:
        if not self.standardize:
            return hp
        v, b = to_original_coordinates(hp.v, hp.b, mean, scale)
        return hp._replace(v=v, b=b)

    def _index_value(self, node, data: InMemoryData, hp: Hyperplane | None) -> float:
        index = self.split_index
        if index == "size":
            return node.size
        if index == "fval":
            return 1.0 / hp.fval if hp.fval > 0 else math.inf
        if index == "rdepth":
            return hp.relative_depth
        if index == "scatter":
            return data.total_scatter()
        return float(index(data.X, hp))

    def predict(self, X):
        """Route each row down the tree to its leaf's label (lazily, for Dask or zarr input)."""
        check_is_fitted(self)
        if is_chunked_input(X):
            return route_rows(self.tree_, as_dask_array(X, storage_options=self.storage_options))
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=True)
        return self.tree_.predict(X)


class MDHClustering(_DivisiveClustering):
    """Divisive clustering with minimum density hyperplanes (MDDC; PPCI's ``mddc``).

    Each split is an :class:`~lowdens_dask.MDH` fitted on the leaf's own rows (Pavlidis, Hofmeyr &
    Tasoulis, JMLR 2016; divisive use as in Hofmeyr & Pavlidis, R Journal 11(2), 2019).

    Parameters
    ----------
    n_clusters : int or None, default=8
        Number of leaves to grow. None splits until no leaf has a valid split. If the data cannot
        give ``n_clusters`` leaves a warning is issued and fewer are returned.
    split_index : {"size", "fval", "rdepth"} or callable, default="size"
        Which leaf to split next: the largest, the one whose hyperplane has the lowest density, or the
        largest relative depth. A callable receives ``(X_leaf, hyperplane)`` and returns a number.
    min_size : float, default=1
        Each side of a split must hold at least this many points (total weight).
    bandwidth, alphas, v0, eta, eps, maxiter, ftol, standardize
        As for :class:`~lowdens_dask.MDH`, applied at every node.
    mode : {"auto", "exact", "summary"}, default="auto"
        "auto" fits in-memory arrays of up to 2 million rows exactly, and larger ones, Dask arrays
        and zarr stores in summary mode; "exact" fits every input exactly (Dask and zarr input by
        chunk-map and tree-reduce passes over the rows, with the in-memory result); "summary" forces
        summary mode (see :mod:`lowdens_dask.estimators._scale_out`).
    rows_per_microcluster : float, default=20
        Summary mode: each chunk gets at most one microcluster per this many rows (and at most 64).
    refine : int, default=0
        Summary mode: before each split is made, polish it with this many exact L-BFGS steps (each a few
        passes over the node's rows) from every start's summary hyperplane, and keep the start with the
        largest exact relative depth; node sizes then count rows. 0 keeps the summary hyperplanes.
    nonfinite : {"raise", "skip"}, default="raise"
        Summary mode: rows with NaN/inf make the fit fail with their count, or are set aside and
        labelled -1 (``n_nonfinite_`` counts them).
    random_state : int or None, default=None
        Seeds the microcluster k-means.
    storage_options : dict, optional
        fsspec options for zarr paths/URLs (input and ``labels_store``).
    labels_store : str, optional
        Summary mode: a zarr path/URL where the labels are written, chunk-aligned with the input.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    tree_ : ClusterTree
    n_clusters_ : int
        Number of leaves actually formed.
    n_microclusters_, n_nonfinite_ : int
        Summary mode only: size of the summary, and rows set aside for NaN/inf.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
    """

    _method = "mdh"
    _split_indices = ("size", "fval", "rdepth")

    def __init__(
        self,
        n_clusters: int | None = 8,
        *,
        split_index: str | Callable = "size",
        min_size: float = 1,
        bandwidth: float | str | Callable | None = None,
        alphas: Sequence[float] | None = None,
        v0: np.ndarray | Callable | None = None,
        eta: float = 1e-2,
        eps: float = 1.0 - 1e-6,
        maxiter: int = 50,
        ftol: float = 1e-5,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        refine: int = 0,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
    ):
        self.n_clusters = n_clusters
        self.split_index = split_index
        self.min_size = min_size
        self.bandwidth = bandwidth
        self.refine = refine
        self.alphas = alphas
        self.v0 = v0
        self.eta = eta
        self.eps = eps
        self.maxiter = maxiter
        self.ftol = ftol
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store

    def _check_params(self) -> None:
        super()._check_params()
        check_mdh_params(self)
        if self.v0 is not None and not callable(self.v0):
            raise ValueError("In divisive use v0 must be None or a callable of the node's data.")

    def _hyperplane_params(self) -> dict:
        return {
            "bandwidth": self.bandwidth,
            "alphas": tuple(DEFAULT_ALPHAS if self.alphas is None else self.alphas),
            "v0": self.v0,
            "eta": self.eta,
            "eps": self.eps,
            "maxiter": self.maxiter,
            "ftol": self.ftol,
            "min_size": self.min_size,
        }


class PDDP(_DivisiveClustering):
    """Principal Direction Divisive Partitioning (Boley, Data Min. Knowl. Discov. 2(4), 1998).

    Each split projects the node onto its first principal component and cuts at the mean.
    ``n_clusters=2`` gives a single split.

    Parameters
    ----------
    n_clusters : int or None, default=8
    split_index : {"scatter", "size"} or callable, default="scatter"
        Boley's rule splits the leaf with the largest scatter (sum of squared distances to its mean).
    min_size : float, default=1
    standardize : bool, default=False
    mode, rows_per_microcluster, nonfinite, random_state, storage_options, labels_store
        Exact and summary modes for large, Dask or zarr input; as for :class:`~lowdens_dask.MDHClustering`.
    """

    _method = "pddp"
    _split_indices = ("scatter", "size")

    def __init__(
        self,
        n_clusters: int | None = 8,
        *,
        split_index: str | Callable = "scatter",
        min_size: float = 1,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
    ):
        self.n_clusters = n_clusters
        self.split_index = split_index
        self.min_size = min_size
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store

    def _hyperplane_params(self) -> dict:
        return {"min_size": self.min_size}


class DePDDP(_DivisiveClustering):
    """Density-enhanced PDDP (Tasoulis, Tasoulis & Plagianakos, Pattern Recognit. 43(11), 2010).

    Each split projects the node onto its first principal component and cuts at the lowest local
    minimum of the projection's Gaussian KDE (bandwidth ``0.9 * sigma_pc1 * n**(-1/5)``); a leaf with a
    unimodal projection is not split.

    Parameters
    ----------
    n_clusters : int or None, default=8
    split_index : {"fval", "size"} or callable, default="fval"
        "fval" splits the leaf whose minimum has the lowest density (the dePDDP rule).
    bandwidth : None, "silverman", float or callable, default=None
    min_size : float, default=1
    standardize : bool, default=False
    mode, rows_per_microcluster, nonfinite, random_state, storage_options, labels_store
        Exact and summary modes for large, Dask or zarr input; as for :class:`~lowdens_dask.MDHClustering`.
    """

    _method = "depddp"
    _split_indices = ("fval", "size")

    def __init__(
        self,
        n_clusters: int | None = 8,
        *,
        split_index: str | Callable = "fval",
        bandwidth: float | str | Callable | None = None,
        min_size: float = 1,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
    ):
        self.n_clusters = n_clusters
        self.split_index = split_index
        self.bandwidth = bandwidth
        self.min_size = min_size
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store

    def _hyperplane_params(self) -> dict:
        return {"bandwidth": self.bandwidth, "min_size": self.min_size}


def _valid_split(method: str, data, params: dict, min_size: float) -> Hyperplane | None:
    """The node's hyperplane if it is a valid split, else None."""
    return _valid_best([_split_from_start(method, data, params, min_size, None)])


def _restarts(method: str, params: dict, data) -> list[int | None]:
    """The restarts of a node that can run as separate tasks: MDH's PC1 and PC2 starts, else one task."""
    if method == "mdh" and params.get("v0") is None:
        return list(range(min(2, data.n_features)))
    return [None]


def _split_from_start(method: str, data, params: dict, min_size: float, start: int | None) -> Hyperplane | None:
    """The node's hyperplane from one restart (all restarts if ``start`` is None), or None if the node is
    too small to split. A plain function: it runs on workers."""
    if data.n_samples < 2 or data.total_weight < 2 * min_size:
        return None
    if start is not None:
        params = {**params, "start": start}
    return find_hyperplane(method, data, **params)


def _valid_best(found: list[Hyperplane | None]) -> Hyperplane | None:
    """The best restart's hyperplane if it is a valid split, else None."""
    found = [hp for hp in found if hp is not None]
    if not found:
        return None
    best = best_of_starts(found)._replace(
        n_evaluations=sum(hp.n_evaluations for hp in found), starts=tuple(v for hp in found for v in hp.starts)
    )
    return best if best.valid else None


def _distributed_client():
    """The active distributed Client, if any."""
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None
