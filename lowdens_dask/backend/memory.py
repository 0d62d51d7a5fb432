"""In-memory backend of the data layer: a numpy array and optional per-row weights.

The projection-pursuit layers above see data only through the operations of ``InMemoryData``:
row count and total weight, weighted mean, leading covariance eigenvectors, projection ``X @ V``,
back-projection ``X.T @ G`` and row subsets. The Dask backend implements the same operations with
chunked map/reduce passes.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import dask.base
import numpy as np
from scipy.linalg import eigh
from scipy.sparse.linalg import ArpackError, LinearOperator, eigsh

#: Above this many features the leading eigenvectors come from Lanczos iterations on X rather than
#: from a dense d x d covariance matrix.
DENSE_EIGH_MAX_FEATURES = 128


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows of ``keys`` that are equal, as ``(first, rank)``: the position of each group's first row, in order of
    first occurrence, and each row's group number; None when every row is distinct."""
    n = keys.shape[0]
    if n < 2:
        return None
    projection = keys @ np.random.default_rng(0).standard_normal(keys.shape[1])
    order = np.argsort(projection, kind="stable")  # equal projections keep their rows' order
    sorted_projection = projection[order]
    starts = np.concatenate([[True], sorted_projection[1:] != sorted_projection[:-1]])
    if starts.all():  # distinct projections: distinct rows (the common case)
        return None
    run = np.cumsum(starts) - 1  # each sorted row's run of equal projections
    leaders = order[starts]  # each run's first row (the stable sort's first)
    if not np.array_equal(keys[order], keys[leaders[run]]):  # distinct rows with one projection: compare rows
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        if first.size == n:
            return None
        leaders, group = first, inverse.ravel()
    else:
        group = np.empty(n, np.int64)
        group[order] = run
    by_first = np.argsort(leaders)
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(by_first.size)
    return leaders[by_first], rank[group]


