"""The README's code blocks run as written, and the links of the README and docs/ resolve."""

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
DOCS = README.parent / "docs"

#: The Quick start's two commands, which the README starts with (the first installs and runs the demo, the second
#: installs the test extra and runs the tests).
QUICK_START = (
    "python3.11 -m venv .venv && .venv/bin/pip install . && .venv/bin/lowdens demo",
    "python3.11 -m venv .venv && .venv/bin/pip install '.[test]' && .venv/bin/python -m pytest -q -n 2",
)


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def _python_block(marker: str) -> str:
    """The one python block that contains ``marker``."""
    (block,) = [b for b in _python_blocks() if marker in b]
    return block


@pytest.mark.slow
@pytest.mark.skipif(not README.exists(), reason="README.md not found next to the tests")
def test_readme_python_example_runs():
    """The library's python block ("In Python") runs as written, with no FutureWarning (it uses the new names:
    leaf_order, PDDPClustering, ..., ClusterTree.n_updates)."""
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # optidigits has two constant columns
        warnings.simplefilter("error", FutureWarning)  # a renamed parameter or class
        exec(compile(_python_block("restored = ClusterTree.from_json"), str(README), "exec"), namespace)
    assert namespace["restored"].n_leaves == namespace["tree"].n_leaves


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.skipif(not README.exists(), reason="README.md not found next to the tests")
def test_readme_dask_example_runs_as_a_script(tmp_path):
    """The scale-out block, pasted into a script, runs as it stands (its __main__ guard lets the
    LocalCluster's worker processes import the script)."""
    import subprocess
    import sys

    script = tmp_path / "example.py"
    script.write_text(_python_block("LocalCluster(n_workers=2"))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "labels.zarr").exists() and "node 0: mdh split" in proc.stdout


def _bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL)


@pytest.mark.skipif(not README.exists(), reason="README.md not found next to the tests")
def test_readme_has_no_other_kinds_of_code_block():
    """Every code block is a python or bash block, and each one is run by a test here (the Quick start's two
    install commands by .ci/run, which runs the second and installs the package as the first does); the README
    starts with those two commands, before any other block."""
    fences = re.findall(r"^```(\w*)$", README.read_text(), flags=re.MULTILINE)
    kinds = fences[0::2]
    assert set(kinds) <= {"python", "bash"}, kinds
    assert kinds.count("python") == 3 and kinds.count("bash") == 4
    assert kinds[:2] == ["bash", "bash"] and tuple(b.strip() for b in _bash_blocks()[:2]) == QUICK_START


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


@pytest.mark.slow
@pytest.mark.skipif(not README.exists(), reason="README.md not found next to the tests")
def test_readme_own_data_blocks_run_as_they_stand(tmp_path, monkeypatch, capsys):
    """"Your own data": the python block, pasted into a script, writes a CSV and a zarr store in an empty folder;
    then the bash block's commands run there, one after the other (through the ``lowdens`` entry point's ``main``):
    without standardize the column in large units hides a group, with it the three groups are found, from the CSV
    and from zarr, and predict writes the labels."""
    import shlex
    import subprocess
    import sys

    from lowdens_pipelines.cli import main

    script = tmp_path / "make_data.py"
    script.write_text(_python_block('to_csv("my-table.csv"'))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (block,) = [b for b in _bash_blocks() if b.lstrip().startswith("lowdens fit my-table.csv")]
    monkeypatch.chdir(tmp_path)
    for line in block.strip().splitlines():
        command = shlex.split(line, comments=True)
        assert command[0] == "lowdens", line
        assert main(command[1:]) == 0, line
    listed = capsys.readouterr().out.split("run\tcommitted")[-1].splitlines()[1:]  # the last command's table
    clusters = {row.split("\t")[0]: int(row.split("\t")[3]) for row in listed}
    assert clusters == {"table-raw": 2, "table": 3, "store": 3}, clusters
    labels = (tmp_path / "my-labels.csv").read_text().split()
    assert labels[0] == "label" and len(labels) == 1 + 6000 and set(labels[1:]) == {"0", "1", "2"}


def _relative_links(path: Path) -> list[str]:
    """The relative link targets of a Markdown file (code blocks left out)."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    return [link for link in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", link)]


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    return {
        re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.*)$", text, flags=re.MULTILINE)
    }


@pytest.mark.skipif(not README.exists(), reason="README.md not found next to the tests")
def test_readme_and_docs_links_resolve():
    """Every relative link of README.md and docs/*.md names a file that exists, and an anchor one of its headings."""
    pages = [README, *sorted(DOCS.glob("*.md"))]
    assert len(pages) > 2, pages
    for page in pages:
        for link in _relative_links(page):
            target, _, anchor = link.partition("#")
            path = (page.parent / target).resolve() if target else page
            assert path.exists(), f"{page.name}: {link}"
            if anchor and path.suffix == ".md":
                assert anchor in _anchors(path), f"{page.name}: {link}"
