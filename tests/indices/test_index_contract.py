"""The projection-index contract, checked for every registered index: chunked passes equal the one-chunk path,
the gradient matches central differences, parallel growth equals serial growth, and summary mode runs. And the
layering of the package (each layer imports only the layers below it)."""

import ast
import math
import pathlib
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
from tolerances import argmin_atol, assert_within, rows_atol, sum_atol

import lowdens_dask
from lowdens_dask import (
    METHODS,
)
from lowdens_dask.backend import InMemoryData
from lowdens_dask.backend.chunked import ChunkedNode
from lowdens_dask.backend.frame import Frame
from lowdens_dask.indices import INDICES, get_index
from lowdens_dask.pursuit import find_hyperplane
from lowdens_dask.pursuit.hyperplanes import _InMemoryObjective

#: The pursuits' default stopping tolerance (the largest of the indices' defaults).
PURSUIT_FTOL = 1e-5

NAMES = sorted(INDICES)


def three_groups(n=900, d=4, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[-6.0, 0, 0, 0], [0, 4.0, 0, 0], [6.0, -1.0, 0, 0]])[:, :d]
    y = rng.integers(0, 3, size=n)
    return centres[y] + rng.normal(size=(n, d)), y


@pytest.fixture(autouse=True)
def local_threads():
    with dask.config.set(scheduler="threads"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def test_every_method_is_registered_with_its_estimators():
    """Every hyperplane index has its estimators; the spectral methods (their own pursuit over l-dimensional
    projections, tests/pursuit/test_scpp.py) are registered beside them."""
    assert set(INDICES) == {"mdh", "pddp", "depddp", "ipddp", "ncut", "mc"}
    assert set(METHODS) == set(INDICES) | {"scpp", "lmsc", "msc", "svm-relabel"}
    for name, method in METHODS.items():
        assert method.clustering._method == name
        for estimator in (method.hyperplane, method.projection):
            assert estimator is None or estimator._method == name


@pytest.mark.parametrize("name", NAMES)
def test_chunked_passes_equal_the_one_chunk_path(name):
    """The same split from rows in memory and from rows in chunks of any size (same start)."""
    X, _ = three_groups()
    v0 = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)[2][0]
    ref = find_hyperplane(name, InMemoryData(X), v0=v0)
    for chunks in (900, 250):
        hp = find_hyperplane(name, ChunkedNode(da.from_array(X, chunks=(chunks, X.shape[1]))), v0=v0)
        assert hp.valid == ref.valid
        # pursuits over chunk sums and in memory, stopped at a relative change of ftol (at most the default
        # 1e-5): directions agree to sqrt(ftol), b and the statistics (first order in them) as much
        tol = argmin_atol(PURSUIT_FTOL)
        np.testing.assert_allclose(hp.v, ref.v, atol=tol)
        assert hp.b == pytest.approx(ref.b, abs=tol * np.linalg.norm(X, axis=1).max())
        assert hp.stats.keys() == ref.stats.keys()
        for key, value in ref.stats.items():
            assert hp.stats[key] == pytest.approx(value, rel=tol, nan_ok=True)


@pytest.mark.parametrize("name", NAMES)
def test_index_evaluation_in_chunks_equals_in_memory(name):
    """evaluate_chunked (value, split point, X.T @ dvalue/dp) equals evaluate on the whole projections."""
    X, _ = three_groups(n=600)
    data = InMemoryData(X)
    vals, vecs = data.leading_eigenvectors(2)
    index = INDICES[name].for_node(data, vals, vecs)
    U = np.column_stack([vecs[:, 0], np.array([1.0, 0.5, 0.2, 0.1]) / np.linalg.norm([1.0, 0.5, 0.2, 0.1])])
    stages = [index.stages[-1]] * 2
    mean = data.mean()
    proj = ChunkedNode(da.from_array(X, chunks=(170, 4))).projections(U, mean @ U)
    found = index.evaluate_chunked(proj, stages, True)
    for j, (split, xtg, sum_g) in enumerate(found):
        p = X @ U[:, j] - mean @ U[:, j]
        g = np.zeros_like(p)
        ref = index.evaluate(p, np.ones_like(p), stages[j], g)
        assert split.b == pytest.approx(ref.b, rel=1e-9, abs=1e-9)
        assert split.value == pytest.approx(ref.value, rel=1e-9, abs=1e-12)
        if xtg is not None:  # signed sums over the rows: within their rounding (tests/tolerances.py)
            assert_within(xtg, X.T @ g, rtol=1e-7, atol=rows_atol(X * g[:, None], axis=0))
            assert sum_g == pytest.approx(g.sum(), rel=1e-7, abs=sum_atol(g))


PURSUED = [name for name in NAMES if not INDICES[name].fixed_direction]


