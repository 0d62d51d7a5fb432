"""The ``lowdens`` command's words (issue 53): booleans refused unless true or false, refused values in the command's
own words, a told K past what is significant said, labels on stdout, counts in the singular."""

import numpy as np
from cli_helpers import lowdens
from cli_helpers import one_error_line as _one_error_line


def _csv(tmp_path, X) -> str:
    path = tmp_path / "rows.csv"
    np.savetxt(path, X, delimiter=",")
    return str(path)


def _six_blobs(n: int = 60) -> np.ndarray:
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0], [12, 0], [0, 12], [12, 12], [24, 0], [24, 12]], dtype=float)
    return np.vstack([c + rng.normal(size=(n, 2)) for c in centres])


def test_a_boolean_parameter_refuses_a_value_that_only_reads_as_one(tmp_path, capsys):
    """Item 2 (fuzz5 repro_6): --param standardize=False arrived as the truthy string "False" and standardized."""
    rows = _csv(tmp_path, _six_blobs())
    for value in ("False", "no", "yes", "1"):
        status, _, err = lowdens(capsys, "fit", rows, "--param", f"standardize={value}", "--store", tmp_path / "r")
        line = _one_error_line(err)
        assert status == 2 and f"--param standardize={value}" in line and "true or false" in line, line
    status, _, _ = lowdens(capsys, "fit", rows, "--n-clusters", "2", "--param", "standardize=false",
                           "--store", tmp_path / "r")  # fmt: skip
    assert status == 0


def test_refused_values_are_in_the_commands_words(tmp_path, capsys):
    """Item 3 (fuzz5 repro_7): "below which --n---param clusters=auto splits a leaf", and an unknown name listed
    '--n-clusters' among the parameters --param takes."""
    rows = _csv(tmp_path, _six_blobs())
    status, _, err = lowdens(capsys, "fit", rows, "--param", "significance_level=0", "--store", tmp_path / "r")
    line = _one_error_line(err)
    assert status == 2 and "--n-clusters auto" in line and "--n---param" not in line and "--param clusters" not in line
    status, _, err = lowdens(capsys, "fit", rows, "--param", "sigificance_level=0.05", "--store", tmp_path / "r")
    line = _one_error_line(err)
    assert status == 2 and "'n_clusters'" in line and "'--n-clusters'" not in line, line


def test_a_told_k_past_the_significant_splits_says_so(tmp_path, capsys):
    """Item 8: told 8 on 6 clear blobs printed "8 clusters" although two splits had p 0.72 and 0.95."""
    rows = _csv(tmp_path, _six_blobs())
    status, out, err = lowdens(capsys, "fit", rows, "--n-clusters", "8", "--store", tmp_path / "r", "--run-id", "k8")
    assert status == 0 and "\t8 clusters\t" in out[0]
    said = [line for line in err if "not significant" in line]
    assert len(said) == 1 and said[0].startswith("lowdens: 2 of the 7 splits are not significant"), err
    from lowdens_pipelines import RunsStore

    metrics = RunsStore(str(tmp_path / "r")).get("k8").attrs["metrics"]
    assert len(metrics["splits_not_significant"]) == 2 and metrics["significance_level"] == 0.01
    status, out, err = lowdens(capsys, "fit", rows, "--n-clusters", "6", "--store", tmp_path / "r")
    assert status == 0 and not [line for line in err if "not significant" in line]


def test_predict_without_out_writes_the_labels_to_stdout(tmp_path, capsys):
    """Item 9: `lowdens predict RUN rows.csv` without --out was an error; the labels go to stdout, one per line."""
    X = _six_blobs()
    rows = _csv(tmp_path, X)
    assert lowdens(capsys, "fit", rows, "--n-clusters", "6", "--store", tmp_path / "r", "--run-id", "six")[0] == 0
    status, out, err = lowdens(capsys, "predict", "six", rows, "--store", tmp_path / "r")
    assert status == 0 and len(out) == len(X) and sorted(set(out)) == [str(i) for i in range(6)]
    assert any(line.endswith("360 rows labelled") for line in err), err
