"""The MSC splitters: maximal separation splits of a leaf (Chen & Bi; spec ``shared/research/seed-msc.md``; the
numerics are :mod:`lowdens_dask.pursuit.msc`), for the grower (:mod:`lowdens_dask.growth.grower`). Of rows in
memory (:class:`RowsSplitter`: exact or landmark solver per node), and of chunked rows (:class:`ChunkedSplitter`
over :class:`ChunkedGrowth`'s passes: count and sample landmarks, then the r×r moments). Each split is a
:class:`~lowdens_dask.tree.KernelExpansionRule`. ``settings`` is the estimator, read for MSC's parameters
(``weight``, ``sigma2``, ``metric``, ``solver``, ``n_landmarks``, ``standardize``, ``random_state``)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import copy

import dask
import dask.array as da
import numpy as np

from ..backend import InMemoryData
from ..backend.frame import CONSTANT_SCALE, check_value_range, column_moments, constant_columns, standardisation
from ..backend.passes import map_reduce
from ..pursuit.msc import (
    disparity_cut,
    distance_features,
    distance_matrix,
    landmark_moments,
    median_sigma2,
    msc_exact,
    msc_landmarks,
    orientation,
    solve_moments,
)
from ..pursuit.significance import SplitTest, half_indices, is_significant, mean_difference_test
from ..tree import ClusterTree, KernelExpansionRule, leaf_labels_from_json
from .splitter import Candidate, Cut, SplitterBase

#: ``solver="auto"`` solves exactly up to this many distinct rows in a node (D of 5,000 rows is 200 MB) and with
#: landmarks above.
EXACT_AUTO_MAX = 5000
#: Above this many rows the exact solver holds D in float32 (1.6 GB at 20,000 rows instead of 3.2 GB; the split
#: is the same up to rows whose |f| is within ~1e-7 of 0).
FLOAT32_ABOVE = 8192
#: The largest node ``solver="exact"`` accepts (D in float32: 10 GB).
EXACT_MAX = 50_000
KERNELS = {"gaussian": "rbf-distance", "euclidean": "euclidean"}


def _frame(rows: np.ndarray, weights: np.ndarray, standardize: bool, constant: np.ndarray):
    """(centre, scale) of a node's rows: the weighted mean (distances do not depend on it; it keeps the digits),
    and the standard deviation with ``standardize`` (else 1); ``CONSTANT_SCALE`` for constant columns."""
    if standardize:
        centre, scale = standardisation(rows, weights)
    else:
        centre, scale = weights @ rows / weights.sum(), np.ones(rows.shape[1])
    scale = np.where(constant, CONSTANT_SCALE, scale)
    return centre, scale


def _constant(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Columns of a node's distinct rows that are constant, or constant up to rounding (their weighted variance
    within a float64 variance's error bound, ``backend.frame.constant_columns``, with n the rows' total weight):
    they get ``CONSTANT_SCALE``, else z-scoring makes their last bits a feature of unit variance."""
    total = float(weights.sum())
    mean, var, unit = column_moments(rows, weights)  # in units where a variance neither under- nor overflows
    return (np.ptp(rows, axis=0) == 0) | constant_columns(mean, var, total, unit)


def _rule(support, coef, metric: str, gamma: float, scale: np.ndarray) -> KernelExpansionRule:
    plain = bool(np.all(scale == 1.0))
    gamma = gamma if metric == "gaussian" else 1.0
    return KernelExpansionRule(support, coef, 0.0, KERNELS[metric], gamma, None if plain else scale)