def merge_duplicates(X: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows repeated exactly merged into one row each, whose weight is the sum of theirs (weights are frequencies),
    in the order of their first occurrence: ``(rows, weights)``, ``X`` and ``weights`` themselves when no row repeats.
    ``np.repeat(X, r, 0)`` and ``X`` with weights ``r`` give the same rows and weights, hence the same fit."""
    return _merged(X, weights, _groups(X))


def _merged(X: np.ndarray, weights: np.ndarray, groups) -> tuple[np.ndarray, np.ndarray]:
    """Each group of :func:`_groups` as its first row, of the group's total weight; ``X`` and ``weights`` themselves
    when ``groups`` is None."""
    if groups is None:
        return X, weights
    first, rank = groups
    return np.ascontiguousarray(X[first]), np.bincount(rank, weights=weights, minlength=first.size)


#: :func:`merge_records`: rows in one cell of a grid whose step is this share of each column's robust scale are one
#: record. Far below any bandwidth (MDH's is about 0.1-0.5 of a scale) or spacing of distinct observations, far
#: above the jitter a float round trip or a re-export adds (1e-16-1e-9 of a value).
RECORD_RESOLUTION = 1e-4
#: :func:`merge_records`: the cells' edges lie this share of a step (the golden ratio's) off the columns' least value.
GRID_OFFSET = (3 - 5**0.5) / 2
#: :func:`robust_scale` reads its quantiles on at most this many rows, drawn at random.
SCALE_SAMPLE = 20_000


def robust_scale(X: np.ndarray) -> np.ndarray:
    """Each column's scale, robust to a few far rows and to jitter: the largest of its interquartile range / 1.349
    and its 1-99% range / 4.65 (both the standard deviation of a normal), and 1e-3 of its standard deviation (a column
    of one value and a few others, or of one value jittered); 1 for a constant column."""
    if X.shape[0] == 0:
        return np.ones(X.shape[1])
    if X.shape[0] > SCALE_SAMPLE:  # quantiles of a random sample of the rows: a scale, not an exact statistic
        X = X[np.random.default_rng(0).choice(X.shape[0], SCALE_SAMPLE, replace=False)]
    q01, q25, q75, q99 = np.quantile(X, [0.01, 0.25, 0.75, 0.99], axis=0)
    scale = np.maximum.reduce([(q75 - q25) / 1.349, (q99 - q01) / 4.65, 1e-3 * X.std(axis=0)])
    return np.where(scale > 0, scale, 1.0)


def merge_records(X: np.ndarray, weights: np.ndarray, step=None):
    """Rows that are copies of one record, exact or within one cell of a grid whose ``step`` per column is by default
    :data:`RECORD_RESOLUTION` of each column's :func:`robust_scale`, merged into the first of them, their weights
    summed: ``(rows, weights)``, ``X`` and ``weights`` themselves when every row is its own record. What the
    significance of a split counts (:mod:`lowdens_dask.pursuit.significance`): a record seen again, or re-exported
    with rounding noise, is one observation of frequency weight, not a mode. A grid (not a distance graph) so that no
    chain of close rows merges a dense region into one record."""
    if X.shape[0] < 2:
        return X, weights
    if step is None:  # the scale of the records: exact copies merged first
        X, weights = merge_duplicates(X, weights)
        step = RECORD_RESOLUTION * robust_scale(X)
    # the cells' edges a golden-ratio share of a step off the columns' least value: values recorded on a grid (whole
    # numbers, fixed decimals) lie inside cells, not on their edges, where jitter would split their copies
    cells = np.floor((X - X.min(axis=0)) / np.asarray(step, dtype=np.float64) + GRID_OFFSET)
    return _merged(X, weights, _groups(cells))


#: :func:`merge_near_copies`: rows nearer to another row than this share of the rows' median distance to their
#: ``NEAR_COPY_NEIGHBOUR``-th nearest row are copies of it (the scale of the rows' spacing, which a row's few copies
#: do not set). The median is taken over ``NEAR_COPY_PROBES`` rows drawn at random, by direct distances: a k-d tree's
#: unbounded neighbour query costs milliseconds a row in 16 dimensions, its nearest row within the tolerance
#: microseconds.
NEAR_COPY_SHARE, NEAR_COPY_NEIGHBOUR, NEAR_COPY_PROBES = 0.05, 5, 256


def _spacing(X: np.ndarray, neighbour: int, probes: int) -> float:
    """Median distance from ``probes`` rows of ``X`` drawn at random (all rows if fewer) to their ``neighbour``-th
    nearest other row, by direct distances in blocks of 32 probes."""
    n = X.shape[0]
    chosen = np.arange(n) if n <= probes else np.random.default_rng(0).choice(n, probes, replace=False)
    squared_norms = np.einsum("ij,ij->i", X, X)
    kth = []
    for block in np.array_split(chosen, max(1, chosen.size // 32)):
        squared = squared_norms[block, None] + squared_norms[None, :] - 2.0 * (X[block] @ X.T)
        kth.append(np.partition(squared, neighbour, axis=1)[:, neighbour])  # index 0 is the probe itself
    return float(np.sqrt(max(np.median(np.concatenate(kth)), 0.0)))


def merge_near_copies(X: np.ndarray, weights: np.ndarray, share: float = NEAR_COPY_SHARE):
    """Rows within ``share`` of the rows' spacing (:data:`NEAR_COPY_SHARE`) of their nearest row merged with it, each
    chain of such rows into its first row, their weights summed (:func:`merge_duplicates` with a tolerance):
    ``(rows, weights, kept)``, ``kept`` the positions of the rows kept, in order. A row seen again with a small change
    (an update's batch that repeats the fitted rows, shifted by 0.01) is the same record, not a second observation."""
    n = X.shape[0]
    if n <= NEAR_COPY_NEIGHBOUR:
        return X, weights, np.arange(n)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    tolerance = share * _spacing(X, NEAR_COPY_NEIGHBOUR, NEAR_COPY_PROBES)
    # the nearest other row within the tolerance (k=2: the row itself and it; a larger k stops the tree's pruning)
    _, nearest = cKDTree(X).query(X, k=2, distance_upper_bound=tolerance)
    near = np.flatnonzero(nearest[:, 1] < n)
    if near.size == 0:
        return X, weights, np.arange(n)
    graph = coo_matrix((np.ones(near.size), (near, nearest[near, 1])), shape=(n, n))
    _, component = connected_components(graph, directed=False)
    first = np.full(component.max() + 1, n)
    np.minimum.at(first, component, np.arange(n))
    kept = np.sort(first)
    rank = np.empty(n, dtype=np.int64)
    rank[kept] = np.arange(kept.size)
    return X[kept], np.bincount(rank[first[component]], weights=weights, minlength=kept.size), kept


#: :func:`far_rows`: the farthest rows from a node's centre (its coordinate-wise median) are far from the rest when
#: they lie more than ``FAR_RATIO`` times as far as the farthest of the rest (a normal sample's two farthest of 10^6
#: rows differ by a few per cent). At most ``FAR_MOST`` rows, or half the node's, are far: beyond, a tail, not a few
#: outliers. The centre is read on at most ``FAR_SAMPLE`` rows (the coordinate-wise median of a node's rows was a
#: fifth of a PDDP fit's time at 20,000; at 2,000 labels were identical on the 92 fits of quality_side_by_side.py).
FAR_RATIO, FAR_MOST, FAR_SAMPLE = 2.0, 1_000, 2_000


def far_rows(X: np.ndarray, weights: np.ndarray, least: float) -> np.ndarray | None:
    """The rows that could never form a cluster of their own: beyond a gap in the distances from the node's centre
    (:data:`FAR_RATIO`), in groups (single linkage at the distance of the farthest of the rest) of less weight than
    ``least`` (the least weight of a cluster): a boolean mask, or None when there are none. A node is fitted without
    them (its scales, bandwidth, effective dimension and test are those of the rest) and routes them as any other
    row: three rows 20 standard deviations out change neither the clusters of the rest nor how they are tested."""
    n = X.shape[0]
    if n < 8 or not least > 0:
        return None
    probe = X if n <= FAR_SAMPLE else X[np.random.default_rng(0).choice(n, FAR_SAMPLE, replace=False)]
    offset = X - np.median(probe, axis=0)
    distance = np.sqrt(np.einsum("ij,ij->i", offset, offset))
    most = min(FAR_MOST, n // 2)
    farthest = np.argpartition(distance, n - most - 1)[n - most - 1 :]
    order = farthest[np.argsort(distance[farthest])[::-1]]  # the most + 1 farthest rows, farthest first
    top = distance[order]
    inner = top[1:]
    ratio = np.divide(top[:-1], inner, out=np.zeros(inner.size), where=inner > 0)  # ratio[k]: row k+1 against k+2
    k = int(np.argmax(ratio)) if ratio.size else -1
    if k < 0 or not ratio[k] > FAR_RATIO:
        return None
    where, rest = order[: k + 1], top[k + 1]
    if where.size > 1:
        from scipy.cluster.hierarchy import fcluster, linkage

        group = fcluster(linkage(X[where], method="single"), t=max(rest, 1e-300), criterion="distance")
    else:
        group = np.ones(1, dtype=np.int64)
    light = np.bincount(group, weights=weights[where])[group] < least
    if not light.any():
        return None
    far = np.zeros(n, dtype=bool)
    far[where[light]] = True
    return far


class InMemoryData:
    """Rows of a float64 matrix with non-negative frequency weights.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Validated, finite data. It is used as given (not copied) when already C-contiguous float64.
    weights : ndarray of shape (n_samples,), optional
        Frequency weights (a row of weight 2 counts as two identical rows). Default: all ones.
    spread : ndarray of shape (n_samples,), optional
        For summaries (microcluster means weighted by row counts): each summary row's within-cluster
        variance per dimension. Bandwidth rules add its weighted mean to h², so the KDE of the means
        approximates the KDE of the rows they stand for.
    index : ndarray of shape (n_samples,), optional
        Each row's position in the data it was taken from (kept by :meth:`take` and :meth:`split`), so that a
        tree's leaves can find their rows' other attributes (original coordinates, weights before an update).
        Default: ``arange(n_samples)``.
    sample : InMemoryData, optional
        For summaries: a random sample of the rows summarised (what ``n_clusters="auto"`` tests a split on),
        divided with the summary rows by :meth:`partition`; :meth:`take` leaves it out.
    reach : ndarray of shape (n_reach, n_original_features), optional
        For summaries: rows in the tree's (original) coordinates that the label pass will route (each
        microcluster's member row nearest its mean); the grower makes no split that leaves one side without any
        (:func:`~lowdens_dask.growth.grower.grow`). Kept by the data the growth starts from, not by its parts.
    """

    #: Rows are in memory: pursuit evaluates whole arrays (see ``ChunkedNode`` for rows held in chunks).
    chunked = False

    def __init__(
        self,
        X: np.ndarray,
        weights: np.ndarray | None = None,
        spread: np.ndarray | None = None,
        index: np.ndarray | None = None,
        sample: InMemoryData | None = None,
        reach: np.ndarray | None = None,
    ):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        n = self.X.shape[0]
        self.weights = np.ones(n) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
        self.total_weight = float(self.weights.sum())
        self.spread = spread
        self._index = index
        self.sample = sample
        self.reach = reach
        self._mean: np.ndarray | None = None
        self._token: str | None = None

    @property
    def token(self) -> str:
        """A deterministic name for these rows (for task keys)."""
        if self._token is None:
            self._token = dask.base.tokenize(self.X, self.weights, self.spread)
        return self._token

    @property
    def index(self) -> np.ndarray:
        """Each row's position in the data it was taken from."""
        if self._index is None:
            self._index = np.arange(self.X.shape[0])
        return self._index

    @property
    def within_variance(self) -> float:
        """Weighted mean within-summary variance per dimension (0 for ordinary rows)."""
        return 0.0 if self.spread is None else float(self.weights @ self.spread / self.total_weight)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    def mean(self) -> np.ndarray:
        """Weighted column means."""
        if self._mean is None:
            self._mean = (self.weights @ self.X) / self.total_weight
        return self._mean

    def project(self, V: np.ndarray) -> np.ndarray:
        """``X @ V`` for a direction (d,) or a block of directions (d, k)."""
        return self.X @ V

    def backproject(self, G: np.ndarray) -> np.ndarray:
        """``X.T @ G`` for per-row weights (n,) or (n, k)."""
        return self.X.T @ G

    def leading_eigenvectors(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k eigenpairs of the weighted covariance (divisor W - 1), largest first.

        Each eigenvector's sign is fixed so that its largest-magnitude entry is positive, which makes
        fits reproducible across platforms and backends.
        """
        d = self.n_features
        k = min(k, d)
        xc = self.X - self.mean()
        denom = max(self.total_weight - 1.0, 1.0)
        vals = vecs = None
        if d > DENSE_EIGH_MAX_FEATURES and k < d - 1:
            w = self.weights

            def matvec(v):
                return xc.T @ (w * (xc @ v.ravel())) / denom

            op = LinearOperator((d, d), matvec=matvec, dtype=np.float64)
            try:
                vals, vecs = eigsh(op, k=k, which="LA", v0=np.full(d, 1.0 / np.sqrt(d)), tol=1e-10)
            except ArpackError:  # e.g. "starting vector is zero": the rows do not vary along the ones vector
                vals = None
            else:
                order = np.argsort(vals)[::-1]
                vals, vecs = vals[order], vecs[:, order]
        if vals is None:
            unit = self.weights.min() == 1.0 and self.weights.max() == 1.0
            xs = xc if unit else xc * np.sqrt(self.weights)[:, None]
            vals, vecs = eigh(xs.T @ xs / denom, subset_by_index=(d - k, d - 1))
            vals, vecs = vals[::-1], vecs[:, ::-1]
        idx = np.argmax(np.abs(vecs), axis=0)
        vecs = vecs * np.sign(vecs[idx, np.arange(vecs.shape[1])])
        return np.maximum(vals, 0.0), np.ascontiguousarray(vecs)

    def total_scatter(self) -> float:
        """Weighted sum of squared distances to the mean (Boley's PDDP scatter)."""
        return float(self.weights @ ((self.X - self.mean()) ** 2).sum(axis=1))

    def take(self, rows: np.ndarray) -> InMemoryData:
        """The subset of rows given by an index array or a boolean mask."""
        spread = None if self.spread is None else self.spread[rows]
        return InMemoryData(self.X[rows], self.weights[rows], spread, self.index[rows])

    def partition(self, v: np.ndarray, b: float) -> tuple[InMemoryData, InMemoryData]:
        """The rows with ``x @ v < b`` and those with ``x @ v >= b``."""
        below = self.project(v) < b
        parts = self.take(below), self.take(~below)
        if self.sample is not None:
            parts[0].sample, parts[1].sample = self.sample.partition(v, b)
        return parts

    def weight_below(self, v: np.ndarray, b: float) -> float:
        """Total weight of the rows with ``x @ v < b``."""
        return self.weighted_count(self.project(v) < b)

    def gap_around(self, v: np.ndarray, b: float) -> tuple[float, float, np.ndarray]:
        """``(lo, hi, colmax)``: the largest projection ``x @ v`` below b (-inf if none), the smallest at or above
        it (inf if none), and the largest ``|x_j|`` of each column (to bound the rounding of ``x @ v``)."""
        p = self.project(v)
        below = p < b
        lo = float(p[below].max()) if below.any() else -np.inf
        hi = float(p[~below].min()) if not below.all() else np.inf
        return lo, hi, np.abs(self.X).max(axis=0)

    def weighted_count(self, mask: np.ndarray) -> float:
        """Total weight of the rows selected by a boolean mask."""
        return float(self.weights[mask].sum())
