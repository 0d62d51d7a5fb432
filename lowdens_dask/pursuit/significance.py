"""The significance of a split found by projection pursuit, against a one-cluster null (``n_clusters="auto"``).

A pursued hyperplane is chosen to make its projection look bimodal, so a test of unimodality on the rows that
chose it must be calibrated for that choice. Every start's split is tested on all of the node's rows: the
statistic is ``sqrt(n)`` times Hartigan's dip (:mod:`lowdens_dask.kernels.dip`) of the rows' projection on the
split's direction, and its null is that of the same pursuit run on one-cluster samples, the largest dip over
the valid starts' splits (:func:`pursued_pvalue`): tabulated per index over the node's size and effective
dimension (:func:`participation_ratio`), from isotropic Gaussian and uniform-cube draws (the uniform is the
dip's least favourable unimodal shape; the larger p-value of the two is taken), as SigClust (Liu et al., JASA
103(483), 2008) and its hierarchical form (Kimes et al., Biometrics 73(3), 2017) simulate theirs per node. Since
the null is that of the largest dip over the starts, a start other than the best one may be the split made when
only its split is significant. Columns recorded on a grid are tested as the histogram density they stand for
(:func:`dequantized`; which columns are gridded, and their steps, is read once from the root's rows). Where the rows
are: in memory, the node's rows; in summary mode, the summary's uniform sample of rows (``ClusterSummary.sample``)
that reaches the node, on which the node's split is also pursued while the sample holds every row summarised
(memory-sized data; beyond, on the node's microclusters); in exact
mode by passes over chunks, a sample of the node's rows (one pass).

Where no pursued null is shipped (LMSC: see ``tools/pursuit_null.py``; SCPP's is on a coarser grid of
dimensions, from 30 draws a cell), or a summary has no sample
(one stored by an older version), the split is found on a random half of the node's points and tested on the
other half (sample splitting, as in Cox, Biometrika 62(2), 1975): given the direction, the held-out half is an
independent sample, so the dip test calibrated on the uniform gives a valid p-value. Summaries (microclusters
with weights and spreads) are then split by microcluster and the held-out half tested as the distribution it
stands for: :data:`POINTS_PER_MICROCLUSTER` points per microcluster on average (no more than the rows it holds;
one per microcluster beyond :data:`SUMMARY_TEST_ROWS` points in all), placed in proportion to the weights
(systematic sampling in a random order), a microcluster with c points giving the quantiles (j + 1/2) / c of a
normal with its mean and spread along the direction, the p-value read at the number of microclusters
(:func:`held_out_test`).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import NamedTuple

import numpy as np
from scipy.special import ndtri

from ..backend.memory import RECORD_RESOLUTION, merge_records, robust_scale
from ..indices import INDICES
from ..kernels.dip import dip_pvalue, dip_statistic, spread_ties
from ..kernels.sorting import sorted_copy
from .hyperplanes import Hyperplane

#: Summary mode: the held-out half is tested as a sample of this many points per microcluster on average, or of
#: one per microcluster where that would exceed SUMMARY_TEST_ROWS points (never two or three: see the module
#: docstring), and of at most SUMMARY_TEST_ROWS points.
POINTS_PER_MICROCLUSTER = 8
SUMMARY_TEST_ROWS = 1_000_000
#: Rows repeated exactly are tested as point masses, each spread over this share of the sample's range (the
#: dip's kernel needs distinct values).
TIE_RESOLUTION = 1e-9


class SplitTest(NamedTuple):
    """How ``n_clusters="auto"`` tests a node's split: the significance level, the seed of the halves and of the
    dequantizing noise, and, set when growth begins, the grid steps of the columns (:func:`grid_steps` of the
    root's rows, :meth:`with_grid`; None: each node's own) and whether a summary's nodes are pursued on their
    sample rows."""

    level: float
    seed: int
    grid: tuple | None = None
    #: a summary's nodes are pursued on their sample rows (set when the sample holds every row summarised)
    on_sample: bool = False
    #: each column's record step (:data:`~lowdens_dask.backend.memory.RECORD_RESOLUTION` of its robust scale among
    #: the root's rows, :meth:`with_grid`; None: each node's own): copies are copies at the data's scale, also in a node
    #: where a column is constant but for their jitter
    record_step: tuple | None = None
    #: whether a split must pass the test to be made (``"auto"``); False for an integer ``n_clusters``, whose
    #: splits are tested only to rank the leaves (significant splits first: :mod:`lowdens_dask.growth.grower`)
    required: bool = True

    def with_grid(self, root_rows) -> SplitTest:
        """This test with the grid steps of ``root_rows`` (the rows the root is tested on; None: unchanged). A
        column is recorded on a grid for the whole data set, so every node dequantizes it by the same step, also
        where the node's own rows spread less than one step."""
        if root_rows is None:
            return self
        step = tuple(RECORD_RESOLUTION * robust_scale(root_rows.X)) if root_rows.spread is None else None
        # the values of the records (a jittered copy is no value of its own), their share of all the rows
        grid = grid_steps(merged(root_rows, step).X, root_rows.n_samples)
        return self._replace(grid=tuple(grid), record_step=step)


