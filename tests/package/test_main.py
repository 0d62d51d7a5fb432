"""The demo command: ``python -m lowdens_dask`` with a method from the registry."""

from lowdens_dask.__main__ import main


def test_demo_runs_any_registered_method(capsys):
    main(["--dataset", "breastcancer", "--method", "ncut"])
    out = capsys.readouterr().out
    assert "NCutClustering(n_clusters=2) fitted" in out
    assert "ncut split" in out and "v_measure" in out


def test_demo_takes_auto(capsys):
    main(["--dataset", "breastcancer", "--method", "mdh", "--n-clusters", "auto"])
    out = capsys.readouterr().out
    assert "MDHClustering(n_clusters='auto') fitted" in out and ("p = " in out or "p < " in out)  # each dip test
