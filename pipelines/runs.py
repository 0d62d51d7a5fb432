"""The runs store: each clustering run as one zarr group under a root (a local path or an fsspec URL).

Layout::

    <root>/<run_id>/attempt-<UTC time>-<random>/   a zarr group: the labels array and the run's attributes
                                            tree.json   the tree, schema-versioned (also in the attributes)
                                            COMMITTED   written last: the attempt is complete

Every attempt writes into its own folder and commits by writing its ``COMMITTED`` marker last, so a
reader, which sees a run's latest committed attempt only, never sees a partial write, on object stores
too. A failed attempt stays invisible, and a failed re-run of an existing run id leaves the previous
committed attempt visible. When an attempt commits, the run's other attempts are deleted: re-running a run
id to completion replaces it, and the store shows one run with that id.

Built on the public API of lowdens_dask only.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import dask.array as da
import fsspec
import numpy as np
import zarr

from lowdens_dask import ClusterTree

#: The runs store of the flow and the ``lowdens`` command when none is given.
DEFAULT_STORE = "./lowdens-runs"
MARKER = "COMMITTED"
TREE_FILE = "tree.json"
LABELS = "labels"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def new_run_id() -> str:
    """A run id made from the current UTC time (sortable), e.g. ``20261126T091500Z-3f2a``."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}Z-{secrets.token_hex(2)}"


def check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or run_id.startswith("attempt-"):
        raise ValueError(
            f"Invalid run id {run_id!r}: use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit."
        )
    return run_id


@dataclass(frozen=True)
class Run:
    """A committed run, as read back from the store."""

    run_id: str
    url: str  #: the committed attempt's zarr group
    committed_at: str  #: ISO 8601, UTC
    attrs: dict[str, Any]  #: parameters, versions, input identity, metrics, ...
    storage_options: dict | None = None

    @property
    def tree(self) -> ClusterTree:
        return ClusterTree.from_json(json.dumps(self.attrs["tree"]))

    @property
    def stable_ids(self) -> np.ndarray:
        """The run's cluster id of each leaf label of its tree (ids stay stable across runs on one input)."""
        return np.asarray(self.attrs.get("stable_ids", range(self.tree.n_leaves)), dtype=np.int64)

    def predict(self, X) -> np.ndarray:
        """The run's cluster ids for the rows of ``X`` (in memory): its tree's labels through ``stable_ids``."""
        return self.stable_ids[self.tree.predict(X)]

    @property
    def labels(self) -> da.Array:
        """The labels, lazily, in the input's row chunks."""
        return da.from_zarr(self.url, component=LABELS, storage_options=self.storage_options)


class Attempt:
    """One attempt at writing a run; see :meth:`RunsStore.attempt`."""

    def __init__(self, store: RunsStore, run_id: str):
        self.store = store
        self.run_id = run_id
        self.name = f"attempt-{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{secrets.token_hex(4)}"
        self.path = f"{store.path}/{run_id}/{self.name}"
        self.url = store.url_of(self.path)
        self.group = zarr.open_group(self.url, mode="w", storage_options=store.storage_options)
        self.committed = False

    def write_labels(self, labels: da.Array) -> None:
        """Write the labels (a 1-D Dask array, in the input's row chunks) into the attempt."""
        labels.to_zarr(self.url, component=LABELS, storage_options=self.store.storage_options, overwrite=True)

    def set_attrs(self, **attrs: Any) -> None:
        """Record JSON-serialisable attributes; a ``tree`` (a ClusterTree) is also written as ``tree.json``."""
        tree = attrs.pop("tree", None)
        if tree is not None:
            text = tree.to_json()
            self.store.fs.pipe_file(f"{self.path}/{TREE_FILE}", text.encode())
            attrs["tree"] = json.loads(text)
        self.group.attrs.update(json.loads(json.dumps(attrs)))

    def commit(self) -> Run:
        """Write the completion marker (last), then delete the run's other attempts."""
        committed_at = datetime.now(UTC).isoformat()
        self.store.fs.pipe_file(f"{self.path}/{MARKER}", committed_at.encode())
        self.committed = True
        for other in self.store._attempts(self.run_id):
            if other != self.name:
                self.store.fs.rm(f"{self.store.path}/{self.run_id}/{other}", recursive=True)
        return self.store.get(self.run_id)


class RunsStore:
    """Committed clustering runs under ``root`` (a local path or an fsspec URL)."""

    def __init__(self, root: str, storage_options: dict | None = None):
        self.root = str(root)
        self.storage_options = storage_options
        self.fs, self.path = fsspec.core.url_to_fs(self.root, **(storage_options or {}))
        self.path = self.path.rstrip("/")

    def url_of(self, path: str) -> str:
        return self.fs.unstrip_protocol(path) if "://" in self.root else path

    @contextmanager
    def attempt(self, run_id: str | None = None) -> Iterator[Attempt]:
        """An attempt at run ``run_id`` (a new id from the time when None). Commit it with
        :meth:`Attempt.commit`; an attempt that is not committed (an exception in the block) is deleted,
        or, if that fails too, left invisible."""
        run_id = check_run_id(run_id) if run_id is not None else new_run_id()
        attempt = Attempt(self, run_id)
        try:
            yield attempt
        finally:
            if not attempt.committed:
                try:
                    self.fs.rm(attempt.path, recursive=True)
                except OSError:
                    pass

    def _attempts(self, run_id: str) -> list[str]:
        try:
            entries = self.fs.ls(f"{self.path}/{run_id}", detail=False)
        except FileNotFoundError:
            return []
        return sorted(e.rstrip("/").rsplit("/", 1)[-1] for e in entries if "attempt-" in e.rsplit("/", 1)[-1])

    def _committed(self, run_id: str) -> tuple[str, str] | None:
        """(attempt name, commit time) of the run's latest committed attempt, or None."""
        for name in reversed(self._attempts(run_id)):
            marker = f"{self.path}/{run_id}/{name}/{MARKER}"
            if self.fs.exists(marker):
                return name, self.fs.cat_file(marker).decode()
        return None

    def get(self, run_id: str) -> Run:
        """The committed run ``run_id``; a ``KeyError`` names the store if there is none."""
        found = self._committed(check_run_id(run_id))
        if found is None:
            raise KeyError(f"No committed run {run_id!r} in the runs store {self.root!r}.")
        name, committed_at = found
        url = self.url_of(f"{self.path}/{run_id}/{name}")
        attrs = dict(zarr.open_group(url, mode="r", storage_options=self.storage_options).attrs)
        return Run(run_id, url, committed_at, attrs, self.storage_options)

    def runs(self) -> list[Run]:
        """Every committed run, newest first (by commit time); empty for an empty or missing store."""
        try:
            entries = self.fs.ls(self.path, detail=False)
        except FileNotFoundError:
            return []
        runs = []
        for entry in entries:
            run_id = entry.rstrip("/").rsplit("/", 1)[-1]
            if _RUN_ID.match(run_id) and self._committed(run_id) is not None:
                runs.append(self.get(run_id))
        return sorted(runs, key=lambda run: run.committed_at, reverse=True)

    def latest_on(self, input_path: str) -> Run | None:
        """The newest committed run whose recorded input (``attrs["input"]["path"]``) is ``input_path``: the
        run a new one on that input is compared with (continuity)."""
        for run in self.runs():
            if run.attrs.get("input", {}).get("path") == str(input_path):
                return run
        return None