def half_indices(n: int, seed: int, node: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``n`` points in two random halves ``(fit, test)``, drawn from ``(seed, node)``."""
    order = np.random.default_rng([seed, node]).permutation(n)
    return np.sort(order[: n // 2]), np.sort(order[n // 2 :])


def halves(data, seed: int, node: int, step=None):
    """The node's rows (or microclusters) in two random halves: ``(fit, test)`` (:func:`half_indices`). Rows are
    halved by record (:func:`records`): each record once, in one half, so that the held-out half is independent of
    the half the split was found on, and copies and weights change no decision; a few heavy records (point masses)
    copy by copy, each copy to either half at random."""
    if data.spread is None and data.sample is None:  # rows: halved by record, each record once in one half
        data = records(data, step)
        w = data.weights
        if np.any(w > 1) and np.all(w == np.round(w)):  # a few heavy records (point masses): halved copy by copy
            counts = w.astype(np.int64)
            first = np.random.default_rng([seed, node]).binomial(counts, 0.5)
            return tuple(type(data)(data.X[c > 0], c[c > 0].astype(np.float64)) for c in (first, counts - first))
    fit, test = half_indices(data.n_samples, seed, node)
    return data.take(fit), data.take(test)


def held_out_sample(data, v: np.ndarray) -> np.ndarray:
    """The held-out rows' projections on ``v``, sorted; for weighted rows or a summary, the distribution they
    stand for (see the module docstring)."""
    p = data.project(v)
    w = data.weights
    if data.spread is None and np.all(w == 1.0):
        return sorted_copy(p)
    # POINTS_PER_MICROCLUSTER per summary row on average, placed systematically in proportion to the weights: a
    # summary row with c points gives its normal's quantiles (j + 1/2) / c
    per = POINTS_PER_MICROCLUSTER if POINTS_PER_MICROCLUSTER * data.n_samples <= SUMMARY_TEST_ROWS else 1
    size = int(min(max(round(data.total_weight), 2), per * data.n_samples, SUMMARY_TEST_ROWS))
    order = np.random.default_rng(0).permutation(len(w))  # no alignment with any order of the summary rows
    at = np.searchsorted(np.cumsum(w[order]), (np.arange(size) + 0.5) * (w.sum() / size), side="right")
    owner = np.sort(order[np.minimum(at, len(w) - 1)])
    counts = np.bincount(owner, minlength=len(w))
    within = np.arange(size) - (np.cumsum(counts) - counts)[owner]
    z = ndtri((within + 0.5) / counts[owner])
    if data.spread is None:  # weighted rows: a row of weight c is c copies of one value, a point mass
        return p[owner]
    # a microcluster (of no spread, too) stands for points near it, not c copies of one value: spread them
    return spread_ties(p[owner] + np.sqrt(np.maximum(data.spread, 0.0))[owner] * z)


def unimodality_test(sample: np.ndarray, n: int | None = None) -> dict:
    """Hartigan's dip test of unimodality on a sorted sample, its p-value at ``n`` points (the sample's size by
    default): the statistics a node records, ``dip``, ``p_value``, ``n_test`` and ``p_floor`` (the p-value of an
    infinite dip, the table's floor at ``n``: a ``p_value`` equal to it is at most that). Tied values are point masses
    (rows repeated exactly: two far apart are two modes), spread only at :data:`TIE_RESOLUTION` of the sample's
    range for the kernel; ties that stand for a weight or a microcluster are spread by :func:`held_out_sample`,
    and columns recorded on a grid dequantized by :func:`dequantized`."""
    x = sorted_copy(sample)
    x = spread_ties(x, TIE_RESOLUTION * (x[-1] - x[0]) if x.size else 0.0)
    n = x.size if n is None else int(n)
    if x.size < 4 or n < 4 or x[0] == x[-1]:
        return {"dip": 0.0, "p_value": 1.0, "n_test": float(n)}
    dip = float(dip_statistic(x))
    return {"dip": dip, "p_value": dip_pvalue(dip, n), "n_test": float(n), "p_floor": dip_pvalue(np.inf, n)}


#: The least size at which weighted rows are tested, where their weights hold that many rows: the pursued null's
#: smallest tabulated size. Two far-apart rows of weight 250 each are two point masses, tested as 16 rows of them.
LEAST_TEST_SIZE = 16


def merged(rows, step=None):
    """``rows`` as the records they hold: copies of a row, exact or within :data:`~lowdens_dask.backend.memory.
    RECORD_RESOLUTION` of each column's scale (a re-export's rounding noise), merged into one row of their total
    weight (:func:`~lowdens_dask.backend.memory.merge_records`): a repeated record is a frequency weight, and the test
    reads the weights at their effective size (:func:`effective_size`), so that ``np.repeat(X, r, 0)``, ``X`` with
    weights ``r`` and the repeats jittered by 1e-9 are tested alike. Summaries (``spread``) are unchanged."""
    if rows.spread is not None:
        return rows
    X, w = merge_records(rows.X, rows.weights, step)
    return rows if X is rows.X else type(rows)(X, w)


def records(rows, step=None):
    """The records the test reads in ``rows`` (:func:`merged`). Frequency weights (whole numbers: a record's copies,
    exact or jittered, repeated rows, an integer ``sample_weight``) say how often a record was seen, not that more
    observations lie there, so each record counts once, unweighted: the evidence for a split is the records on either
    side of it, and copies, near-copies and counts change no decision. Other weights (a summary's sample rows, which
    ``decay`` fades; fractional ``sample_weight``) keep shaping the distribution, each row counted once
    (:func:`effective_size`). The pursuit still weighs the rows (the hyperplane it finds is that of the weighted
    density), and so does a split's least size. Fewer than :data:`LEAST_TEST_SIZE` records keep their weights (a few
    heavy records are point masses: two far-apart rows seen 250 times each are two clusters). Summaries (``spread``:
    microclusters, whose weights count distinct rows) are unchanged."""
    if rows.spread is not None:
        return rows
    rows = merged(rows, step)
    w = rows.weights
    if rows.n_samples < LEAST_TEST_SIZE or np.all(w == 1.0) or not np.all(w == np.round(w)):
        return rows
    return type(rows)(rows.X)


def effective_size(data) -> float:
    """The number of rows the test counts for ``data``: its rows, each once whatever its weight, but at least
    :data:`LEAST_TEST_SIZE` where the weights hold that many rows (a few heavy rows are point masses). The weights
    still shape the distribution tested (:func:`records`: whole-number weights are counts of copies, and the test
    reads those records unweighted)."""
    w = data.weights
    if np.all(w == 1.0):
        return float(data.n_samples)
    return max(float(np.count_nonzero(w > 0)), min(float(w.sum()), LEAST_TEST_SIZE))


def held_out_test(data, v: np.ndarray) -> dict:
    """The dip test of the held-out rows (or summary) ``data`` along ``v``. A summary's p-value is read at its
    number of microclusters (at most its rows), its resolution, not at the size of the smooth sample of
    :func:`held_out_sample`, which would count a small leaf's few microclusters as eight times as many points
    (module docstring); rows' at their number of :func:`records`."""
    if data.spread is not None:
        n = min(max(round(data.total_weight), 2), data.n_samples)
    else:  # rows: their records, each once
        data = records(data)
        n = effective_size(data)
    return unimodality_test(held_out_sample(data, v), n)


