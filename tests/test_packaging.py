"""The explicit package list of pyproject.toml names every package of the source tree."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "lowdens_dask").rglob("__init__.py")}
    assert set(config["packages"]) == found | {"lowdens_pipelines"}
    assert config["package-dir"] == {"lowdens_pipelines": "pipelines"}
    assert (ROOT / "pipelines" / "__init__.py").exists()
