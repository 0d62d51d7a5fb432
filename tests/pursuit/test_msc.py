"""Maximal separation clustering (MSC): the numerics against independent dense formulas, and the estimators
(prediction, the tree, Dask input, the paper's blob-in-ring data, bad input)."""

import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import zarr
from scipy.linalg import null_space
from scipy.spatial.distance import cdist
from sklearn.metrics import adjusted_rand_score
from tolerances import EPS, SAFETY, assert_within

from lowdens_dask import (
    MSC,
    ClusterTree,
    MSCClustering,
)
from lowdens_dask.pursuit.msc import (
    count_positive_eigenvalues,
    disparity_cut,
    distance_features,
    distance_matrix,
    median_sigma2,
    msc_exact,
    msc_landmarks,
    weight_vector,
)


@pytest.fixture(autouse=True)
def local_threads():
    with dask.config.set(scheduler="threads"):
        yield


def gaussian_metric(A, B, sigma2):
    """eq. 2.3 for K = exp(-|x-y|^2 / sigma^2), written directly."""
    return np.sqrt(np.maximum(2.0 - 2.0 * np.exp(-cdist(A, B, "sqeuclidean") / sigma2), 0.0))


def blob_in_ring(n_per_class, rng):
    """The paper's artificial data (§4.1): N(0, I) inside R(θ)·N((3, 3), I), θ ~ U[0, 2π) per row."""
    inner = rng.normal(size=(n_per_class, 2))
    y = rng.normal(size=(n_per_class, 2)) + 3.0
    theta = rng.uniform(0, 2 * np.pi, n_per_class)
    c, s = np.cos(theta), np.sin(theta)
    ring = np.column_stack([c * y[:, 0] + s * y[:, 1], -s * y[:, 0] + c * y[:, 1]])
    return np.vstack([inner, ring]), np.repeat([0, 1], n_per_class)


def two_cluster_error(labels, truth):
    err = np.mean(np.asarray(labels) != truth)
    return min(err, 1 - err)


def small_problem(n=40, d=3, seed=0, sigma2=2.0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X, gaussian_metric(X, X, sigma2), sigma2


def reference_alpha(D, weight):
    """§2.6 from numpy's eigh: α₁ = e/n, α₂ = De/eᵀDe, α₃ the Perron vector."""
    if weight == "alpha1":
        return np.ones(len(D)) / len(D)
    if weight == "alpha2":
        return D.sum(axis=1) / D.sum()
    p = np.abs(np.linalg.eigh(D)[1][:, -1])
    return p / p.sum()


def reference_w(D, alpha):
    """Theorem 2.1 literally: an explicit orthonormal basis U of null(αᵀD), w = U v with v the top eigenvector of
    UᵀD²U."""
    U = null_space((alpha @ D)[None, :])
    V = np.linalg.eigh(U.T @ D @ D @ U)[1]
    return U @ V[:, -1]


def metric_atol(A, B, ref, metric, gamma):
    """Tolerance of m(a, b) computed from |a|^2 + |b|^2 - 2 a.b (distance_features; distance_matrix on centred rows)
    against a direct formula: that expansion rounds to about (d + 2) eps (|a| + |b|)^2 (its terms cancel when the
    rows share an offset), and m = sqrt(m^2) with dm^2/dr^2 at most 2 gamma (Gaussian) or 1 (Euclidean) carries
    it as that over 2 m (tests/tolerances.py)."""
    norms = np.linalg.norm(A, axis=1)[:, None] + np.linalg.norm(B, axis=1)[None, :]
    r2_error = SAFETY * (A.shape[1] + 2) * EPS * norms**2 * (2 * gamma if metric == "gaussian" else 1.0)
    return r2_error / (2 * np.maximum(ref, np.sqrt(r2_error))) + EPS


def same_direction(a, b):
    return abs(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))


# ------------------------------------------------------------------------------------------------ numerics
@pytest.mark.parametrize("metric", ["gaussian", "euclidean"])
def test_distance_features_and_matrix_equal_cdist(metric):
    rng = np.random.default_rng(1)
    X, S = rng.normal(size=(70, 4)) * 3 + 100, rng.normal(size=(9, 4)) * 3 + 100
    sigma2 = 5.0
    ref = gaussian_metric(X, S, sigma2) if metric == "gaussian" else cdist(X, S)
    found = distance_features(X, S, metric=metric, gamma=1 / sigma2, block_rows=16)
    assert_within(found, ref, atol=metric_atol(X, S, ref, metric, 1 / sigma2))
    D = distance_matrix(X, metric=metric, gamma=1 / sigma2, block_rows=16)
    ref = gaussian_metric(X, X, sigma2) if metric == "gaussian" else cdist(X, X)
    Xc = X - X.mean(axis=0)  # distance_matrix centres the rows first
    assert_within(D, ref, atol=metric_atol(Xc, Xc, ref, metric, 1 / sigma2))
    assert np.array_equal(D, D.T) and not np.any(np.diag(D))


