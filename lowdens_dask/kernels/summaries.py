"""Chunk-local kernels for data summaries: per-chunk moments and microclusters (k-means means)."""

# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from numba import njit

#: Lloyd iterations of the chunk-local k-means that builds microclusters.
LLOYD_ITERATIONS = 3


@njit(cache=True, nogil=True)
def group_sums(x, labels, k):
    """Row counts, column sums and sums of squared norms per label: ``(counts, sums, sq)``.

    ``x`` is (n, d), ``labels`` in [0, k). Accumulates in float64 whatever the input dtype.
    """
    n, d = x.shape
    counts = np.zeros(k)
    sums = np.zeros((k, d))
    sq = np.zeros(k)
    for i in range(n):
        j = labels[i]
        counts[j] += 1.0
        s = 0.0
        for c in range(d):
            v = np.float64(x[i, c])
            sums[j, c] += v
            s += v * v
        sq[j] += s
    return counts, sums, sq


def microclusters(x: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Summarise the rows of one chunk by k-means: ``(counts, means, spread)`` of non-empty clusters.

    ``spread`` is each microcluster's mean squared distance to its centre. Initial centres are k
    distinct rows drawn with ``seed``; a few Lloyd iterations follow, with squared distances from
    BLAS (``|c|^2 - 2 x.c``; ``|x|^2`` does not change the argmin).
    """
    n = x.shape[0]
    k = int(min(k, n))
    if k <= 0:
        return np.zeros(0), np.zeros((0, x.shape[1])), np.zeros(0)
    rng = np.random.default_rng(seed)
    centres = x[np.sort(rng.choice(n, size=k, replace=False))].astype(np.float64)
    xf = np.asarray(x, dtype=np.float64)
    for _ in range(LLOYD_ITERATIONS):
        labels = np.argmin((centres * centres).sum(axis=1) - 2.0 * (xf @ centres.T), axis=1)
        counts, sums, sq = group_sums(xf, labels, k)
        keep = counts > 0
        centres = sums[keep] / counts[keep, None]
        k = centres.shape[0]
    labels = np.argmin((centres * centres).sum(axis=1) - 2.0 * (xf @ centres.T), axis=1)
    counts, sums, sq = group_sums(xf, labels, k)
    keep = counts > 0
    counts, sums, sq = counts[keep], sums[keep], sq[keep]
    means = sums / counts[:, None]
    spread = np.maximum(sq / counts - (means * means).sum(axis=1), 0.0)
    return counts, means, spread
