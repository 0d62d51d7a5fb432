"""The summarising pass: one pass over the row chunks builds weighted microclusters (chunk-local k-means, merged
down to a budget on the workers in the tree reduction), each with its member row nearest to its mean, and counts
the rows with NaN or inf."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import dask
import dask.array as da
import numpy as np

from ..kernels.summaries import finite_column_range, merge_microclusters, microclusters
from .cluster_summary import ClusterSummary, bottom_rows, key_threshold, sample_keys, sample_size
from .frame import check_value_range
from .passes import chunk_tasks, delayed_task, tree_reduce
from .workers import compute


class SummaryPass(NamedTuple):
    """What one summarising pass over the data returns."""

    summary: ClusterSummary  #: the microclusters (``n_rows``: the rows read, NaN/inf rows included)
    n_nonfinite: int  #: rows with NaN or inf, left out of the summary
    #: each microcluster's member row nearest to its mean, in the data's dtype: rows the label pass will route
    representatives: np.ndarray | None = None


def _chunk_microclusters(
    rows_per_microcluster: float, max_per_chunk: int, sample: tuple, seed: int, weighted: bool, *blocks: np.ndarray
):
    """Microclusters of consecutive row chunks (``blocks``; ``weighted``: the rows' chunks, then as many chunks of
    their weights) and their share of the summary's sample (``sample``: its size and key threshold,
    :func:`~lowdens_dask.backend.cluster_summary.key_threshold`): ``(counts, means, spread, representatives,
    sample rows, sample keys, rows, rows with NaN/inf)``. A row of weight w counts as w rows: in the number of
    microclusters, their counts, means and spread, and in its sample key (the least of w copies' keys)."""
    weights = None
    if weighted:
        blocks, weight_blocks = blocks[: len(blocks) // 2], blocks[len(blocks) // 2 :]
        weights = np.concatenate(weight_blocks).astype(np.float64, copy=False)
    x = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
    n = x.shape[0]
    n_nonfinite, lo, hi = finite_column_range(x)  # one pass, where numpy's checks took three
    if n_nonfinite:
        finite = np.isfinite(x).all(axis=1)
        x = x[finite]
        weights = None if weights is None else weights[finite]
    if x.shape[0]:  # values beyond SCALE_RANGE are refused here, before the k-means squares them (and overflows)
        check_value_range(lo, hi, spread=False)
    total = x.shape[0] if weights is None else float(weights.sum())
    k = min(int(np.ceil(total / rows_per_microcluster)), max_per_chunk, x.shape[0])
    counts, means, spread, representatives = microclusters(x, k, seed, representatives=True, weights=weights)
    keys = sample_keys(x.shape[0], np.random.default_rng([seed, 1]), weights)
    if weights is not None:
        x, keys = x[weights > 0], keys[weights > 0]  # weight 0: never sampled
    rows, keys = bottom_rows(x, keys, *sample)
    return counts, means, spread, representatives, rows.astype(np.float64), keys, n, n_nonfinite


def concat_summaries(*parts):
    """Chunk summaries combined: their arrays concatenated, their counts added."""
    return tuple(
        np.concatenate([p[j] for p in parts]) if isinstance(parts[0][j], np.ndarray) else sum(p[j] for p in parts)
        for j in range(len(parts[0]))
    )


#: A partial summary (of a share s of the rows) is merged down to ``max(MIN_PART_BUDGET, 2 s budget)``
#: microclusters in the tree reduction, and the whole to ``budget``: each merge has a few times as many
#: microclusters as it keeps, so its cost stays that of a few products of their means, wherever it happens.
MIN_PART_BUDGET = 256


def _merge_summaries(n_rows: int, budget: int | None, size: int, seed: int, *parts):
    """Chunk summaries combined: arrays concatenated, counts added, and (with a ``budget``) the microclusters
    merged down to the part's share of it (:data:`MIN_PART_BUDGET`, :func:`merge_microclusters`)."""
    counts, means, spread, representatives, sample, keys, rows, nonfinite = concat_summaries(*parts)
    if budget is not None:
        cap = budget if rows >= n_rows else max(MIN_PART_BUDGET, int(np.ceil(2 * budget * rows / n_rows)))
        if counts.size > cap:
            counts, means, spread, nearest = merge_microclusters(counts, means, spread, cap, seed + rows)
            representatives = representatives[nearest]
    return counts, means, spread, representatives, *bottom_rows(sample, keys, size), rows, nonfinite


#: Summary mode reads row chunks smaller than ``rows_per_microcluster * max_per_chunk`` rows in groups of
#: consecutive chunks of at least that many rows (and of at most this many bytes, or the largest chunk's):
#: a chunk of fewer than about twice ``rows_per_microcluster`` rows gets one or two microclusters, which then
#: average rows of different clusters (a microcluster between two groups, that no row lies near). With a
#: microcluster budget, chunks are grouped up to ``SUMMARY_BLOCK_ROWS`` rows too, while at least twice the
#: budget's microclusters are left: each task's k-means then costs a small share of its reading time.
SUMMARY_BLOCK_BYTES = 32 * 2**20
SUMMARY_BLOCK_ROWS = 100_000


def summary_min_rows(n_rows: int, rows_per_microcluster: float, max_per_chunk: int, budget: int | None) -> int:
    """Fewest rows a task of the summarising pass summarises (see :data:`SUMMARY_BLOCK_ROWS`)."""
    least = int(np.ceil(rows_per_microcluster * max_per_chunk))
    if budget is None:
        return least
    return max(least, min(SUMMARY_BLOCK_ROWS, int(n_rows * max_per_chunk / (2 * budget))))


def summary_blocks(chunks: Sequence[int], min_rows: int, row_bytes: int) -> tuple[int, ...]:
    """Row chunking of the summarising pass: consecutive chunks grouped until a group holds ``min_rows`` rows,
    within ``max(SUMMARY_BLOCK_BYTES, largest chunk)`` bytes; a short last group joins the one before. Chunks that
    all hold ``min_rows`` rows but the last (the chunking of in-memory input) are kept as they are."""
    if all(rows >= min_rows for rows in chunks[:-1]):
        return tuple(chunks)
    cap = max(SUMMARY_BLOCK_BYTES // max(row_bytes, 1), max(chunks, default=0))
    groups: list[int] = []
    current = 0
    for rows in chunks:
        if current and (current >= min_rows or current + rows > cap):
            groups.append(current)
            current = 0
        current += rows
    if current:
        if groups and current < min_rows and groups[-1] + current <= cap:
            groups[-1] += current
        else:
            groups.append(current)
    return tuple(groups)


def summarise_chunks(
    X: da.Array,
    rows_per_microcluster: float,
    max_per_chunk: int,
    seed: int = 0,
    budget: int | None = None,
    weights: da.Array | None = None,
    total_weight: float | None = None,
) -> SummaryPass:
    """One pass: chunk-local k-means microclusters, each with its member row nearest to its mean, and a count
    of rows with NaN/inf; with a ``budget``, at most that many microclusters, merged on the workers. ``weights``
    (a 1-D array with X's row chunks, frequencies summing to ``total_weight``) make each row count as that many
    rows.

    Each task gets ``min(ceil(rows / rows_per_microcluster), max_per_chunk)`` microclusters of one chunk or of
    a group of consecutive chunks (:func:`summary_min_rows`, :func:`summary_blocks`), read by the task itself.
    The tree reduction that combines the tasks' summaries merges them down to the budget
    (:func:`_merge_summaries`).
    """
    chunks = X.chunks[0]
    min_rows = summary_min_rows(sum(chunks), rows_per_microcluster, max_per_chunk, budget)
    if weights is not None and total_weight:  # groups that weigh what min_rows rows of weight 1 would
        counted = summary_min_rows(total_weight, rows_per_microcluster, max_per_chunk, budget)
        min_rows = max(1, int(counted * sum(chunks) / total_weight))  # at most in-memory input's chunk (a ceil)
    groups = summary_blocks(chunks, min_rows, X.shape[1] * X.itemsize)
    bounds, first = [], 0
    for rows in groups:  # groups are unions of consecutive chunks (a chunk larger than a group: itself)
        stop, covered = first, 0
        while covered < rows:
            covered += chunks[stop]
            stop += 1
        bounds.append((first, stop))
        first = stop
    name = f"lowdens-summarise-{dask.base.tokenize(X, *(() if weights is None else (weights,)))[:8]}"
    seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=len(groups))
    size = sample_size(X.shape[1])
    counted = sum(chunks) if weights is None else total_weight
    shared = (rows_per_microcluster, max_per_chunk, (size, key_threshold(counted, size)))
    own = [(int(s), weights is not None) for s in seeds]
    parts = chunk_tasks(name, X, _chunk_microclusters, bounds, shared, own, weights=weights)
    combine = functools.partial(_merge_summaries, sum(chunks), budget, size, int(seed))
    if len(parts) == 1:  # one task: its summary is still merged down to the budget (no reduction would)
        parts = [delayed_task(combine)(parts[0], dask_key_name=f"{name}-combine")]
    reduced = compute(tree_reduce(parts, combine, name))[0]
    counts, means, spread, representatives, sample, keys, n_rows, n_nonfinite = reduced
    summary = ClusterSummary(
        np.ascontiguousarray(means, dtype=np.float64),
        np.ascontiguousarray(counts, dtype=np.float64),
        np.ascontiguousarray(spread / means.shape[1], dtype=np.float64),
        int(n_rows),
        sample=sample,
        sample_keys=keys,
    )
    return SummaryPass(summary, int(n_nonfinite), representatives)
