"""The ``lowdens`` command's fixed cost (issue 35, item 6): what needs no data imports nothing heavy.

Timings are measured by ``benchmarks/cli.py``; these tests check the cause instead, which does not depend on the
machine's load: the modules a command imports before it answers.
"""

# SPDX-License-Identifier: BSD-3-Clause

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from lowdens_pipelines import job
from lowdens_pipelines.parameter_names import PARAMETER_NAMES

from lowdens_dask import (
    METHODS,
)

#: Packages that take from a third of a second to seconds each to import on a 2-core machine.
HEAVY = ("sklearn", "scipy", "pandas", "dask", "distributed", "numba", "prefect", "matplotlib", "pyarrow")


def test_parameter_names_are_the_estimators():
    """The table the command checks --param against before importing the library is each estimator's
    get_params(): a parameter added to an estimator and not to the table fails here."""
    assert sorted(PARAMETER_NAMES) == sorted(METHODS)
    for method, entry in METHODS.items():
        names = set(entry.clustering().get_params())
        assert PARAMETER_NAMES[method] == names, (
            f"pipelines/parameter_names.py for {method!r}: add {sorted(names - PARAMETER_NAMES[method])}, remove "
            f"{sorted(PARAMETER_NAMES[method] - names)}"
        )


@pytest.mark.parametrize("method", sorted(PARAMETER_NAMES))
def test_a_scale_out_value_refused_before_the_imports_is_refused_by_the_estimator(method):
    """What the command refuses before its imports (``method_constraints``: the table of the method's estimator)
    each estimator that has the parameter refuses too (the command refuses nothing a fit would take)."""
    from lowdens_dask.estimators import check_constraints, check_params, method_constraints

    bad = {"mode": "exakt", "nonfinite": "drop", "rows_per_microcluster": 0.5, "max_microclusters": 1, "refine": -1,
           "max_node_bytes": -3}  # fmt: skip
    for name, value in bad.items():
        if name not in PARAMETER_NAMES[method]:
            continue
        with pytest.raises(ValueError) as before:
            check_constraints(method_constraints(method), {name: value}, method)
        with pytest.raises(ValueError) as fit:
            check_params(METHODS[method].clustering(**{name: value}))
        assert f"{name} must be" in str(before.value) and f"{name} must be" in str(fit.value), (before, fit)


def _imported(cwd, *argv: str, env: dict | None = None) -> tuple[int, str, set[str]]:
    """(exit status, stderr, the heavy packages imported) of ``lowdens ARGV`` in a fresh process."""
    code = (
        "import json, sys\n"
        "from lowdens_pipelines.cli import main\n"
        f"status = main({list(argv)!r})\n"
        f"heavy = sorted({{name.partition('.')[0] for name in sys.modules}} & set({HEAVY!r}))\n"
        "print(json.dumps([status, heavy]), file=sys.__stdout__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120, check=False, env=env
    )
    status, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    return status, done.stderr, set(heavy)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("startup")
    rng = np.random.default_rng(0)
    np.save(root / "X.npy", np.vstack([rng.normal(0, 1, (100, 3)), rng.normal(8, 1, (100, 3))]))
    job.run_job(str(root / "X.npy"), n_clusters=2, store=str(root / "runs"), run_id="r1")
    return root


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fit", "missing.csv"], "missing.csv does not exist."),
        (["fit", "X.npy", "--param", "bogus=1"], "Unknown parameters ['bogus'] for method 'mdh'"),
        (["fit", "X.npy", "--method", "ncut", "--param", "alphas=[1]"], "Unknown parameters ['alphas']"),
        (["fit", "X.npy", "--param", "mode"], "--param takes NAME=VALUE"),
        (["fit", "X.npy", "--param", "mode=exakt"], "--param mode=exakt: must be 'auto', 'exact' or 'summary'."),
        (["fit", "X.npy", "--method", "svm-relabel", "--param", "nonfinite=drop"], "--param nonfinite=drop: must be"),
        (["fit", "X.npy", "--method", "scpp", "--param", "max_microclusters=1"], "max_microclusters=1: must be an"),
        (["fit", "X.npy", "--param", "refine=-1"], "--param refine=-1: must be a non-negative integer"),
        (["fit", "X.npy", "--labels", "missing.npy"], "missing.npy does not exist."),
        (["predict", "r1", "missing.csv", "--out", "o.npy", "--store", "runs"], "missing.csv does not exist."),
        (["predict", "nosuch", "X.npy", "--out", "o.npy", "--store", "runs"], "No committed run 'nosuch'"),
        (["plot", "r1", "--input", "missing.csv", "--store", "runs"], "missing.csv does not exist."),
    ],
)
def test_an_error_that_needs_no_data_imports_nothing_heavy(store, argv, message):
    """Before: each imported scikit-learn, Dask and numba (5-8 s) before it answered."""
    status, err, heavy = _imported(store, *argv)
    assert status == 2 and message in err, err
    assert not heavy, f"lowdens {' '.join(argv)} imported {sorted(heavy)} before answering"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["serve", "missing.csv"], "missing.csv does not exist."),
        (["serve", "X.npy", "--param", "bogus=1"], "Unknown parameters ['bogus'] for method 'mdh'"),
    ],
)
def test_a_serve_that_needs_no_data_imports_no_prefect(store, argv, message):
    """Before: serve imported Prefect (3.5 s) and the library before it checked its input."""
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    status, err, heavy = _imported(store, *argv, env=env)
    assert status == 2 and message in err, err
    assert not heavy, f"lowdens {' '.join(argv)} imported {sorted(heavy)} before answering"


