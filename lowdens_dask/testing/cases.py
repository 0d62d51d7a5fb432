"""Generated cases with a known answer (used by the tests and benchmarks)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np


def separated_groups(case: int) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """``(X, truth, row_chunks)`` of the random agreement case ``case``: 2 to 5 unit Gaussian groups whose centres,
    uniform in [-40, 40]^d, lie at least 20 apart, in d = 2 to 4 columns, 2,000 to 6,000 rows, cut into 4 to 10
    irregular row chunks. Every mode of every auto fit should find the groups (issue 34, item 4)."""
    rng = np.random.default_rng(1000 + case)
    k, d, n = int(rng.integers(2, 6)), int(rng.integers(2, 5)), int(rng.integers(2000, 6001))
    while True:
        centres = rng.uniform(-40, 40, (k, d))
        if np.linalg.norm(centres[:, None] - centres[None], axis=2)[np.triu_indices(k, 1)].min() >= 20:
            break
    truth = rng.integers(0, k, n)
    X = centres[truth] + rng.standard_normal((n, d))
    cuts = np.sort(rng.choice(np.arange(1, n), size=int(rng.integers(3, 10)), replace=False))
    return X, truth, tuple(np.diff([0, *cuts, n]).tolist())
