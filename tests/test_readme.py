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
