"""Chunk-local kernels of tree routing: the rows' absolute sums, and a walk down the hyperplanes of a tree over
precomputed projections."""

# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from numba import njit

#: ``column`` codes of nodes that are not hyperplane splits: a leaf, and a split by another kind of rule.
LEAF = -1
OTHER_RULE = -2

#: ``status`` codes returned by :func:`walk_projections`.
AT_LEAF = 0  #: the row reached a leaf
UNDECIDED = 1  #: the row stopped at a node that must route it exactly (a tie within rounding, or another rule)
NONFINITE = 2  #: the row has NaN or inf (it stops at the root)


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
def walk_projections(P, abs_sums, column, threshold, tolerance, slack, children, node, status):
    """Walk each row from node 0 to a leaf, comparing its projections with the nodes' thresholds.

    ``P[i, column[j]]`` is row i's computed projection on node j's direction and ``threshold[j]`` the node's
    offset (``column[j]`` is ``LEAF`` or ``OTHER_RULE`` for nodes without a hyperplane). A row goes to
    ``children[j, 1]`` when the projection is at least the threshold, to ``children[j, 0]`` otherwise, unless the
    two differ by at most ``tolerance[j] * abs_sums[i] + slack`` (the rounding error the projection may carry),
    or the difference is not finite: the row then stops at node j with status ``UNDECIDED``, as it does at a
    node of another rule. Rows whose ``abs_sums`` is NaN (NaN or inf in the row) stop at node 0 with status
    ``NONFINITE``. Writes the node each row stopped at into ``node`` and its status into ``status``.
    """
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
            diff = P[i, col] - threshold[j]
            if not (abs(diff) > tolerance[j] * a + slack and np.isfinite(diff)):
                state = UNDECIDED
                break
            j = children[j, 1 if diff >= 0.0 else 0]  # an index, not a branch: the path is unpredictable
            col = column[j]
        if col == OTHER_RULE:
            state = UNDECIDED
        node[i] = j
        status[i] = state
