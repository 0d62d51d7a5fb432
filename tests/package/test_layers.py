"""The package's layers (issue 54, item 1): kernels -> backend -> indices -> pursuit -> tree -> growth ->
estimators, each importing only the layers below it, and no import circle anywhere in ``lowdens_dask``. Imports
inside functions count; those under ``if TYPE_CHECKING:`` do not (they never run)."""

import ast
import functools
from pathlib import Path

import lowdens_dask

PACKAGE = Path(lowdens_dask.__file__).parent
LAYERS = ["kernels", "backend", "indices", "pursuit", "tree", "growth", "estimators"]


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def _imports(name: str, path: Path, modules: dict) -> set[str]:
    """The ``lowdens_dask`` modules that module ``name`` imports (``from . import x`` imports the submodule x, not
    the package again), wherever in the file, except under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text())
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            found.update(submodules if len(submodules) == len(node.names) else [target, *submodules])
    return {m for m in found if m in modules and m != name}


@functools.cache
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_the_import_graph_is_read():
    graph = _graph()
    assert "lowdens_dask.growth.grower" in graph["lowdens_dask.estimators.divisive"]
    assert "lowdens_dask.tree.cluster_tree" in graph["lowdens_dask.growth.grower"]
    assert "lowdens_dask.backend" in graph["lowdens_dask.growth"]  # an import inside a function counts


def test_each_layer_imports_only_the_layers_below_it():
    upward = [
        f"{a} -> {b}"
        for a, targets in _graph().items()
        for b in targets
        if _layer(a) is not None
        and (_layer(b) is None and b != "lowdens_dask._warnings" or (_layer(b) or 0) > _layer(a))
    ]
    assert upward == []


def test_no_import_circle():
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    circles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                circles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_the_tree_model_does_not_import_the_growth_layer():
    graph = _graph()
    tree_modules = [m for m in graph if m.startswith("lowdens_dask.tree")]
    assert tree_modules and not any(b.startswith("lowdens_dask.growth") for m in tree_modules for b in graph[m])
