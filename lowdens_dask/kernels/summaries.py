"""Chunk-local kernels for data summaries: per-chunk moments and microclusters (k-means means)."""

# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from numba import njit

#: Lloyd iterations of the chunk-local k-means that builds microclusters, on all the chunk's rows when it has at
#: most ``SAMPLE_ROWS_PER_CENTRE`` per microcluster ...
LLOYD_ITERATIONS = 2
#: ... and on a sample of that many rows per microcluster otherwise, from k-means++ seeds (each iteration on
#: the sample costs a fraction of the one assignment of every row that follows it). On the 10^7-row scale
#: mixture (benchmarks/scale.py) this gives ARI 1.000 against the truth, as full-chunk Lloyd iterations did.
SAMPLE_ROWS_PER_CENTRE = 128
SAMPLE_LLOYD_ITERATIONS = 4


@njit(cache=True, nogil=True)
def finite_column_range(x):
    """``(n_nonfinite, lo, hi)`` of the rows x in one pass: how many rows hold a NaN or inf, and each column's least
    and largest value over the other rows, in float64 (inf and -inf where there are none)."""
    n, d = x.shape
    lo = np.full(d, np.inf)
    hi = np.full(d, -np.inf)
    n_nonfinite = 0
    for i in range(n):
        finite = True
        for c in range(d):
            finite = finite and np.isfinite(x[i, c])
        if not finite:
            n_nonfinite += 1
            continue
        for c in range(d):
            v = np.float64(x[i, c])
            lo[c] = min(lo[c], v)
            hi[c] = max(hi[c], v)
    return n_nonfinite, lo, hi


@njit(cache=True, nogil=True)
def weighted_group_sums(x, labels, k, w):
    """Total weight (``w``: the rows' frequencies), weighted column sums and weighted sums of squared norms per
    label: ``(counts, sums, sq)``. ``x`` is (n, d), ``labels`` in [0, k). Accumulates in float64 whatever the input
    dtype."""
    n, d = x.shape
    counts = np.zeros(k)
    sums = np.zeros((k, d))
    sq = np.zeros(k)
    for i in range(n):
        j = labels[i]
        wi = w[i]
        counts[j] += wi
        s = 0.0
        for c in range(d):
            v = np.float64(x[i, c])
            sums[j, c] += wi * v
            s += v * v
        sq[j] += wi * s
    return counts, sums, sq


@njit(cache=True, nogil=True)
def group_sums(x, labels, k):
    """Row counts, column sums and sums of squared norms per label: :func:`weighted_group_sums` with weight 1."""
    return weighted_group_sums(x, labels, k, np.ones(x.shape[0]))


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _squared_distance(x, i, c):
    s = 0.0
    for j in range(x.shape[1]):
        t = np.float64(x[i, j]) - np.float64(x[c, j])
        s += t * t
    return s


@njit(cache=True, nogil=True)
def kmeanspp_indices(x, u):
    """k-means++ seeding (Arthur & Vassilvitskii, SODA 2007): ``len(u)`` row indices of x. The first is row
    ``floor(u[0] * n)``; each next one is drawn with probability proportional to the squared distance to the
    nearest row drawn so far, as the first row whose cumulative share exceeds ``u[j]`` (uniformly when every
    row coincides with a drawn one). O(len(u) * n * d)."""
    n = x.shape[0]
    k = u.shape[0]
    idx = np.empty(k, dtype=np.int64)
    idx[0] = min(int(u[0] * n), n - 1)
    d2 = np.empty(n)
    for i in range(n):
        d2[i] = _squared_distance(x, i, idx[0])
    for j in range(1, k):
        total = 0.0
        for i in range(n):
            total += d2[i]
        pick = min(int(u[j] * n), n - 1)
        if total > 0.0:
            target = u[j] * total
            acc = 0.0
            for i in range(n):
                acc += d2[i]
                if acc > target:
                    pick = i
                    break
        idx[j] = pick
        for i in range(n):
            d2[i] = min(d2[i], _squared_distance(x, i, pick))
    return idx


@njit(cache=True, nogil=True)
def nearest_members(x, labels, centres):
    """For each centre, the index of the row of x (IN, (n, d)) nearest to it among the rows labelled with it
    (``labels`` IN, in [0, k)), -1 for a centre without rows. Distances in float64; ties go to the first row."""
    n, d = x.shape
    k = centres.shape[0]
    best = np.full(k, np.inf)
    idx = np.full(k, -1, dtype=np.int64)
    for i in range(n):
        j = labels[i]
        s = 0.0
        for c in range(d):
            t = np.float64(x[i, c]) - centres[j, c]
            s += t * t
        if s < best[j]:
            best[j] = s
            idx[j] = i
    return idx


#: Rows whose distances to the centres are computed at once: bounds a chunk task's working memory
#: (ASSIGN_BLOCK x k scores) whatever the chunk size.
ASSIGN_BLOCK = 8192


