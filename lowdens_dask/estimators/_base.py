"""What every tree estimator shares: the fit paths (in memory, summary mode, exact chunked mode) that
put the rows in their frame and hand them to the tree grower."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import numpy as np

from ..backend import InMemoryData
from ..backend.chunked import ChunkedNode, task_slots
from ..backend.frame import Frame
from ..tree.hyperplanes import Refine
from ._scale_out import exact_frame, rows_frame
from ._validation import single_threaded_blas


class TreeFitMixin:
    """``_fit_rows`` (rows or summaries in memory) and ``_fit_node`` (chunked rows, exact mode) both call
    ``self._fit_data(data, frame, parallel, refine)`` with the rows in their frame: standardised if ``standardize``,
    and with columns that are constant up to rounding set aside either way (``backend.frame.column_frame``), the
    same in memory and in exact mode."""

    def _fit_rows(self, X: np.ndarray, weights: np.ndarray, spread: np.ndarray | None = None, rows=None) -> None:
        """Fit on rows or summaries in memory. In summary mode (``spread`` given) the tree grows as parallel
        Dask tasks; with ``rows`` (a ChunkedNode of the rows, for ``refine``) every split is polished by exact
        passes over its node's rows before it is made."""
        frame, Z, spread = self._in_frame(X, weights, spread)
        refine = None
        if rows is not None:
            refine = Refine(*exact_frame(self, rows), self.refine)
        with single_threaded_blas():
            self._fit_data(InMemoryData(Z, weights, spread), frame, task_slots() if spread is not None else 0, refine)

    def _in_frame(self, X: np.ndarray, weights: np.ndarray, spread: np.ndarray | None):
        """``(frame, rows in the frame, spread in the frame)`` of rows or summaries in memory."""
        frame, constant = rows_frame(X, weights, self.standardize)
        Z = X if frame.mean is None else (X - frame.mean) / frame.scale
        if self.standardize and spread is not None and not constant.all():
            # per-dimension variance, approximately, in z-scored units (of the columns that are not constant)
            spread = spread / np.mean(frame.scale[~constant] ** 2)
        return frame, Z, spread

    def _fit_node(self, root: ChunkedNode) -> None:
        """Fit in exact mode over chunked rows: nodes that fit ``max_node_bytes`` on one worker each, the
        others by passes over their chunks."""
        with single_threaded_blas():
            self._fit_data(*exact_frame(self, root), 0, None)

    def _fit_data(self, data, frame: Frame, parallel: int, refine: Refine | None) -> None:
        raise NotImplementedError