def test_weight_vectors_follow_section_2_6():
    _, D, _ = small_problem()
    for weight in ("alpha1", "alpha2", "alpha3"):
        np.testing.assert_allclose(weight_vector(D, weight), reference_alpha(D, weight), rtol=1e-10)
    p = weight_vector(D, "alpha3")
    np.testing.assert_allclose(D @ p, (p @ D @ p) / (p @ p) * p, rtol=1e-8)  # λα₃ = Dα₃ with α₃ > 0


@pytest.mark.parametrize("weight", ["alpha1", "alpha2", "alpha3"])
@pytest.mark.parametrize("dense_max", [500, 0], ids=["dense", "matrix-free"])
def test_closed_form_equals_explicit_null_space_solution(weight, dense_max):
    _, D, _ = small_problem(n=60)
    w_ref = reference_w(D, reference_alpha(D, weight))
    sol = msc_exact(D, weight=weight, dense_max=dense_max)
    assert same_direction(sol.coef, w_ref) == pytest.approx(1.0, abs=1e-8)
    assert np.linalg.norm(sol.coef) == pytest.approx(1.0)
    np.testing.assert_allclose(sol.f, D @ sol.coef, atol=1e-10)  # f at the rows is Dw (eq. 2.2)
    assert reference_alpha(D, weight) @ sol.f == pytest.approx(0.0, abs=1e-8)  # the balance constraint
    assert sol.separation == pytest.approx(w_ref @ D @ D @ w_ref / (w_ref @ w_ref), rel=1e-8)  # the maximum
    assert sol.n_positive == 1
    # no other unit w in the constraint set does better (random feasible directions)
    U = null_space((reference_alpha(D, weight) @ D)[None, :])
    Z = U @ np.random.default_rng(2).normal(size=(U.shape[1], 200))
    Z /= np.linalg.norm(Z, axis=0)
    assert np.max(np.sum((D @ Z) ** 2, axis=0)) <= sol.separation * (1 + 1e-12)


def test_alpha3_is_the_eigenvector_of_the_most_negative_eigenvalue():
    """§2.9: with the Perron weight, w* = u_n (the Gaussian-kernel metric of distinct points is CND)."""
    _, D, _ = small_problem(n=50, seed=3)
    lam, V = np.linalg.eigh(D)
    assert np.sum(lam > 0) == 1
    for dense_max in (500, 0):
        assert same_direction(msc_exact(D, weight="alpha3", dense_max=dense_max).coef, V[:, 0]) == pytest.approx(1.0)


@pytest.mark.parametrize("weight", ["alpha1", "alpha2", "alpha3"])
def test_weights_equal_repeated_rows(weight):
    """Integer weights give the split of the repeated rows, solved by the literal Theorem 2.1 on the repeated D
    (duplicates make it singular; only the null space of the constraint matters)."""
    X, D, sigma2 = small_problem(n=30, seed=4)
    counts = np.random.default_rng(5).integers(1, 4, size=30)
    Xr = np.repeat(X, counts, axis=0)
    Dr = gaussian_metric(Xr, Xr, sigma2)
    alpha = reference_alpha(Dr, weight) if weight != "alpha3" else np.abs(np.linalg.eigh(Dr)[1][:, -1])
    f_ref = Dr @ reference_w(Dr, alpha)
    for dense_max in (500, 0):
        f = np.repeat(msc_exact(D, counts.astype(float), weight, dense_max=dense_max).f, counts)
        assert same_direction(f, f_ref) == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("weight", ["alpha1", "alpha2", "alpha3"])
def test_landmarks_at_every_row_equal_the_exact_solution(weight):
    X, D, sigma2 = small_problem(n=45, seed=6)
    c = np.random.default_rng(7).uniform(0.5, 3.0, size=45)
    exact = msc_exact(D, c, weight)
    lm = msc_landmarks(X, X, c, weight, gamma=1 / sigma2, landmark_weights=c, block_rows=8)
    assert same_direction(lm.coef, exact.coef) == pytest.approx(1.0, abs=1e-8)
    assert same_direction(lm.f, exact.f) == pytest.approx(1.0, abs=1e-8)
    unweighted = msc_landmarks(X, X, None, weight, gamma=1 / sigma2)
    assert same_direction(unweighted.coef, msc_exact(D, None, weight).coef) == pytest.approx(1.0, abs=1e-8)


