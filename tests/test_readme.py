"""The README's usage example runs as written."""

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.skipif(not README.exists(), reason="README.md not found next to the tests")
def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # optidigits has two constant columns
        for code in blocks:
            namespace: dict = {}
            exec(compile(code, str(README), "exec"), namespace)
    assert namespace["restored"].n_leaves == namespace["tree"].n_leaves
