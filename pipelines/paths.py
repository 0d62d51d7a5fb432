"""Where a run's input, labels and store are, as a run or a deployment records them (issue 35, item 2).

A local path is recorded absolute, so that the run reads back from any working directory (``lowdens plot RUN``
from elsewhere) and a deployment's workers get a path that does not depend on the directory they start in; a URL
(``s3://``, ``gs://``, ``memory://``, ``file://``, fsspec's chained ``simplecache::s3://...``) is kept as given.
Runs recorded before this kept relative paths: they read as they did, relative to the working directory, and
:func:`same_path` compares a given path with a recorded one, relative or not.

Nothing but the standard library is imported here (the CLI's start-up cost).
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
import re

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def is_url(path) -> bool:
    """Whether ``path`` is a URL (it has a scheme, ``s3://...``, or is an fsspec chain, ``a::b://...``), not a local
    path."""
    text = os.fspath(path) if isinstance(path, os.PathLike) else path
    return isinstance(text, str) and (bool(_SCHEME.match(text)) or "::" in text)


def is_relative(path) -> bool:
    """Whether ``path`` is a local path relative to the working directory (a URL or an absolute path is not)."""
    if not isinstance(path, (str, os.PathLike)):
        return False
    text = os.fspath(path)
    return not is_url(text) and not os.path.isabs(os.path.expanduser(text))


def absolute(path):
    """``path`` as a run records it: a local path absolute (``~`` expanded, ``..`` and ``.`` resolved, symbolic links
    kept), a URL as given; None, or anything that is not a path (true labels given as a list), unchanged."""
    if not isinstance(path, (str, os.PathLike)):
        return path
    text = os.fspath(path)
    if not text or is_url(text):
        return text
    return os.path.abspath(os.path.expanduser(text))


def same_path(a, b) -> bool:
    """Whether two recorded or given paths name the same input: equal once each is :func:`absolute` (a relative
    one, of a run recorded before paths were made absolute, relative to the working directory); URLs as they are
    written, less a trailing ``/``."""
    if a is None or b is None:
        return a is b
    a, b = absolute(a), absolute(b)
    if isinstance(a, str) and isinstance(b, str):
        return a.rstrip("/") == b.rstrip("/")
    return a == b


def shown(path):
    """A recorded path as a message shows it: relative to the working directory when it is inside it (as the user
    named it there), else as recorded."""
    text = absolute(path)
    if not isinstance(text, str) or is_url(text):
        return path
    here = os.getcwd()
    if text == here or not text.startswith(here.rstrip(os.sep) + os.sep):
        return text
    return os.path.relpath(text, here)


def refuse_relative_in_deployment(**paths) -> None:
    """In a deployment's flow run: a ``ValueError`` (one line) for the first local path in ``paths`` (name ->
    value) that is relative, as the worker that runs the deployment starts in a directory nobody chose."""
    for name, value in paths.items():
        if is_relative(value):
            raise ValueError(
                f"{name} {os.fspath(value)!r} is a relative path, relative to an unknown working directory on the "
                "worker that runs this deployment; give an absolute path or a URL (s3://..., gs://...)."
            )
