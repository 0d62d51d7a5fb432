"""Warnings attributed to the caller's line, whatever the depth of the library's entry point (``fit``,
``fit_predict``, ``ClusterTree.split``, a pipeline task): the stack level is counted, not fixed."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
import sys
import warnings

#: Packages whose frames are library frames: the warning points past them (scikit-learn calls ``fit`` from
#: ``fit_predict``). Looked up when warning, so that importing this module imports neither.
_LIBRARIES = (__package__, "sklearn")


def _library_dirs() -> tuple[str, ...]:
    return tuple(
        os.path.dirname(os.path.abspath(sys.modules[name].__file__)) + os.sep
        for name in _LIBRARIES
        if name in sys.modules
    )


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` at the first frame outside lowdens_dask and scikit-learn."""
    dirs = _library_dirs()
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(dirs):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level - 1 if frame is None else level)
