"""NCutH / NCutClustering, MCH / MCClustering, IPDDP, the projection transformers, the METHODS registry, and
the n_clusters guarantee (``force_n_clusters``) of every divisive estimator."""

import functools
import re
import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import homogeneity_score, v_measure_score
from tolerances import argmin_atol, assert_within, optimum_rtol, rows_atol

from lowdens_dask import (
    IPDDPClustering,
    MCH,
    MDH,
    METHODS,
    PDDPClustering,
    ClusterTree,
    DePDDPClustering,
    MCClustering,
    MCProjection,
    MDHClustering,
    MDHProjection,
    NCutClustering,
    NCutH,
    NCutProjection,
)
from lowdens_dask.datasets import load_dataset
from lowdens_dask.estimators.mc import f_distribution_index


@pytest.fixture(scope="module")
def dermatology():
    return load_dataset("dermatology")


def two_blobs(seed=1, n_per=200, d=5, gap=10.0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(n_per, d)), rng.normal(size=(n_per, d)) + np.r_[gap, np.zeros(d - 1)]])
    return X, np.repeat([0, 1], n_per)


def brute_normalised_cut(p, b, scale):
    """NCut of the split ``p < b`` of the projections under the Laplace similarity, from the full matrix."""
    S = np.exp(-np.abs(p[:, None] - p[None, :]) / scale)
    left = p < b
    cut = S[left][:, ~left].sum()
    return cut / S[left].sum() + cut / S[~left].sum()


def brute_variance_ratio(p, b):
    """B / (V - B) of the split ``p < b``, V the total variance with divisor n - 1 (PPCI's ``var``)."""
    left = p < b
    m = p.mean()
    V = ((p - m) ** 2).sum() / (len(p) - 1)
    B = left.mean() * (p[left].mean() - m) ** 2 + (~left).mean() * (p[~left].mean() - m) ** 2
    return B / (V - B)


def all_gap_midpoints(p):
    s = np.unique(p)
    return (s[:-1] + s[1:]) / 2


def brute_min_normalised_cut(p, scale):
    """Smallest NCut over all splits of the (distinct) projections, from 2-D prefix sums of the full matrix."""
    p = np.sort(p)
    S = np.exp(-np.abs(p[:, None] - p[None, :]) / scale)
    vol_left = np.cumsum(S.sum(axis=1))[:-1]  # vol of the first m points, m = 1 .. n-1
    within_left = np.diagonal(S.cumsum(axis=0).cumsum(axis=1))[:-1]
    cut = vol_left - within_left
    return np.min(cut / vol_left + cut / (vol_left[-1] + S[-1].sum() - vol_left))


# ------------------------------------------------------------------------------------------ divisive fits


@pytest.mark.parametrize("estimator", [NCutClustering(n_clusters=6), MCClustering(n_clusters=6)], ids=["ncut", "mc"])
def test_divisive_on_dermatology(dermatology, estimator):
    X, y = dermatology
    model = clone(estimator).fit(X)
    assert model.n_clusters_ == 6 and model.tree_.n_leaves == 6
    assert set(model.labels_) == set(range(6))
    assert v_measure_score(y, model.labels_) > 0.85  # measured ~0.93 for both
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    restored = ClusterTree.from_json(model.tree_.to_json())
    np.testing.assert_array_equal(restored.predict(X), model.labels_)
    assert not any(node.forced for node in model.tree_)  # dermatology has real clusters: nothing forced


def test_ipddp_separates_three_blobs():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0, 0], [12, 0, 0], [0, 12, 0]])
    X = np.vstack([c + rng.normal(size=(150, 3)) for c in centres])
    y = np.repeat(np.arange(3), 150)
    model = IPDDPClustering(n_clusters=3).fit(X)
    assert model.n_clusters_ == 3
    assert homogeneity_score(y, model.labels_) > 0.95
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    for node in model.tree_:
        if not node.is_leaf:
            assert node.method == "ipddp" and node.stats["gap"] > 2  # a wide gap (measured >= 3.7)


# ------------------------------------------------------------------------------------------ one hyperplane