def test_disparity_cut_equals_the_double_sums_of_eq_3_7():
    _, D, _ = small_problem(n=25, seed=8)
    rng = np.random.default_rng(9)
    side = rng.random(25) < 0.4
    beta = rng.uniform(0.2, 1.0, size=25)
    b = beta / np.linalg.norm(beta)
    A, B = np.flatnonzero(side), np.flatnonzero(~side)

    def cut(P, Q):
        return sum(b[i] * b[j] * D[i, j] for i in P for j in Q)

    size_a, size_b = sum(b[i] ** 2 for i in A), sum(b[i] ** 2 for i in B)
    ref = 2 * cut(A, B) - size_b / size_a * cut(A, A) - size_a / size_b * cut(B, B)
    # three double sums of positive terms that cancel: within the rounding of all their terms
    terms = 2 * cut(A, B) + size_b / size_a * cut(A, A) + size_a / size_b * cut(B, B)
    assert disparity_cut(D, side, beta) == pytest.approx(ref, rel=1e-12, abs=SAFETY * D.size * EPS * terms)
    # a weight of 2 is the row twice (each with its β)
    counts = rng.integers(1, 3, size=25)
    rep = np.repeat(np.arange(25), counts)
    assert disparity_cut(D, side, beta, weights=counts) == pytest.approx(
        disparity_cut(D[np.ix_(rep, rep)], side[rep], beta[rep]), rel=1e-10, abs=SAFETY * rep.size**2 * EPS * terms
    )


def test_alpha3_split_is_the_spectral_disparity_cut():
    """Lemma 3.1: with α = β ∝ the Perron vector, MSC's split is Theorem 3.1's relaxation, z* = U_β v (the
    smallest eigenvector of U_βᵀDU_β)."""
    _, D, _ = small_problem(n=40, seed=10)
    p = reference_alpha(D, "alpha3")
    U = null_space(p[None, :])
    z = U @ np.linalg.eigh(U.T @ D @ U)[1][:, 0]
    side = msc_exact(D, weight="alpha3").f >= 0
    assert np.array_equal(side, z >= 0) or np.array_equal(side, z < 0)


def test_a_distance_matrix_that_is_not_cnd_is_warned_about():
    """seed-msc §2.2: the K₂,₃ graph metric has two positive eigenvalues."""
    K23 = np.array([[0, 2, 1, 1, 1], [2, 0, 1, 1, 1], [1, 1, 0, 2, 2], [1, 1, 2, 0, 2], [1, 1, 2, 2, 0]], float)
    assert count_positive_eigenvalues(K23) == 2
    for dense_max in (500, 0):
        with pytest.warns(UserWarning, match="2 positive eigenvalues"):
            assert msc_exact(K23, dense_max=dense_max).n_positive == 2
    _, D, _ = small_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        msc_exact(D)


def test_median_heuristic_weights_equal_repeated_rows():
    X = np.random.default_rng(11).normal(size=(30, 2))
    counts = np.arange(30) % 3 + 1
    Xr = np.repeat(X, counts, axis=0)
    d2 = cdist(Xr, Xr, "sqeuclidean")[np.triu_indices(len(Xr), 1)]
    d2 = np.sort(d2[d2 > 0])
    assert median_sigma2(X, counts.astype(float)) == d2[np.searchsorted(np.arange(1, d2.size + 1), 0.5 * d2.size)]


# ---------------------------------------------------------------------------------------------- estimators
def test_prediction_is_the_distance_expansion_and_equals_the_labels():
    rng = np.random.default_rng(12)
    X, _ = blob_in_ring(60, rng)
    model = MSC(sigma2=7.0).fit(X)
    new = rng.normal(size=(50, 2)) * 3
    f = gaussian_metric(new, model.support_, 7.0) @ model.coef_  # eq. 2.1 written directly
    np.testing.assert_allclose(model.decision_function(new), f, atol=1e-10)
    np.testing.assert_array_equal(model.predict(new), (f >= 0).astype(int))
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    np.testing.assert_array_equal(model.labels_, model.decision_function(X) >= 0)
    assert model.solver_ == "exact" and model.support_.shape == X.shape
    assert model.labels_.sum() <= len(X) / 2  # label 1 is the lighter side (§2.8)
    D = gaussian_metric(X, X, 7.0)
    assert model.disparity_cut_ == pytest.approx(disparity_cut(D, model.labels_ == 1), rel=1e-8)
    S = model.support_  # the distinct rows, sorted: the estimator's split is the numerics' (up to the sign)
    assert same_direction(model.coef_, msc_exact(gaussian_metric(S, S, 7.0)).coef) == pytest.approx(1.0, abs=1e-8)


