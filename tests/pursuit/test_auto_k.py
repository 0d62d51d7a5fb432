"""n_clusters="auto" (issue 23): Hartigan's dip against a direct linear-programming reference, its p-value's
calibration, the held-out split test of every divisive method (null calibration and power at a size that runs in
seconds, in memory, in summary mode and in exact mode), the records it leaves, the CLI default and bad values."""

import json

import dask.array as da
import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.metrics import adjusted_rand_score

import lowdens_dask as ld
from lowdens_dask import ClusterTree
from lowdens_dask.backend import InMemoryData
from lowdens_dask.kernels.dip import dip_pvalue, dip_statistic, spread_ties
from lowdens_dask.pursuit.significance import (
    POINTS_PER_MICROCLUSTER,
    SUMMARY_TEST_ROWS,
    held_out_sample,
    held_out_test,
    unimodality_test,
)

#: The divisive estimators on the one tree grower (fast enough to fit many times in a test).
GROWER = ["MDHClustering", "NCutClustering", "MCClustering", "PDDP", "DePDDP", "IPDDP"]


def dip_by_linear_programming(x: np.ndarray) -> float:
    """The dip by its definition: min over continuous unimodal G of sup |F_n - G|. G is linear between the
    sorted points (WLOG: the chords of a convex-then-concave G are so, and stay in the band), so for each segment
    p holding the mode it is an LP in G(x_1..x_n) and t with unimodal slopes peaking at p."""
    x = np.sort(x)
    n = len(x)
    eye = np.eye(n + 1)
    best = np.inf
    for p in range(n - 1):
        A, b = [], []
        for k in range(n):  # |G(x_k) - F_n(x_k)| <= t and |G(x_k) - F_n(x_k-)| <= t
            for level in (k / n, (k + 1) / n):
                A += [eye[k] - eye[n], -eye[k] - eye[n]]
                b += [level, -level]
        slopes = [(eye[k + 1] - eye[k]) / (x[k + 1] - x[k]) for k in range(n - 1)]
        A += [-s for s in slopes]  # non-decreasing
        b += [0.0] * (n - 1)
        A += [slopes[k] - slopes[k + 1] for k in range(p)]  # slopes rise up to the mode's segment ...
        A += [slopes[k + 1] - slopes[k] for k in range(p, n - 2)]  # ... and fall after it
        b += [0.0] * (n - 2)
        res = linprog(eye[n], A_ub=np.array(A), b_ub=np.array(b), bounds=[(0, 1)] * n + [(0, None)], method="highs")
        if res.status == 0:
            best = min(best, res.fun)
    return best


def test_dip_kernel_matches_the_linear_program():
    rng = np.random.default_rng(0)
    for trial in range(30):
        n = int(rng.integers(3, 11))
        x = rng.normal(size=n)
        if trial % 2:
            x = np.concatenate([x, rng.normal(rng.uniform(2, 6), 1.0, size=int(rng.integers(1, n)))])
        assert dip_statistic(np.sort(x)) == pytest.approx(dip_by_linear_programming(x), abs=1e-9)


def test_dip_of_an_even_grid_is_its_floor_and_is_affine_invariant():
    x = np.arange(50.0)
    assert dip_statistic(x) == pytest.approx(1 / 100)
    y = np.sort(np.random.default_rng(1).normal(size=300))
    assert dip_statistic(3.0 * y - 7.0) == pytest.approx(dip_statistic(y))


def test_dip_pvalue_is_calibrated_on_fresh_uniform_samples():
    """The shipped table against uniform samples it was not made from: P(p < level) is about the level."""
    rng = np.random.default_rng(12345)
    for n in (60, 400):
        p = np.array([dip_pvalue(dip_statistic(np.sort(rng.random(n))), n) for _ in range(1500)])
        for level in (0.05, 0.2):
            assert abs(np.mean(p < level) - level) < 0.03, (n, level)
    bimodal = np.sort(np.concatenate([rng.normal(0, 1, 300), rng.normal(5, 1, 300)]))
    assert dip_pvalue(dip_statistic(bimodal), 600) < 1e-3


def test_spread_ties_keeps_order_and_half_gaps():
    p = np.array([3.0, 1.0, 1.0, 1.0, 2.0, 2.0, 5.0])
    out = spread_ties(p)
    assert np.all(np.diff(out) > 0)
    assert np.all((out[:3] >= 0.5) & (out[:3] <= 1.5)) and np.all((out[3:5] >= 1.5) & (out[3:5] <= 2.5))
    assert out[5] == 3.0 and out[6] == 5.0
    distinct = np.array([0.3, 0.1, 0.2])
    assert np.array_equal(spread_ties(distinct), np.sort(distinct))