@pytest.mark.parametrize("Estimator", [NCutH, MCH])
def test_hyperplane_separates_two_blobs(Estimator):
    X, y = two_blobs()
    model = Estimator().fit(X)
    assert np.array_equal(model.labels_, y) or np.array_equal(model.labels_, 1 - y)
    assert np.isfinite(model.fval_) and model.fval_ == model.stats_["fval"]
    assert np.linalg.norm(model.v_) == pytest.approx(1.0)
    assert abs(model.v_[0]) > 0.99
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    dec = model.decision_function(X)
    np.testing.assert_allclose(dec, X @ model.v_ - model.b_)
    np.testing.assert_array_equal(model.labels_, (dec >= 0).astype(int))  # label 1 is v.x >= b
    assert model.n_evaluations_ >= 1


def test_ncuth_fval_is_the_normalised_cut():
    """fval_ is the normalised cut of the split made, and the smallest one along v_. With PPCI's default scale
    (100 sigma_pc1 n^(-1/5), ~154 here: every pair is similar) even perfectly separated blobs have a cut near 1;
    a scale of the blobs' own size gives a small cut."""
    X, _ = two_blobs()
    default_scale = 100 * np.sqrt(np.linalg.eigvalsh(np.cov(X.T))[-1]) * len(X) ** -0.2
    for scale, given in [(default_scale, None), (1.0, 1.0)]:
        model = NCutH(scale=given).fit(X)
        p = X @ model.v_
        assert model.fval_ == pytest.approx(brute_normalised_cut(p, model.b_, scale), rel=1e-9)
        assert len(np.unique(p)) == len(p)
        assert model.fval_ == pytest.approx(brute_min_normalised_cut(p, scale), rel=1e-9)
    assert model.fval_ < 0.2  # scale=1: measured 6e-4


def test_mch_fval_is_the_variance_ratio():
    X, _ = two_blobs()
    model = MCH().fit(X)
    assert model.fval_ > 1  # measured ~23
    p = X @ model.v_
    assert model.fval_ == pytest.approx(brute_variance_ratio(p, model.b_), rel=1e-9)
    best = max(brute_variance_ratio(p, b) for b in all_gap_midpoints(p))
    assert model.fval_ == pytest.approx(best, rel=1e-9)


@pytest.mark.parametrize("Estimator", [NCutH, MCH])
def test_integer_weights_equal_repeated_rows(Estimator):
    X, _ = two_blobs(seed=4, n_per=60, d=3, gap=3.0)
    w = np.random.default_rng(5).integers(1, 4, size=len(X))
    weighted = Estimator().fit(X, sample_weight=w.astype(float))
    repeated = Estimator().fit(np.repeat(X, w, axis=0))
    # The two fits sum in different orders, and the pursuit stops at a relative change of ftol: the optimum's value
    # agrees to about ftol, its direction only to about sqrt(ftol) (MCH's differed by 2.06e-8 on another machine,
    # and by 2.07e-8 here with the repeated rows permuted), and b, the middle of the gap along v, by |x| times that.
    ftol = weighted.tol
    sign = np.sign(weighted.v_ @ repeated.v_)
    assert weighted.fval_ == pytest.approx(repeated.fval_, rel=optimum_rtol(ftol))
    np.testing.assert_allclose(weighted.v_, sign * repeated.v_, atol=argmin_atol(ftol))
    radius = np.linalg.norm(X, axis=1).max()
    assert sign * weighted.b_ == pytest.approx(repeated.b_, abs=argmin_atol(ftol) * radius)
    same = weighted.predict(X) == (repeated.predict(X) if sign > 0 else 1 - repeated.predict(X))
    assert same.all()  # no row lies that near the middle of the gap


@pytest.mark.parametrize("Estimator", [NCutH, MCH])
def test_zero_weight_rows_are_as_if_removed(Estimator):
    """A row of weight 0 neither bounds the gap the split point is the midpoint of nor moves anything else
    (scikit-learn's convention, and the variance-ratio index's documented one)."""
    X = np.array([[0.0], [0.1], [0.2], [0.5], [1.0], [1.1], [1.2]])
    w = np.array([1.0, 1, 1, 0, 1, 1, 1])
    kept = Estimator().fit(X, sample_weight=w)
    dropped = Estimator().fit(X[w > 0], sample_weight=w[w > 0])
    assert dropped.b_ * dropped.v_[0] == pytest.approx(0.6)  # the split point along the axis (v_ is +-1)
    assert kept.b_ * kept.v_[0] == pytest.approx(0.6)  # NCutH: 0.35, the midpoint of 0.2 and the weightless 0.5
    assert kept.fval_ == pytest.approx(dropped.fval_)