def split_rows(settings, rows: np.ndarray, weights: np.ndarray, seed: int):
    """One MSC split of a node's distinct rows (positive weights): ``(rule, params, stats)``, or None when the
    node cannot be split (fewer than two rows with weight)."""
    c = weights / weights.max()
    keep = c > 0  # weights that underflow against the largest do not count
    if keep.sum() < 2:
        return None
    rows, c = rows[keep], c[keep]
    constant = _constant(rows, weights[keep])
    centre, scale = _frame(rows, c, settings.standardize, constant)
    Z = (rows - centre) / scale
    Z[:, constant] = 0.0
    m = rows.shape[0]
    if settings.metric == "gaussian":
        sigma2 = settings.sigma2 if settings.sigma2 is not None else median_sigma2(Z, c, seed=seed)
        if not (np.isfinite(sigma2) and sigma2 > 0):
            return None
    else:
        sigma2 = 1.0
    gamma = 1.0 / sigma2
    exact = (
        settings.solver == "exact" or (settings.solver == "auto" and m <= EXACT_AUTO_MAX) or m <= settings.n_landmarks
    )
    stats = {}
    if exact and m > EXACT_MAX:
        raise ValueError(
            f"{type(settings).__name__}: solver='exact' would hold the {m:,}×{m:,} distance matrix of a node "
            f"({4 * m * m / 1e9:.0f} GB in float32); above {EXACT_MAX:,} distinct rows use solver='landmarks' or 'auto'."
        )
    if exact:
        D = distance_matrix(
            Z, metric=settings.metric, gamma=gamma, dtype=np.float32 if m > FLOAT32_ABOVE else np.float64
        )
        if settings.solver == "landmarks":  # all rows are landmarks, weighted as the rows: the exact solution
            sol = msc_landmarks(Z, Z, c, settings.weight, metric=settings.metric, gamma=gamma, landmark_weights=c)
            sol = sol._replace(n_positive=-1)
        else:
            sol = msc_exact(D, c, settings.weight, random_state=seed)
        support = rows
    else:
        D = None
        nonzero = int(np.count_nonzero(c))
        r = min(settings.n_landmarks, nonzero)
        idx = np.sort(np.random.default_rng(seed).choice(m, r, replace=False, p=c / c.sum()))
        sol = msc_landmarks(Z, Z[idx], c, settings.weight, metric=settings.metric, gamma=gamma)
        support = rows[idx]
    sign = orientation(sol.f, c)
    if D is not None:
        stats["disparity_cut"] = disparity_cut(D, sign * sol.f >= 0, weights=c)
        stats["n_positive_eigenvalues"] = float(sol.n_positive)
    rule = _rule(support, sign * sol.coef, settings.metric, gamma, scale)
    params = {
        "weight": settings.weight,
        "metric": settings.metric,
        "sigma2": float(sigma2),
        "solver": "exact" if exact and settings.solver != "landmarks" else "landmarks",
        "n_support": int(support.shape[0]),
    }
    separation = sol.separation * float(weights.max())  # in the rows' own weights
    stats = {"fval": separation, "separation": separation, "eigengap": sol.eigengap, **stats}
    return rule, params, stats


# ------------------------------------------------------------------------------------------ chunked input
def _chunk_leaves(x: np.ndarray, tree_json: str | None, seed: int, r: int):
    """Per leaf of the chunk's finite rows: (count, mean, M2, min, max, keys, rows) with the ``r`` rows of
    smallest random key (a uniform sample, merged across chunks by keeping the ``r`` smallest keys)."""
    finite = np.isfinite(x).all(axis=1)
    x = np.asarray(x[finite], dtype=np.float64)
    if tree_json is None and x.shape[0]:  # the first pass: values beyond SCALE_RANGE are refused before squaring
        check_value_range(x.min(axis=0), x.max(axis=0), spread=False)
    labels = np.zeros(x.shape[0], dtype=np.int64) if tree_json is None else leaf_labels_from_json(x, tree_json)
    keys = np.random.default_rng(seed).random(x.shape[0])
    out = {}
    for label in np.unique(labels):
        mask = labels == label
        rows, k = x[mask], keys[mask]
        take = np.argsort(k, kind="stable")[:r]
        mean = rows.mean(axis=0)
        out[int(label)] = (
            float(rows.shape[0]),
            mean,
            ((rows - mean) ** 2).sum(axis=0),
            rows.min(axis=0),
            rows.max(axis=0),
            k[take],
            rows[take],
        )
    return out, int(finite.size - finite.sum()), r