def _assign(x: np.ndarray, centres: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """Index of the nearest centre for each row: argmin of |c|^2 - 2 x.c (|x|^2 does not matter), by
    blocks of ``ASSIGN_BLOCK`` rows into ``buf``."""
    c = centres.astype(x.dtype)
    minus_2ct = -2.0 * c.T
    norms = (c * c).sum(axis=1)
    labels = np.empty(x.shape[0], dtype=np.int64)
    for start in range(0, x.shape[0], ASSIGN_BLOCK):
        block = x[start : start + ASSIGN_BLOCK]
        scores = buf[: block.shape[0], : c.shape[0]]
        np.matmul(block, minus_2ct, out=scores)
        scores += norms
        np.argmin(scores, axis=1, out=labels[start : start + block.shape[0]])
    return labels


#: Rows whose mean lies more than this many standard deviations from 0 in some column are summarised less their
#: mean: the distances' ``|x|² + |c|² - 2 x·c`` would otherwise lose their digits to the offset (a column at 1e9
#: with unit spread keeps none in float64).
OFFSET_IN_SDS = 1e3


def _common_offset(x: np.ndarray) -> np.ndarray | None:
    """The rows' mean (float64) when some column's lies beyond :data:`OFFSET_IN_SDS` of its spread, else None;
    estimated on about 1,024 evenly spaced rows (no copy of the chunk)."""
    probe = x[:: max(1, x.shape[0] // 1024)].astype(np.float64)
    mean = probe.mean(axis=0)
    return mean if np.any(np.abs(mean) > OFFSET_IN_SDS * probe.std(axis=0)) else None


def microclusters(
    x: np.ndarray, k: int, seed: int, representatives: bool = False, weights: np.ndarray | None = None
) -> tuple[np.ndarray, ...]:
    """Summarise the rows of one chunk by k-means: ``(counts, means, spread)`` of non-empty clusters, and with
    ``representatives`` a fourth array: each microcluster's member row nearest to its mean (a row of x, in x's
    dtype; float32 stays float32).

    ``spread`` is each microcluster's mean squared distance to its mean. The centres come from Lloyd
    iterations on a sample of ``SAMPLE_ROWS_PER_CENTRE * k`` rows drawn with ``seed``, started from k-means++
    seeds (:func:`kmeanspp_indices`: a small group of rows far from the rest gets a centre of its own, where
    uniform seeds on a sample often leave it to share a centre, and so a microcluster, with its neighbour);
    chunks with no more rows iterate on all of them from k distinct random rows. Every row is then assigned
    once to its nearest centre, and the microclusters are those cells: a chunk of n rows costs one n x k
    product, whatever the iterations. Distances are computed by BLAS in the chunk's own precision
    (float32 stays float32), on the rows less their mean when they share a large offset (:func:`_common_offset`);
    sums and means accumulate in float64.

    ``weights`` (frequencies, rows of weight 0 left out) make each row count as that many copies of it: the
    sample is drawn with probability proportional to weight (with replacement, as a uniform sample of the
    repeated rows is), the iterations on all rows and the microclusters' counts, means and spread are weighted,
    and the distinct first centres of a small chunk are drawn by weight (Efraimidis & Spirakis)."""
    if weights is not None:
        positive = weights > 0
        if not positive.all():
            x, weights = x[positive], weights[positive]
    n = x.shape[0]
    k = int(min(k, n))
    if k <= 0:
        empty = (np.zeros(0), np.zeros((0, x.shape[1])), np.zeros(0))
        return (*empty, x[:0]) if representatives else empty
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    rows, shift = x, _common_offset(x)
    if shift is not None:
        x = np.ascontiguousarray(x - shift.astype(x.dtype))
    rng = np.random.default_rng(seed)
    m = SAMPLE_ROWS_PER_CENTRE * k
    total = n if weights is None else float(weights.sum())
    sample_weights = None
    if total <= m:  # every row, from k distinct rows
        sample, sample_weights = x, weights
        if weights is None:
            first = rng.choice(n, size=k, replace=False)
        else:
            first = _weighted_sample(weights, k, rng, np.zeros(n, dtype=bool))
        centres = x[np.sort(first)].astype(np.float64)
    else:
        if weights is None:
            sample = x[np.sort(rng.choice(n, size=m, replace=False))]
        else:
            sample = x[np.sort(rng.choice(n, size=m, replace=True, p=weights / total))]
        centres = sample[kmeanspp_indices(sample, rng.random(k))].astype(np.float64)
    buf = np.empty((min(max(n, sample.shape[0]), ASSIGN_BLOCK), k), dtype=x.dtype)
    for _ in range(LLOYD_ITERATIONS if total <= m else SAMPLE_LLOYD_ITERATIONS):
        counts, sums, _ = _group_sums(sample, _assign(sample, centres, buf), centres.shape[0], sample_weights)
        keep = counts > 0
        centres = sums[keep] / counts[keep, None]
    labels = _assign(x, centres, buf)
    counts, sums, sq = _group_sums(x, labels, centres.shape[0], weights)
    keep = counts > 0
    if representatives:
        idx = nearest_members(x, labels, sums / np.maximum(counts, 1e-300)[:, None])[keep]
    counts, sums, sq = counts[keep], sums[keep], sq[keep]
    means = sums / counts[:, None]
    spread = np.maximum(sq / counts - (means * means).sum(axis=1), 0.0)
    if shift is not None:
        means += shift
    return (counts, means, spread, rows[idx]) if representatives else (counts, means, spread)


def _group_sums(x, labels, k, weights):
    return group_sums(x, labels, k) if weights is None else weighted_group_sums(x, labels, k, weights)


#: Lloyd iterations of :func:`merge_microclusters` after its seeding.
MERGE_LLOYD_ITERATIONS = 2
#: Share of :func:`merge_microclusters`' seeds drawn by squared distance to the others (the rest by weight).
MERGE_FAR_SEEDS = 0.125


def _weighted_assign(means: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre of each mean and the squared distance to it (BLAS, float64)."""
    scores = means @ (-2.0 * centres.T)
    scores += (centres * centres).sum(axis=1)
    labels = np.argmin(scores, axis=1)
    d2 = scores[np.arange(means.shape[0]), labels] + (means * means).sum(axis=1)
    return labels, np.maximum(d2, 0.0)


def _weighted_sample(keys_weight: np.ndarray, k: int, rng: np.random.Generator, exclude: np.ndarray) -> np.ndarray:
    """k distinct indices drawn with probability proportional to ``keys_weight`` (Efraimidis & Spirakis, IPL 2006:
    the k largest u^(1/w)), none of ``exclude``; indices of zero weight only when too few others are left."""
    with np.errstate(divide="ignore"):
        keys = np.log(rng.random(keys_weight.size)) / keys_weight
    keys[exclude] = -np.inf
    keys[~np.isfinite(keys) & ~exclude] = -np.finfo(float).max  # zero weight: last, before the excluded
    return np.argpartition(-keys, k - 1)[:k]


def merge_microclusters(counts: np.ndarray, means: np.ndarray, spread: np.ndarray, k: int, seed: int):
    """Microclusters merged into at most k by weighted k-means: ``(counts, means, spread, nearest)``, ``nearest``
    the index of each new microcluster's member nearest to its mean.

    Counts add, means are count-weighted means, and ``spread`` (mean squared distance of the rows to their mean)
    adds each member's spread to the squared distance of its mean from the new one, so the merged microcluster
    stands for the rows of its members exactly in count, mean and spread. The seeds are drawn by count
    (``1 - MERGE_FAR_SEEDS`` of them) and then by count times squared distance to the nearest seed, as k-means++
    draws (Arthur & Vassilvitskii, SODA 2007), all at once: a small group far from the rest is seeded with
    probability near one, so it keeps a microcluster of its own instead of joining a far neighbour's. Then
    ``MERGE_LLOYD_ITERATIONS`` weighted Lloyd iterations. Each step is one BLAS product of the m means with the
    k centres."""
    m = counts.shape[0]
    if m <= k:
        return counts, means, spread, np.arange(m)
    rng = np.random.default_rng(seed)
    chosen = np.zeros(m, dtype=bool)
    near = max(k - int(np.ceil(MERGE_FAR_SEEDS * k)), 1)
    chosen[_weighted_sample(counts, near, rng, chosen)] = True
    _, d2 = _weighted_assign(means, means[chosen])
    chosen[_weighted_sample(counts * d2, k - near, rng, chosen)] = True
    centres = means[chosen]
    for _ in range(MERGE_LLOYD_ITERATIONS + 1):
        labels, _ = _weighted_assign(means, centres)
        labels = np.unique(labels, return_inverse=True)[1]  # empty centres dropped
        new_counts = np.bincount(labels, weights=counts)
        centres = np.stack([np.bincount(labels, weights=counts * col) for col in means.T], axis=1) / new_counts[:, None]
    new_means = centres
    d2 = ((means - new_means[labels]) ** 2).sum(axis=1)
    new_spread = np.bincount(labels, weights=counts * (spread + d2), minlength=new_counts.size) / new_counts
    order = np.lexsort((d2, labels))  # members by new microcluster, nearest first
    first = np.ones(m, dtype=bool)
    first[1:] = labels[order][1:] != labels[order][:-1]
    nearest = np.empty(new_counts.size, dtype=np.int64)
    nearest[labels[order][first]] = order[first]
    return new_counts, new_means, new_spread, nearest