# ------------------------------------------------------------------------------------------ the K guarantee


@functools.cache
def k_data(name):
    if name == "cube":
        return np.random.default_rng(0).uniform(size=(600, 3))
    if name == "gaussian":
        return np.random.default_rng(1).normal(size=(600, 4))
    if name == "gaussian-2d":
        return np.random.default_rng(2).normal(size=(600, 2))
    if name == "overlap":  # three classes whose centres are 0.5 apart
        rng = np.random.default_rng(3)
        centres = np.array([[0.0, 0, 0], [0.5, 0, 0], [0, 0.5, 0]])
        return np.vstack([c + rng.normal(size=(200, 3)) for c in centres])
    raise KeyError(name)


DIVISIVE = [MDHClustering, NCutClustering, MCClustering, DePDDPClustering, IPDDPClustering, PDDPClustering]


def fit_recording(estimator, X):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = estimator.fit(X)
    return model, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("data", ["cube", "gaussian", "gaussian-2d", "overlap"])
@pytest.mark.parametrize("Estimator", DIVISIVE, ids=lambda E: E.__name__)
def test_force_n_clusters_reaches_k(Estimator, data):
    X = k_data(data)
    model, messages = fit_recording(Estimator(n_clusters=5), X)
    assert model.n_clusters_ == 5 and model.tree_.n_leaves == 5
    assert len(np.unique(model.labels_)) == 5
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    forced = [node for node in model.tree_ if node.forced]
    forced_warnings = [m for m in messages if "forced" in m]
    assert not any(m.startswith("Only") for m in messages), messages
    if forced:
        assert len(forced_warnings) == 1, messages
        assert re.search(f"{len(forced)} of the 4 splits were forced to reach n_clusters=5", forced_warnings[0])
    else:
        assert forced_warnings == []
    assert all(not node.is_leaf for node in forced)
    assert [n.forced for n in ClusterTree.from_json(model.tree_.to_json())] == [n.forced for n in model.tree_]


@pytest.mark.parametrize(
    "Estimator,data",
    [
        (MDHClustering, "gaussian-2d"),  # no valid density minimum in a 2-D Gaussian (measured: 20 of 20 seeds)
        (DePDDPClustering, "cube"),  # a uniform cube's PC1 projection is unimodal
        (DePDDPClustering, "gaussian"),
        (DePDDPClustering, "overlap"),
    ],
)
def test_unimodal_data_forces_splits_or_stops(Estimator, data):
    X = k_data(data)
    model, messages = fit_recording(Estimator(n_clusters=5), X)
    assert model.n_clusters_ == 5
    assert any(node.forced for node in model.tree_)
    assert sum("were forced to reach n_clusters" in m for m in messages) == 1
    stopped, messages = fit_recording(Estimator(n_clusters=5, force_n_clusters=False), X)
    assert stopped.n_clusters_ < 5 and stopped.tree_.n_leaves == stopped.n_clusters_
    assert not any(node.forced for node in stopped.tree_)
    assert sum(m.startswith(f"Only {stopped.n_clusters_} clusters could be formed") for m in messages) == 1
    assert not any("forced to reach" in m for m in messages)


# ------------------------------------------------------------------------------------------ bad parameters