def _merge_leaves(*parts):
    """Merge the per-leaf summaries of chunks (Chan et al.'s pairwise update of the means and M2)."""
    out, nonfinite, r = {}, 0, parts[0][2]
    for leaves, bad, _ in parts:
        nonfinite += bad
        for label, item in leaves.items():
            if label not in out:
                out[label] = item
                continue
            n1, m1, s1, lo1, hi1, k1, x1 = out[label]
            n2, m2, s2, lo2, hi2, k2, x2 = item
            n = n1 + n2
            delta = m2 - m1
            keys, rows = np.concatenate([k1, k2]), np.concatenate([x1, x2])
            take = np.argsort(keys, kind="stable")[:r]
            out[label] = (
                n,
                m1 + delta * n2 / n,
                s1 + s2 + delta**2 * n1 * n2 / n,
                np.minimum(lo1, lo2),
                np.maximum(hi1, hi2),
                keys[take],
                rows[take],
            )
    return out, nonfinite, r


def _chunk_moments(x, tree_json, label, centre, scale, L, metric, gamma):
    finite = np.isfinite(x).all(axis=1)
    x = np.asarray(x[finite], dtype=np.float64)
    if tree_json is not None:
        x = x[leaf_labels_from_json(x, tree_json) == label]
    Z = (x - centre) / scale
    G, h, n = landmark_moments(Z, L, None, metric=metric, gamma=gamma)
    return G, h, n


def _add(*parts):
    return tuple(sum(items[1:], items[0]) for items in zip(*parts))


def _literal(value):
    return dask.delayed(value, pure=True, traverse=False)


class ChunkedGrowth:
    """Recursive MSC over row chunks: a pass that counts every leaf's rows and samples its landmarks, then a pass
    for the r×r moments of the leaf to split (landmark solver)."""

    def __init__(self, settings, arr: da.Array):
        self.settings, self.arr = settings, arr
        self.blocks = arr.to_delayed().ravel()
        self.token = dask.base.tokenize(arr)[:10]
        self.rng = np.random.default_rng(0 if settings.random_state is None else settings.random_state)  # None: seed 0
        self.passes = 0

    def leaves_pass(self, tree: ClusterTree | None):
        r = self.settings.n_landmarks
        seeds = self.rng.integers(0, 2**31 - 1, size=len(self.blocks))
        text = None if tree is None else tree.to_json()
        self.passes += 1
        name = f"lowdens-msc-leaves-{self.token}-{self.passes}"
        chunks = [(b, _literal(text), int(s), r) for b, s in zip(self.blocks, seeds)]
        found, nonfinite, _ = map_reduce(name, _chunk_leaves, chunks, _merge_leaves)
        if tree is None:
            return {0: found.get(0)}, nonfinite
        ids = [leaf.id for leaf in tree.leaves()]
        return {ids[label]: item for label, item in found.items()}, nonfinite

    def moments(self, tree: ClusterTree, leaf: int, centre, scale, L, gamma):
        labels = tree.leaf_labels()
        text = None if tree.n_leaves == 1 else tree.to_json()
        self.passes += 1
        name = f"lowdens-msc-moments-{self.token}-{self.passes}"
        args = [_literal(a) for a in (text, labels[leaf], centre, scale, L)]
        chunks = [(b, *args, self.settings.metric, gamma) for b in self.blocks]
        return map_reduce(name, _chunk_moments, chunks, _add)

    def find_split(self, tree: ClusterTree, leaf: int, info, seed: int):
        settings = self.settings
        n, mean, m2, lo, hi, _, sample = info
        sample = np.unique(sample, axis=0)
        if sample.shape[0] < 2:
            return None
        constant = (lo == hi) | constant_columns(mean, m2 / max(n - 1.0, 1.0), n)
        if settings.standardize:
            scale = np.sqrt(m2 / max(n - 1.0, 1.0))
            scale[scale == 0] = 1.0
        else:
            scale = np.ones(mean.shape[0])
        scale = np.where(constant, CONSTANT_SCALE, scale)
        L = (sample - mean) / scale
        L[:, constant] = 0.0
        if settings.metric == "gaussian":
            sigma2 = settings.sigma2 if settings.sigma2 is not None else median_sigma2(L, seed=seed)
            if not (np.isfinite(sigma2) and sigma2 > 0):
                return None
        else:
            sigma2 = 1.0
        gamma = 1.0 / sigma2
        G, h, _ = self.moments(tree, leaf, mean, scale, L, gamma)
        coef, gap = solve_moments(G, h, settings.weight)
        f = distance_features(L, L, metric=settings.metric, gamma=gamma) @ coef
        sign = orientation(f, np.ones(f.shape[0]))
        rule = _rule(sample, sign * coef, settings.metric, gamma, scale)
        params = {
            "weight": settings.weight,
            "metric": settings.metric,
            "sigma2": float(sigma2),
            "solver": "landmarks",
            "n_support": int(sample.shape[0]),
        }
        separation = float(coef @ G @ coef)
        return rule, params, {"fval": separation, "separation": separation, "eigengap": gap}


