"""The scale-out parameters, declared once: their docstring (:data:`SCALE_OUT_DOC`) and the one rule of
``mode="auto"`` (:func:`choose_mode`); their constraints are in :mod:`._constraints`."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import math
import os

import dask.array as da
import zarr
from sklearn.utils import check_random_state

from .._warnings import warn
from ..backend import as_dask_array
from ..backend.workers import default_max_node_bytes
from ._constraints import DEPRECATED, RENAMED, check_constraints

#: With mode="auto", input with more rows than this is fitted in summary mode (the default of
#: :attr:`~lowdens_dask.estimators._fit.TreeClustering._auto_summary_rows`).
AUTO_SUMMARY_ROWS = 2_000_000


def random_state_of(random_state):
    """``random_state`` with None read as 0: the one meaning of ``random_state=None`` in every estimator (a fit is
    reproducible unless given a ``RandomState`` or ``Generator`` to draw from)."""
    return 0 if random_state is None else random_state


def seed_of(random_state) -> int:
    """The integer seed a fit draws from ``random_state`` (scikit-learn's ``check_random_state``), where None means
    0: a fit is reproducible, as every method's own draws are. An int gives the seed it always gave."""
    return int(check_random_state(0 if random_state is None else random_state).randint(2**31 - 1))


def is_chunked_input(X) -> bool:
    """Dask arrays, zarr arrays and zarr paths/URLs (fitted in summary mode, or exactly with mode="exact")."""
    return isinstance(X, (da.Array, str, os.PathLike, zarr.Array))


#: ``mode="auto"``: input of at most this many values (rows x columns; 40 MB as float64) is fitted in memory (chunked
#: input read into memory in one pass), larger input in summary mode. A fit in memory costs about a microsecond per
#: value (MDH told 12 clusters: 10^6 x 16 rows in 15-19 s, 10^5 x 64 in 9 s; benchmarks/results/default-mode.md),
#: summary mode two passes and a second or two on the client, so past about 5 s in memory summary mode is several
#: times cheaper at the same ARI there. Exact mode by passes over the chunks costs two passes per evaluation and is
#: taken only when asked (``mode="exact"``).
AUTO_MEMORY_VALUES = 5_000_000


def choose_mode(est, X, sample_weight=None) -> tuple[str, str]:
    """How ``est`` fits ``X`` and why: ``(mode, reason)``, where mode is ``"memory"`` (rows in memory, or chunked
    rows read into memory in one pass), ``"summary"`` or ``"exact"`` (passes over the chunked rows).

    The one rule of ``mode="auto"``, for every estimator, by cost: input of at most :data:`AUTO_MEMORY_VALUES` values
    (rows x columns; 5 million, 40 MB as float64) and at most ``_auto_summary_rows`` rows (2 million; SVM-relabel:
    20,000; MSC: no limit of either) is fitted in memory, a Dask array or zarr store read into memory in one pass;
    other input (larger, or chunked of unknown size) in ``_auto_chunked_mode`` (summary mode; MSC: exact mode, by
    landmarks over the chunks). Rows count as rows, whatever their weights; in-memory input with
    ``sample_weight`` stays in memory only for an estimator whose summary mode takes no weights
    (``_weights_in_summary`` False: the semi-supervised ones). ``mode="exact"`` fits chunked input by passes over its chunks where the estimator can (SVM-relabel
    cannot: summary mode), and in-memory input in memory. Every switch is from memory to summary mode, the cheaper
    one: no size makes one more row cost a step up."""
    chunked = is_chunked_input(X)
    mode = est.mode
    if mode != "auto":
        if mode == "exact" and chunked and not est._exact_on_chunks:
            return "summary", f"mode='exact' was asked; {type(est).__name__} has no exact mode on chunked input"
        if mode == "exact" and not chunked:
            return "memory", "mode='exact' was asked; the rows are in memory"
        return mode, f"mode={mode!r} was asked"
    shape = getattr(X, "shape", None)
    if isinstance(X, (str, os.PathLike)):  # a zarr store: its shape from its metadata
        shape = as_dask_array(X, storage_options=est.storage_options).shape
    known = shape is not None and len(shape) == 2 and math.isfinite(shape[0])
    if not known:  # input that is no 2-D array gets fit's own error in memory
        return ("summary", "the number of rows is unknown") if chunked else ("memory", "the rows are in memory")
    if chunked and (not est._exact_on_chunks or est._auto_chunked_mode != "summary"):
        large = est._auto_chunked_mode if est._exact_on_chunks else "summary"
        return large, f"{type(est).__name__} fits chunked input in {large} mode"
    n, d = shape
    limit = est._auto_summary_rows
    where = "read into memory" if chunked else "in memory"
    if limit is None:
        return "memory", f"{type(est).__name__} fits its rows {where} whatever their number"
    if n > limit:
        over = f"{n:,} rows are more than {limit:,}"
    elif n * d > AUTO_MEMORY_VALUES:
        over = f"{n:,} x {d} values are more than {AUTO_MEMORY_VALUES:,}"
    else:
        return "memory", f"{n:,} x {d} values, at most {AUTO_MEMORY_VALUES:,}: {where}"
    if sample_weight is not None and not chunked and not est._weights_in_summary:
        return "memory", f"{over}, but {type(est).__name__}'s summary mode takes no sample_weight"
    return "summary", over


def fit_mode(est, X, sample_weight=None) -> str:
    """How ``est`` fits ``X``: ``"memory"``, ``"summary"`` or ``"exact"`` (:func:`choose_mode` has the rule)."""
    return choose_mode(est, X, sample_weight)[0]


def auto_mode_rule(est) -> str:
    """The rule of ``mode="auto"`` for ``est``, in words (:func:`choose_mode`; ``lowdens params`` prints it)."""
    limit = est._auto_summary_rows
    budget = "" if limit is None else f"of at most {AUTO_MEMORY_VALUES:,} values (rows x columns) and {limit:,} rows "
    if not est._exact_on_chunks or est._auto_chunked_mode != "summary":
        large = est._auto_chunked_mode if est._exact_on_chunks else "summary"
        above = "" if limit is None else ", larger ones in summary mode"
        return f"arrays {budget}in memory{above}; Dask arrays and zarr stores in {large} mode"
    return (
        f"input {budget}in memory (a Dask array or zarr store read into memory in one pass), larger input in summary "
        "mode (exact mode by passes over the chunks only with mode='exact')"
    )


def max_node_bytes(est) -> float:
    """The estimator's ``max_node_bytes``, with "auto" resolved by
    :func:`~lowdens_dask.backend.workers.default_max_node_bytes` (0 for an estimator without it)."""
    value = est.get_params(deep=False).get("max_node_bytes", 0.0)
    return default_max_node_bytes() if isinstance(value, str) and value == "auto" else float(value)


def check_n_features(est, X) -> None:
    """X (in memory, Dask or zarr) has the features ``est`` was fitted on (scikit-learn's message)."""
    shape = getattr(X, "shape", None) if not isinstance(X, (str, os.PathLike)) else None
    n = as_dask_array(X, storage_options=est.storage_options).shape[1] if shape is None else shape[-1]
    if n != est.n_features_in_:
        raise ValueError(
            f"X has {n} features, but {type(est).__name__} is expecting {est.n_features_in_} features as input."
        )


#: The scale-out parameters' documentation, shared by every estimator's docstring (where the docstring says
#: ``{scale_out}``; :func:`with_scale_out_doc`).
SCALE_OUT_DOC = """    mode : {"auto", "exact", "summary"}, default="auto"
        How the rows are fitted (:func:`~lowdens_dask.estimators._params.choose_mode` has the rule; ``fit_mode_``
        and ``fit_mode_reason_`` record it). "auto" picks by cost: input of at most 5 million values (rows x
        columns; a Dask array or zarr store read into memory in one pass) is fitted in memory, larger input in
        summary mode. "exact" fits every input exactly (Dask and zarr input by chunk-map and tree-reduce
        passes over the rows, two per evaluation, with the in-memory result); "summary" forces summary mode
        (:mod:`lowdens_dask.estimators._summary_pass`). Small input, at most 256 rows (``SMALL_INPUT_ROWS``), is
        read into memory in one pass and fitted on its rows in every mode, with the tree and labels of the numpy
        array's fit (its summary would have too few microclusters to place a split); ``labels_`` is still a Dask
        array for Dask or zarr input. At least 2 finite rows are needed.
    rows_per_microcluster : float, default=20
        Summary mode: each chunk gets at most one microcluster per this many rows (and at most 64).
    max_microclusters : int or None, default=1024
        Summary mode: the summary's budget. Microclusters are merged on the workers, in the tree reduction
        that combines the chunks' summaries, down to at most this many (weighted k-means of their means, which
        keeps counts, means and spreads exact), so the tree's cost does not grow with the number of chunks.
        None keeps every chunk's microclusters.
    refine : int, default=0
        Hyperplane indices, summary mode: before each split is made, polish it with this many exact L-BFGS steps
        (each a few passes over the node's rows) from every start's summary hyperplane, and keep the start with
        the largest exact relative depth; node sizes then count rows. 0 keeps the summary hyperplanes.
    nonfinite : {"raise", "skip"}, default="raise"
        Rows with NaN/inf make the fit fail with their count, or are set aside and labelled -1
        (``n_nonfinite_`` counts them), for in-memory and chunked input alike.
    random_state : int, RandomState or None, default=None
        Seeds the microcluster k-means (and the method's own random choices); None means seed 0, so a fit is
        reproducible.
    storage_options : dict, optional
        fsspec options for zarr paths/URLs (input and ``labels_store``).
    labels_store : str, optional
        Dask or zarr input: a zarr path/URL where the labels are written, chunk-aligned with the input.
    max_node_bytes : float or "auto", default="auto"
        Hyperplane indices, exact mode on Dask or zarr input: a node whose rows take at most this many bytes (as
        float64) is gathered to one worker and split there by the in-memory path (its restarts, and the two
        children of each split, as parallel tasks); larger nodes are split by passes over their chunks, two per
        objective evaluation. "auto": a quarter of the smallest worker's memory limit (of the machine's memory
        without a distributed client). 0 uses the passes everywhere.
"""


def with_scale_out_doc(cls):
    """Class decorator: put :data:`SCALE_OUT_DOC`, restricted to the class's own parameters, where its docstring
    has the line ``    {scale_out}``."""
    if cls.__doc__ and "    {scale_out}\n" in cls.__doc__:
        names = set(cls._get_param_names())
        entries, current = [], None
        for line in SCALE_OUT_DOC.splitlines(keepends=True):
            if line.startswith("    ") and not line.startswith("     "):
                current = line.split(" :")[0].strip()
            if current in names:
                entries.append(line)
        cls.__doc__ = cls.__doc__.replace("    {scale_out}\n", "".join(entries))
    return cls


def _given_old_name(est, new: str) -> str | None:
    old = RENAMED.get(new)
    if old is None or old not in est.__dict__:  # SVM-relabel's max_iter was never renamed
        return None
    value = est.__dict__[old]
    return None if isinstance(value, str) and value == DEPRECATED else old


def param(est, name: str):
    """The value of the parameter ``name``, or of its old name (:data:`RENAMED`) where that was given."""
    old = _given_old_name(est, name)
    return getattr(est, name) if old is None else getattr(est, old)


def warn_renamed(est) -> None:
    """A ``FutureWarning`` for each old parameter name (:data:`RENAMED`) given to ``est``, naming the new one."""
    for new in RENAMED:
        old = _given_old_name(est, new)
        if old is not None:
            warn(
                f"{type(est).__name__}: the parameter {old} was renamed {new}; {old} will be removed in the next "
                f"release (use {new}={getattr(est, old)!r}).",
                FutureWarning,
            )


def validate_params(est) -> None:
    """The one check of an estimator's parameters, before any work (``fit``, ``partial_fit``, and
    :func:`~lowdens_dask.estimators.check_params` without fitting): a ``FutureWarning`` for each old name given
    (:func:`warn_renamed`), every value against the estimator's ``_parameter_constraints``
    (:func:`~lowdens_dask.estimators._constraints.check_constraints`; a bad value is a ``ValueError`` that names the
    parameter and its legal values), then what no table says (``_check_params``: a rule between parameters)."""
    warn_renamed(est)
    check_constraints(type(est)._parameter_constraints, est.get_params(deep=False), type(est).__name__)
    rules = getattr(est, "_check_params", None)
    if rules is not None:
        rules()