def test_blob_in_ring_default_errs_on_at_most_ten_percent():
    """The acceptance criterion: MSCClustering(n_clusters=2) with its defaults on the paper's §4.1 data."""
    rng = np.random.default_rng(0)
    errors = []
    for _ in range(5):
        X, y = blob_in_ring(100, rng)
        errors.append(two_cluster_error(MSCClustering(n_clusters=2).fit(X).labels_, y))
    assert np.mean(errors) <= 0.10, errors


def test_tree_round_trips_through_json_and_routes_dask_chunks(tmp_path):
    rng = np.random.default_rng(13)
    X = np.vstack([rng.normal(size=(120, 3)) + centre for centre in ([0, 0, 0], [10, 0, 0], [5, 9, 0])])
    model = MSCClustering(n_clusters=3, random_state=0).fit(X)
    assert model.n_clusters_ == 3 and len(np.unique(model.labels_)) == 3
    assert all(
        node.method == "msc" and node.rule.kind == "kernel-expansion" for node in model.tree_ if not node.is_leaf
    )
    tree = ClusterTree.from_json(model.tree_.to_json())
    np.testing.assert_array_equal(tree.predict(X), model.labels_)
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    lazy = model.predict(da.from_array(X, chunks=(50, 3)))
    np.testing.assert_array_equal(lazy.compute(), model.labels_)

    # Dask and zarr input: the landmark solver over the chunks (every row of a node is a landmark here, which is
    # the exact solution)
    chunked = MSCClustering(n_clusters=3, random_state=0).fit(da.from_array(X, chunks=(100, 3)))
    labels = chunked.labels_.compute()
    np.testing.assert_array_equal(chunked.tree_.predict(X), labels)
    assert all(node.params["solver"] == "landmarks" for node in chunked.tree_ if not node.is_leaf)
    assert sorted(leaf.size for leaf in chunked.tree_.leaves()) == sorted(np.bincount(labels))
    assert chunked.n_passes_ == 1 + 2 * 2 + 1
    path = str(tmp_path / "x.zarr")
    zarr.create_array(path, data=X.astype(np.float32), chunks=(90, 3))
    from_zarr = MSCClustering(n_clusters=3, random_state=0).fit(path)
    np.testing.assert_array_equal(from_zarr.labels_.compute(), from_zarr.tree_.predict(X.astype(np.float32)))
    truth = np.repeat([0, 1, 2], 120)
    assert adjusted_rand_score(truth, model.labels_) > 0.95
    assert adjusted_rand_score(model.labels_, labels) == 1.0  # chunked = in memory (all rows are landmarks)
    assert adjusted_rand_score(truth, from_zarr.labels_.compute()) > 0.95


def test_chunked_landmark_fit_separates_two_groups_beyond_the_exact_size():
    rng = np.random.default_rng(14)
    X = np.vstack([rng.normal(size=(3000, 4)), rng.normal(size=(3000, 4)) + 5])
    y = np.repeat([0, 1], 3000)
    model = MSCClustering(n_clusters=2, n_landmarks=100, random_state=0).fit(da.from_array(X, chunks=(1000, 4)))
    assert two_cluster_error(model.labels_.compute(), y) < 0.01
    assert model.tree_.root.rule.support.shape == (100, 4)
    in_memory = MSCClustering(n_clusters=2, solver="landmarks", n_landmarks=100, random_state=0).fit(X)
    assert two_cluster_error(in_memory.labels_, y) < 0.01 and in_memory.tree_.root.params["solver"] == "landmarks"