class RowsSplitter(SplitterBase):
    """MSC splits of distinct rows in memory (``U``, weights ``c``): a leaf is
    :class:`~lowdens_dask.backend.InMemoryData` of its rows' positions in ``U``; with ``test`` (``"auto"``) the split
    is found on a random half and tested on the other along the sides' mean difference."""

    method = "msc"

    def __init__(self, settings, U: np.ndarray, c: np.ndarray, test: SplitTest | None, rng: np.random.Generator):
        self.settings, self.U, self.c, self.test, self.rng = settings, U, c, test, rng
        self.tested = test is not None

    def find(self, node: int, data, start=None) -> Candidate | None:
        idx = data.index
        seed = int(self.rng.integers(2**31 - 1))
        fit = idx if self.test is None else idx[half_indices(len(idx), self.test.seed, node)[0]]
        found = split_rows(self.settings, self.U[fit], self.c[fit], seed)
        if found is None:
            return None
        rule, params, stats = found
        if self.test is not None:  # found on one half, tested on the other along the sides' mean difference
            held = idx[half_indices(len(idx), self.test.seed, node)[1]]
            U, c = self.U, self.c
            stats = {**stats, **mean_difference_test(U[fit], c[fit], rule.side(U[fit]), InMemoryData(U[held], c[held]))}
        return Candidate(rule, params, stats, is_significant(stats, self.test))

    def cut(self, node: int, data, candidate: Candidate, forced: bool) -> Cut | None:
        side = candidate.rule.side(self.U[data.index])
        if side.all() or not side.any():
            return None
        parts = (data.take(~side), data.take(side))
        return Cut(candidate.rule, parts, tuple(p.total_weight for p in parts), candidate.params, candidate.stats)


class ChunkedSplitter(SplitterBase):
    """MSC splits of chunked rows (landmark solver, :class:`ChunkedGrowth`): a leaf is split with the summary of its
    rows (count, moments, landmark sample) that the latest leaves pass gave (``info``); a split is made on a copy
    of the tree first, and the next leaves pass counts its sides (a side left empty: not split) and refreshes
    every leaf's summary."""

    method = "msc"

    def __init__(self, growth: ChunkedGrowth, tree: ClusterTree, info: dict):
        self.growth, self.tree, self.info = growth, tree, info

    def find(self, node: int, data, start=None) -> Candidate | None:
        found = self.growth.find_split(self.tree, node, self.info[node], int(self.growth.rng.integers(2**31 - 1)))
        return None if found is None else Candidate(*found, True)

    def cut(self, node: int, data, candidate: Candidate, forced: bool) -> Cut | None:
        trial = copy.deepcopy(self.tree)
        children = trial.add_rule_split(node, self.method, candidate.rule, (0.0, 0.0), {}, {}).children
        info, _ = self.growth.leaves_pass(trial)
        counts = [info[child][0] if child in info else 0.0 for child in children]
        if min(counts) == 0:  # MSC left a side empty: the leaf stays a leaf
            info[node] = info.pop(children[0] if counts[0] else children[1])
            self.info = info
            return None
        self.info = info
        return Cut(candidate.rule, tuple(info[c] for c in children), tuple(counts), candidate.params, candidate.stats)