def test_spread_ties_within_a_width_keeps_point_masses():
    p = np.repeat([0.0, 100.0], 250)
    out = spread_ties(p, 1e-7)
    assert np.all(np.diff(out) > 0)
    assert np.ptp(out[:250]) <= 1e-7 and np.ptp(out[250:]) <= 1e-7
    big = spread_ties(np.repeat([1e9, 1e9 + 100.0], 250), 0.0)  # never narrower than distinct floats need
    assert np.all(np.diff(big) > 0) and np.ptp(big[:250]) < 1.0


def test_tied_rows_are_tested_as_point_masses():
    """Rows repeated exactly are tested as the point masses they are: the dip equals that of the same values
    jittered by 1e-7 (the kernel alone is wrong on ties, so the limit is the reference)."""
    rng = np.random.default_rng(3)
    for _ in range(100):
        values = rng.normal(size=int(rng.integers(2, 8))) * 5
        x = np.repeat(values, rng.integers(1, 6, size=values.size))
        if rng.random() < 0.5:
            x = np.concatenate([x, rng.normal(size=int(rng.integers(1, 30)))])
        x = np.sort(x)
        if x.size >= 4:
            assert unimodality_test(x)["dip"] == pytest.approx(dip_statistic(x + np.arange(x.size) * 1e-7), abs=1e-5)
    assert unimodality_test(np.repeat([0.0, 100.0], 250))["p_value"] < 1e-3


@pytest.mark.parametrize("name", GROWER + ["SCPPClustering", "LMSCClustering"])
def test_far_apart_point_masses_are_two_clusters(name):
    """Issue 34, item 1: two point masses 100 apart were one cluster under auto (ties spread over their
    half-gaps made one flat block), and a 1e-9 jitter made them two."""
    X = np.repeat([[0.0, 0, 0], [100.0, 0, 0]], 250, 0)
    labels = getattr(ld, name)(n_clusters="auto").fit(X).labels_
    assert adjusted_rand_score(np.repeat([0, 1], 250), labels) == 1.0


def test_summary_test_sample_stands_for_the_rows():
    """A summary is tested as POINTS_PER_MICROCLUSTER points per microcluster on average (at most its rows, and
    SUMMARY_TEST_ROWS), placed in proportion to the weights, each by its own microcluster."""
    rng = np.random.default_rng(2)
    means = np.column_stack([10.0 * np.arange(400), rng.normal(size=(400, 2))])  # far apart along v
    weights = np.where(np.arange(400) % 2 == 0, 10.0, 30.0)
    v = np.array([1.0, 0.0, 0.0])
    sample = held_out_sample(InMemoryData(means, weights, np.full(400, 0.01)), v)
    assert sample.size == POINTS_PER_MICROCLUSTER * 400 and np.all(np.diff(sample) >= 0)
    owner = np.rint(sample / 10.0).astype(int)
    assert np.all(np.abs(sample - 10.0 * owner) < 0.5)  # each point by its own microcluster
    counts = np.bincount(owner, minlength=400)
    assert set(counts[::2]) <= {3, 4, 5} and set(counts[1::2]) <= {11, 12, 13}  # their shares: 4 and 12 points
    assert held_out_sample(InMemoryData(means, np.full(400, 2.0), np.ones(400)), v).size == 800  # at most the rows
    # its p-value is read at the number of microclusters, the summary's resolution
    assert held_out_test(InMemoryData(means, weights, np.full(400, 0.01)), v)["n_test"] == 400
    many = SUMMARY_TEST_ROWS // POINTS_PER_MICROCLUSTER + 1  # 8 points each would pass the cap: one each
    big = held_out_sample(InMemoryData(rng.normal(size=(many, 2)), np.full(many, 30.0), np.ones(many)), v[:2])
    assert big.size == many
    rows = InMemoryData(means)  # rows of unit weight: their projections as they are
    assert np.array_equal(held_out_sample(rows, v), np.sort(means[:, 0]))


