"""The demo command: ``python -m lowdens_dask`` with a method from the registry."""

from lowdens_dask.__main__ import main


def test_demo_runs_any_registered_method(capsys):
    main(["--dataset", "breastcancer", "--method", "ncut"])
    out = capsys.readouterr().out
    assert "NCutClustering(n_clusters=2) fitted" in out
    assert "ncut split" in out and "v_measure" in out
