"""The runs store: each clustering run as one zarr group under a root (a local path or an fsspec URL).

Layout::

    <root>/<run_id>/attempt-<UTC time>-<random>/   a zarr group: the labels array and the run's attributes
                                            tree.json   the tree, schema-versioned (also in the attributes)
                                            summary.npz the microclusters of the rows seen, which an update of
                                                        the run starts from (``ClusterSummary.to_bytes``)
                                            CLAIM       written when the attempt starts to commit
                                            COMMITTED   written last, by the attempt that won: it is complete

Every attempt writes into its own folder, so attempts at one run id (two ``lowdens fit --run-id x`` at once)
never block each other, and a reader sees a run's committed attempt only, never a partial write. A failed
attempt stays invisible, and a failed re-run of an existing run id leaves the previous committed attempt
visible.

Committing (:meth:`Attempt.commit`) uses writes of small files and listings only (no rename, no real
folders, no lock), so it holds on object stores as on a local disk:

1. When an attempt opens it lists the run's attempts that have a ``CLAIM`` (or a ``COMMITTED`` marker):
   its *base*, the attempts that started to commit before it opened.
2. To commit it writes its ``CLAIM`` (its claim time, open time and base), then lists the claims again.
   Another claim that is not in its base, and whose base does not hold this attempt, is a *rival*: the
   two attempts ran at the same time.
3. The rule: **the first to commit wins.** A rival that has already written ``COMMITTED`` wins, and this
   attempt loses. Between two claims that see each other, the one with the smaller key (claim time,
   attempt name) wins: the other loses at once, and the smaller waits until the larger has withdrawn its
   claim (it lost) or has written ``COMMITTED`` (it had won without seeing the smaller). A rival that
   does neither within ``Attempt.race_timeout`` seconds (it died) makes this attempt lose.
4. The winner writes ``COMMITTED`` (with its base) and then deletes the attempts of its base that are
   complete: the runs it supersedes. It never deletes an attempt in progress, nor a newer one.
5. The loser deletes its ``CLAIM`` and then its folder, and ``commit`` raises a ``ValueError`` that says so.

Why two racing commits never both win: of two claims written at about the same time, the listing made after
the second write sees the first, so at least one attempt sees the other. It loses (the larger key, or a
committed rival), or it is the smaller and waits until the other has withdrawn (so the other lost). Why
one of two racing commits wins (when neither dies): the one that sees nothing wins; if both see each other,
the larger withdraws at once and the smaller then wins. Winners so form a chain in which each holds the one
before it in its base, and a reader shows the last: a ``COMMITTED`` attempt that no other one's base holds.

A committed run whose metadata cannot be read back whole is *damaged*: a ``zarr.json`` that is not JSON, or whose
attributes are not those the attempt committed (the ``COMMITTED`` marker records their SHA-256 and keys), or that
holds no tree, a tree that does not read (an unknown ``schema_version``, a missing node) or cluster ids
(``stable_ids``) too few for its leaves; and a ``COMMITTED`` marker that is not JSON or whose commit time is not a
time. :meth:`RunsStore.runs` leaves a damaged run out, :meth:`RunsStore.damaged` reports it with its path and the
reason, :meth:`RunsStore.get` raises :class:`RunDamagedError` (a ``ValueError``) naming them, and continuity
(:meth:`RunsStore.latest_on`, :meth:`RunsStore.latest_in`) skips it with a warning.

A committed run id is replaced by a later attempt at it unless the attempt is opened with ``replace=False``
(:meth:`RunsStore.attempt`): its commit then fails if a run was committed at that id before it started. An attempt
that never committed leaves no run, so a retry of it takes the same id.

The labels (:func:`write_labels`, :func:`read_labels`): zarr writes no chunk that equals the array's fill value
(``write_empty_chunks=False``), and reads a chunk that is not in the store as the fill value, so a deleted chunk
could not be told from a chunk of labels all equal to it. A run's labels are therefore written with the fill
value :data:`LABELS_FILL` (-2), which no label takes (cluster ids are 0 or more, and -1 marks the rows with NaN
or inf), with every chunk written (``write_empty_chunks=True``) and a CRC-32C checksum per chunk. **The rule:**
in labels whose fill value is -2, a chunk that is missing from the store (it reads as -2), a chunk whose bytes
fail their checksum or cannot be decoded, and a label below -1 (or above the largest cluster id, where the reader
knows it) are damage: :func:`read_labels` raises :class:`LabelsDamagedError`, a ``ValueError`` that names the
run's labels and the row chunk. Labels written before this rule (fill value 0, no checksum) still read; in them a
missing chunk cannot be told from an unwritten chunk of cluster 0 and reads as 0, as zarr reads it, while a chunk
that cannot be decoded is still reported.

Built on the public API of lowdens_dask only.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import fsspec
import numpy as np
from fsspec.implementations.local import LocalFileSystem

# Dask, zarr and the tree's routing are imported where a run's arrays are written or read, so that listing and
# showing runs (``lowdens runs list``) reads JSON files only.
if TYPE_CHECKING:
    import dask.array as da
    import zarr

    from lowdens_dask.tree import ClusterTree  # the model only: reading a run needs no grower

#: The runs store of the flow and the ``lowdens`` command when none is given.
DEFAULT_STORE = "./lowdens-runs"
MARKER = "COMMITTED"
CLAIM = "CLAIM"
TREE_FILE = "tree.json"
SUMMARY_FILE = "summary.npz"
LABELS = "labels"
#: The fill value of a run's labels: no label takes it, so a missing chunk reads as damage (the module's notes).
LABELS_FILL = -2
#: Few distinct small integers compress well bit-shuffled; lz4 is the fastest of blosc's codecs to write.
LABELS_BLOSC = {"cname": "lz4", "clevel": 1, "shuffle": "bitshuffle"}
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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or "no message"
    return f"{type(error).__name__}: {text}"


def _put(fs, path: str, data: bytes) -> None:
    """Write a small file whole: on object stores one PUT is atomic; on a local disk write then rename."""
    if isinstance(fs, LocalFileSystem):
        temporary = f"{path}.{secrets.token_hex(4)}.tmp"
        with open(temporary, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    else:
        fs.pipe_file(path, data)


def write_summary(summary, url: str, storage_options: dict | None = None) -> None:
    """Write a run's summary (a ``lowdens_dask.ClusterSummary``) as ``summary.npz`` into the attempt at ``url``,
    whole (it is committed with the attempt, as the labels are)."""
    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    _put(fs, f"{path.rstrip('/')}/{SUMMARY_FILE}", summary.to_bytes())


def read_summary(url: str, storage_options: dict | None = None):
    """The summary of the run at ``url`` (a ``lowdens_dask.ClusterSummary``), or None for a run that keeps none
    (a method without ``partial_fit``, or a run committed before runs kept one). A file that cannot be read
    back raises a ``ValueError`` naming it."""
    from lowdens_dask import ClusterSummary

    fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    where = f"{path.rstrip('/')}/{SUMMARY_FILE}"
    try:
        payload = fs.cat_file(where)
    except FileNotFoundError:
        return None
    try:
        return ClusterSummary.from_bytes(payload)
    except Exception as error:  # noqa: BLE001 (numpy's and zipfile's errors: each is damage here)
        raise ValueError(f"The summary at {fs.unstrip_protocol(where)} is damaged: {_one_line(error)}") from None


class LabelsDamagedError(ValueError):
    """A run's labels that cannot be read back whole: a missing chunk, bytes that fail their checksum or cannot be
    decoded, a value no label takes, or metadata that cannot be read. The message names the labels and the chunk."""


def write_labels(labels: da.Array, url: str, storage_options: dict | None = None) -> None:
    """Write a run's labels (1-D integers, -1 for rows without a cluster) as the array ``labels`` of the zarr
    group at ``url``, in ``labels``' chunks, under the module's rule: fill value :data:`LABELS_FILL`, every chunk
    written, a CRC-32C checksum per chunk (blosc lz4 bit-shuffled before it)."""
    import dask.array as da
    import zarr

    labels = da.asarray(labels)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValueError(f"Labels must be a 1-D array of integers; got shape {labels.shape} and dtype {labels.dtype}.")
    labels.astype(np.int64).to_zarr(
        url,
        component=LABELS,
        storage_options=storage_options,
        overwrite=True,
        fill_value=LABELS_FILL,
        config={"write_empty_chunks": True},
        compressors=[zarr.codecs.BloscCodec(**LABELS_BLOSC), zarr.codecs.Crc32cCodec()],
    )


class _LabelChunks:
    """A run's labels array for ``da.from_array``: each read of a row chunk checks it (the module's rule) and
    raises :class:`LabelsDamagedError` naming the labels and the chunk."""

    def __init__(self, array: zarr.Array, where: str, max_label: int | None):
        self.array, self.where, self.max_label = array, where, max_label
        self.shape, self.dtype, self.ndim = array.shape, array.dtype, array.ndim
        self.rows = array.chunks[0]
        #: Written under the rule (every chunk written): a missing chunk reads as the fill value, -2.
        self.whole = int(np.asarray(array.fill_value)) == LABELS_FILL

    def __dask_tokenize__(self):
        return ("lowdens-run-labels", self.where, self.shape, str(self.dtype), self.rows, self.max_label)

    def __getitem__(self, key):
        rows = key[0] if isinstance(key, tuple) else key
        start = (rows.start or 0) if isinstance(rows, slice) else 0
        chunk = start // self.rows
        span = f"row chunk {chunk} (rows {chunk * self.rows}-{min((chunk + 1) * self.rows, self.shape[0]) - 1})"
        try:
            block = np.asarray(self.array[key])
        except Exception as error:  # noqa: BLE001 (a checksum, a codec or a store error: each is damage here)
            raise LabelsDamagedError(f"{self.where} are damaged: {span} cannot be read ({_one_line(error)}).") from None
        if block.size:
            low, high = int(block.min()), int(block.max())
            if self.whole and low == LABELS_FILL and (block == LABELS_FILL).all():
                raise LabelsDamagedError(
                    f"{self.where} are damaged: {span} is missing from the store (it reads as the fill value "
                    f"{LABELS_FILL}, and every chunk of these labels was written)."
                )
            if low < -1 or (self.max_label is not None and high > self.max_label):
                bound = "" if self.max_label is None else f" to {self.max_label}"
                raise LabelsDamagedError(
                    f"{self.where} are damaged: {span} holds labels from {low} to {high}; labels run from -1{bound}."
                )
        return block


def read_labels(url: str, storage_options: dict | None = None, *, max_label: int | None = None) -> da.Array:
    """The labels of the run at ``url`` (an attempt's zarr group), lazily, in their row chunks; each chunk is
    checked as it is read (the module's rule), and metadata that cannot be read raises at once: both as a
    :class:`LabelsDamagedError` naming the labels (and the chunk). ``max_label``: the largest label allowed."""
    import dask
    import dask.array as da
    import zarr

    where = f"The labels at {url}/{LABELS}"
    options = {"storage_options": storage_options} if storage_options else {}
    try:
        array = zarr.open_array(url, path=LABELS, mode="r", **options)
    except Exception as error:  # noqa: BLE001 (missing or unreadable metadata: zarr raises several kinds)
        raise LabelsDamagedError(f"{where} are damaged: they cannot be opened ({_one_line(error)}).") from None
    if array.ndim != 1:
        raise LabelsDamagedError(f"{where} are damaged: expected 1-D labels; the array has shape {array.shape}.")
    reader = _LabelChunks(array, where, max_label)
    return da.from_array(reader, chunks=(array.chunks[0],), name=f"run-labels-{dask.base.tokenize(reader)}")


def _digest(attrs: dict) -> str:
    return hashlib.sha256(json.dumps(attrs, sort_keys=True, allow_nan=True).encode()).hexdigest()


def _attributes_record(attrs: dict) -> dict:
    """What a ``COMMITTED`` marker records of the attributes committed: their keys and SHA-256."""
    return {"keys": sorted(attrs), "sha256": _digest(attrs)}


def _is_time(text) -> bool:
    if not isinstance(text, str):
        return False
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _get(attrs: dict, *keys: str):
    for key in keys:
        attrs = attrs.get(key) if isinstance(attrs, dict) else None
    return attrs


def _tree_damage(payload) -> tuple[str | None, ClusterTree | None]:
    """(why the run's tree cannot be used, or None; the tree)."""
    from lowdens_dask.tree import ClusterTree  # the model only: reading a run needs no grower

    if not isinstance(payload, dict):
        return f"its tree is not a JSON object (got {type(payload).__name__})", None
    try:
        tree = ClusterTree.from_dict(payload)
    except Exception as error:  # noqa: BLE001 (a missing key, a wrong type, an unknown schema: each is damage)
        return f"its tree cannot be read ({_one_line(error)})", None
    nodes = tree.nodes
    if 0 not in nodes:
        return "its tree has no root (node 0)", None
    if not isinstance(tree.n_features, int) or tree.n_features < 1:
        return f"its tree has {_short(tree.n_features)} features", None
    seen, stack = set(), [0]
    while stack:
        node_id = stack.pop()
        if node_id in seen:
            return f"its tree reaches node {node_id} twice", None
        seen.add(node_id)
        node = nodes[node_id]
        if node.id != node_id:
            return f"its tree's node {node_id} is recorded with id {node.id}", None
        if node.children is None:
            continue
        if len(node.children) != 2 or node.rule is None:
            return f"its tree's node {node_id} has children but no split of two", None
        for child in node.children:
            if child not in nodes:
                return f"its tree's node {node_id} names the child {child}, which the tree does not hold", None
            stack.append(child)
    if seen != set(nodes):
        return f"its tree holds nodes no path reaches: {sorted(set(nodes) - seen)[:5]}", None
    for node in nodes.values():
        v = node.v if node.children is not None else None
        if v is not None and np.shape(v) != (tree.n_features,):
            return f"its tree's node {node.id} splits {np.shape(v)} features; the tree has {tree.n_features}", None
    labels = list(tree.leaf_labels().values())
    if any(not isinstance(label, int) or label < 0 for label in labels) or len(set(labels)) != len(labels):
        return f"its tree's leaf labels {_short(labels)} are not distinct cluster ids", None
    row = np.zeros((1, tree.n_features))
    # every split routes a row by its own rule (a hyperplane's in numpy; MSC's and SVM-relabel's kernel expansions
    # load their compiled kernel)
    for node in nodes.values():
        if node.children is None:
            continue
        try:
            side = np.asarray(node.rule.side(row))
        except Exception as error:  # noqa: BLE001 (a split that does not route: damage)
            return f"its tree does not route rows (node {node.id}: {_one_line(error)})", None
        if side.shape != (1,):
            return f"its tree does not route rows (node {node.id} gives {side.shape} sides for one row)", None
    return None, tree


def _attrs_damage(attrs: dict, committed: dict | None) -> str | None:
    """Why a committed run's attributes cannot be used (None when they can): the attributes differ from those
    committed (``committed``: their keys and SHA-256, from the ``COMMITTED`` marker; None for a marker that
    records none), it has no tree though it has cluster ids, its tree does not read, or its cluster ids are
    too few for the tree's leaves."""
    if isinstance(committed, dict):
        missing = sorted(set(committed.get("keys", ())) - set(attrs))
        if missing:
            return f"it lacks {', '.join(repr(key) for key in missing)}, which the run was committed with"
    for key in ("params", "input", "metrics"):
        if key in attrs and not isinstance(attrs[key], dict):
            return f"its {key!r} is not a JSON object"
    if "parent" in attrs and not isinstance(attrs["parent"], str):
        return f"its 'parent' is not a run id ({_short(attrs['parent'])})"
    if "tree" not in attrs:
        if "stable_ids" in attrs:
            return "it holds no tree (it holds the cluster ids of one)"
    else:
        why, tree = _tree_damage(attrs["tree"])
        if why is not None:
            return why
        if "stable_ids" in attrs:
            ids = attrs["stable_ids"]
            if not isinstance(ids, list) or any(not isinstance(i, int) or isinstance(i, bool) or i < 0 for i in ids):
                return f"its cluster ids (stable_ids) {_short(ids)} are not a list of cluster ids"
            largest = max(tree.leaf_labels().values())
            if len(ids) <= largest:
                return (
                    f"its cluster ids (stable_ids) number {len(ids)}; its tree's leaves are labelled up to "
                    f"{largest}, so at least {largest + 1} are needed"
                )
    if isinstance(committed, dict) and committed.get("sha256") not in (None, _digest(attrs)):
        return "its attributes differ from those the run was committed with (changed after the commit)"
    return None


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
        from lowdens_dask.tree import ClusterTree  # the model only: reading a run needs no grower

        return ClusterTree.from_json(json.dumps(self.attrs["tree"]))

    @property
    def stable_ids(self) -> np.ndarray:
        """The run's cluster id of each leaf label of its tree, indexed by the label (ids stay stable across runs
        on one input). An update's tree labels its leaves with their ids already: its ``stable_ids`` are the
        identity up to its largest label (labels need not be 0..K-1)."""
        if "stable_ids" in self.attrs:
            return np.asarray(self.attrs["stable_ids"], dtype=np.int64)
        return np.arange(max(self.tree.leaf_labels().values()) + 1, dtype=np.int64)

    @property
    def parent(self) -> str | None:
        """The id of the run this one updated (``partial_fit``), or None for a full fit."""
        return self.attrs.get("parent")

    @property
    def summary(self):
        """The microclusters of the rows the run's tree has seen (a ``lowdens_dask.ClusterSummary``), which an
        update starts from; None where the run keeps none (:func:`read_summary`)."""
        return read_summary(self.url, self.storage_options)

    def predict(self, X) -> np.ndarray:
        """The run's cluster ids for the rows of ``X`` (in memory): its tree's labels through ``stable_ids``."""
        return self.stable_ids[self.tree.predict(X)]

    @property
    def labels(self) -> da.Array:
        """The labels, lazily, in the input's row chunks; a damaged chunk raises :class:`LabelsDamagedError` (a
        ``ValueError`` naming it) when it is read (:func:`read_labels`)."""
        return read_labels(self.url, self.storage_options)


@dataclass(frozen=True)
class DamagedRun:
    """A committed run whose metadata cannot be read back (see :meth:`RunsStore.damaged`)."""

    run_id: str
    url: str  #: the committed attempt's folder
    error: str  #: one line: what failed, naming the file where known
    input_path: str | None = None  #: the run's input (``attrs["input"]["path"]``), where its attributes read
    parent: str | None = None  #: the run it updated (``attrs["parent"]``), where its attributes read
    series: str | None = None  #: the series it belongs to (``attrs["series"]``), where its attributes read


class RunDamagedError(ValueError):
    """A committed run whose metadata cannot be read back."""

    def __init__(self, damaged: DamagedRun):
        self.damaged = damaged
        super().__init__(f"Run {damaged.run_id!r} is damaged ({damaged.url}): {damaged.error}")


@dataclass(frozen=True)
class _Entry:
    """What a run folder's listing says about one attempt."""

    name: str
    claimed: bool
    committed: bool


class Attempt:
    """One attempt at writing a run; see :meth:`RunsStore.attempt` and the module's notes on committing."""

    #: Seconds a commit waits for a rival that claimed at the same time to withdraw or commit.
    race_timeout: float = 30.0

    def __init__(self, store: RunsStore, run_id: str, replace: bool = True):
        self.store = store
        self.run_id = run_id
        #: Whether this attempt may replace a run committed at its id before it opened (else its commit fails).
        self.replace = replace
        self.opened_at = _now()
        self.name = f"attempt-{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{secrets.token_hex(4)}"
        self.path = f"{store.path}/{run_id}/{self.name}"
        self.url = store.url_of(self.path)
        # The attempts that started to commit before this one opened: a commit among them is not a rival.
        self.base = frozenset(e.name for e in store._entries(run_id) if e.claimed or e.committed)
        import zarr

        self.group = zarr.open_group(self.url, mode="w", storage_options=store.storage_options)
        self.claimed_at: str | None = None
        self.committed = False
        self.discarded = False
        self._lost: str | None = None  # why a commit lost: a later call to commit says it again

    def write_labels(self, labels: da.Array) -> None:
        """Write the labels (a 1-D Dask array, in the input's row chunks) into the attempt (:func:`write_labels`)."""
        write_labels(labels, self.url, self.store.storage_options)

    def write_summary(self, summary) -> None:
        """Write the run's summary (a ``lowdens_dask.ClusterSummary``) into the attempt (:func:`write_summary`)."""
        write_summary(summary, self.url, self.store.storage_options)

    def set_attrs(self, **attrs: Any) -> None:
        """Record JSON-serialisable attributes; a ``tree`` (a ClusterTree) is also written as ``tree.json``."""
        tree = attrs.pop("tree", None)
        if tree is not None:
            text = tree.to_json()
            self.store.fs.pipe_file(f"{self.path}/{TREE_FILE}", text.encode())
            attrs["tree"] = json.loads(text)
        self.group.attrs.update(json.loads(json.dumps(attrs)))

    def commit(self) -> Run:
        """Commit the attempt: claim, settle any race with attempts at the same run id, write the
        ``COMMITTED`` marker last, then delete the older complete attempts it supersedes.

        Raises a ``ValueError`` when another attempt at the run id wins (the first to commit), or, for an attempt
        opened with ``replace=False``, when a run was committed at its id before it opened; this attempt's
        folder is then deleted, and the run stays as it was. A later call (a retried commit) raises the same."""
        if self._lost is not None:
            raise ValueError(self._lost)
        if self.committed or self.discarded:
            raise ValueError(f"Attempt {self.name} at run {self.run_id!r} has already been committed or discarded.")
        self._claim()
        return self._settle()

    # The two steps of commit, apart so that the tests can interleave racing commits.
    def _claim(self) -> None:
        self.claimed_at = _now()
        self.store._put(f"{self.path}/{CLAIM}", self._record(claimed_at=self.claimed_at))

    def _settle(self) -> Run:
        deadline = time.monotonic() + self.race_timeout
        pause = 0.01
        while True:
            rivals = self._rivals()
            committed = [name for name, _, done in rivals if done]
            if committed:
                self._lose(f"was committed by another attempt ({committed[0]}) while this one was running")
            key = (self.claimed_at, self.name)
            ahead = [name for name, rival_key, _ in rivals if rival_key < key]
            if ahead:
                self._lose(f"is being committed by another attempt ({ahead[0]}) that claimed it first")
            if not rivals:
                break
            if time.monotonic() > deadline:
                self._lose(
                    f"was claimed by another attempt ({rivals[0][0]}) that neither committed nor withdrew within "
                    f"{self.race_timeout:g} s"
                )
            time.sleep(pause)
            pause = min(2 * pause, 0.5)
        if not self.replace:
            taken = [e.name for e in self.store._entries(self.run_id) if e.name in self.base and e.committed]
            if taken:
                self._lose(
                    f"was committed ({taken[0]}) before this attempt started, and this attempt may not replace it"
                )
        committed_at = _now()
        # what a reader must find: the attributes as they read back now (their keys and SHA-256)
        attributes = _attributes_record(self.store._attrs(self.url))
        record = self._record(claimed_at=self.claimed_at, committed_at=committed_at, attributes=attributes)
        self.store._put(f"{self.path}/{MARKER}", record)
        self.committed = True
        for entry in self.store._entries(self.run_id):
            if entry.name in self.base and entry.committed:  # older and complete: superseded by this one
                try:
                    self.store.fs.rm(f"{self.store.path}/{self.run_id}/{entry.name}", recursive=True)
                except OSError:
                    pass  # left behind, invisible (this attempt's base holds it); a later commit retries
        return self.store._read(self.run_id, self.name, json.loads(record))

    def _record(self, **fields: Any) -> bytes:
        return json.dumps({**fields, "opened_at": self.opened_at, "base": sorted(self.base)}).encode()

    def _rivals(self) -> list[tuple[str, tuple[str, str], bool]]:
        """(name, key, committed) of each claim at this run id made while this attempt ran."""
        rivals = []
        for entry in self.store._entries(self.run_id):
            if entry.name == self.name or entry.name in self.base or not (entry.claimed or entry.committed):
                continue
            try:
                record = self.store._record(self.run_id, entry.name, MARKER if entry.committed else CLAIM)
            except ValueError:  # damaged: a rival that comes first, to be safe
                record = {"claimed_at": ""}
            if record is None:  # withdrawn since the listing
                continue
            if self.name in record.get("base", ()):  # opened after this attempt claimed: a later run
                continue
            key = (str(record.get("claimed_at", record.get("committed_at", ""))), entry.name)
            rivals.append((entry.name, key, entry.committed))
        return sorted(rivals, key=lambda rival: rival[1])

    def _lose(self, why: str) -> None:
        self.discard()
        self._lost = f"Run {self.run_id!r} {why}; this attempt is discarded."
        raise ValueError(self._lost)

    def discard(self) -> None:
        """Withdraw the claim (if any) and delete the attempt's folder, and the run's folder if that leaves it
        empty (where folders are real); best effort."""
        self.discarded = True
        for path, recursive in ((f"{self.path}/{CLAIM}", False), (self.path, True)):
            try:
                self.store.fs.rm(path, recursive=recursive)
            except OSError:
                pass
        try:
            self.store.fs.rmdir(self.path.rsplit("/", 1)[0])  # fails, as it should, unless empty
        except (OSError, NotImplementedError):
            pass


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
    def attempt(self, run_id: str | None = None, replace: bool = True) -> Iterator[Attempt]:
        """An attempt at run ``run_id`` (a new id from the time when None). Commit it with
        :meth:`Attempt.commit`; an attempt that is not committed (an exception in the block) is deleted,
        or, if that fails too, left invisible. Attempts at one run id may run at the same time: the first
        to commit wins, and the commit of the other raises a ``ValueError``. With ``replace=False`` the commit
        also raises one if a run was committed at ``run_id`` before the attempt opened (a committed run is not
        replaced); an attempt that never committed is no such run."""
        run_id = check_run_id(run_id) if run_id is not None else new_run_id()
        attempt = Attempt(self, run_id, replace=replace)
        try:
            yield attempt
        finally:
            if not attempt.committed:
                attempt.discard()

    # Listing and reading (every listing is fresh: a cached one could hide a rival's claim).
    def _ls(self, path: str) -> list[str]:
        self.fs.invalidate_cache(path)
        try:
            entries = self.fs.ls(path, detail=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries]

    def _entries(self, run_id: str) -> list[_Entry]:
        entries = []
        for name in sorted(self._ls(f"{self.path}/{run_id}")):
            if name.startswith("attempt-"):
                files = set(self._ls(f"{self.path}/{run_id}/{name}"))
                entries.append(_Entry(name, CLAIM in files, MARKER in files))
        return entries

    def _put(self, path: str, data: bytes) -> None:
        _put(self.fs, path, data)

    def _record(self, run_id: str, name: str, file: str) -> dict | None:
        """A claim or commit marker as a dict; None if it is gone. A marker of the old format (the commit
        time alone) reads as ``{"committed_at": ...}``; a damaged one raises a ``ValueError`` naming it."""
        path = f"{self.path}/{run_id}/{name}/{file}"
        try:
            text = self.fs.cat_file(path).decode()
        except FileNotFoundError:
            return None
        if not text.lstrip().startswith("{"):
            return {"committed_at": text.strip()}
        try:
            record = json.loads(text)
        except ValueError as error:
            raise ValueError(f"{self.url_of(path)} is damaged: {_one_line(error)}") from None
        if not isinstance(record, dict):
            raise ValueError(f"{self.url_of(path)} is damaged: not a JSON object")
        return record

    def _committed(self, run_id: str) -> tuple[str, dict | Exception] | None:
        """(attempt name, commit marker) of the run's visible attempt, or None if none is committed.

        The visible attempt is the committed one that no other committed attempt's base holds (the last
        winner); where several qualify (markers of the old format), the latest opened."""
        markers: dict[str, dict | Exception] = {}
        for entry in self._entries(run_id):
            if entry.committed:
                try:
                    record = self._record(run_id, entry.name, MARKER)
                except ValueError as error:
                    record = error
                if record is not None:
                    markers[entry.name] = record
        if not markers:
            return None
        superseded = {old for record in markers.values() if isinstance(record, dict) for old in record.get("base", ())}
        visible = [name for name in markers if name not in superseded] or list(markers)
        name = max(visible)
        return name, markers[name]

    def _attrs(self, url: str) -> dict:
        import zarr

        return dict(zarr.open_group(url, mode="r", storage_options=self.storage_options).attrs)

    def _read(self, run_id: str, name: str, marker: dict) -> Run:
        """The run of the committed attempt ``name`` whose ``COMMITTED`` marker is ``marker``, checked (the module's
        notes on damaged runs): a :class:`RunDamagedError` names what is wrong."""
        url = self.url_of(f"{self.path}/{run_id}/{name}")
        committed_at = marker.get("committed_at")
        if not _is_time(committed_at):
            raise RunDamagedError(
                DamagedRun(run_id, url, f"{url}/{MARKER}: the commit time {_short(committed_at)} is not a time")
            )
        try:
            attrs = self._attrs(url)
        except (ValueError, KeyError, TypeError, FileNotFoundError) as error:  # zarr's errors are ValueErrors
            raise RunDamagedError(DamagedRun(run_id, url, f"{url}/zarr.json: {_one_line(error)}")) from None
        why = _attrs_damage(attrs, marker.get("attributes"))
        if why is not None:
            known = {
                "input_path": _get(attrs, "input", "path"),
                **{key: attrs.get(key) if isinstance(attrs.get(key), str) else None for key in ("parent", "series")},
            }
            raise RunDamagedError(DamagedRun(run_id, url, f"{url}/zarr.json: {why}", **known))
        return Run(run_id, url, committed_at, attrs, self.storage_options)

    def get(self, run_id: str) -> Run:
        """The committed run ``run_id``; a ``KeyError`` names the store if there is none, and a
        ``ValueError`` (:class:`RunDamagedError`) names the path if its metadata cannot be read."""
        found = self._committed(check_run_id(run_id))
        if found is None:
            raise KeyError(f"No committed run {run_id!r} in the runs store {self.root!r}.")
        name, marker = found
        if isinstance(marker, Exception):
            url = self.url_of(f"{self.path}/{run_id}/{name}")
            raise RunDamagedError(DamagedRun(run_id, url, str(marker)))
        return self._read(run_id, name, marker)

    def committed(self, run_id: str) -> bool:
        """Whether a run is committed at ``run_id`` (damaged or not)."""
        return self._committed(check_run_id(run_id)) is not None

    def children(self, run_id: str) -> list[str]:
        """The ids of the committed runs that name ``run_id`` as their parent (the runs that updated it), damaged
        ones included where their attributes say so, sorted."""
        runs, damaged = self._scan()
        named = {run.run_id for run in runs if run.parent == run_id}
        return sorted(named | {bad.run_id for bad in damaged if bad.parent == run_id})

    def _scan(self) -> tuple[list[Run], list[DamagedRun]]:
        runs, damaged = [], []
        for run_id in self._ls(self.path):
            if not _RUN_ID.match(run_id) or run_id.startswith("attempt-"):
                continue
            try:
                runs.append(self.get(run_id))
            except KeyError:
                continue  # no committed attempt: nothing to show
            except RunDamagedError as error:
                damaged.append(error.damaged)
        runs.sort(key=lambda run: run.committed_at, reverse=True)
        return runs, sorted(damaged, key=lambda run: run.run_id)

    def runs(self) -> list[Run]:
        """Every committed run that reads back, newest first (by commit time); empty for an empty or missing
        store. Damaged runs are left out: see :meth:`damaged`."""
        return self._scan()[0]

    def damaged(self) -> list[DamagedRun]:
        """The committed runs whose metadata cannot be read back (a truncated ``zarr.json``, say), by run id,
        each with the path of its committed attempt and the error."""
        return self._scan()[1]

    def latest_on(self, input_path: str) -> Run | None:
        """The newest committed run whose recorded input (``attrs["input"]["path"]``) is ``input_path``: the
        run a new one on that input is compared with (continuity). Damaged runs are skipped, with a warning
        naming each one's path and what is wrong (those known to be on another input, silently). Paths are compared
        as :func:`.paths.same_path` does: ``night-1.csv`` here and ``/abs/here/night-1.csv`` are the same input (runs
        record local paths absolute; older ones kept them as given)."""
        from .paths import same_path

        runs, damaged = self._scan()
        for bad in damaged:
            if bad.input_path is not None and not same_path(bad.input_path, str(input_path)):
                continue
            warnings.warn(
                f"Skipping the damaged run {bad.run_id!r} ({bad.url}) for continuity: {bad.error}", stacklevel=2
            )
        for run in runs:
            if same_path(run.attrs.get("input", {}).get("path"), str(input_path)):
                return run
        return None

    def latest_in(self, series: str) -> Run | None:
        """The newest committed run of the series ``series`` (``attrs["series"]``, the deployment's name under
        ``lowdens serve``): the run a nightly update starts from. Damaged runs are skipped, with a warning (those
        known to be of another series, silently)."""
        runs, damaged = self._scan()
        for bad in damaged:
            if bad.series != series and (bad.series is not None or bad.input_path is not None):
                continue
            warnings.warn(f"Skipping the damaged run {bad.run_id!r} ({bad.url}) of a series: {bad.error}", stacklevel=2)
        return next((run for run in runs if run.attrs.get("series") == series), None)
