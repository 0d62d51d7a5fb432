"""Exact mode on chunked data: every index evaluation is a map over chunks and a tree reduction, and the
fit equals the in-memory fit whatever the chunking."""

import math

import dask
import dask.array as da
import numpy as np
import pytest
import zarr
from sklearn.metrics import adjusted_rand_score
from tolerances import argmin_atol, assert_within, rows_atol, sum_atol, sum_rtol

import lowdens_dask as ld
from lowdens_dask import MDH, PDDPClustering, DePDDPClustering, MDHClustering
from lowdens_dask.backend import InMemoryData
from lowdens_dask.backend.chunked import ChunkedNode
from lowdens_dask.datasets import load_dataset
from lowdens_dask.indices import density, density_passes
from lowdens_dask.kernels.kde import weighted_moments
from lowdens_dask.pursuit import minimum_density_hyperplane
from lowdens_dask.testing import separated_groups

#: The pursuit's default stopping tolerance (``minimum_density_hyperplane``, MDH): in memory the compiled L-BFGS,
#: in exact mode the same steps over chunk sums, which round differently; directions agree to ``argmin_atol``.
FTOL = 1e-5


def bimodal(n=3000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[: n // 3, 0] += 5.0
    X[: n // 3, 1] -= 2.0
    return X


def chunked_projections(p, chunks):
    """Projections of a 1-column chunked array onto e_1: the chunked form of p."""
    node = ChunkedNode(da.from_array(p[:, None], chunks=(chunks, 1)))
    return node.projections(np.ones((1, 1)))


@pytest.fixture(autouse=True)
def local_threads():
    with dask.config.set(scheduler="threads"):
        yield


@pytest.mark.parametrize("chunks", [97, 1000, 5000])
@pytest.mark.parametrize("alpha", [0.05, 0.6])
def test_chunked_b_search_and_gradient_equal_the_in_memory_index(chunks, alpha):
    rng = np.random.default_rng(chunks)
    p = np.concatenate([rng.normal(-2.0, 0.7, 2000), rng.normal(1.5, 1.0, 3000)])
    w = np.ones_like(p)
    h, eta, eps = 0.25, 1e-2, 1 - 1e-6
    total, mean, std, pmin, pmax = weighted_moments(p, w)
    kbuf = np.empty_like(p)
    ref = density.minimise_penalised_density(p, w, total, mean, std, h, alpha, eta, eps, kbuf)
    grad_ref = density.log_density_gradient(
        p, w, total, mean, std, h, alpha, eta, eps, *ref[:3], *ref[4:], kbuf, np.empty_like(p)
    )

    proj = chunked_projections(p, chunks)
    mom = density_passes.projection_moments(proj)
    # chunk sums against one sum: the count and the extremes are exact, the mean within the sum's rounding, the
    # standard deviation within that of a sum of squares (positive terms)
    sd_rtol = sum_rtol((p - mean) ** 2)
    assert_within(mom[0], [total, mean, std, pmin, pmax], rtol=[0, 0, sd_rtol, 0, 0], atol=[0, sum_atol(p) / total, 0, 0, 0])
    (found,) = density_passes.minimise_penalised_density(proj, mom, h, [alpha], eta, eps)
    assert found[0] == pytest.approx(ref[0], rel=1e-9, abs=1e-9 * h)
    np.testing.assert_allclose(found[1:], ref[1:], rtol=1e-9, atol=1e-12)
    # X = p as a column, so X.T @ g is the sum of g * p and the sum of g is returned alongside
    xg, sum_g = density_passes.gradient(proj, mom, h, [alpha], eta, eps, [found])
    # signed sums that cancel at the minimum: within their rounding, not relative to their (small) values
    assert xg[0, 0] == pytest.approx(grad_ref @ p, rel=1e-8, abs=sum_atol(grad_ref * p))
    assert sum_g[0] == pytest.approx(grad_ref.sum(), rel=1e-8, abs=sum_atol(grad_ref))

    ((below, log_b, log_mode),) = density_passes.split_statistics(proj, mom, h, [found[0]])
    left, _, right, _ = density.adjacent_modes(p, w, total, h, found[0], kbuf)
    assert below == (p < found[0]).sum()
    # logs of sums of positive kernel terms: absolute errors of their relative rounding (near 0 a rel= is none)
    log_atol = sum_rtol(np.ones(p.size))
    assert log_mode == pytest.approx(min(left, right), rel=1e-10, abs=log_atol)
    assert log_b == pytest.approx(found[2], rel=1e-10, abs=log_atol)


def test_chunked_kernel_sums_use_the_log_domain_shift_when_the_sum_underflows():
    p = np.concatenate([np.full(50, -40.0), np.full(50, 40.0)])
    proj = chunked_projections(p, 30)
    ((shift, s0, s1, s2),) = density_passes.kernel_sums_at(proj, 0.5, [0], [0.0])
    assert shift == pytest.approx(40.0**2 / (2 * 0.25))
    assert s0 == pytest.approx(100.0) and s1 == pytest.approx(0.0, abs=1e-9)
    assert s2 == pytest.approx(100 * 1600.0)


@pytest.mark.parametrize("chunks", [331, 1000, 3000])
def test_exact_mode_on_a_dask_array_gives_the_in_memory_hyperplane(chunks):
    X = bimodal()
    ref = minimum_density_hyperplane(InMemoryData(X))
    hp = minimum_density_hyperplane(ChunkedNode(da.from_array(X, chunks=(chunks, X.shape[1]))))
    radius = np.linalg.norm(X, axis=1).max()
    np.testing.assert_allclose(hp.v, ref.v, atol=argmin_atol(FTOL))
    assert hp.b == pytest.approx(ref.b, abs=argmin_atol(FTOL) * radius)
    assert hp.relative_depth == pytest.approx(ref.relative_depth, rel=argmin_atol(FTOL))  # first order in v and b
    assert hp.params["alpha"] == ref.params["alpha"]
    # Silverman's rule: the top eigenvalue of chunk-summed scatter against the in-memory covariance
    assert hp.params["bandwidth"] == pytest.approx(ref.params["bandwidth"], rel=X.shape[1] * sum_rtol(np.ones(len(X))))
    far = np.abs(X @ ref.v - ref.b) > 2 * argmin_atol(FTOL) * radius  # rows farther from b than it can move
    np.testing.assert_array_equal((X @ hp.v < hp.b)[far], (X @ ref.v < ref.b)[far])


@pytest.mark.slow
@pytest.mark.parametrize(
    "make",
    [
        lambda: MDHClustering(n_clusters=3, standardize=True),
        lambda: PDDPClustering(n_clusters=4),
        lambda: DePDDPClustering(n_clusters=3),
        lambda: MDH(),
    ],
    ids=["mdhclustering", "pddp", "depddp", "mdh"],
)
@pytest.mark.parametrize("chunks, max_node_bytes", [(150, "auto"), (683, "auto"), (150, 0)])
def test_estimators_in_exact_mode_match_in_memory_fits(make, chunks, max_node_bytes):
    """Nodes gathered to a worker ("auto") or split by passes over their chunks (0): the in-memory fit."""
    X, _ = load_dataset("breastcancer", return_X_y=True)
    ref = make().fit(X)
    model = make().set_params(mode="exact", max_node_bytes=max_node_bytes)
    model.fit(da.from_array(X, chunks=(chunks, X.shape[1])))
    np.testing.assert_array_equal(model.labels_.compute(), ref.labels_)
    if hasattr(ref, "tree_"):
        assert model.tree_.n_leaves == ref.tree_.n_leaves
        for a, b in zip(model.tree_, ref.tree_):
            if not a.is_leaf:  # pursuits over chunk sums and in memory, stopped at ftol (PDDP's: no pursuit)
                np.testing.assert_allclose(a.v, b.v, atol=argmin_atol(FTOL))
                assert a.b == pytest.approx(b.b, abs=argmin_atol(FTOL) * np.linalg.norm(X, axis=1).max())
                assert a.size == b.size
    else:
        np.testing.assert_allclose(model.v_, ref.v_, atol=argmin_atol(FTOL))


@pytest.mark.distributed
@pytest.mark.slow
def test_exact_mode_on_a_local_cluster_from_zarr(dask_client, tmp_path):
    X = bimodal(n=4000, d=4, seed=3)
    X[7, 2] = np.nan
    zarr.create_array(str(tmp_path / "x.zarr"), data=X, chunks=(900, 4))
    finite = np.isfinite(X).all(axis=1)
    ref = MDHClustering(n_clusters=2).fit(X[finite])
    # on the session's two-process LocalCluster (tests/conftest.py), its client the default
    model = MDHClustering(n_clusters=2, mode="exact")
    with pytest.raises(ValueError, match="1 of 4000 rows with NaN"):
        model.fit(str(tmp_path / "x.zarr"))
    model.set_params(nonfinite="skip", labels_store=str(tmp_path / "labels.zarr")).fit(str(tmp_path / "x.zarr"))
    labels = zarr.open_array(str(tmp_path / "labels.zarr"), mode="r")[:]
    assert labels[7] == -1 and model.n_nonfinite_ == 1
    np.testing.assert_array_equal(labels[finite], ref.labels_)
    root, ref_root = model.tree_.root, ref.tree_.root
    np.testing.assert_allclose(root.v, ref_root.v, atol=argmin_atol(FTOL))


def test_exact_mode_rejects_what_needs_rows_in_memory():
    dX = da.from_array(bimodal(n=500), chunks=(100, 5))
    with pytest.raises(ValueError, match="callable bandwidth"):
        MDH(mode="exact", bandwidth=lambda X: 0.3).fit(dX)
    with pytest.raises(ValueError, match="sample_weight must have shape \\(500,\\)"):
        MDH(mode="exact").fit(dX, sample_weight=np.ones(499))
    with pytest.raises(ValueError, match="mode must be"):
        MDH(mode="fast").fit(dX)


def test_chunked_node_statistics_match_numpy():
    X = bimodal(n=1000, d=3)
    node = ChunkedNode(da.from_array(X, chunks=(130, 3)))
    # chunk sums against numpy's: each within its sum's rounding (columns of mean about 0 cancel; so do the
    # scatter's off-diagonal products), eigenpairs within the scatter's error over their gap
    Xc = X - X.mean(0)
    assert_within(node.mean(), X.mean(axis=0), atol=rows_atol(X, axis=0) / len(X))
    products = np.abs(Xc)[:, :, None] * np.abs(Xc)[:, None, :]
    assert_within(node.scatter_matrix(), Xc.T @ Xc, atol=rows_atol(products, axis=0))
    vals, vecs = node.leading_eigenvectors(2)
    ref_vals, ref_vecs = InMemoryData(X).leading_eigenvectors(2)
    error = np.linalg.norm(rows_atol(products, axis=0)) / (len(X) - 1)  # a bound on the covariance's error (2-norm)
    all_vals = np.linalg.eigvalsh(np.cov(X.T))[::-1]
    np.testing.assert_allclose(vals, ref_vals, rtol=0, atol=error)
    gap = np.min(np.abs(np.diff(all_vals[:3])))
    np.testing.assert_allclose(vecs, ref_vecs, rtol=0, atol=2 * error / gap)
    left, right = node.partition(np.array([1.0, 0.0, 0.0]), 2.5)
    assert (left.n_samples, right.n_samples) == ((X[:, 0] < 2.5).sum(), (X[:, 0] >= 2.5).sum())
    assert math.isclose(left.total_scatter(), ((X[X[:, 0] < 2.5] - X[X[:, 0] < 2.5].mean(0)) ** 2).sum(), rel_tol=1e-10)


def test_restarts_share_each_projection_pass(monkeypatch):
    """PC1 and PC2 pursue in lockstep: one X @ V pass projects both while both are running."""
    widths = []
    original = ChunkedNode.projections

    def recording(self, U, offset=None):
        widths.append(np.asarray(U).reshape(self.n_features, -1).shape[1])
        return original(self, U, offset)

    monkeypatch.setattr(ChunkedNode, "projections", recording)
    hp = minimum_density_hyperplane(ChunkedNode(da.from_array(bimodal(n=1500), chunks=(500, 5))))
    assert widths[0] == 2
    assert sum(widths) >= hp.n_evaluations  # every evaluation was projected ...
    assert len(widths) < hp.n_evaluations  # ... in fewer passes than evaluations


@pytest.mark.slow
def test_passes_are_counted_and_each_node_is_logged(caplog):
    """Split by passes, an objective evaluation costs at most two passes (X @ V, then X.T @ G; restarts share
    them); gathered to a worker, a node costs one pass and no evaluation passes. Each split computed is one log
    line on the lowdens_dask loggers."""
    X = bimodal(n=2000, d=4, seed=5)
    dX = da.from_array(X, chunks=(400, 4))
    with caplog.at_level("INFO", logger="lowdens_dask"):
        passes = MDHClustering(n_clusters=3, mode="exact", max_node_bytes=0).fit(dX)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("lowdens_dask")]
    assert len(lines) >= 2 and all("rows" in line and "passes over the rows" in line for line in lines)
    assert all("by passes over chunks" in line for line in lines)
    assert 0 < passes.n_evaluation_passes_ <= 2 * passes.n_evaluations_
    assert passes.n_passes_ > passes.n_evaluation_passes_
    caplog.clear()
    with caplog.at_level("INFO", logger="lowdens_dask"):
        gathered = MDHClustering(n_clusters=3, mode="exact").fit(dX)
    assert all("on a worker" in r.getMessage() for r in caplog.records if r.name.startswith("lowdens_dask"))
    assert gathered.n_evaluation_passes_ == 0 and 0 < gathered.n_passes_ < 20
    np.testing.assert_array_equal(gathered.labels_.compute(), passes.labels_.compute())
    assert MDHClustering(n_clusters=3).fit(X).n_passes_ == 0


def test_progress_bar_draws_on_one_line():
    import io

    from lowdens_dask.estimators.progress import ProgressBar

    out = io.StringIO()
    bar = ProgressBar("MDHClustering", 4, lambda: 7, stream=out)
    bar(3)
    bar.close()
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n")
    assert "3/4 clusters" in text and "7 passes" in text and "#" * 22 in text


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name,case", [("IPDDP", 56), ("MCClustering", 113), ("DePDDP", 6)])
def test_irregular_chunks_agree_with_exact_mode(name, case):
    """Issue 34, item 4: groups at least 20 apart in irregular chunks: on 3aa89e4 exact mode found them all and summary
    mode 1 (three of the 46 of 400 cases where the two disagreed: ``benchmarks/mode_agreement.py``)."""
    X, truth, chunks = separated_groups(case)
    for mode in ("exact", "summary"):
        fitted = getattr(ld, name)(n_clusters="auto", mode=mode).fit(da.from_array(X, chunks=(chunks, X.shape[1])))
        assert fitted.n_clusters_ == len(np.unique(truth)), mode
        assert adjusted_rand_score(truth, np.asarray(fitted.labels_)) > 0.99, mode