def mean_difference_test(X: np.ndarray, weights: np.ndarray, side: np.ndarray, test_rows) -> dict:
    """The dip test of ``test_rows`` along the direction from the weighted mean of the rows ``X`` on side 0 of a
    split found on them to that of side 1 (splits that are no hyperplane: MSC, SVM-relabel)."""
    if not (weights[side].sum() > 0 and weights[~side].sum() > 0):
        return {"dip": 0.0, "p_value": 1.0, "n_test": 0.0}
    u = np.average(X[side], axis=0, weights=weights[side]) - np.average(X[~side], axis=0, weights=weights[~side])
    norm = float(np.linalg.norm(u))
    if not norm > 0:
        return {"dip": 0.0, "p_value": 1.0, "n_test": 0.0}
    return held_out_test(test_rows, u / norm)


def with_test(hp: Hyperplane, test_rows) -> Hyperplane:
    """``hp`` (found on the other half) with the dip test of ``test_rows`` along it in ``stats``."""
    return hp._replace(stats={**hp.stats, **held_out_test(test_rows, hp.v)})


#: The shipped null distributions of the pursued split's dip (:func:`pursued_pvalue`), rebuilt by
#: ``tools/pursuit_null.py``.
PURSUIT_NULL = "pursuit_null.npz"

