"""Chunk-local kernel of tree routing: a walk down the hyperplanes of a tree over precomputed projections."""

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


@njit(cache=True, nogil=True)
def walk_projections(X, P, column, threshold, tolerance, slack, child0, child1, node, status):
    """Walk each row of X from node 0 to a leaf, comparing projections with thresholds.

    ``P[i, column[j]]`` is row i's computed projection on node j's direction and ``threshold[j]`` its offset
    (``column[j]`` is ``LEAF`` or ``OTHER_RULE`` for nodes without a hyperplane). A row goes to ``child1[j]``
    when the projection is at least the threshold, to ``child0[j]`` otherwise, unless the two are closer than
    ``tolerance[j] * sum_c |X[i, c]| + slack`` (the rounding error the product may carry; ``slack`` for underflow): the row then stops there
    with status ``UNDECIDED``, as it does at a node of another rule. Rows with NaN or inf stop at node 0 with
    status ``NONFINITE``. Writes the node each row stopped at into ``node`` and its status into ``status``.
    """
    n, d = X.shape
    for i in range(n):
        norm1 = 0.0
        finite = True
        for c in range(d):
            x = np.float64(X[i, c])
            if not np.isfinite(x):
                finite = False
                break
            norm1 += abs(x)
        j = 0
        if not finite:
            node[i] = 0
            status[i] = NONFINITE
            continue
        state = AT_LEAF
        while True:
            col = column[j]
            if col == LEAF:
                break
            if col == OTHER_RULE:
                state = UNDECIDED
                break
            p = np.float64(P[i, col])
            diff = p - threshold[j]
            if not np.isfinite(p) or abs(diff) <= tolerance[j] * norm1 + slack:
                state = UNDECIDED
                break
            j = child1[j] if diff >= 0.0 else child0[j]
        node[i] = j
        status[i] = state