@pytest.mark.parametrize("name", PURSUED)
def test_gradient_matches_central_differences(name):
    """The pursuit's gradient in v (envelope theorem: the split held at its optimum) against central
    differences of the index value with the split re-optimised."""
    rng = np.random.default_rng(3)
    X, _ = three_groups(n=500, seed=3)
    data = InMemoryData(X)
    vals, vecs = data.leading_eigenvectors(2)
    index = INDICES[name].for_node(data, vals, vecs)
    objective = _InMemoryObjective(data, index)
    stage = index.stages[-1]
    v = vecs[:, 0] + 0.3 * rng.normal(size=4)
    f0, grad, _ = objective.answer(("evaluate", v, stage, True), 1)
    assert math.isfinite(f0) and np.linalg.norm(grad) > 0
    for _ in range(4):
        e = rng.normal(size=4)
        step = 1e-6
        plus = objective.answer(("evaluate", v + step * e, stage, False), 1)[0]
        minus = objective.answer(("evaluate", v - step * e, stage, False), 1)[0]
        assert (plus - minus) / (2 * step) == pytest.approx(grad @ e, rel=1e-4, abs=1e-7)


@pytest.mark.parametrize("name", NAMES)
def test_parallel_growth_equals_serial_growth(name):
    """Summary mode's parallel growth (both children at once, restarts as Dask tasks) builds the tree of the
    serial order, on weighted rows."""
    X, _ = three_groups(n=400, seed=5)
    weights = np.random.default_rng(5).integers(1, 4, size=len(X)).astype(float)
    trees = []
    for parallel in (True, False):
        model = METHODS[name].clustering(n_clusters=4)
        trees.append(model._grow(InMemoryData(X, weights), Frame(), parallel, None).tree)
    assert [(n.id, n.children, n.size, n.forced) for n in trees[0]] == [
        (n.id, n.children, n.size, n.forced) for n in trees[1]
    ]
    for a, b in zip(*trees):
        if not a.is_leaf:  # leaves may differ in would-be splits: parallel growth computes them eagerly
            assert a.rule == b.rule


@pytest.mark.parametrize("name", NAMES)
def test_summary_mode_runs(name):
    X, y = three_groups(n=6000, seed=7)
    model = METHODS[name].clustering(n_clusters=3, mode="summary", random_state=0).fit(X)
    assert model.n_clusters_ == 3 and model.labels_.shape == (len(X),)
    assert model.n_microclusters_ < len(X) / 10
    assert all(node.method == name for node in model.tree_ if not node.is_leaf)


# ------------------------------------------------------------------------------------------ layering

#: The layers of lowdens_dask, bottom first (docs/DESIGN.md): a module may import only its own layer and lower ones.
LAYERS = ["kernels", "backend", "indices", "pursuit", "tree", "estimators"]


def _imported_layers(path: pathlib.Path, package: str) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(parts + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target] if node.module else [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "lowdens_dask" and len(parts) > 1 and parts[1] in LAYERS:
                found.add(parts[1])
    return found


def test_each_layer_imports_only_the_layers_below_it():
    root = pathlib.Path(lowdens_dask.__file__).parent
    violations = []
    checked = 0
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            package = "lowdens_dask." + ".".join(path.relative_to(root).parent.parts)
            for imported in _imported_layers(path, package):
                checked += 1
                if LAYERS.index(imported) > LAYERS.index(layer):
                    violations.append(f"{path.relative_to(root)} imports lowdens_dask.{imported}")
    assert checked > 20
    assert not violations, violations


def test_layering_check_catches_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from ..estimators import MDH\nfrom lowdens_dask.tree import ClusterTree\n")
    assert _imported_layers(bad, "lowdens_dask.indices") == {"estimators", "tree"}


@pytest.mark.parametrize("method", ["ncut", "mc"])
def test_index_without_admissible_split_gives_finite_point(method):
    """Issue 22, point 8: an index given no admissible split returns a finite would-be split point."""
    index = get_index(method)(1.0, 3) if method == "ncut" else get_index(method)(3)
    # every projection equal: no gap at all; the would-be split is their common value
    split = index.evaluate(np.full(6, 0.25), np.ones(6), None, np.empty(6))
    assert not index.stage_done(split) and split.b == 0.25
    # weights 1, 10, 1, 1: every gap leaves less than min_size = 3 on a side; b lies in one of the gaps
    p, w = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 10.0, 1.0, 1.0])
    split = index.evaluate(p, w, None, np.empty(4))
    assert not index.stage_done(split) and split.b in (0.5, 1.5, 2.5)
    assert split.weight_below == w[p < split.b].sum()
    # two groups of 3 and 2 with min_size = 3: no admissible split; the would-be split is the index's best gap
    p = np.array([0.0, 0.1, 0.2, 5.0, 5.1])
    split = index.evaluate(p, np.ones(5), None, np.empty(5))
    assert not index.stage_done(split) and split.b == pytest.approx(2.6)