# ---------------------------------------------------------------------------------------------------- estimators
def _mixture(k: int, per: int = 150, d: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = 12.0 * np.eye(max(k, d))[:k, :d] if k <= d else rng.normal(scale=8.0, size=(k, d))
    y = np.repeat(np.arange(k), per)
    return centres[y] + rng.normal(size=(y.size, d)), y


@pytest.mark.parametrize("name", GROWER)
def test_null_draws_are_one_cluster_and_separated_groups_are_found(name):
    cls = getattr(ld, name)
    rng = np.random.default_rng(7)
    nulls = [rng.normal(size=(400, 5)) for _ in range(12)] + [rng.random((400, 2)) for _ in range(6)]
    found = [cls(n_clusters="auto", random_state=i).fit(X).n_clusters_ for i, X in enumerate(nulls)]
    assert sum(k == 1 for k in found) >= 17, found  # at level 0.01, 18 draws: one false split at most
    X, y = _mixture(4)
    model = cls(n_clusters="auto", random_state=0).fit(X)
    least = 0.9 if name == "PDDP" else 0.99  # PDDP cuts at the mean, not in the gap
    assert model.n_clusters_ == 4 and adjusted_rand_score(y, model.labels_) > least


@pytest.mark.parametrize("name", ["SCPPClustering", "MSCClustering"])
def test_auto_beyond_the_grower(name):
    cls = getattr(ld, name)
    X, y = _mixture(3, per=80)
    model = cls(n_clusters="auto", random_state=0).fit(X)
    assert model.n_clusters_ == 3 and adjusted_rand_score(y, model.labels_) > 0.99
    assert cls(n_clusters="auto", random_state=0).fit(np.random.default_rng(3).normal(size=(240, 5))).n_clusters_ == 1


def test_svm_relabel_auto():
    X, y = _mixture(2, per=40, d=3)
    model = ld.SVMRelabelClustering(
        n_clusters="auto", random_state=0, annealing=False, n_restarts=2, n_null=200
    ).fit(X)
    assert model.n_clusters_ == 2 and adjusted_rand_score(y, model.labels_) > 0.99
    assert model.tree_.root.stats["p_value"] < 0.01 and "sse_null_p_value" in model.tree_.root.stats


def test_each_node_records_its_test_in_stats_json_describe_and_metrics():
    from lowdens_pipelines.metrics import tree_metrics

    X, _ = _mixture(3)
    tree = ld.MDHClustering(n_clusters="auto", random_state=0).fit(X).tree_
    internal = [node for node in tree if not node.is_leaf]
    assert len(internal) == 2 and all(node.stats["p_value"] < 0.01 and node.stats["dip"] > 0 for node in internal)
    assert all(node.stats["p_value"] >= 0.01 and node.stats["n_test"] > 0 for node in tree.leaves())
    restored = ClusterTree.from_json(tree.to_json())
    assert restored.describe() == tree.describe() and "its best split, not made" in tree.describe()
    metrics = json.loads(json.dumps(tree_metrics(tree)))
    assert metrics["n_leaves"] == 3 and all(split["p_value"] < 0.01 for split in metrics["splits"])
    assert len(metrics["leaf_tests"]) == 3 and all(leaf["p_value"] >= 0.01 for leaf in metrics["leaf_tests"])


def test_max_clusters_caps_auto_and_none():
    X, _ = _mixture(4)
    assert ld.MDHClustering(n_clusters="auto", max_clusters=2).fit(X).n_clusters_ == 2
    assert ld.NCutClustering(n_clusters=None, max_clusters=3).fit(X).n_clusters_ == 3


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["summary", "exact"])
def test_auto_on_chunked_input(mode):
    X, y = _mixture(3, per=1_500)
    model = ld.MDHClustering(n_clusters="auto", mode=mode, random_state=0, max_node_bytes=0).fit(
        da.from_array(X, chunks=1_500)
    )
    assert model.n_clusters_ == 3 and adjusted_rand_score(y, model.labels_.compute()) > 0.99
    null = da.from_array(np.random.default_rng(4).normal(size=(4_500, 5)), chunks=1_500)
    assert ld.NCutClustering(n_clusters="auto", mode=mode, random_state=0, max_node_bytes=0).fit(null).n_clusters_ == 1


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n_clusters": "automatic"}, "n_clusters must be a positive integer(, 'auto' or None| or 'auto'); got 'automatic'"),
        ({"n_clusters": "auto", "max_clusters": 0}, "max_clusters must be a positive integer"),
        ({"n_clusters": "auto", "significance_level": 0.0}, "significance_level"),
        ({"n_clusters": "auto", "significance_level": 1.0}, "significance_level"),
        ({"n_clusters": "auto", "significance_level": "0.05"}, "significance_level"),
        ({"n_clusters": "auto", "significance_level": True}, "significance_level"),
    ],
)
@pytest.mark.parametrize("name", ["MDHClustering", "SCPPClustering", "MSCClustering", "SVMRelabelClustering"])
def test_bad_values_of_the_new_parameters(name, params, message):
    with pytest.raises(ValueError, match=message):
        getattr(ld, name)(**params).fit(np.random.default_rng(0).normal(size=(50, 3)))


