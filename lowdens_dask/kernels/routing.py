"""Chunk-local kernels of tree routing: the rows' absolute sums, and a walk down the splits of a tree over
precomputed projections (hyperplanes, and the nearest projected centre of SCPP/LMSC splits)."""

# SPDX-License-Identifier: BSD-3-Clause

from typing import NamedTuple

import numpy as np
from numba import njit

#: ``column`` codes of nodes without projections: a leaf, and a split by another kind of rule.
LEAF = -1
OTHER_RULE = -2

#: ``status`` codes returned by :func:`walk_projections`.
AT_LEAF = 0  #: the row reached a leaf
UNDECIDED = 1  #: the row stopped at a node that must route it exactly (a tie within rounding, or another rule)
NONFINITE = 2  #: the row has NaN or inf (it stops at the root)

#: Cells of a nearest-centre split's grid (at most; square as far as they can be), and the margin around the
#: centres it covers on each axis, as a fraction of their spread along it.
GRID_CELLS = 1024
GRID_PAD = 0.5


class CentreTables(NamedTuple):
    """The nearest-centre splits of a tree, for :func:`walk_projections` (R splits, K centres in all)."""

    rule: np.ndarray  #: per node: the index of its nearest-centre split, -1 for other nodes
    dims: np.ndarray  #: (R,) the dimension l of each split's projection (its l columns of P are consecutive)
    centre_ptr: np.ndarray  #: (R + 1,) split r's centres are rows ``centre_ptr[r]:centre_ptr[r + 1]``
    centres: np.ndarray  #: (K, max l) projected centres
    sides: np.ndarray  #: (K,) bool, the side of each centre
    lo: np.ndarray  #: (R, max l) the grid's lower corner
    inv_width: np.ndarray  #: (R, max l) 1 / the cells' width
    size: np.ndarray  #: (R, max l) cells along each axis
    cell_base: np.ndarray  #: (R,) index of split r's first cell among all cells
    cell_ptr: np.ndarray  #: (cells + 1,) cell c's candidates are ``candidates[cell_ptr[c]:cell_ptr[c + 1]]``
    candidates: np.ndarray  #: global indices of the centres that can be nearest (within ``reach``) in a cell
    room: np.ndarray  #: (cells,) the largest projection error (twice it) for which the candidates suffice
    pure: np.ndarray  #: (cells,) int8: the side of all of a cell's candidates, -1 where they have both sides


@njit(cache=True)
def distance_rounding(l):
    """A bound on the relative rounding error of a Euclidean distance between two points of dimension l, as
    computed here or by the rule in float64 (sum of l squared differences, then a square root: (l + 2) units
    of roundoff), with room to spare."""
    return 4.0 * (l + 4) * 2.0**-53