@pytest.mark.parametrize("argv", [["runs", "list"], ["runs", "show", "r1"]])
def test_runs_list_and_show_read_json_only(store, argv):
    """Before: about 6 s each, most of it importing scikit-learn and loading numba to route one row per run."""
    status, err, heavy = _imported(store, *argv, "--store", "runs")
    assert status == 0, err
    assert not heavy, f"lowdens {' '.join(argv)} imported {sorted(heavy)}"


@pytest.mark.parametrize(
    "case",
    ["header only", "text column", "bad bandwidth", "bad alphas"],
)
def test_errors_that_need_the_file_or_a_method_value_come_before_the_imports(tmp_path, case):
    """Issue 43, item 5: `lowdens fit header_only.csv`, a CSV with a text column and `--param bandwidth=-1` took 3.9 s on an
    idle machine (11-15 s under load): the messages came after Dask, pandas and the estimators were imported. They
    now come from the first lines of the file and the standard-library table of the methods' values, with the same
    words; the command exits without importing any of those."""
    import subprocess
    import sys

    rows = "".join(f"{i}.5,{i}.25,{-i}.0\n" for i in range(50))
    files = {"header only": "a,b,c\n", "text column": "a,b,c\n" + rows.replace("3.25", "x3"), "plain": rows}
    args, expected = {
        "header only": (["h.csv"], "h.csv: the file has no data rows after the header line"),
        "text column": (["t.csv"], "t.csv: the columns ['b'] are not numeric; every column is a feature."),
        "bad bandwidth": (["p.csv", "--param", "bandwidth=-1"], "--param bandwidth=-1: must be None, 'silverman'"),
        "bad alphas": (["p.csv", "--param", "alphas=[0.5,0.1]"], "--param alphas=[0.5,0.1]: must be None or a non-empty"),
    }[case]
    for name, key in (("h.csv", "header only"), ("t.csv", "text column"), ("p.csv", "plain")):
        (tmp_path / name).write_text(files[key])
    code = (
        "import sys; from lowdens_pipelines.cli import main; status = main(sys.argv[1:]); "
        "heavy = {'dask', 'pandas', 'sklearn', 'numba', 'lowdens_dask.estimators.divisive'} & set(sys.modules); "
        "heavy = sorted(heavy); "
        "print(status, heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code, "fit", *args, "--store", "runs"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.stdout.split("\n")[0] == "2 []", (done.stdout, done.stderr)
    assert done.stderr.startswith("lowdens: error: " + expected), done.stderr