def test_msc_auto_on_chunks_without_summary_mode_is_refused():
    with pytest.raises(ValueError, match="n_clusters='auto' needs the rows in memory, or mode='summary'"):
        ld.MSCClustering(n_clusters="auto").fit(da.from_array(np.random.default_rng(0).normal(size=(600, 3)), 300))


def test_leading_eigenvectors_when_arpack_cannot_start():
    """Rows that do not vary along the ones vector (ARPACK's start): the dense solver takes over (mfdigits)."""
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(300, 200))
    Z -= Z.mean(axis=1, keepdims=True)
    vals, vecs = InMemoryData(Z).leading_eigenvectors(2)
    dense = np.linalg.eigvalsh(np.cov(Z.T))[::-1][:2]
    assert vals == pytest.approx(dense)


def test_cli_default_is_auto(tmp_path, monkeypatch, capsys):
    from lowdens_pipelines import RunsStore
    from lowdens_pipelines.cli import main

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    X, _ = _mixture(3, per=60)
    np.save("X.npy", X)
    assert main(["fit", "X.npy", "--run-id", "a", "--store", "runs"]) == 0
    assert main(["fit", "X.npy", "--n-clusters", "auto", "--run-id", "b", "--store", "runs"]) == 0
    for run in ("a", "b"):
        attrs = RunsStore("runs").get(run).attrs
        assert attrs["params"]["n_clusters"] == "auto" and attrs["metrics"]["n_leaves"] == 3
        assert all(split["p_value"] < 0.01 for split in attrs["metrics"]["splits"])
    with pytest.raises(SystemExit):
        main(["fit", "X.npy", "--n-clusters", "many"])
    assert "--n-clusters: must be 'auto' or a positive integer; got 'many'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------------
# Issue 42, item 2: a repeated row is a frequency weight.


def test_merge_duplicates_sums_weights_in_first_occurrence_order():
    """The test's rows (:func:`~lowdens_dask.pursuit.significance.merged`) with repeats merged into weights."""
    from lowdens_dask.backend.memory import merge_duplicates

    X = np.array([[2.0, 1.0], [0.0, 0.0], [2.0, 1.0], [5.0, 5.0], [0.0, 0.0], [2.0, 1.0]])
    rows, weights = merge_duplicates(X, np.array([1.0, 2.0, 1.0, 0.5, 1.0, 3.0]))
    np.testing.assert_array_equal(rows, [[2.0, 1.0], [0.0, 0.0], [5.0, 5.0]])
    np.testing.assert_array_equal(weights, [5.0, 3.0, 0.5])
    distinct = np.random.default_rng(0).normal(size=(50, 3))
    w = np.ones(50)
    assert merge_duplicates(distinct, w)[0] is distinct  # no repeats: the rows themselves
    collide = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # equal projections on some direction are checked
    assert merge_duplicates(collide, np.ones(3))[0].shape == (2, 2)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["MDHClustering", "NCutClustering", "MCClustering", "SCPPClustering"])
@pytest.mark.parametrize("r", [2, 5])
def test_repeated_rows_are_weights(name, r):
    """One Gaussian of 300 rows, every row written r times, was 93 clusters (MDH) and 193 (NCut) under auto: now
    tested as the distinct rows with sample_weight=r, one cluster; and two Gaussians repeated give the partition of
    the weighted rows."""
    X = np.random.default_rng(0).normal(size=(300, 4))
    repeated = getattr(ld, name)(n_clusters="auto", random_state=0).fit(np.repeat(X, r, axis=0))
    weighted = getattr(ld, name)(n_clusters="auto", random_state=0).fit(X, sample_weight=np.full(300, float(r)))
    assert repeated.n_clusters_ == weighted.n_clusters_ == 1
    assert repeated.labels_.shape == (300 * r,)
    two = np.vstack([X[:150], X[150:] + [8.0, 0, 0, 0]])
    repeated = getattr(ld, name)(n_clusters="auto", random_state=0).fit(np.repeat(two, r, axis=0))
    weighted = getattr(ld, name)(n_clusters="auto", random_state=0).fit(two, sample_weight=np.full(300, float(r)))
    assert repeated.n_clusters_ == weighted.n_clusters_ == 2
    assert adjusted_rand_score(np.repeat(weighted.labels_, r), repeated.labels_) == 1.0


