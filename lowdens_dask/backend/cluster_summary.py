"""ClusterSummary: the weighted microclusters a summary-mode fit is grown on, kept so that later data can be
merged in (``partial_fit``) and stored with a run."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from ..kernels.summaries import merge_microclusters
from .memory import InMemoryData

#: With decay, a microcluster whose weight falls below this many rows is dropped from the summary.
MIN_DECAYED_WEIGHT = 0.05

#: The summary keeps a random sample of at most this many of the rows it summarises (:class:`ClusterSummary`),
#: on which ``n_clusters="auto"`` tests each split, and of at most ``SAMPLE_BYTES`` as float64.
SAMPLE_ROWS, SAMPLE_BYTES = 100_000, 16 * 2**20


def sample_size(n_features: int) -> int:
    """The number of rows the summary's sample keeps (:data:`SAMPLE_ROWS`, :data:`SAMPLE_BYTES`; at least 1,000)."""
    return int(min(SAMPLE_ROWS, max(1_000, SAMPLE_BYTES // (8 * max(n_features, 1)))))


def sample_keys(n: int, rng: np.random.Generator, weights: np.ndarray | None = None) -> np.ndarray:
    """Keys of ``n`` new rows for the summary's sample: exponential draws (rate 1, the weight of a new row); with
    ``weights``, of rate w (the least of w copies' keys; weight 0: inf, never sampled)."""
    keys = rng.standard_exponential(n)
    if weights is None:
        return keys
    with np.errstate(divide="ignore"):
        return keys / weights


def key_threshold(n_rows: float, size: int) -> float:
    """A key below which a part of ``n_rows`` rows keeps its rows for a sample of ``size``: about ``size`` plus six
    standard deviations of them fall below it, so the union of the parts' rows below it holds the ``size``
    smallest keys of all (but with probability below 1e-9), and no part holds much more than its share."""
    share = (size + 6.0 * np.sqrt(size) + 10.0) / max(n_rows, 1.0)
    return float(-np.log1p(-share)) if share < 1.0 else np.inf


def bottom_rows(rows: np.ndarray, keys: np.ndarray, size: int, below: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """The ``size`` rows of smallest key (all of them when fewer) among those whose key is below ``below``, in key
    order."""
    if below < np.inf:
        keep = keys < below
        rows, keys = rows[keep], keys[keep]
    order = np.argsort(keys, kind="stable")[:size]
    return rows[order], keys[order]


def _row_hashes(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's float64 bits (FNV-1a over the columns): equal rows, equal hashes."""
    bits = np.ascontiguousarray(rows, dtype=np.float64).view(np.uint64)
    hashes = np.full(len(rows), 0xCBF29CE484222325, dtype=np.uint64)
    for column in bits.T:
        hashes ^= column
        hashes *= np.uint64(0x100000001B3)
    return hashes


def _seen_again(rows: np.ndarray, keys: np.ndarray, weights: np.ndarray, new: ClusterSummary):
    """The sample rows of ``new`` that equal a row of the sample ``rows`` (the same row summarised again: a night's
    input that repeats an earlier one) join that row: its weight is the sum and its key the smaller, the key of a row
    of the summed weight (the smaller of two exponential keys of rates w1 and w2 is one of rate w1 + w2). Without
    this the sample would hold the row twice, as two rows, and a test on it would count it twice. Returns the old
    rows' keys and weights and which new rows joined one."""
    again = np.zeros(len(new.sample), dtype=bool)
    if not (len(rows) and len(new.sample)):
        return keys, weights, again
    _, old, seen = np.intersect1d(_row_hashes(rows), _row_hashes(new.sample), return_indices=True)
    same = np.all(rows[old] == new.sample[seen], axis=1)  # equal hashes of unequal rows stay apart
    old, seen = old[same], seen[same]
    keys, weights = keys.copy(), weights.copy()
    keys[old] = np.minimum(keys[old], new.sample_keys[seen])
    weights[old] += new.sample_weights[seen]
    again[seen] = True
    return keys, weights, again


@dataclass(frozen=True)
class ClusterSummary:
    """Microclusters of the rows seen: ``means`` (m, d), row counts ``weights`` (m,) and per-dimension spread
    (m,): the mean within-microcluster variance per dimension. ``n_rows`` counts the rows summarised (NaN/inf
    rows left out of the summary included), ``n_updates`` the summaries merged into the first.

    ``sample`` (k, d) is a random sample of at most :func:`sample_size` of the rows summarised, the rows of the
    smallest ``sample_keys``: each row draws an exponential key divided by its weight (1 for a new row), so the
    sample of two summaries merged is the union's rows of smallest key, a uniform sample of all the rows
    (Efraimidis & Spirakis, Inf. Process. Lett. 97(5), 2006), and decay, which lowers old rows' weights, raises
    their keys. ``sample_weights`` are the rows' weights (1 for a new row, lowered by decay); a summary of an
    older version has no sample (``k = 0``), or no weights (all 1)."""

    means: np.ndarray
    weights: np.ndarray
    spread: np.ndarray
    n_rows: int
    n_updates: int = 0
    sample: np.ndarray | None = None
    sample_keys: np.ndarray | None = None
    sample_weights: np.ndarray | None = None

    def __post_init__(self):
        m = self.means.shape[0]
        if self.means.ndim != 2 or self.weights.shape != (m,) or self.spread.shape != (m,):
            raise ValueError(
                f"A summary needs means of shape (m, d) and weights and spread of shape (m,); got "
                f"{self.means.shape}, {self.weights.shape} and {self.spread.shape}."
            )
        if self.sample is None:
            object.__setattr__(self, "sample", np.empty((0, self.means.shape[1])))
            object.__setattr__(self, "sample_keys", np.empty(0))
        k = self.sample.shape[0]
        if self.sample_weights is None:
            object.__setattr__(self, "sample_weights", np.ones(k))
        if self.sample.shape != (k, self.means.shape[1]) or self.sample_keys is None or self.sample_keys.shape != (k,):
            raise ValueError(
                f"A summary's sample needs rows of shape (k, {self.means.shape[1]}) and keys of shape (k,); got "
                f"{self.sample.shape} and {None if self.sample_keys is None else self.sample_keys.shape}."
            )
        if self.sample_weights.shape != (k,):
            raise ValueError(f"A summary's sample needs weights of shape ({k},); got {self.sample_weights.shape}.")

    @property
    def n_microclusters(self) -> int:
        return int(self.means.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.means.shape[1])

    @property
    def total_weight(self) -> float:
        return float(self.weights.sum())

    def sample_row_weights(self) -> np.ndarray:
        """The weights of the sample's rows as a sample of the weighted rows (mean 1; all 1 without decay): each row's
        weight over its probability of being kept, ``1 - exp(-w tau)`` with ``tau`` the largest key kept when the
        sample is full (Horvitz-Thompson), else 1 (a sample that holds every row holds them at their weights)."""
        w = self.sample_weights
        if not len(w) or np.all(w == w[0]):
            return np.ones(len(w))
        tau = self.sample_keys.max() if len(w) >= sample_size(self.n_features) else np.inf
        weights = w / -np.expm1(-w * tau)
        return weights / weights.mean()

    def data(self) -> InMemoryData:
        """The microclusters as weighted points with spread (what the tree grower takes), and the sample rows."""
        sample = InMemoryData(self.sample, self.sample_row_weights()) if len(self.sample) else None
        return InMemoryData(self.means, self.weights, self.spread, sample=sample)

    def merged(self, new: ClusterSummary, decay: float | None = None) -> ClusterSummary:
        """This summary followed by ``new``'s microclusters; with ``decay``, this summary's weights are first
        multiplied by ``1 - decay`` (the weight left to old data), and microclusters whose weight falls below
        :data:`MIN_DECAYED_WEIGHT` rows are dropped: with decay the summary holds the microclusters of a bounded
        number of updates (about ``log(rows_per_microcluster / MIN_DECAYED_WEIGHT) / -log(1 - decay)``; 57 at
        decay=0.1 and 20 rows per microcluster). Without it every row seen keeps its weight, and the summary grows
        as a summary-mode fit of all those rows would."""
        if new.n_features != self.n_features:
            raise ValueError(f"The new rows have {new.n_features} features; the summary has {self.n_features}.")
        weights = self.weights if decay is None else self.weights * (1.0 - decay)
        keep = weights >= (0.0 if decay is None else MIN_DECAYED_WEIGHT)
        old_keys = self.sample_keys if decay is None else self.sample_keys / (1.0 - decay)
        old_sample_weights = self.sample_weights if decay is None else self.sample_weights * (1.0 - decay)
        old_keys, old_sample_weights, again = _seen_again(self.sample, old_keys, old_sample_weights, new)
        keys = np.concatenate([old_keys, new.sample_keys[~again]])
        kept = np.argsort(keys, kind="stable")[: sample_size(self.n_features)]  # the smallest keys (bottom_rows)
        sample = np.concatenate([self.sample, new.sample[~again]])[kept]
        sample_weights = np.concatenate([old_sample_weights, new.sample_weights[~again]])[kept]
        return ClusterSummary(
            np.concatenate([self.means[keep], new.means]),
            np.concatenate([weights[keep], new.weights]),
            np.concatenate([self.spread[keep], new.spread]),
            self.n_rows + new.n_rows,
            self.n_updates + 1,
            sample,
            keys[kept],
            sample_weights,
        )

    def bounded(self, budget: int | None, seed: int = 0) -> ClusterSummary:
        """This summary with at most ``budget`` microclusters (None: as it is), merged as the summarising pass
        merges them (:func:`~lowdens_dask.kernels.summaries.merge_microclusters`: counts, means and spreads
        exact): a summary updated night after night stays the size of one fit's."""
        if budget is None or self.n_microclusters <= budget:
            return self
        d = self.n_features
        counts, means, spread, _ = merge_microclusters(self.weights, self.means, self.spread * d, budget, seed)
        return ClusterSummary(
            means, counts, spread / d, self.n_rows, self.n_updates, self.sample, self.sample_keys, self.sample_weights
        )

    def to_bytes(self) -> bytes:
        """The summary as .npz bytes (what a run stores)."""
        buffer = io.BytesIO()
        np.savez(
            buffer,
            means=self.means,
            weights=self.weights,
            spread=self.spread,
            n_rows=np.int64(self.n_rows),
            n_updates=np.int64(self.n_updates),
            sample=self.sample,
            sample_keys=self.sample_keys,
            sample_weights=self.sample_weights,
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, payload: bytes) -> ClusterSummary:
        """The summary :meth:`to_bytes` wrote."""
        with np.load(io.BytesIO(payload), allow_pickle=False) as f:
            sample = tuple(f[key] if key in f.files else None for key in ("sample", "sample_keys", "sample_weights"))
            return cls(f["means"], f["weights"], f["spread"], int(f["n_rows"]), int(f["n_updates"]), *sample)