#: The one-cluster shapes the pursued null is simulated from; a p-value is the largest of theirs.
NULL_SHAPES = ("gaussian", "uniform")


def participation_ratio(data) -> float:
    """``(sum λ)² / sum λ²`` over the eigenvalues λ of the rows' weighted covariance (microclusters' spread
    included): the node's effective dimension, ``d`` for an isotropic cloud in ``d`` dimensions and near 1 when
    one direction holds the variance. The pursued null is indexed by it (:func:`pursued_pvalue`)."""
    w = data.weights
    if data.n_samples < 2 or not w.sum() > 0:
        return 1.0
    xc = (data.X - data.mean()) * np.sqrt(w / w.sum())[:, None]
    gram = xc.T @ xc if xc.shape[0] >= xc.shape[1] else xc @ xc.T  # same trace and Frobenius norm
    if data.spread is not None:  # each microcluster's spread adds spread/d to every variance
        extra = float(w @ data.spread) / w.sum()
        total, square = np.trace(gram) + extra * data.n_features, (gram * gram).sum() + 2 * extra * np.trace(gram)
        square += extra**2 * data.n_features
    else:
        total, square = np.trace(gram), (gram * gram).sum()
    return float(total**2 / square) if square > 0 else 1.0


@cache
def _pursued_null(method: str) -> dict | None:
    with np.load(files(__package__) / PURSUIT_NULL) as table:
        prefix = f"{method}/"
        found = {key[len(prefix) :]: table[key] for key in table.files if key.startswith(prefix)}
        return {**found, "probabilities": table["probabilities"]} if found else None


def has_pursued_null(method: str) -> bool:
    """Whether the package ships the pursued null of the index ``method``."""
    return _pursued_null(method) is not None


def _cell(table: dict, shape: str, n: float, d_eff: float) -> tuple[float, float, float]:
    """(share of null draws with a valid split, median and scale of their statistic) at ``n`` rows and effective
    dimension ``d_eff``: interpolated in log n between the tabulated sizes (the nearest size outside them) and in
    the draws' own effective dimension within a size, extrapolated linearly in log d_eff above the largest."""
    sizes = table["n"]
    k = int(np.clip(np.searchsorted(sizes, n), 1, len(sizes) - 1))
    t = float(np.clip((np.log(n) - np.log(sizes[k - 1])) / (np.log(sizes[k]) - np.log(sizes[k - 1])), 0.0, 1.0))
    rows = []
    for i in (k - 1, k):
        pr = np.log(table[f"{shape}.d_eff"][i])
        x = np.log(max(d_eff, 1.0))
        row = []
        for name in ("valid", "median", "scale"):
            y = table[f"{shape}.{name}"][i]
            value = np.interp(x, pr, y)
            if x > pr[-1] and name != "valid":
                value = y[-1] + max((y[-1] - y[-2]) / (pr[-1] - pr[-2]), 0.0) * (x - pr[-1])
            row.append(float(value))
        rows.append(row)
    return tuple((1 - t) * a + t * b for a, b in zip(*rows))


def pursued_pvalue(method: str, statistic: float, n: float, d_eff: float) -> float:
    """P(T >= ``statistic``) for one-cluster samples of ``n`` rows and effective dimension ``d_eff``
    (:func:`participation_ratio`), where T is ``sqrt(n)`` times the largest dip among the projections on the
    directions of the valid splits the pursuit of ``method`` finds from its starts, 0 when none is valid.

    The null is simulated (``tools/pursuit_null.py``) from isotropic Gaussian and uniform-cube samples
    (the dip's least favourable unimodal shape) at a grid of sizes and dimensions, each pursued with the index's
    defaults and all its starts, as on the data; the larger of the two shapes' p-values is returned. Per
    cell the table keeps the share of valid splits and the median and scale of their statistic; the tail
    shape, standardised, is pooled over the cells of the index and shape (SigClust's idea, Liu et al., JASA
    103(483), 2008, tabulated instead of simulated per node, as the dip's own null is)."""
    table = _pursued_null(method)
    if table is None:
        raise ValueError(f"No pursued null is shipped for the index {method!r}.")
    if not statistic > 0:
        return 1.0
    probabilities = table["probabilities"]
    p = 0.0
    for shape in NULL_SHAPES:
        valid, median, scale = _cell(table, shape, n, d_eff)
        z = (statistic - median) / max(scale, 1e-12)
        tail = 1.0 - np.interp(z, table[f"{shape}.z"], probabilities, left=0.0, right=probabilities[-1])
        p = max(p, valid * tail)
    return float(p)