def test_duplicates_float32_and_weights():
    rng = np.random.default_rng(15)
    X, _ = blob_in_ring(40, rng)
    counts = rng.integers(1, 4, size=len(X))
    repeated = MSCClustering(n_clusters=3, random_state=0).fit(np.repeat(X, counts, axis=0))
    weighted = MSCClustering(n_clusters=3, random_state=0).fit(X, sample_weight=counts)
    np.testing.assert_array_equal(np.repeat(weighted.labels_, counts), repeated.labels_)
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(MSC().fit(X32).labels_, MSC().fit(X32.astype(np.float64)).labels_)
    two = MSC().fit(np.array([[0.0, 1.0], [2.0, 1.5]]))  # n = 2: the two rows apart
    assert sorted(two.labels_) == [0, 1]
    with pytest.warns(UserWarning, match="constant column"):
        MSC().fit(np.column_stack([X, np.full(len(X), 1e15)]))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"weight": "alpha4"}, "MSC: weight must be 'alpha1', 'alpha2' or 'alpha3'"),
        ({"metric": "cosine"}, "MSC: metric must be 'gaussian' or 'euclidean'"),
        ({"sigma2": 0.0}, "MSC: sigma2 must be None or a positive number"),
        ({"sigma2": np.nan}, "MSC: sigma2 must be None or a positive number"),
        ({"solver": "lanczos"}, "MSC: solver must be 'auto', 'exact' or 'landmarks'"),
        ({"n_landmarks": 1}, "MSC: n_landmarks must be an integer >= 2"),
        ({"standardize": "yes"}, "MSC: standardize must be True or False"),
        ({"mode": "fast"}, "mode must be"),
    ],
)
def test_bad_parameters_are_refused_by_name(params, match):
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match=match):
        MSC(**params).fit(X)


def test_exact_solver_refuses_a_node_too_large_for_memory(monkeypatch):
    import lowdens_dask.growth.msc_splitter as module

    assert MSC().fit(np.random.default_rng(0).normal(size=(20, 2))).solver_ == "exact"  # auto: below 5,000 rows
    monkeypatch.setattr(module, "EXACT_MAX", 10)
    with pytest.raises(ValueError, match="solver='exact' would hold the 20×20 distance matrix"):
        MSC(solver="exact").fit(np.random.default_rng(0).normal(size=(20, 2)))


def test_bad_input_is_refused():
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match="n_clusters must be a positive integer"):
        MSCClustering(n_clusters=0).fit(X)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MSC().fit(bad)
    with pytest.raises(ValueError, match="NaN"):
        MSCClustering(n_clusters=2).fit(da.from_array(bad, chunks=(10, 2)))
    with pytest.raises(ValueError, match="minimum of 2 is required by MSC"):
        MSC().fit(X[:1])
    with pytest.raises(ValueError, match="constant"):
        MSC().fit(np.ones((10, 3)))
    weights = np.arange(1.0, 21.0)  # a Dask array's weights are read with its rows (small input: in memory)
    np.testing.assert_array_equal(
        np.asarray(MSC().fit(da.from_array(X, chunks=(10, 2)), sample_weight=weights).labels_),
        MSC().fit(X, sample_weight=weights).labels_,
    )
    with pytest.raises(ValueError, match="solver='exact' needs the rows in memory"):
        MSC(solver="exact").fit(da.from_array(X, chunks=(10, 2)))
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        MSC().fit(X, sample_weight=-np.ones(20))


def test_msc_predicts_the_same_on_dask_and_in_memory():
    """Issue 22, point 10: MSC(standardize=True) routes a row the same way in memory, in a Dask chunk and in labels_
    (one float64 computation per row); rows that differ only in their last bits are one cluster."""
    rng = np.random.default_rng(3)
    last_bits = 1.0 + rng.integers(0, 8, (300, 8)) * np.finfo(np.float64).eps
    blobs = np.vstack([rng.normal(size=(150, 8)), rng.normal(size=(150, 8)) + 2.0])
    for X in (last_bits, blobs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # one cluster only, for the rows that differ in last bits
            model = MSC(standardize=True, random_state=0).fit(X)
        in_memory = model.predict(X)
        np.testing.assert_array_equal(model.predict(da.from_array(X, chunks=(37, 8))).compute(), in_memory)
        np.testing.assert_array_equal(model.labels_, in_memory)
        f = model.decision_function(X)
        np.testing.assert_array_equal(model.decision_function(da.from_array(X, chunks=(37, 8))).compute(), f)
        np.testing.assert_array_equal(np.concatenate([model.decision_function(X[i : i + 1]) for i in range(300)]), f)
    with pytest.warns(UserWarning, match="Only 1 clusters could be formed"):
        assert np.unique(MSC(standardize=True, random_state=0).fit(last_bits).labels_).size == 1
