"""The recluster job's steps as plain functions: check the request and the input, fit (or update a parent run),
match the cluster ids to the previous run's, write the labels, compute the metrics, commit the run.

An update (``update_from``, or a series' nightly update under ``lowdens serve --incremental``) starts from a
committed run: its tree, whose leaves are first given the run's cluster ids, and its summary (every run keeps
the summary of the rows its tree has seen). ``partial_fit`` summarises the new rows, merges them in and updates
the tree, which keeps its leaves' ids: the new run's ids are the tree's own labels, with no matching. The new
run names its parent (``attrs["parent"]``) and keeps ``partial_fit``'s update report (``metrics["update"]``).

The Prefect flow ``recluster`` (:mod:`.flows`) runs these steps as tasks on a Dask cluster. ``lowdens fit``
without a Prefect API runs them itself with :func:`run_job`, in its own process (Dask's threaded scheduler)
or on the Dask cluster it is given, so that it starts no Prefect server. Neither Prefect nor distributed is
imported here.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import dataclass
from importlib.metadata import version

import dask.array as da
import numpy as np

from lowdens_dask import METHODS, ClusterTree, check_params
from lowdens_dask.backend import ChunkedData
from lowdens_dask.pursuit.significance import SplitTest, is_significant
from lowdens_dask.tree import leaf_labels_from_json

from .continuity import contingency, match_cluster_ids, stability
from .identity import input_identity
from .inputs import load_labels, open_input
from .metrics import label_metrics, tree_metrics
from .parameter_names import PARAMETER_NAMES, RUN_DEFAULTS, check_parameter_names
from .paths import absolute, same_path, shown
from .runs import LabelsDamagedError, Run, RunsStore, read_labels, read_summary, write_summary
from .runs import write_labels as write_run_labels

#: Versions recorded with each run.
VERSIONED = ("lowdens-dask", "numpy", "scipy", "scikit-learn", "numba", "dask", "distributed", "zarr", "prefect")
#: The settings a run records beside its estimator's other parameters (``attrs["params"]``).
SETTINGS = ("method", "n_clusters", "random_state")


def make_estimator(method: str, n_clusters: int | str | None, params: dict | None, random_state: int):
    """The registered clustering estimator for ``method``, its parameters checked as its ``fit`` checks them
    first; an unknown method, an unknown parameter or a bad value is a ValueError."""
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}; known methods: {sorted(METHODS)}.")
    estimator = METHODS[method].clustering()
    settings = {"n_clusters": n_clusters, **(params or {})}
    if "random_state" in PARAMETER_NAMES[method]:
        settings.setdefault("random_state", random_state)
    check_parameter_names(method, settings)
    estimator.set_params(**settings)
    check_params(estimator)
    return estimator


def updatable(method: str) -> bool:
    """Whether runs of ``method`` can be updated: its estimator has ``partial_fit``."""
    return method in METHODS and hasattr(METHODS[method].clustering(), "partial_fit")


def _updatable_methods() -> str:
    return ", ".join(name for name in METHODS if updatable(name))


def update_parent(runs: RunsStore, update_from: str) -> Run:
    """The run ``update_from`` names, checked for an update: it exists (else a ``KeyError`` naming the store),
    its method has ``partial_fit`` and it keeps its summary (else a ``ValueError``)."""
    parent = runs.get(update_from)
    method = parent.attrs.get("params", {}).get("method")
    if not updatable(method):
        raise ValueError(
            f"Run {update_from!r} cannot be updated: its method {method!r} has no partial_fit (updates need one of: "
            f"{_updatable_methods()})."
        )
    if parent.summary is None:
        raise ValueError(
            f"Run {update_from!r} keeps no summary of its rows (it was committed before runs kept one); fit it again "
            "to update it."
        )
    return parent


def series_parent(runs: RunsStore, series: str, refit_every: int) -> tuple[Run | None, Run | None]:
    """(the run to update, the series' latest run) for the next run of ``series`` under ``lowdens serve
    --incremental``: the latest run is updated unless its tree has had ``refit_every - 1`` updates since its full
    fit (``tree.n_updates``), so that one run in ``refit_every`` is a full fit; nor is a latest run updated whose
    method has no ``partial_fit`` or that keeps no summary. Without a latest run, the series starts with a fit."""
    if refit_every < 1:
        raise ValueError(f"refit_every must be a positive integer; got {refit_every!r}.")
    latest = runs.latest_in(series)
    if latest is None or latest.tree.n_updates + 1 >= refit_every:
        return None, latest
    if not updatable(latest.attrs.get("params", {}).get("method")) or latest.summary is None:
        return None, latest
    return latest, latest


class RunIdTaken(ValueError):
    """A run id at which a run is committed, where the new run may not replace it (:func:`check_run_id_free`):
    ``children`` are the runs that name it as their parent (empty when the refusal is for want of ``replace``)."""

    def __init__(self, message: str, run_id: str, children: list[str]):
        super().__init__(message)
        self.run_id, self.children = run_id, children


def check_run_id_free(runs: RunsStore, run_id: str | None, replace: bool = True, force: bool = False) -> None:
    """A new run may take ``run_id``: no run is committed there, or it may replace it (``replace``) and no
    committed run names it as its parent, unless ``force``. Else a :class:`RunIdTaken` (a ``ValueError``). A run
    id whose attempts never committed (a failed run, a retry) is free."""
    if run_id is None or not runs.committed(run_id):
        return
    if not replace:
        raise RunIdTaken(
            f"Run {run_id!r} is already committed in the runs store {runs.root!r}; a new run does not replace it "
            "unless asked to (replace=True).",
            run_id,
            [],
        )
    children = runs.children(run_id)
    if children and not force:
        named = ", ".join(repr(child) for child in children[:5]) + (", ..." if len(children) > 5 else "")
        raise RunIdTaken(
            f"Run {run_id!r} is the parent of run(s) {named}, which updated it; replacing it would leave them "
            "naming a parent they were not updated from (force=True replaces it all the same).",
            run_id,
            children,
        )


def update_settings(
    parent: Run, method: str | None, n_clusters, params: dict | None, random_state: int | None
) -> tuple[str, int | str | None, dict, int]:
    """(method, n_clusters, params, random_state) of an update of ``parent``: each one not given (None) is the
    parent's, and ``params`` given are set over the parent's. A method other than the parent's is a
    ``ValueError`` (the tree's splits are the method's)."""
    recorded = dict(parent.attrs.get("params", {}))
    if method is not None and method != recorded["method"]:
        raise ValueError(
            f"Run {parent.run_id!r} was fitted with method {recorded['method']!r}; an update keeps its parent's "
            f"method (got {method!r})."
        )
    accepted = METHODS[recorded["method"]].clustering().get_params()
    inherited = {key: value for key, value in recorded.items() if key in accepted and key not in SETTINGS}
    return (
        recorded["method"],
        recorded.get("n_clusters") if n_clusters is None else n_clusters,
        {**inherited, **(params or {})},
        recorded.get("random_state", 0) if random_state is None else random_state,
    )


def check_update_input(parent: Run, identity: dict) -> None:
    """The new rows have the parent's number of features (else a ``ValueError`` naming both)."""
    n_features = parent.tree.n_features
    if identity["shape"][1] != n_features:
        raise ValueError(
            f"{identity['path']} has {identity['shape'][1]} columns; run {parent.run_id!r}, which it would update, "
            f"was fitted on {n_features}."
        )


class SameInputError(ValueError):
    """An update whose input holds the same rows as a run already in its line (:func:`check_same_input`):
    ``run_id`` is that run, ``path`` the input it recorded when that is another file than this update's (as a
    message shows it: :func:`.paths.shown`), else None."""

    def __init__(self, message: str, run_id: str, path: str | None):
        super().__init__(message)
        self.run_id, self.path = run_id, path


def same_rows(a: dict, b: dict) -> bool:
    """Whether two input identities (:func:`.identity.input_identity`) hold the same rows: the same shape, dtype
    and content fingerprint, whatever their paths."""
    return all(a.get(key) is not None and a.get(key) == b.get(key) for key in ("shape", "dtype", "fingerprint"))


def check_same_input(runs: RunsStore, parent: Run, identity: dict) -> None:
    """The rows of an update of ``parent`` are not those of ``parent`` or of any run before it in its line (the
    ``parent`` chain): else a :class:`SameInputError` (a ``ValueError``) naming the run that already holds them
    (the nearest one). An ancestor that is no longer in the store ends the walk."""
    run, seen = parent, set()
    while run is not None and run.run_id not in seen:
        seen.add(run.run_id)
        recorded = run.attrs.get("input") or {}
        if same_rows(identity, recorded):
            # the recorded path (absolute since issue 35) named only when it is another file than this input's,
            # and as the user names it here (relative to the working directory inside it)
            where = recorded.get("path")
            where = None if not where or same_path(where, identity["path"]) else shown(where)
            raise SameInputError(
                f"{identity['path']} holds the same rows as the input of run {run.run_id!r}"
                + (f" ({where})" if where else "")
                + ", which already holds them in the line of the run this would update; an update adds new rows "
                "(allow_same_input=True adds them again).",
                run.run_id,
                where,
            )
        try:
            run = runs.get(run.parent) if run.parent is not None else None
        except (KeyError, ValueError):  # an ancestor replaced or damaged: the line is known no further
            run = None


def resume_point(parent: Run) -> dict:
    """What an update needs of its parent run, as JSON-ready values: its id, where it is (its summary is read
    from there), its tree with each leaf labelled by the run's cluster id (a fit's tree labels its leaves 0..K-1
    and the run maps them to its ids), and the first id no run before it used (``next_id``)."""
    tree = parent.tree
    labels = tree.leaf_labels()
    ids = parent.stable_ids
    payload = tree.to_dict()
    next_label = max(int(parent.attrs.get("next_id", 0)), int(ids.max()) + 1, payload.get("next_label") or 0)
    for node in payload["nodes"]:
        if node["id"] in labels:
            node["label"] = int(ids[labels[node["id"]]])
    payload.update(update=tree.n_updates, next_label=next_label)
    return {"run_id": parent.run_id, "url": parent.url, "tree": json.dumps(payload)}


def stable_labels(x: np.ndarray, tree_json: str, stable_ids: tuple[int, ...]) -> np.ndarray:
    """The stable cluster id of each row: its leaf label in the tree, through ``stable_ids`` (a chunk task)."""
    return np.asarray(stable_ids, dtype=np.int64)[leaf_labels_from_json(x, tree_json)]


def route_to_stable_ids(X: da.Array, tree_json: str, stable_ids) -> da.Array:
    """Lazy stable cluster ids of X's rows (-1 for rows with NaN/inf), in X's row chunks."""
    return ChunkedData(X).label_rows(stable_labels, tree_json, tuple(int(i) for i in stable_ids))


def load_and_validate(
    input_path: str,
    storage_options: dict | None,
    true_labels,
    header: bool | None = None,
    X: da.Array | None = None,
    update: bool = False,
) -> tuple[dict, np.ndarray | None]:
    """The input's identity and the true labels, if any: a missing store or array, a wrong dtype or shape,
    an empty array, or labels of the wrong length fail here, before any cluster starts. ``X``: the input,
    when it is already open. A fit needs 2 rows, an update's batch (``update``) 1."""
    identity = input_identity(input_path, storage_options, header=header, X=X)
    n_rows = identity["shape"][0]
    if n_rows < (1 if update else 2):
        raise ValueError(
            f"The array at {input_path!r} has {n_rows} row(s); at least {1 if update else 2} "
            f"{'is' if update else 'are'} needed."
        )
    if true_labels is None:
        return identity, None
    truth = load_labels(true_labels) if isinstance(true_labels, str) else np.asarray(true_labels)
    if truth.shape != (n_rows,):
        raise ValueError(f"The true labels have shape {truth.shape}; the input has {n_rows} rows.")
    return identity, truth


def previous_run(runs: RunsStore, identity: dict, latest: Run | None = None) -> dict | None:
    """What continuity needs of ``latest`` (default: the newest committed run on the same input path), or None."""
    latest = runs.latest_on(identity["path"]) if latest is None else latest
    if latest is None or "stable_ids" not in latest.attrs:
        return None
    return {
        "run_id": latest.run_id,
        "url": latest.url,
        "tree": latest.tree.to_json(),
        "stable_ids": latest.attrs["stable_ids"],
        "next_id": latest.attrs.get("next_id", max(latest.attrs["stable_ids"]) + 1),
        "input": latest.attrs["input"],
    }


def _figures(estimator) -> dict:
    """The fit's or update's figures: its counts, the mode it ran in and why (``fit_mode``, ``fit_mode_reason``; an
    update: "summary"), the rows its root's split was tested on (``test_rows``, the test's resolution; "auto" only)
    and the splits whose p-value is at least ``significance_level`` (``splits_not_significant``: a told K beyond
    what the rows show)."""
    names = ("n_microclusters_", "n_nonfinite_", "n_passes_")
    figures = {name: int(getattr(estimator, name)) for name in names if hasattr(estimator, name)}
    update = hasattr(estimator, "update_report_")
    figures["fit_mode"] = "summary" if update else getattr(estimator, "fit_mode_", None)
    figures["fit_mode_reason"] = (
        "an update merges the new rows' summary" if update else getattr(estimator, "fit_mode_reason_", None)
    )
    if "n_test" in estimator.tree_.root.stats:
        figures["test_rows"] = int(estimator.tree_.root.stats["n_test"])
    level = getattr(estimator, "significance_level", None)
    if level is not None:  # a told K beyond what is significant: the splits that are not
        figures["significance_level"] = float(level)
        test = SplitTest(float(level), 0)  # judged as the grower judges a split: is_significant
        figures["splits_not_significant"] = [
            node.id
            for node in estimator.tree_
            if not node.is_leaf and "p_value" in node.stats and not is_significant(node.stats, test)
        ]
    return figures


def fit_tree(X: da.Array, settings: dict, attempt_url: str) -> dict:
    """Fit the estimator of ``settings`` (:func:`make_estimator`) on X and write into the attempt the summary an
    update of the run will start from (``estimator.summary()``: the fit's own in summary mode, or built from the
    rows of X, one more pass, after an exact fit; none for a method without ``partial_fit``). Returns the tree as
    JSON and the fit's figures."""
    estimator = make_estimator(**settings).fit(X)
    if hasattr(estimator, "partial_fit"):
        write_summary(estimator.summary(), attempt_url)
    return {"tree": estimator.tree_.to_json(), **_figures(estimator)}


def update_tree(X: da.Array, settings: dict, parent: dict, attempt_url: str) -> dict:
    """Update the parent run's tree with the rows of X (``partial_fit`` of the estimator of ``settings``, resumed
    from the parent's tree and summary: :func:`resume_point`) and write the merged summary into the attempt; the
    tree as JSON, the update report and the update's figures."""
    summary = read_summary(parent["url"])
    if summary is None:
        raise ValueError(f"Run {parent['run_id']!r} keeps no summary of its rows; fit it again to update it.")
    estimator = make_estimator(**settings).resume(ClusterTree.from_json(parent["tree"]), summary).partial_fit(X)
    write_summary(estimator.summary_, attempt_url)
    return {"tree": estimator.tree_.to_json(), "report": estimator.update_report_, **_figures(estimator)}


def tree_ids(tree_json: str) -> dict:
    """The cluster ids of an update's run: its tree's own leaf labels (``stable_ids`` the identity up to the
    largest), and the first id the tree has not used (``next_id``)."""
    payload = json.loads(tree_json)
    largest = max(ClusterTree.from_json(tree_json).leaf_labels().values())
    return {
        "stable_ids": list(range(largest + 1)),
        "next_id": max(largest + 1, payload.get("next_label") or 0),
        "stability": None,
    }


def match_previous(X: da.Array, tree_json: str, identity: dict, previous: dict | None) -> dict:
    """Stable cluster ids (new leaf label -> id) and the stability figures against the previous run on the same
    input: on the same rows (:func:`same_rows`) the previous labels are compared with the new ones;
    otherwise the rows are routed through the previous tree. The first run's ids are its labels."""
    n_leaves = ClusterTree.from_json(tree_json).n_leaves
    if previous is None:
        return {"stable_ids": list(range(n_leaves)), "next_id": n_leaves, "stability": None}
    same = same_rows(identity, previous["input"])
    n_previous = max(previous["stable_ids"]) + 1
    now = ChunkedData(X).label_rows(leaf_labels_from_json, tree_json)
    try:
        if same:  # each chunk of the previous labels checked as it is read (runs.read_labels)
            before = read_labels(previous["url"], max_label=n_previous - 1).rechunk((X.chunks[0],))
        else:
            before = route_to_stable_ids(X, previous["tree"], previous["stable_ids"])
        table = contingency(before, now, shape=(n_previous, n_leaves))
    except LabelsDamagedError as error:
        # never a stability computed from what a damaged store reads (the fill value): no continuity this time
        message = (
            f"No continuity with the previous run {previous['run_id']!r}: {error} The new run's cluster ids start "
            "afresh."
        )
        warnings.warn(message, stacklevel=2)
        return {
            "stable_ids": list(range(n_leaves)),
            "next_id": n_leaves,
            "stability": {"previous_run": previous["run_id"], "skipped": str(error)},
            "warning": message,
        }
    first_new = max(n_previous, int(previous.get("next_id", n_previous)))
    mapping = match_cluster_ids(table, first_new=first_new)
    figures = {
        "previous_run": previous["run_id"],
        "compared": "same rows" if same else "rows routed through the previous tree",
        **stability(table, mapping),
    }
    ids = [mapping[i] for i in range(n_leaves)]
    return {"stable_ids": ids, "next_id": max(first_new, max(ids) + 1), "stability": figures}


def write_labels(X: da.Array, tree_json: str, stable_ids, attempt_url: str) -> None:
    """Route every row through the tree to its stable cluster id (-1 for rows with NaN/inf) and write the
    labels into the attempt, in the input's row chunks."""
    write_run_labels(route_to_stable_ids(X, tree_json, stable_ids), attempt_url)


def compute_metrics(tree_json: str, attempt_url: str, truth) -> dict:
    """The tree's figures, the cluster sizes and, with true labels, the external scores (the labels are one
    integer per row, read back in this process)."""
    from dask.threaded import get

    labels = read_labels(attempt_url).compute(scheduler=get)
    return {**tree_metrics(ClusterTree.from_json(tree_json)), **label_metrics(labels, truth)}


def run_attrs(
    tree_json: str,
    ids: dict,
    settings: dict,
    identity: dict,
    metrics: dict,
    true_labels=None,
    parent: str | None = None,
    series: str | None = None,
) -> dict:
    """The attributes a run is committed with. ``ids``: its ``stable_ids`` and ``next_id`` (:func:`match_previous`,
    :func:`tree_ids`); ``settings``: method, n_clusters, random_state and the estimator's other parameters;
    ``parent``: the run it updated; ``series``: the series it belongs to (:func:`plan_run`)."""
    # local paths recorded absolute (URLs as given), so that the run reads back from any working directory
    identity = {**identity, "path": absolute(identity["path"])}
    if isinstance(true_labels, (str, os.PathLike)):
        identity["true_labels"] = absolute(true_labels)
    return {
        "tree": ClusterTree.from_json(tree_json),
        "stable_ids": list(ids["stable_ids"]),
        "next_id": int(ids["next_id"]),
        **({"parent": parent} if parent is not None else {}),
        **({"series": series} if series is not None else {}),
        "params": settings,
        "versions": {name: _version(name) for name in VERSIONED},
        "input": identity,
        "metrics": metrics,
    }


def _version(name: str) -> str | None:
    try:
        return version(name)
    except Exception:  # noqa: BLE001 (a distribution that is not installed)
        return None


@dataclass(frozen=True)
class Plan:
    """What a run does, decided before any work starts (:func:`plan_run`): a fit, or an update of ``parent``,
    with these settings."""

    method: str
    n_clusters: int | str | None
    params: dict
    random_state: int | None
    parent: Run | None  #: the run updated, or None for a fit
    latest: Run | None  #: the run a fit's ids are matched with, or None for the latest on the same input path
    allow_same_input: bool = False  #: an update may add rows its line already holds (:func:`check_same_input`)

    @property
    def settings(self) -> dict:
        """The settings the run records (``attrs["params"]``)."""
        return {"method": self.method, "n_clusters": self.n_clusters, "random_state": self.random_state, **self.params}

    @property
    def estimator_settings(self) -> dict:
        """:func:`make_estimator`'s arguments."""
        return {name: getattr(self, name) for name in ("method", "n_clusters", "params", "random_state")}

    def estimator(self):
        return make_estimator(**self.estimator_settings)


def plan_run(
    runs: RunsStore,
    method: str | None = None,
    n_clusters: int | str | None = None,
    params: dict | None = None,
    random_state: int | None = None,
    update_from: str | None = None,
    series: str | None = None,
    refit_every: int | None = None,
    run_id: str | None = None,
    replace: bool = True,
    force: bool = False,
    allow_same_input: bool = False,
) -> Plan:
    """Whether the run fits or updates, and its settings; every problem is a ``ValueError`` (a ``KeyError`` for a
    parent run that is not in the store), raised before any work starts.

    - ``update_from``: update that run (:func:`update_parent`);
    - ``refit_every`` (with ``series``): update the series' latest run, with a full fit every ``refit_every``
      runs (:func:`series_parent`); a fit's ids are then matched with the series' latest run's;
    - else a fit, whose ids are matched with the latest run on the same input path.

    The settings left at None are, for an update, the parent's (``params`` given are set over the parent's), and
    for a fit the defaults: method ``"mdh"``, ``n_clusters="auto"``, no params, ``random_state=0``. (The
    estimators' ``n_clusters=None``, grow while a valid split exists, is not asked for this way.)

    ``run_id`` at which a run is committed: replaced only with ``replace`` (the default here; ``lowdens fit`` asks
    for ``--replace``), and never a run that others name as their parent unless ``force``
    (:func:`check_run_id_free`).

    An update whose input holds the same rows as its parent's, or as those of a run before it in its line, is
    refused when its input is checked (:func:`start_point`, :func:`check_same_input`) unless ``allow_same_input``.
    """
    if update_from is not None and refit_every is not None:
        raise ValueError("update_from and refit_every exclude each other: a series chooses the run it updates.")
    if refit_every is not None and series is None:
        raise ValueError("refit_every needs a series: the runs of that series are updated.")
    if run_id is not None and run_id == update_from:
        raise ValueError(f"An update is committed as a new run: its run id must differ from its parent's ({run_id!r}).")
    check_run_id_free(runs, run_id, replace, force)
    parent = latest = None
    if update_from is not None:
        parent = update_parent(runs, update_from)
    elif refit_every is not None:
        parent, latest = series_parent(runs, series, refit_every)
        if parent is not None and parent.run_id == run_id:  # the series' latest run: a fit replaces it
            parent = None
    if parent is None:
        given = {"method": method, "n_clusters": n_clusters, "random_state": random_state}
        method, n_clusters, random_state = (
            RUN_DEFAULTS[key] if value is None else value for key, value in given.items()
        )
        plan = Plan(method, n_clusters, dict(params or {}), random_state, None, latest)
    else:
        settings = update_settings(parent, method, n_clusters, params, random_state)
        plan = Plan(*settings, parent, latest, allow_same_input)
    plan.estimator()  # the settings checked, as fit checks them
    return plan


def run_job(
    input_path: str,
    method: str | None = None,
    n_clusters: int | str | None = None,
    params: dict | None = None,
    random_state: int | None = None,
    store: str = "./lowdens-runs",
    run_id: str | None = None,
    true_labels=None,
    storage_options: dict | None = None,
    header: bool | None = None,
    X: da.Array | None = None,
    step=None,
    update_from: str | None = None,
    series: str | None = None,
    refit_every: int | None = None,
    replace: bool = True,
    force: bool = False,
    allow_same_input: bool = False,
) -> str:
    """The whole job where Dask's current scheduler runs it (this process's threads, or the client's cluster),
    without Prefect; returns the committed run's id. ``X``: the input already opened; ``step(name)``: a context
    manager around each step (progress display). ``update_from``, ``series``, ``refit_every``, ``replace``,
    ``force``, ``allow_same_input`` and the settings' defaults: :func:`plan_run` (a run committed at ``run_id`` while this one ran is
    not replaced without ``replace`` either: the commit fails)."""
    from contextlib import nullcontext

    step = step or (lambda name: nullcontext())
    runs = RunsStore(store)
    plan = plan_run(
        runs,
        method,
        n_clusters,
        params,
        random_state,
        update_from,
        series,
        refit_every,
        run_id,
        replace,
        force,
        allow_same_input,
    )
    X = open_input(input_path, storage_options, header=header) if X is None else X
    started = time.perf_counter()
    update = plan.parent is not None
    identity, truth = load_and_validate(input_path, storage_options, true_labels, header=header, X=X, update=update)
    seconds = {"load_and_validate": time.perf_counter() - started}
    resume, previous = start_point(runs, plan, identity)
    with runs.attempt(run_id, replace=replace) as attempt:

        def run(name, function, *args):
            start = time.perf_counter()
            with step(name):
                result = function(X, *args)
            seconds[name] = time.perf_counter() - start
            return result

        done = cluster_steps(run, plan.estimator_settings, identity, previous, resume, attempt.url)
        started = time.perf_counter()
        metrics = {**compute_metrics(done["tree"], attempt.url, truth), **done["metrics"], "seconds": seconds}
        seconds["metrics"] = time.perf_counter() - started
        parent = None if plan.parent is None else plan.parent.run_id
        attrs = run_attrs(done["tree"], done["ids"], plan.settings, identity, metrics, true_labels, parent, series)
        attempt.set_attrs(**attrs)
        return attempt.commit().run_id


def start_point(runs: RunsStore, plan: Plan, identity: dict) -> tuple[dict | None, dict | None]:
    """``(resume, previous)``: for an update, the parent's resume point (:func:`resume_point`, its input checked:
    its columns, and rows not already in its line unless ``plan.allow_same_input``, :func:`check_same_input`);
    for a fit, the previous run on the same input (:func:`previous_run`), whose cluster ids the new run keeps."""
    if plan.parent is not None:
        check_update_input(plan.parent, identity)
        if not plan.allow_same_input:
            check_same_input(runs, plan.parent, identity)
        return resume_point(plan.parent), None
    return None, previous_run(runs, identity, plan.latest)


def cluster_steps(
    run, settings: dict, identity: dict, previous: dict | None, resume: dict | None, attempt_url: str, log=None
) -> dict:
    """The job's cluster steps, as one list for every runner: the fit and the continuity of the cluster ids, or
    with ``resume`` the update of the parent run; then the labels. ``run(name, function, *args)`` runs a step,
    ``function(X, *args)`` on the input (:func:`run_job`: here; the Prefect flow: as a task on its Dask cluster);
    ``log(message)`` reports each outcome. Returns the tree (JSON), its cluster ids and the steps' metrics."""
    log = log or (lambda message: None)
    if resume is not None:  # an update: the ids are the tree's own labels (no matching)
        fitted = run("update", update_tree, settings, resume, attempt_url)
        report = fitted["report"]
        log(
            f"update {report['update']} of run {resume['run_id']}: {report['n_clusters']} clusters "
            f"({report['n_clusters_before']} before)"
        )
        matched = tree_ids(fitted["tree"])
    else:
        fitted = run("fit", fit_tree, settings, attempt_url)
        log(f"fit: {ClusterTree.from_json(fitted['tree']).n_leaves} clusters")
        if previous is None:  # the first run on this input: its ids are its labels (no task, no pass)
            matched = match_previous(None, fitted["tree"], identity, None)
        else:
            matched = run("continuity", match_previous, fitted["tree"], identity, previous)
            if matched.get("warning"):  # the previous labels are damaged: no continuity (match_previous)
                log(matched["warning"])
    run("write_labels", write_labels, fitted["tree"], matched["stable_ids"], attempt_url)
    metrics = {**outcome_figures(fitted), "stability": matched["stability"]}
    return {"tree": fitted["tree"], "ids": {key: matched[key] for key in ("stable_ids", "next_id")}, "metrics": metrics}


def outcome_figures(fitted: dict) -> dict:
    """The metrics a fit or an update adds: its figures and, for an update, its report (``metrics["update"]``)."""
    figures = {key: value for key, value in fitted.items() if key not in ("tree", "report", "passes")}
    return {**figures, **({"update": fitted["report"]} if "report" in fitted else {})}