#: A column is recorded on a grid when its distinct values are at most ``GRID_MAX_SHARE`` of its rows, every gap
#: between them is a whole number of grid steps (to ``GRID_TOLERANCE``, relative) and the step is at most
#: ``GRID_MAX_STEP`` standard deviation of the column (a column of a few far-apart values is categorical, not a
#: measurement rounded to a grid).
GRID_MAX_SHARE, GRID_TOLERANCE, GRID_MAX_STEP = 0.5, 1e-6, 1.0


def grid_steps(X: np.ndarray, n_rows: int | None = None) -> np.ndarray:
    """Each column's grid step when its values are recorded on a grid (integers, fixed decimals: see
    :data:`GRID_MAX_SHARE`; their share of ``n_rows``, by default X's rows), else 0."""
    steps = np.zeros(X.shape[1])
    n_rows = len(X) if n_rows is None else n_rows
    for j in range(X.shape[1]):
        values = np.unique(X[:, j])
        if len(values) < 2 or len(values) > GRID_MAX_SHARE * n_rows:
            continue
        gaps = np.diff(values)
        step = gaps.min()
        units = gaps / step
        on_grid = np.all(np.abs(units - np.round(units)) <= GRID_TOLERANCE * units.max())
        if on_grid and step <= GRID_MAX_STEP * X[:, j].std():
            steps[j] = step
    return steps


def dequantized(rows, seed: int, steps=None):
    """Rows recorded on a grid as the histogram density they stand for: each gridded column (``steps``, else
    :func:`grid_steps` of ``rows``) plus uniform noise of one grid step, drawn from ``seed``. The test's null is continuous; a grid's lattice of
    tied rows would read as departures from unimodality along most directions (the multivariate counterpart of
    :func:`~lowdens_dask.kernels.dip.spread_ties`, which spreads the ties a summary's representation makes).
    ``rows`` unchanged when no column is gridded. Rows whose weights are counts (merged duplicates) are the copies
    they stand for, each dequantized on its own (tied rows of a grid are its rounding of observations that differ),
    though the test still counts each merged row once (:func:`tests_on_rows`)."""
    steps = grid_steps(rows.X) if steps is None else np.asarray(steps, dtype=float)
    if not steps.any():
        return rows
    X, w = rows.X, rows.weights
    if rows.spread is None and np.any(w > 1) and np.all(w == np.round(w)):
        X, w = np.repeat(X, w.astype(np.int64), axis=0), None
    noise = np.random.default_rng(seed).uniform(-0.5, 0.5, X.shape) * steps
    return type(rows)(X + noise, w)


def pursued_test(method: str, data, v: np.ndarray, d_eff: float, n: float | None = None) -> dict:
    """The test of a split along ``v`` found by the pursuit of ``method`` on the same rows ``data`` (all of the
    node's rows): ``dip``, ``p_value`` (:func:`pursued_pvalue`), ``n_test`` (``n``: by default
    :func:`effective_size`), ``d_eff`` and ``p_floor`` (the p-value of an infinite statistic: the table's floor),
    what a node records."""
    n = effective_size(data) if n is None else n
    stats = unimodality_test(held_out_sample(data, v), n)
    p = pursued_pvalue(method, stats["dip"] * np.sqrt(n), n, d_eff)
    return {**stats, "p_value": p, "d_eff": float(d_eff), "p_floor": pursued_pvalue(method, np.inf, n, d_eff)}


