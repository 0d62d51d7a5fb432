"""SCPP and LMSC (issue 11): the β schedule's stopping rule, the scale rules, the non-smooth step's direction,
the split rule, and the estimators in memory, in summary mode and in exact mode on chunks (the objective, its
compiled kernels and its gradients: tests/indices/test_spectral_index.py)."""

import math
import time
import warnings

import dask.array as da
import numpy as np
import pytest
from machine import scaled
from scipy.spatial.distance import cdist
from sklearn.metrics import adjusted_rand_score

import lowdens_dask as ld
from lowdens_dask import (
    LMSC,
    METHODS,
    SCPP,
    ClusterTree,
    LMSCClustering,
    SCPPClustering,
)
from lowdens_dask.pursuit.spectral import _min_norm_in_hull, beta_schedule, spectral_scale, spectral_split
from lowdens_dask.tree import HyperplaneRule, NearestCentreRule


def blobs(n_per=150, centres=((0, 0, 0), (7, 0, 0), (0, 7, 0)), seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = np.vstack([np.asarray(c, float) + scale * rng.normal(size=(n_per, len(c))) for c in centres])
    return X, np.repeat(np.arange(len(centres)), n_per)


# ------------------------------------------------------------------------------------------ pursuit


def test_beta_schedules():
    assert beta_schedule("package", "normalized") == (
        3.0,
        2.8,
        2.6,
        2.4,
        2.2,
        2.0,
        1.8,
        1.6,
        1.4,
        1.2,
        1.0,
        0.8,
        0.6,
        0.5,
    )
    assert beta_schedule("package", "standard") == (1.5, 1.3, 1.1, 0.9, 0.7, 0.5)
    assert beta_schedule("paper", "standard") == (3.0, 2.5, 2.0, 1.5, 1.0, 0.5)


def test_scale_rules():
    evals = np.array([9.0, 4.0, 2.0, 0.5])
    assert spectral_scale(evals, 1000, 2, "paper") == pytest.approx(math.sqrt(18) * 1000**-0.2)
    assert spectral_scale(evals, 1000, 2, "package") == pytest.approx(math.sqrt(5.0) * (4 / 3000) ** (1 / 7))


def outlier_data():
    """Two balanced groups and a small far group: the loose constraint (large β) isolates the small group."""
    rng = np.random.default_rng(3)
    X = np.vstack(
        [
            rng.normal(size=(200, 2)) + [0, 0],
            rng.normal(size=(200, 2)) + [6, 0],
            rng.normal(size=(12, 2)) * 0.3 + [3, 12],
        ]
    )
    return X


@pytest.mark.slow
def test_beta_schedule_stops_at_the_first_balanced_split():
    X = outlier_data()
    w = np.ones(len(X))
    loose = spectral_split(X, w, n_components=1, betas=(50.0,), scheme="paper", laplacian="standard")
    assert min(loose.weights) == 12  # the small far group alone
    found = spectral_split(
        X, w, n_components=1, betas=(50.0, 3.0, 2.0, 1.0), scheme="paper", laplacian="standard", min_side=100
    )
    assert found.params["beta"] == 2.0 and found.balanced and min(found.weights) >= 100  # 3.0 still isolates it
    kept = spectral_split(
        X, w, n_components=1, betas=(50.0, 3.0, 2.0, 1.0), scheme="paper", laplacian="standard", min_side=5
    )
    assert kept.params["beta"] == 50.0  # already balanced enough: the first β is kept
    never = spectral_split(X, w, n_components=1, betas=(50.0,), scheme="paper", laplacian="standard", min_side=300)
    assert not never.balanced  # no β gives the balance: the last result is returned, marked unbalanced


def test_min_norm_element_of_the_convex_hull():
    np.testing.assert_allclose(_min_norm_in_hull(np.array([[1.0, 0.0], [0.0, 1.0]])), [0.5, 0.5], atol=1e-6)
    np.testing.assert_allclose(_min_norm_in_hull(np.array([[1.0, 1.0], [1.0, -1.0]])), [1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(_min_norm_in_hull(np.array([[2.0, 0.0], [3.0, 1.0]])), [2.0, 0.0], atol=1e-6)


# ------------------------------------------------------------------------------------------ split rule


def test_nearest_centre_rule_routes_and_round_trips():
    rng = np.random.default_rng(0)
    V = np.linalg.qr(rng.normal(size=(4, 2)))[0]
    centres = rng.normal(size=(7, 2))
    sides = np.array([0, 1, 1, 0, 1, 0, 0], dtype=bool)
    rule = NearestCentreRule(V, centres, sides)
    X = rng.normal(size=(500, 4))
    expected = sides[np.argmin(cdist(X @ V, centres), axis=1)]
    np.testing.assert_array_equal(rule.side(X), expected)
    tree = ClusterTree(4, "scpp")
    tree.add_rule_split(0, "scpp", rule, (float((~expected).sum()), float(expected.sum())), {"sigma": 1.0}, {})
    again = ClusterTree.from_json(tree.to_json())
    assert again.root.rule == rule
    np.testing.assert_array_equal(again.predict(X), expected.astype(int))


# ------------------------------------------------------------------------------------------ estimators


@pytest.fixture(scope="module")
def three():
    return blobs()


def test_scpp_clustering_finds_separated_groups(three):
    X, y = three
    model = SCPPClustering(3).fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    internal = [node for node in model.tree_ if not node.is_leaf]
    assert len(internal) == 2 and all(isinstance(node.rule, NearestCentreRule) for node in internal)
    assert all(node.method == "scpp" and node.params["n_components"] == 2 for node in internal)
    again = ClusterTree.from_json(model.tree_.to_json())
    np.testing.assert_array_equal(again.predict(X + 0.01), model.predict(X + 0.01))
    assert model.tree_.to_linkage().shape == (2, 4)
    assert model.n_evaluations_ > 0


def test_standardized_fit_routes_in_the_original_coordinates(three):
    X, y = three
    X = X * [1.0, 100.0, 0.01] + [5.0, -300.0, 2.0]
    model = SCPPClustering(3, standardize=True, laplacian="standard", n_components=1).fit(X)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    np.testing.assert_array_equal(model.tree_.predict(X), model.labels_)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["package", "paper"])
def test_one_split_estimators(three, scheme):
    X, y = three
    for estimator in (SCPP(scheme=scheme), LMSC(scheme=scheme), SCPP(n_components=3, omega=-1.0, scheme=scheme)):
        model = estimator.fit(X)
        assert model.n_clusters_ == 2 and set(np.unique(model.labels_)) == {0, 1}
        assert model.projection_.shape[0] == 3 and math.isfinite(model.eigenvalue_)
        # each true group lies on one side
        assert all(len(np.unique(model.labels_[y == g])) == 1 for g in range(3))


def test_lmsc_hyperplane_lies_in_the_widest_gap():
    """Two groups with a wide margin: LMSC's 1-D split is a hyperplane in the middle of the gap (§9)."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.uniform(-1, 1, size=(150, 2)) + [-3, 0], rng.uniform(-1, 1, size=(150, 2)) + [3, 0]])
    model = LMSC(n_components=1).fit(X)
    rule = model.tree_.root.rule
    assert isinstance(rule, HyperplaneRule)
    assert abs(rule.v[0]) > 0.99
    p = X @ rule.v
    low, high = p[model.labels_ == 0], p[model.labels_ == 1]
    gap = high.min() - low.max()
    assert gap > 3.5 and abs(rule.b - (high.min() + low.max()) / 2) < 1e-9
    assert model.tree_.root.params["large_margin"] is True


def test_summary_mode_on_a_dask_array():
    X, y = blobs(n_per=2000, seed=2)
    arr = da.from_array(X, chunks=(1500, 3))
    model = SCPPClustering(3, random_state=0, mode="summary").fit(arr)
    assert model.n_microclusters_ < len(X) / 10
    labels = model.labels_.compute()
    assert adjusted_rand_score(y, labels) > 0.99
    np.testing.assert_array_equal(model.predict(X), labels)


def test_registry_and_public_names():
    assert METHODS["scpp"].clustering is SCPPClustering and METHODS["scpp"].hyperplane is SCPP
    assert METHODS["lmsc"].clustering is LMSCClustering and METHODS["lmsc"].hyperplane is LMSC
    assert LMSCClustering()._method == "lmsc" and "laplacian" not in LMSCClustering().get_params()


@pytest.mark.parametrize(
    "params, message",
    [
        ({"laplacian": "rw"}, "laplacian must be 'standard' or 'normalized'"),
        ({"scheme": "R"}, "scheme must be 'package' or 'paper'"),
        ({"n_components": 0}, "n_components"),
        ({"betas": []}, "betas must be"),
        ({"scale_multiplier": 0}, "scale_multiplier"),
        ({"centre_init": "random"}, "centre_init"),
        ({"similarity": "cosine"}, "similarity"),
    ],
)
def test_bad_parameters_are_named(params, message, three):
    with pytest.raises(ValueError, match=message):
        SCPPClustering(2, **params).fit(three[0])


def test_too_few_distinct_rows_warn():
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0]]), 5, axis=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SCPPClustering(4).fit(X)
    assert model.n_clusters_ < 4 and any("could be formed" in str(w.message) for w in caught)
    np.testing.assert_array_equal(model.predict(X), model.labels_)


def test_exact_mode_on_chunks_builds_each_nodes_microclusters():
    """mode='exact' on a Dask array: every split is found on microclusters of its node's own rows (a pass per
    node), and the labels are the tree's routing of every row."""
    X, y = blobs(n_per=600, seed=3)
    arr = da.from_array(X, chunks=(500, 3))
    model = SCPPClustering(3, mode="exact", random_state=0, standardize=True).fit(arr)
    labels = model.labels_.compute()
    assert adjusted_rand_score(y, labels) > 0.99
    np.testing.assert_array_equal(model.predict(X), labels)
    leaves = model.tree_.apply(X)
    counted = sorted(node.size for node in model.tree_ if node.is_leaf)  # by passes over the rows
    assert counted == sorted(np.unique(leaves, return_counts=True)[1])
    # each split's points are the chunk-local microclusters of its own rows: ceil(rows / 20) per chunk
    for node in model.tree_:
        if node.is_leaf:
            continue
        inside = np.isin(leaves, [n.id for n in model.tree_ if n.is_leaf and _descends(model.tree_, n, node)])
        per_chunk = [int(np.ceil(inside[i : i + 500].sum() / 20)) for i in range(0, len(X), 500)]
        assert node.params["n_microclusters"] == sum(per_chunk)


def _descends(tree, node, ancestor) -> bool:
    while node.parent is not None:
        node = tree.nodes[node.parent]
        if node.id == ancestor.id:
            return True
    return False


def test_spectral_splits_are_plotted(three):
    from lowdens_dask import plot_node, plot_tree

    X, y = three
    model = SCPPClustering(3).fit(X)
    for fig in (plot_tree(model.tree_, X, labels=y), plot_node(model.tree_, 0, X)):
        gids = {artist.get_gid() for ax in fig.axes for artist in ax.collections}
        assert {"centres-0", "centres-1"} <= gids


def test_fval_split_index_separates_small_clusters_first():
    """Two large clusters and two small ones on a line: splitting the largest leaf first cuts a large cluster
    before it separates the small pair; splitting the least connected leaf (lowest λ₂) finds all four."""
    rng = np.random.default_rng(6)
    sizes = (900, 900, 40, 40)
    centres = ((0, 0), (10, 0), (30, 0), (36, 0))
    X = np.vstack(
        [np.asarray(c) + rng.normal(size=(m, 2)) * [1.0 if m > 100 else 0.5, 1.0] for c, m in zip(centres, sizes)]
    )
    y = np.repeat(np.arange(4), sizes)
    by_fval = SCPPClustering(4, leaf_order="fval", min_side=0).fit(X)
    assert adjusted_rand_score(y, by_fval.labels_) == 1.0
    by_size = SCPPClustering(4, leaf_order="size-only", min_side=0).fit(X)
    assert 80 in [node.size for node in by_size.tree_.leaves()]  # the small pair left together
    with pytest.raises(ValueError, match="leaf_order must be"):
        SCPPClustering(2, leaf_order="rdepth").fit(X)


def test_the_old_names_of_the_centre_parameters_work_for_one_release():
    """n_microclusters, microclusters_above and microcluster_init were renamed n_centres, centres_above and
    centre_init (the per-node centres are not the summary's microclusters): the old names give the same fit, with a
    FutureWarning that names the new one."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(150, 2)), rng.normal(size=(150, 2)) + [8.0, 0.0], rng.normal(size=(150, 2)) + [0, 8]])
    new = SCPPClustering(n_clusters=3, n_centres=40, centres_above=100, centre_init="k-means++", random_state=0).fit(X)
    with pytest.warns(FutureWarning, match="n_microclusters was renamed n_centres"):
        old = SCPPClustering(
            n_clusters=3, n_microclusters=40, microclusters_above=100, microcluster_init="k-means++", random_state=0
        ).fit(X)
    np.testing.assert_array_equal(old.labels_, new.labels_)
    assert "n_centres" in SCPPClustering().get_params() and "n_microclusters" in SCPPClustering().get_params()


def test_auto_in_exact_mode_tests_each_split_on_a_sample_of_the_rows():
    """Five unit-variance 2-D clusters, 1,500 rows in 500-row chunks: each node's split is tested on its rows'
    sample against SCPP's pursued null (the held-out test of 38 microclusters found one cluster)."""
    rng = np.random.default_rng(0)
    centres = np.array([(0, 0), (15, 0), (0, 15), (15, 15), (30, 30)], dtype=float)
    y = np.repeat(np.arange(5), 300)
    X = centres[y] + rng.standard_normal((1500, 2))
    model = SCPPClustering(n_clusters="auto", mode="exact").fit(da.from_array(X, chunks=(500, 2)))
    assert model.n_clusters_ == 5
    assert adjusted_rand_score(y, np.asarray(model.labels_)) > 0.99
    assert model.tree_.root.stats["n_test"] == 1500


def test_the_solutions_connectivity_is_reused_unchanged():
    """The connectivity at the minimiser's solution, kept from its last evaluation (issue 44), is the one computed
    afresh at the returned projection, number for number; the objective counts every evaluation asked for."""
    from lowdens_dask.indices.spectral import spectral_connectivity
    from lowdens_dask.pursuit.spectral import _minimise_connectivity, _Objective

    X, _ = blobs(n_per=40)
    X = X - X.mean(axis=0)
    n = np.ones(len(X))
    settings = {"sigma": 1.5, "laplacian": "normalized", "similarity": "gaussian", "beta": 2.0, "delta": 0.01,
                "omega": 0.5, "covariance": np.cov(X.T)}
    V0 = np.linalg.qr(np.random.default_rng(0).normal(size=(3, 2)))[0]
    V, used, conn = _minimise_connectivity(X, n, V0, settings, min_side=0.0, maxiter=50,
                                           rng=np.random.default_rng(1))
    assert conn is not None and used > 1
    fresh = spectral_connectivity(V, X, n, gradient=False, **settings)
    assert conn.value == fresh.value and conn.eigenvalue == fresh.eigenvalue
    np.testing.assert_array_equal(conn.eigenvectors, fresh.eigenvectors)
    np.testing.assert_array_equal(conn.degree, fresh.degree)
    objective = _Objective(X, n, 2, settings, 0.0)
    w = V0.ravel().copy()
    first = objective.connectivity(w)[2]
    assert objective.connectivity(w.copy(), gradient=False)[2] is first and objective.n_evaluations == 2
    assert objective.connectivity(w + 1e-3)[2] is not first


@pytest.mark.filterwarnings("ignore")
@pytest.mark.slow
def test_scpp_auto_in_exact_mode_tests_rows():
    """Issue 34, item 5: SCPP auto in exact mode tested each split on ~38 microclusters: 5 clusters at least 11 sd apart
    gave 2, against 5 in memory."""
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 5, 3000)
    X = np.array([[0, 0], [12, 0], [0, 12], [12, 12], [24, 24.0]])[truth] + rng.standard_normal((3000, 2))
    memory = ld.SCPPClustering(n_clusters="auto").fit(X)
    exact = ld.SCPPClustering(n_clusters="auto", mode="exact").fit(da.from_array(X, chunks=(500, 2)))
    assert memory.n_clusters_ == exact.n_clusters_ == 5
    assert adjusted_rand_score(truth, np.asarray(exact.labels_)) > 0.99


def two_groups(n=150, d=13, gap=4.0, seed=0):
    """Two Gaussian groups ``gap`` apart along every axis."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(size=(n // 2, d)), rng.normal(size=(n - n // 2, d)) + gap])


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_scpp_tiny_scale_finishes():
    """Issue 22, point 5: σ at 1e-6 of the scheme's: every similarity between distinct points underflows, so λ₂ = λ₃ = 0 for every
    projection and is never simple. The non-smooth step chased rounding noise (5,535 evaluations for one split,
    361 s for SCPPClustering(n_clusters=8)); it now stops where λ₂ is zero."""
    X = two_groups()
    model = SCPP(n_components=3, scheme="paper", omega=-1.0, scale_multiplier=1e-6, centre_init="k-means++")
    model.set_params(min_side=75.0, maxiter=1, random_state=0)
    start = time.perf_counter()
    model.fit(X, sample_weight=np.full(150, 2.0))
    assert time.perf_counter() - start < scaled(20)
    assert model.n_evaluations_ < 500  # 6 β values, each a one-iteration BFGS and at most one non-smooth step
    assert set(np.unique(model.labels_)) <= {0, 1}