def test_effective_size_of_weighted_rows():
    from lowdens_dask.pursuit.significance import LEAST_TEST_SIZE, effective_size, records

    X = np.zeros((300, 2))
    assert effective_size(InMemoryData(X)) == 300
    assert effective_size(InMemoryData(X, np.full(300, 5.0))) == pytest.approx(300)
    assert effective_size(InMemoryData(X[:2], np.array([250.0, 250.0]))) == LEAST_TEST_SIZE
    assert effective_size(InMemoryData(X[:2], np.array([1.0, 2.0]))) == 3.0
    assert effective_size(InMemoryData(X[:3], np.array([1000.0, 1.0, 0.0]))) == LEAST_TEST_SIZE
    assert effective_size(InMemoryData(X, np.r_[1000.0, np.ones(299)])) == 300  # a heavy row counts once
    heavy = InMemoryData(np.random.default_rng(0).normal(size=(300, 2)), np.r_[1000.0, np.ones(299)])
    assert np.all(records(heavy).weights == 1.0)  # counts of copies: the test reads the records, each once
    faded = InMemoryData(heavy.X, np.r_[0.1 * np.ones(150), np.ones(150)])
    np.testing.assert_array_equal(records(faded).weights, faded.weights)  # other weights shape the distribution
    assert effective_size(records(InMemoryData(X))) == LEAST_TEST_SIZE  # one record seen 300 times: a point mass


# ---------------------------------------------------------------------------------------------------------------
# Issue 42, item 4: nulls valid in high dimension.


@pytest.mark.parametrize("name", ["MDHClustering", "NCutClustering", "MCClustering", "DePDDP"])
def test_a_gaussian_with_more_columns_than_rows_is_one_cluster(name):
    """A standard Gaussian of 200 rows in 300 columns (NCut split such a sample into 14-16 clusters): beyond the
    pursued null's table the split is found on half the rows and tested on the other half."""
    X = np.random.default_rng(1).standard_normal((200, 300))
    assert getattr(ld, name)(n_clusters="auto", random_state=0).fit(X).n_clusters_ == 1


def test_a_scale_free_index_reads_the_null_at_the_span_s_dimension():
    """MC's variance ratio ignores the projection's scale, so its pursuit reaches the low-variance directions too:
    an anisotropic Gaussian (participation ratio 5.5 in 60 columns) was split into 30-39 clusters when the null was
    read at 5.5."""
    from lowdens_dask.pursuit.significance import effective_dimension, participation_ratio

    X = np.random.default_rng(0).standard_normal((800, 60)) * np.arange(1, 61) ** -0.7
    assert ld.MCClustering(n_clusters="auto", random_state=0).fit(X).n_clusters_ == 1
    rows = InMemoryData(X)
    assert participation_ratio(rows) < 6 and effective_dimension("mdh", rows, 800) == participation_ratio(rows)
    assert effective_dimension("mc", rows, 800) == pytest.approx(60 * 800 / 860)


def test_the_null_applies_within_the_table_s_reach():
    from lowdens_dask.pursuit.significance import SplitTest, null_applies, table_reach

    assert 55 < table_reach("ncut", 4096) < 64 and table_reach("ncut", 16) < 16
    rng = np.random.default_rng(0)
    assert null_applies("ncut", InMemoryData(rng.standard_normal((1000, 10))), SplitTest(0.01, 0)) is not None
    assert null_applies("ncut", InMemoryData(rng.standard_normal((1000, 200))), SplitTest(0.01, 0)) is None


# ---------------------------------------------------------------------------------------------------------------
# Issue 42, item 3: substance beside significance.


def test_min_cluster_size_keeps_a_small_significant_group_whole():
    """Two tight groups (500 and 40 rows) far apart: significant either way; with min_cluster_size above the small
    group's share (40 / 540 = 7.4%), the split is not made; below it (and at the default), it is; a count works
    like a share."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(500, 2)), rng.normal(size=(40, 2)) * 0.3 + [12.0, 0.0]])
    fit = lambda size: ld.MDHClustering(n_clusters="auto", random_state=0, min_cluster_size=size).fit(X)  # noqa: E731
    assert fit(0.05).n_clusters_ == 2 and fit(0.01).n_clusters_ == 2 and fit(40).n_clusters_ == 2
    assert fit(0.1).n_clusters_ == 1 and fit(41).n_clusters_ == 1
    assert ld.MDHClustering(n_clusters=2, min_cluster_size=0.5).fit(X).n_clusters_ == 2  # told K: no effect
    with pytest.raises(ValueError, match="min_cluster_size"):
        ld.MDHClustering(n_clusters="auto", min_cluster_size=-0.1).fit(X)
