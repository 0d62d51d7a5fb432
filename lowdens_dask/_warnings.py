"""Warnings attributed to the caller's line, whatever the depth of the library's entry point (``fit``,
``fit_predict``, ``ClusterTree.split``, a pipeline task): the stack level is counted, not fixed."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
import sys
import warnings

import sklearn

#: Frames in these directories are library frames: the warning points past them.
_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(module.__file__)) + os.sep for module in (sys.modules[__package__], sklearn)
)


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` at the first frame outside lowdens_dask and scikit-learn (which calls ``fit`` from
    ``fit_predict``)."""
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_LIBRARY_DIRS):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level - 1 if frame is None else level)
