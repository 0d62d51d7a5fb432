"""The README's usage example runs as written."""

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.slow
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


@pytest.mark.slow
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


def _bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL)


@pytest.mark.skipif(not README.exists(), reason="README.md not found next to the tests")
def test_readme_has_no_other_kinds_of_code_block():
    """Every code block is a python or bash block, and each one is run by a test here (the Quick start's two
    install commands by .ci/run, which runs the second and installs the package as the first does)."""
    fences = re.findall(r"^```(\w*)$", README.read_text(), flags=re.MULTILINE)
    kinds = fences[0::2]
    assert set(kinds) <= {"python", "bash"}, kinds
    assert kinds.count("python") == 2 and kinds.count("bash") == 3


@pytest.mark.slow
@pytest.mark.skipif(not README.exists(), reason="README.md not found next to the tests")
def test_readme_pipeline_commands_run_as_they_stand(tmp_path, monkeypatch, capsys):
    """The pipeline block, in an empty folder, command after command (in this process, through the ``lowdens``
    entry point's ``main``, so that the flows share one temporary Prefect server): the demo clusters pendigits
    (the Quick start's command), then a run is fitted, listed, shown, used to predict and plotted."""
    import json
    import shlex

    from lowdens_pipelines.cli import main

    (block,) = [b for b in _bash_blocks() if b.lstrip().startswith("lowdens demo")]
    monkeypatch.chdir(tmp_path)
    outputs = {}
    for line in block.strip().splitlines():
        command = shlex.split(line, comments=True)
        assert command[0] == "lowdens", line
        assert main(command[1:]) == 0, line
        outputs[" ".join(command[1:3])] = capsys.readouterr().out
    demo = dict(line.split(": ", 1) for line in outputs["demo"].splitlines() if ": " in line)
    assert demo["data"].startswith("lowdens-demo/pendigits.zarr (10992 rows, 16 features, 10 classes")
    found = int(demo["clusters"].split()[0])  # --n-clusters auto: the number found, beside the classes
    assert 2 <= found <= 30 and "found (10 classes); adjusted Rand" in outputs["demo"]
    listed = [line.split("\t")[0] for line in outputs["runs list"].splitlines()[1:]]  # below the header
    assert listed == ["night-1", demo["run"].split()[0]]  # newest first, in the default store ./lowdens-runs
    assert json.loads(outputs["runs show"])["metrics"]["n_leaves"] == 10
    assert (tmp_path / "labels.csv").exists()
    for plots in (tmp_path / "plots", tmp_path / "lowdens-demo" / "plots"):
        assert {"tree.png", "dendrogram.png", "node-0.png"} <= {p.name for p in plots.iterdir()}
