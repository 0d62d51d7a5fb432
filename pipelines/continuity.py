"""Continuity between runs: stable cluster ids, and how much a clustering changed since the last run.

Labels may be numpy or Dask arrays (the contingency table is one chunked pass); -1 marks rows without a
cluster (NaN/inf rows) and is left out of every comparison and kept as -1.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask.array as da
import numpy as np
from scipy.optimize import linear_sum_assignment


def contingency(previous, current, shape: tuple[int, int] | None = None) -> np.ndarray:
    """Counts of rows per (previous id, current id), over the rows both label (neither is -1).

    ``shape`` (one more than the largest id of each labeling), when known, saves the pass that finds it. Labels of
    any integer type (``labels_`` read from a ``labels_store`` are int8 up to 128 clusters) are counted as int64.
    """
    previous, current = da.asarray(previous).astype(np.int64), da.asarray(current).astype(np.int64)
    if previous.shape != current.shape:
        raise ValueError(f"The labelings differ in length: {previous.shape[0]} and {current.shape[0]} rows.")
    if shape is None:
        n_prev, n_cur = (int(x) for x in da.compute(previous.max(), current.max()))
        shape = (max(n_prev, -1) + 1, max(n_cur, -1) + 1)
    n_prev, n_cur = shape
    both = (previous >= 0) & (current >= 0)
    codes = da.where(both, previous * n_cur + current, n_prev * n_cur)
    counts = da.bincount(codes, minlength=n_prev * n_cur + 1).compute()
    return counts[: n_prev * n_cur].reshape(n_prev, n_cur)


def match_cluster_ids(table: np.ndarray, first_new: int | None = None) -> dict[int, int]:
    """Current id -> stable id, from a contingency table (previous x current).

    The pairing of previous and current clusters with the largest total overlap (Hungarian algorithm) keeps
    the previous ids; a current cluster that overlaps no previous one, or is left over when there are more
    clusters than before, gets a new id above every previous id: from ``first_new`` on (default: the number of
    previous ids), so that ids used by earlier runs are not used again.
    """
    n_prev, n_cur = table.shape
    rows, cols = linear_sum_assignment(table, maximize=True)
    mapping = {int(c): int(r) for r, c in zip(rows, cols, strict=True) if table[r, c] > 0}
    fresh = n_prev if first_new is None else max(n_prev, int(first_new))
    for c in range(n_cur):
        if c not in mapping:
            mapping[c] = fresh
            fresh += 1
    return mapping


def relabel(labels, mapping: dict[int, int]):
    """``labels`` with each id replaced by ``mapping[id]`` (-1 stays -1); numpy or Dask, as given."""
    lookup = np.full(max(mapping, default=-1) + 2, -1, dtype=np.int64)
    for current, stable in mapping.items():
        lookup[current] = stable
    if isinstance(labels, da.Array):
        return labels.map_blocks(_lookup, lookup, dtype=np.int64)
    return _lookup(np.asarray(labels), lookup)


def _lookup(labels: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    return lookup[labels]  # -1 indexes the last entry, which is -1


def stability(table: np.ndarray, mapping: dict[int, int]) -> dict[str, float]:
    """How much the clustering changed: the ARI of the two labelings (from the table, so that no per-row
    array is needed), the share of rows whose stable id is their previous id, and the number of clusters
    kept, new and gone."""
    n = int(table.sum())
    same = sum(int(table[stable, current]) for current, stable in mapping.items() if stable < table.shape[0])
    kept = sum(1 for stable in mapping.values() if stable < table.shape[0])
    return {
        "ari": adjusted_rand_index(table),
        "same_id_fraction": same / n if n else float("nan"),
        "kept": kept,
        "new": len(mapping) - kept,
        "gone": int((table.sum(axis=1) > 0).sum() - kept),
    }


def adjusted_rand_index(table: np.ndarray) -> float:
    """Hubert and Arabie's adjusted Rand index from a contingency table (as scikit-learn's
    ``adjusted_rand_score`` computes it from the labels)."""
    table = np.asarray(table, dtype=np.float64)
    n = table.sum()
    if n < 2:
        return float("nan")
    pairs = (table * (table - 1)).sum() / 2
    rows = (table.sum(axis=1) * (table.sum(axis=1) - 1)).sum() / 2
    cols = (table.sum(axis=0) * (table.sum(axis=0) - 1)).sum() / 2
    expected = rows * cols / (n * (n - 1) / 2)
    best = (rows + cols) / 2
    if best == expected:  # both labelings put every row in one cluster, or every row alone
        return 1.0
    return float((pairs - expected) / (best - expected))
