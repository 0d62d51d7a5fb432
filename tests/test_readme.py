"""The README's usage example runs as written."""

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.skipif(not README.exists(), reason="README.md not found next to the tests")
def test_readme_python_example_runs():
    """The first python block (Usage) runs as written; the scale-out one needs a zarr store and a
    cluster, which tests/test_scale_out.py covers."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks, "README has no python example"
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # optidigits has two constant columns
        exec(compile(blocks[0], str(README), "exec"), namespace)
    assert namespace["restored"].n_leaves == namespace["tree"].n_leaves


@pytest.mark.skipif(not README.exists(), reason="README.md not found next to the tests")
def test_readme_dask_example_runs_as_a_script(tmp_path):
    """The scale-out block, pasted into a script, runs as it stands (its __main__ guard lets the
    LocalCluster's worker processes import the script)."""
    import subprocess
    import sys

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    script = tmp_path / "example.py"
    script.write_text(blocks[1])
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "labels.zarr").exists() and "node 0: mdh split" in proc.stdout
