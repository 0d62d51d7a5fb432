"""The explicit package list of pyproject.toml names every package of the source tree."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "lowdens_dask").rglob("__init__.py")}
    assert set(config["packages"]) == found | {"lowdens_pipelines"}
    assert config["package-dir"] == {"lowdens_pipelines": "pipelines"}
    assert (ROOT / "pipelines" / "__init__.py").exists()


def test_every_data_file_is_package_data():
    """A data file the library reads (the datasets, the dip's null table) is installed with it: a clean install
    without the table failed at the first n_clusters="auto" fit."""
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    data_files = [
        path
        for path in (ROOT / "lowdens_dask").rglob("*")
        if path.is_file() and path.suffix in {".npz", ".gz", ".json", ".csv"} and "__pycache__" not in path.parts
    ]
    assert any(path.name == "dip_null.npz" for path in data_files)
    for path in data_files:
        package = ".".join(path.parent.relative_to(ROOT).parts)
        while package not in package_data:
            package = package.rpartition(".")[0]
            assert package, f"{path} is in no package-data entry"
        base = ROOT.joinpath(*package.split("."))
        assert any(path.match(str(base / pattern)) for pattern in package_data[package]), path


def test_chunk_tasks_do_not_import_scikit_learn():
    """Dask workers import only the layers their tasks need (issue 9, memory: about 90 MB per worker)."""
    import subprocess
    import sys

    code = (
        "import sys, lowdens_dask.backend.chunked, lowdens_dask.tree, lowdens_dask.kernels.summaries;"
        "print('sklearn' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