BAD_PARAMETERS = [
    (NCutH, {"scale": 0}, "NCutH: scale"),
    (NCutH, {"scale": "big"}, "NCutH: scale"),
    (NCutH, {"max_iter": 0}, "NCutH: max_iter"),
    (NCutH, {"tol": 0.0}, "NCutH: tol"),
    (NCutH, {"min_size": -1}, "NCutH: min_size"),
    (NCutClustering, {"scale": -1.0}, "NCutClustering: scale"),
    (NCutClustering, {"leaf_order": "gap"}, "NCutClustering: leaf_order"),
    (NCutClustering, {"n_clusters": 0}, "NCutClustering: n_clusters"),
    (NCutClustering, {"n_clusters": 2.5}, "NCutClustering: n_clusters"),
    (NCutClustering, {"min_size": 0}, "NCutClustering: min_size"),
    (NCutClustering, {"v0": np.ones(3)}, "NCutClustering: v0 must be None or a callable"),
    (NCutClustering, {"force_n_clusters": "yes"}, "NCutClustering: force_n_clusters"),
    (MCH, {"max_iter": 0}, "MCH: max_iter"),
    (MCH, {"max_iter": True}, "MCH: max_iter"),
    (MCH, {"tol": -1.0}, "MCH: tol"),
    (MCH, {"min_size": 0}, "MCH: min_size"),
    (MCClustering, {"max_iter": 0}, "MCClustering: max_iter must be a positive integer"),
    (MCClustering, {"leaf_order": "gap"}, "MCClustering: leaf_order"),
    (MCClustering, {"n_clusters": -1}, "MCClustering: n_clusters"),
    (MCClustering, {"force_n_clusters": 1}, "MCClustering: force_n_clusters must be True or False"),
    (MCClustering, {"tol": 0}, "MCClustering: tol"),
    (IPDDPClustering, {"percentile": 0.5}, r"IPDDPClustering: percentile must be a number in \[0, 0.5\)"),
    (IPDDPClustering, {"percentile": -0.1}, "IPDDPClustering: percentile"),
    (IPDDPClustering, {"leaf_order": "fval"}, "IPDDPClustering: leaf_order"),
    (IPDDPClustering, {"n_clusters": 0}, "IPDDPClustering: n_clusters"),
    (IPDDPClustering, {"force_n_clusters": None}, "IPDDPClustering: force_n_clusters"),
    (MDHClustering, {"force_n_clusters": "x"}, "MDHClustering: force_n_clusters"),
    (PDDPClustering, {"force_n_clusters": "x"}, "PDDPClustering: force_n_clusters"),
    (DePDDPClustering, {"force_n_clusters": 0}, "DePDDPClustering: force_n_clusters"),
    (MDHProjection, {"n_components": 0}, "MDHProjection: n_components"),
    (MDHProjection, {"n_components": 4}, "MDHProjection: n_components=4 exceeds the 3 features"),
    (NCutProjection, {"n_components": 1.5}, "NCutProjection: n_components"),
    (NCutProjection, {"n_components": 4}, "NCutProjection: n_components"),
    (NCutProjection, {"scale": 0}, "NCutProjection: scale"),
    (MCProjection, {"n_components": 0}, "MCProjection: n_components"),
    (MCProjection, {"n_components": 4}, "MCProjection: n_components"),
    (MCProjection, {"tol": 0}, "MCProjection: tol"),
]


@pytest.mark.parametrize(
    "Estimator,params,message", BAD_PARAMETERS, ids=[f"{E.__name__}-{next(iter(p))}" for E, p, _ in BAD_PARAMETERS]
)
def test_bad_parameters(Estimator, params, message):
    X = np.random.default_rng(0).normal(size=(40, 3))
    estimator = Estimator(**params)  # checked at fit, not in __init__ (scikit-learn convention)
    with pytest.raises(ValueError, match="^" + message):
        estimator.fit(X)


# ------------------------------------------------------------------------------------------ projections

PROJECTIONS = [(MDHProjection, MDH, {}), (NCutProjection, NCutH, {}), (MCProjection, MCH, {"random_state": 3})]