def effective_dimension(method: str, rows, n: float) -> float:
    """The dimension at which the pursued null of ``method`` is read for ``rows``: the participation ratio
    (:func:`participation_ratio`), or, for a scale-free index (:attr:`~lowdens_dask.indices.base.ProjectionIndex.
    scale_free`, whose pursuit reaches every direction of the rows' span), the participation ratio that an isotropic
    sample of as many rows in the span's r dimensions has, ``r n / (n + r)`` (MC split an anisotropic Gaussian of
    800 rows in 60 columns, participation ratio 5.5, into 30-39 clusters when read at 5.5), ``n`` the rows'
    :func:`effective_size`."""
    if not (method in INDICES and INDICES[method].scale_free):
        return participation_ratio(rows)
    if rows.spread is not None and np.any(rows.spread > 0):
        r = rows.n_features
    else:
        w = rows.weights
        xc = (rows.X - rows.mean()) * np.sqrt(w / w.sum())[:, None]
        singular = np.linalg.svd(xc, compute_uv=False)
        r = int(np.sum(singular > singular[0] * 1e-7)) if singular.size and singular[0] > 0 else 0
    return float(max(r * n / (n + r), 1.0)) if r else 1.0


#: The last rows :func:`prepared` read, with their key and result: :func:`null_applies` and :func:`tests_on_rows`
#: read a node's rows one after the other (one tuple, replaced whole: safe across threads).
_LAST_PREPARED: tuple | None = None


def prepared(rows, test: SplitTest):
    """``(tested, n)``: the records of ``rows`` (:func:`records` at ``test.record_step``) with gridded columns
    dequantized (:func:`dequantized` by ``test.grid``, from ``test.seed``), and their number counted before
    dequantizing (:func:`effective_size`): what :func:`null_applies` and :func:`tests_on_rows` read, computed once a
    node."""
    global _LAST_PREPARED
    key = (test.record_step, test.seed, test.grid)
    last = _LAST_PREPARED
    if last is not None and last[0] is rows and last[1] == key:
        return last[2]
    distinct = records(rows, test.record_step)
    result = dequantized(distinct, test.seed, test.grid), effective_size(distinct)
    _LAST_PREPARED = (rows, key, result)
    return result


def tests_on_rows(method: str, rows, directions, test: SplitTest, d_eff: float | None = None) -> list[dict]:
    """:func:`pursued_test` of each direction on ``rows`` (a node's rows, or the sample of them it is tested on), as
    :func:`prepared` reads them, and the effective dimension computed once, on the rows tested (``d_eff``, where
    :func:`null_applies` computed it)."""
    rows, n = prepared(rows, test)
    d_eff = effective_dimension(method, rows, n) if d_eff is None else d_eff
    return [pursued_test(method, rows, v, d_eff, n) for v in directions]


def table_reach(method: str, n: float) -> float:
    """The largest effective dimension the pursued null of ``method`` was simulated at, at ``n`` rows: that of its
    draws of the largest dimension (64), interpolated in log n between the tabulated sizes as :func:`_cell` reads
    them, the smaller over the null's shapes."""
    table = _pursued_null(method)
    sizes = table["n"]
    k = int(np.clip(np.searchsorted(sizes, n), 1, len(sizes) - 1))
    t = float(np.clip((np.log(n) - np.log(sizes[k - 1])) / (np.log(sizes[k]) - np.log(sizes[k - 1])), 0.0, 1.0))
    reach = [(1 - t) * table[f"{shape}.d_eff"][k - 1][-1] + t * table[f"{shape}.d_eff"][k][-1] for shape in NULL_SHAPES]
    return float(min(reach))


def null_applies(method: str, rows, test: SplitTest) -> float | None:
    """The effective dimension of ``rows`` (as :func:`tests_on_rows` tests them) where the pursued null of
    ``method`` was simulated there, else None: beyond the table's reach (:func:`table_reach`) its extrapolation is
    no null (with as many effective dimensions as rows, a pursuit finds a bimodal direction in any sample: a
    standard Gaussian of 600 rows in 450 columns was split into 14-16 clusters), and the node is tested by sample
    splitting instead, valid in any dimension."""
    rows, n = prepared(rows, test)
    d_eff = effective_dimension(method, rows, n)
    return d_eff if d_eff <= table_reach(method, n) else None


def required(test: SplitTest | None) -> SplitTest | None:
    """``test`` where a split must pass it (``"auto"``), else None (no test, or one that only ranks the leaves)."""
    return test if test is not None and test.required else None


def is_significant(stats: dict, test: SplitTest | None) -> bool:
    """Whether a split whose held-out test gave ``stats`` is significant: its p-value is below ``test.level``
    (always, without a test). The one place where a split is judged against the one-cluster null."""
    return test is None or stats.get("p_value", 1.0) < test.level