def centre_grid(centres: np.ndarray, sides: np.ndarray) -> tuple:
    """The cells of a nearest-centre split (K projected centres, l columns, and their sides): ``(lo, inv_width,
    size, cell_ptr, candidates, room, pure)`` as in :class:`CentreTables` for this split alone.

    A cell's candidates are the centres whose least distance to the cell is within ``reach`` (a quarter of a
    cell's diagonal) of the least largest distance: any other centre is farther than the nearest one by more
    than ``reach`` from every point of the cell, so it can be neither the nearest nor within a tie margin below
    ``reach`` of it. In a cell whose candidates all lie on one side the row's side needs no distance at all.
    Boxes are widened by a millionth of a cell, so that a row assigned to a cell by rounding lies in it."""
    K, l = centres.shape
    low, high = centres.min(axis=0), centres.max(axis=0)
    span = high - low
    span = np.maximum(span, max(1e-3 * float(span.max()), np.finfo(np.float64).tiny))  # no axis of width 0
    lo = low - GRID_PAD * span
    extent = (1.0 + 2.0 * GRID_PAD) * span
    side = float(np.exp(np.log(extent).mean())) * GRID_CELLS ** (-1.0 / l)  # of a square cell
    size = np.maximum(1, np.floor(extent / side)).astype(np.int64)
    while np.prod(size) > GRID_CELLS:  # rounding left too many
        size[np.argmax(size)] -= 1
    width = extent / size
    index = np.indices(tuple(size)).reshape(l, -1).T  # row-major: cell = ((i_0 size_1 + i_1) size_2 + ...)
    box_lo = lo + index * width - 1e-6 * width
    box_hi = lo + (index + 1) * width + 1e-6 * width
    reach = 0.25 * float(np.sqrt((width**2).sum()))
    counts, members, room, pure = [], [], [], []
    step = max(1, 2**21 // (K * l))  # cells at a time: the (cells, K, l) temporaries stay small
    for start in range(0, len(index), step):
        a, b = box_lo[start : start + step, None, :], box_hi[start : start + step, None, :]
        near = np.sqrt((np.maximum(np.maximum(a - centres, centres - b), 0.0) ** 2).sum(axis=2))
        far = np.sqrt((np.maximum(centres - a, b - centres) ** 2).sum(axis=2))
        bound = far.min(axis=1)
        candidate = near <= (bound + reach)[:, None]
        counts.append(candidate.sum(axis=1))
        members.append(np.nonzero(candidate)[1])
        gamma = distance_rounding(l)
        room.append(reach * (1.0 - 2.0 * gamma) - 4.0 * gamma * (bound + reach))
        ones = (candidate & sides).any(axis=1)
        pure.append(np.where(ones == (candidate & ~sides).any(axis=1), -1, ones).astype(np.int8))
    cell_ptr = np.concatenate([[0], np.cumsum(np.concatenate(counts))]).astype(np.int64)
    members = np.concatenate(members).astype(np.int64)
    return lo, 1.0 / width, size, cell_ptr, members, np.concatenate(room), np.concatenate(pure)


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def row_abs_sums(X, out):
    """``out[i] = sum_c |X[i, c]|`` in float64 (in any order: reassociation lets the sum vectorise). NaN for a
    row with NaN or inf, and inf for a finite row whose sum overflows."""
    n, d = X.shape
    for i in range(n):
        s = 0.0
        for c in range(d):
            s += abs(np.float64(X[i, c]))
        if not np.isfinite(s):
            s = np.inf
            for c in range(d):
                if not np.isfinite(X[i, c]):
                    s = np.nan
                    break
        out[i] = s


@njit(cache=True, nogil=True)
def walk_projections(P, abs_sums, column, threshold, tolerance, slack, children, tables, node, status):
    """Walk each row from node 0 to a leaf, deciding each split from the row's projections.

    ``column[j]`` is node j's first column of P (``LEAF`` or ``OTHER_RULE`` for nodes without projections); each
    column's projections carry a rounding error of at most ``tolerance[col] * abs_sums[i] + slack``. At a
    hyperplane node (``tables.rule[j] < 0``) a row goes to ``children[j, 1]`` when its projection is at least
    ``threshold[j]``, to ``children[j, 0]`` otherwise, unless the two differ by at most that error or the
    difference is not finite. At a nearest-centre node r, whose l projections are ``P[i, col:col + l]``, it goes
    to the child of its nearest projected centre's side: a row in the split's grid (:func:`centre_grid`) compares
    the candidates of its cell (none when they all lie on one side), other rows every centre of the split. That
    is undecided when a projection is not finite, or the nearest centres of the two sides are not farther apart
    than twice the projections' error plus both computations' rounding of the distances
    (:func:`distance_rounding`). An undecided row stops at node j with status ``UNDECIDED``, as it does at a node
    of another rule. Rows whose ``abs_sums`` is NaN (NaN or inf in the row) stop at node 0 with status
    ``NONFINITE``. Writes the node each row stopped at into ``node`` and its status into ``status``.

    The nearest-centre step is written out in the loop, the tables unpacked once: as a function (even inlined),
    it cost six times as much per node, which made SCPP's label pass several passes long (issue 44).
    """
    rule, dims, centre_ptr, centres, sides, lo, inv_width, sizes, cell_base, cell_ptr, candidates, room, pure = tables
    for i in range(P.shape[0]):
        a = abs_sums[i]
        if np.isnan(a):
            node[i] = 0
            status[i] = NONFINITE
            continue
        j = 0
        state = AT_LEAF
        col = column[0]
        while col >= 0:
            r = rule[j]
            if r < 0:
                diff = P[i, col] - threshold[j]
                if not (abs(diff) > tolerance[col] * a + slack and np.isfinite(diff)):
                    state = UNDECIDED
                    break
                side = 1 if diff >= 0.0 else 0
            else:
                l = dims[r]
                error = 0.0  # bounds the distance between the computed and the float64 projection
                cell = 0
                inside = True
                finite = True
                for k in range(l):
                    error += tolerance[col + k] * a + slack
                    p = np.float64(P[i, col + k])
                    finite = finite and np.isfinite(p)
                    z = (p - lo[r, k]) * inv_width[r, k]
                    if z >= 0.0 and z < sizes[r, k]:
                        cell = cell * sizes[r, k] + int(z)
                    else:
                        inside = False
                side = -1
                start, stop = centre_ptr[r], centre_ptr[r + 1]  # outside the grid: every centre
                if not finite:
                    stop = start
                elif inside:
                    cell += cell_base[r]
                    start, stop = cell_ptr[cell], cell_ptr[cell + 1]
                    if not 2.0 * error < room[cell]:  # the candidates may not hold the nearest centre
                        stop = start
                    elif pure[cell] >= 0:  # the other side's centres are all beyond reach
                        side = pure[cell]
                        stop = start
                if start < stop:
                    best0 = np.inf
                    best1 = np.inf
                    for m in range(start, stop):
                        c = candidates[m] if inside else m
                        s = 0.0
                        for k in range(l):
                            t = np.float64(P[i, col + k]) - centres[c, k]
                            s += t * t
                        if sides[c]:
                            best1 = min(best1, s)
                        else:
                            best0 = min(best0, s)
                    d0, d1 = np.sqrt(best0), np.sqrt(best1)
                    if abs(d1 - d0) > 2.0 * error + 3.0 * distance_rounding(l) * (d0 + d1):  # False for inf - inf
                        side = 1 if d1 < d0 else 0
                if side < 0:
                    state = UNDECIDED
                    break
            j = children[j, side]  # an index, not a branch: the path is unpredictable
            col = column[j]
        if col == OTHER_RULE:
            state = UNDECIDED
        node[i] = j
        status[i] = state