@pytest.mark.parametrize("Projection,Hyperplane,params", PROJECTIONS, ids=["mdh", "ncut", "mc"])
def test_projection_directions(dermatology, Projection, Hyperplane, params):
    X, _ = dermatology
    proj = Projection(n_components=3, **params).fit(X)
    C = proj.components_
    assert C.shape == (3, X.shape[1]) and len(proj.stats_) == 3
    np.testing.assert_allclose(C @ C.T, np.eye(3), atol=1e-10)
    T = proj.transform(X)
    assert T.shape == (len(X), 3)
    np.testing.assert_allclose(T, X @ C.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(proj.fit_transform(X), T, rtol=1e-12, atol=1e-12)

    # the first direction is the single hyperplane's normal; the second that of the deflated data (other code
    # paths to the same pursuit, stopped at ftol: directions agree to sqrt(ftol), values to ftol)
    first = Hyperplane(**params).fit(X)
    np.testing.assert_allclose(C[0], np.sign(C[0] @ first.v_) * first.v_, atol=argmin_atol(first.tol))
    assert proj.stats_[0]["fval"] == pytest.approx(first.fval_, rel=optimum_rtol(first.tol))
    v = Hyperplane(**params).fit(X - np.outer(X @ C[0], C[0])).v_
    v = v - C[0] * (C[0] @ v)
    v /= np.linalg.norm(v)
    np.testing.assert_allclose(C[1], np.sign(C[1] @ v) * v, atol=argmin_atol(first.tol))

    lazy = proj.transform(da.from_array(X, chunks=(100, -1)))
    assert isinstance(lazy, da.Array) and lazy.shape == (len(X), 3)
    # the products of chunks of rows: each entry a sum of n_features terms, in whatever order the kernel takes
    terms = np.abs(X)[:, None, :] * np.abs(C)[None, :, :]
    assert_within(lazy.compute(), T, atol=rows_atol(terms, axis=-1))


# ------------------------------------------------------------------------------------------ the registry


def test_methods_registry(dermatology):
    X, _ = dermatology
    assert sorted(METHODS) == ["depddp", "ipddp", "lmsc", "mc", "mdh", "msc", "ncut", "pddp", "scpp", "svm-relabel"]
    for name, method in METHODS.items():
        if name in ("scpp", "lmsc", "msc", "svm-relabel"):  # tests/pursuit/test_scpp.py, test_msc.py, test_svm_relabel.py
            continue
        model = method.clustering(n_clusters=3).fit(X)
        assert model.n_clusters_ == 3, name
        assert model.tree_.method == name
        internal = [node for node in model.tree_ if not node.is_leaf]
        assert len(internal) == 2 and all(node.method == name for node in internal), name
        assert all(node.method in (None, name) for node in model.tree_), name  # leaves may hold a would-be split
        if method.hyperplane is not None:  # the one-split estimator makes the clustering's root split
            hp = method.hyperplane().fit(X)
            root = method.clustering(n_clusters=2).fit(X).tree_.root
            tol = argmin_atol(getattr(hp, "tol", 1e-5))  # a pursuit stopped at ftol (PDDP's: none, exact)
            np.testing.assert_allclose(root.v, np.sign(root.v @ hp.v_) * hp.v_, atol=tol)
        if method.projection is not None:
            assert method.projection(n_components=1).fit(X).components_.shape == (1, X.shape[1])
    assert METHODS["ncut"].hyperplane is NCutH and METHODS["mc"].projection is MCProjection


@pytest.mark.filterwarnings("ignore")
def test_fdist_orders_leaves_whose_probability_is_one():
    """The F index orders saturated leaves by sqrt(n) VR, above every leaf whose probability is below 1."""
    assert f_distribution_index(12.3, 600, 3) > f_distribution_index(4.9, 300, 3) > 1.0
    assert f_distribution_index(0.02, 300, 3) < 1.0 < f_distribution_index(4.9, 300, 3)


#: 19 identical rows and one apart: the only gap between projections leaves a single row on one side.
ONE_APART = np.vstack([np.ones((19, 3)), [[2.0, 3.0, 4.0]]])


#: Two tight groups of 3 and 10 rows: no split leaves 4 rows on each side.
TWO_GROUPS = np.vstack([np.zeros((3, 2)), np.tile([[1.0, 2.0]], (10, 1))])


@pytest.mark.parametrize("Estimator", [NCutH, MCH])
@pytest.mark.parametrize(
    "X,min_size,sizes", [(ONE_APART, 2, [19, 1]), (TWO_GROUPS, 4, [3, 10])], ids=["one-apart", "two-groups"]
)
def test_ncuth_no_valid_split_keeps_finite_hyperplane(Estimator, X, min_size, sizes):
    """Issue 22, point 8: where no split is valid, the hyperplane found (v_, b_) stays finite and goes through the
    only gap."""
    with pytest.warns(UserWarning, match="No valid split was found; v_ and b_ hold the best hyperplane found"):
        est = Estimator(min_size=min_size).fit(X)
    assert np.isfinite(est.v_).all() and np.isfinite(est.b_)
    assert est.fval_ == (np.inf if Estimator is NCutH else -np.inf)  # still no valid split
    scores = est.decision_function(X)
    assert np.isfinite(scores).all()
    np.testing.assert_array_equal(est.labels_, (scores >= 0).astype(int))
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    # the would-be split goes through the only gap, as MDH's hyperplane does
    assert sorted(np.bincount(est.labels_).tolist()) == sorted(sizes)
    with pytest.warns(UserWarning):
        mdh = MDH(min_size=min_size).fit(X)
    assert sorted(np.bincount(mdh.labels_).tolist()) == sorted(sizes)
    # the divisive estimator, even forced, leaves such a node a leaf
    Divisive = NCutClustering if Estimator is NCutH else MCClustering
    with pytest.warns(UserWarning, match="Only 1 clusters could be formed"):
        tree = Divisive(n_clusters=2, min_size=min_size, force_n_clusters=True).fit(X)
    assert tree.n_clusters_ == 1 and (tree.labels_ == 0).all()


PROJECTION_CLASSES = [MDHProjection, NCutProjection, MCProjection]


@pytest.mark.filterwarnings("ignore:X has 1 constant column")
@pytest.mark.parametrize("Projection", PROJECTION_CLASSES)
def test_projection_stops_when_no_variance_is_left(Projection):
    """Issue 22, point 9: a projection transformer stops, with a warning, at the directions the data vary along."""
    x = np.arange(12.0)
    # a varying column beside a constant one; rank-1 data (NaN components from MCProjection at f0c0cdc)
    for X in (np.column_stack([x % 5, np.full(12, 5.0)]), np.column_stack([x, x, x])):
        with pytest.warns(UserWarning, match=r"found 1 of the 2 components requested: X varies along only 1 direction"):
            proj = Projection(n_components=2).fit(X)
        assert proj.n_components_ == 1 and proj.components_.shape == (1, X.shape[1]) and len(proj.stats_) == 1
        assert np.isfinite(proj.components_).all()
        T = proj.transform(X)
        assert T.shape == (12, 1) and np.isfinite(T).all()
    with pytest.raises(ValueError, match="every row of X is the same point"):
        Projection().fit(da.ones((6, 2), chunks=3))


@pytest.mark.parametrize("Projection", PROJECTION_CLASSES)
def test_projection_components_orthonormal_on_rank_deficient_data(Projection):
    """Issue 22, point 16: on rank-deficient data the components found are orthonormal and span the rows."""
    rng = np.random.default_rng(0)
    x = np.arange(10.0)
    cases = [
        (np.column_stack([x, x]), 1),  # [v, -v] at f0c0cdc
        (np.outer(rng.normal(size=15), rng.normal(size=5)) + 1.0, 1),
        (rng.normal(size=(15, 2)) @ rng.normal(size=(2, 6)), 2),
    ]
    for X, rank in cases:
        with pytest.warns(UserWarning, match=f"found {rank} of the {rank + 1} components"):
            proj = Projection(n_components=rank + 1).fit(X)
        C = proj.components_
        assert proj.n_components_ == rank and C.shape == (rank, X.shape[1])
        np.testing.assert_allclose(C @ C.T, np.eye(rank), atol=1e-12)
        # the components span the centred rows: projecting onto them loses nothing
        Xc = X - X.mean(axis=0)
        np.testing.assert_allclose(Xc @ C.T @ C, Xc, atol=1e-9 * np.abs(X).max())
    if Projection is MCProjection:  # chunked rows start from two PCs: the second, flat one must not win
        with pytest.warns(UserWarning, match="found 2 of the 3 components"):
            proj = Projection(n_components=3).fit(da.from_array(X, chunks=(8, -1)))
        np.testing.assert_allclose(proj.components_ @ proj.components_.T, np.eye(2), atol=1e-12)
