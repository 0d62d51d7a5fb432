"""Divisive estimators (MDHClustering, PDDP, DePDDP) and the ClusterTree they build."""

import json
import warnings

import numpy as np
import pytest
from scipy.cluster.hierarchy import dendrogram, is_valid_linkage
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score, homogeneity_score, v_measure_score

from lowdens_dask import PDDPClustering, ClusterTree, DePDDPClustering, MDHClustering
from lowdens_dask.datasets import load_dataset
from lowdens_dask.growth.hyperplane_splitter import PLACED


def blobs(k=4, n_per=150, d=5, seed=0, spread=8.0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=spread, size=(k, d))
    X = np.vstack([c + rng.normal(size=(n_per, d)) for c in centres])
    return X, np.repeat(np.arange(k), n_per)


@pytest.fixture(scope="module")
def dermatology():
    return load_dataset("dermatology")


@pytest.fixture(scope="module")
def fitted(dermatology):
    X, _ = dermatology
    return MDHClustering(n_clusters=6).fit(X)


def test_mdhclustering_on_dermatology(dermatology, fitted):
    X, y = dermatology
    assert fitted.n_clusters_ == 6 and fitted.tree_.n_leaves == 6
    assert set(fitted.labels_) == set(range(6))
    assert v_measure_score(y, fitted.labels_) > 0.75  # PPCI's mddc: 0.844
    np.testing.assert_array_equal(fitted.predict(X), fitted.labels_)


def test_tree_sizes_and_min_size(dermatology):
    X, _ = dermatology
    model = MDHClustering(n_clusters=6, min_size=20).fit(X)
    for node in model.tree_:
        if not node.is_leaf:
            a, b = (model.tree_.nodes[c] for c in node.children)
            assert a.size + b.size == node.size
            assert min(a.size, b.size) >= 20
            assert node.relative_depth > 0 and node.fval > 0
    counts = np.bincount(model.labels_)
    sizes = [leaf.size for leaf in model.tree_.leaves()]
    np.testing.assert_array_equal(counts, sizes)


@pytest.mark.parametrize("index", ["fval", "rdepth", lambda X, hp: -len(X)])
def test_split_indices(dermatology, index):
    X, y = dermatology
    model = MDHClustering(n_clusters=4, leaf_order=index).fit(X)
    assert model.n_clusters_ == 4
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    if callable(index):  # "split the smallest leaf" really does pick the smallest valid leaf
        sizes = sorted(leaf.size for leaf in model.tree_.leaves())
        assert sizes[-1] > len(X) / 3  # the big first-split side was left alone at least once


def test_size_index_lazy_equals_eager_choice(dermatology):
    """The lazy "size" rule (compute a leaf's split only when it is the largest) builds the same tree as
    a callable that forces every leaf to be evaluated first."""
    X, _ = dermatology
    lazy = MDHClustering(n_clusters=5, leaf_order="size-only").fit(X)
    eager = MDHClustering(n_clusters=5, leaf_order=lambda Xl, hp: float(len(Xl))).fit(X)
    np.testing.assert_array_equal(lazy.labels_, eager.labels_)


def test_n_clusters_none_splits_until_no_valid_split():
    X, y = blobs(k=3, seed=1)
    model = MDHClustering(n_clusters=None, min_size=20).fit(X)
    assert model.n_clusters_ >= 3
    assert homogeneity_score(y, model.labels_) > 0.95  # no leaf mixes blobs (blobs may be split further)
    for leaf in model.tree_.leaves():
        with pytest.raises(ValueError, match="no valid"):
            model.tree_.split(leaf, X, min_size=20)


def test_too_many_clusters_warns_and_returns_fewer():
    X, _ = blobs(k=2, n_per=30, d=2, seed=2)
    with pytest.warns(UserWarning, match="Only .* clusters could be formed"):
        model = MDHClustering(n_clusters=50, min_size=10, force_n_clusters=False).fit(X)
    assert 2 <= model.n_clusters_ < 50
    assert len(np.unique(model.labels_)) == model.n_clusters_


def test_pddp_single_split_is_pc1_mean_split():
    X, _ = blobs(seed=3)
    model = PDDPClustering(n_clusters=2).fit(X)
    Xc = X - X.mean(axis=0)
    pc1 = np.linalg.svd(Xc, full_matrices=False)[2][0]
    manual = (Xc @ pc1 >= 0).astype(int)
    agree = np.mean(manual == model.labels_)
    assert agree == 1.0 or agree == 0.0


def test_depddp_splits_at_density_gap():
    rng = np.random.default_rng(4)
    X = np.vstack([rng.normal(size=(100, 3)) * [3, 1, 1] + [-14, 0, 0], rng.normal(size=(400, 3)) * [3, 1, 1] + [14, 0, 0]])
    model = DePDDPClustering(n_clusters=2).fit(X)
    np.testing.assert_array_equal(np.bincount(model.labels_), [100, 400])
    root = model.tree_.root
    assert abs(root.b / root.v[0]) < 4.0  # the density minimum lies in the gap, not at the mean (8.4)
    assert DePDDPClustering(n_clusters=4, force_n_clusters=False).fit(X).n_clusters_ >= 2


def test_depddp_unimodal_data_does_not_split():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 2)) * [2.0, 1.0]
    with pytest.warns(UserWarning, match="Only 1 clusters"):
        model = DePDDPClustering(n_clusters=2, force_n_clusters=False).fit(X)
    assert model.n_clusters_ == 1


def test_pddp_divisive_and_scatter_index():
    X, y = blobs(k=4, seed=6)
    model = PDDPClustering(n_clusters=4).fit(X)
    assert model.n_clusters_ == 4
    assert v_measure_score(y, model.labels_) > 0.7
    np.testing.assert_array_equal(model.predict(X), model.labels_)


def test_bad_parameters():
    X, _ = blobs()
    with pytest.raises(ValueError, match="n_clusters"):
        MDHClustering(n_clusters=0).fit(X)
    with pytest.raises(ValueError, match="leaf_order"):
        MDHClustering(leaf_order="nope").fit(X)
    with pytest.raises(ValueError, match="leaf_order"):
        PDDPClustering(leaf_order="rdepth").fit(X)


def test_clone_and_params():
    model = MDHClustering(n_clusters=3, leaf_order="fval", min_size=5)
    params = clone(model).get_params()
    assert params["n_clusters"] == 3 and params["leaf_order"] == "fval" and params["min_size"] == 5


# ------------------------------------------------------------------------------------------ the tree


def test_json_round_trip_reproduces_predictions_bit_for_bit(dermatology, fitted):
    X, _ = dermatology
    text = fitted.tree_.to_json()
    payload = json.loads(text)
    assert payload["schema_version"] == 2
    assert "ixs" not in text and len(text) < 50_000  # no data rows stored
    restored = ClusterTree.from_json(text)
    np.testing.assert_array_equal(restored.predict(X), fitted.labels_)
    assert_same_tree(restored, fitted.tree_)


def assert_same_tree(restored, original):
    """Every field of every node, and the tree's own settings, are equal (NaN equals NaN)."""
    assert (restored.n_features, restored.method, restored._next_id) == (
        original.n_features,
        original.method,
        original._next_id,
    )
    assert restored.params == original.to_dict()["params"] and restored.params
    assert sorted(restored.nodes) == sorted(original.nodes)
    for node_id, a in original.nodes.items():
        b = restored.nodes[node_id]
        for name in ("id", "parent", "depth", "size", "children", "rule", "method", "params", "forced"):
            assert getattr(b, name) == getattr(a, name), (node_id, name)
        assert a.stats.keys() == b.stats.keys(), node_id
        for name, x in a.stats.items():
            assert x == b.stats[name] or (np.isnan(x) and np.isnan(b.stats[name])), (node_id, name)
        assert (a.v is None and b.v is None) or np.array_equal(a.v, b.v), node_id


@pytest.mark.parametrize("estimator", [DePDDPClustering(n_clusters=4), PDDPClustering(n_clusters=4)], ids=["depddp", "pddp"])
def test_json_round_trip_keeps_every_field(dermatology, estimator):
    X, _ = dermatology
    tree = clone(estimator).fit(X).tree_
    assert_same_tree(ClusterTree.from_json(tree.to_json()), tree)


def test_split_after_reload_uses_the_fitted_settings(dermatology):
    """A reloaded tree splits a leaf with the settings it was fitted with, not the library defaults."""
    X, _ = dermatology
    model = MDHClustering(n_clusters=3, min_size=30, alphas=(0.01, 0.2, 0.4)).fit(X)
    original = model.tree_
    restored = ClusterTree.from_json(original.to_json())
    assert_same_tree(restored, original)
    leaf = max(original.leaves(), key=lambda n: n.size).id
    a = original.split(leaf, X)
    b = restored.split(leaf, X)
    assert b.params["alpha"] <= 0.4 and b.params == a.params
    assert np.array_equal(a.v, b.v) and a.b == b.b
    assert [restored.nodes[c].size for c in b.children] == [original.nodes[c].size for c in a.children]
    assert min(restored.nodes[c].size for c in b.children) >= 30


def test_schema_version_1_is_read(dermatology, fitted):
    """Trees written before split rules (v and b, fval and relative_depth as node fields) still load."""
    X, _ = dermatology
    payload = fitted.tree_.to_dict()
    for item in payload["nodes"]:  # version 1 recorded these two statistics alone
        if "stats" in item:
            item["stats"] = {key: item["stats"][key] for key in ("fval", "relative_depth")}
    expected = ClusterTree.from_dict(json.loads(json.dumps(payload)))
    payload["schema_version"] = 1
    for item in payload["nodes"]:
        if "rule" in item:
            rule, stats = item.pop("rule"), item.pop("stats")
            del item["forced"]
            item.update(v=rule["v"], b=rule["b"], fval=stats["fval"], relative_depth=stats["relative_depth"])
    restored = ClusterTree.from_dict(json.loads(json.dumps(payload)))
    assert_same_tree(restored, expected)
    np.testing.assert_array_equal(restored.predict(X), fitted.labels_)


def test_unknown_schema_version_is_refused(fitted):
    payload = fitted.tree_.to_dict()
    payload["schema_version"] = 99
    with pytest.raises(ValueError, match="schema_version"):
        ClusterTree.from_dict(payload)


def test_linkage_is_valid_and_draws(fitted):
    Z = fitted.tree_.to_linkage()
    assert Z.shape == (5, 4)
    assert is_valid_linkage(Z)
    for row in Z:
        for child in row[:2].astype(int):
            if child >= 6:
                assert Z[child - 6, 2] < row[2]
    d = dendrogram(Z, no_plot=True)
    assert sorted(d["leaves"]) == list(range(6))


def test_prune_keeps_ids_and_split_regrows(dermatology, fitted):
    X, _ = dermatology
    tree = ClusterTree.from_json(fitted.tree_.to_json())
    internal = [n for n in tree if not n.is_leaf and n.id != 0]
    target = internal[0]
    kept = {n.id for n in tree} - set(_descendants(tree, target.id))
    tree.prune(target.id)
    assert {n.id for n in tree} == kept
    assert tree.nodes[target.id].is_leaf
    labels = tree.predict(X)
    assert len(np.unique(labels)) == tree.n_leaves
    before = max(tree.nodes)
    tree.split(target.id, X)
    assert min(tree.nodes[target.id].children) > before  # new ids, nothing renumbered
    with pytest.raises(ValueError, match="leaf"):
        tree.prune(tree.leaves()[0].id)
    with pytest.raises(ValueError, match="Only leaves"):
        tree.split(0, X)
    with pytest.raises(KeyError, match="no node"):
        tree.split(10_000, X)


def test_split_with_overridden_params(dermatology):
    X, _ = dermatology
    tree = ClusterTree(X.shape[1], method="mdh", root_size=len(X))
    tree.split(0, X, alphas=[0.01, 0.3])
    assert tree.root.params["alpha"] <= 0.3
    tree.split(tree.root.children[0], X, method="pddp")
    assert tree.nodes[tree.root.children[0]].method == "pddp"
    assert tree.n_leaves == 3
    assert [n.id for n in tree.leaves()] == [3, 4, 2]


def _descendants(tree, node_id):
    out, stack = [], list(tree.nodes[node_id].children or ())
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(tree.nodes[n].children or ())
    return out


@pytest.mark.parametrize("name,k,ppci", [("optidigits", 10, 0.731), ("chart", 6, 0.753), ("satellite", 6, 0.620)])
def test_vmeasure_regression_against_ppci(name, k, ppci):
    """Divisive V-measure on bundled data as shipped stays within 0.03 of PPCI's mddc (full run:
    benchmarks/divisive.py)."""
    X, y = load_dataset(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # constant columns in optidigits
        model = MDHClustering(n_clusters=k).fit(X)
    assert v_measure_score(y, model.labels_) >= ppci - 0.03


# ------------------------------------------------------------------------------------------ split indices


def _splits_in_order(tree):
    """Each internal node with the leaves that existed when it was split (children ids grow with each split)."""
    leaves = {0}
    for node in sorted((n for n in tree if not n.is_leaf), key=lambda n: n.children[0]):
        yield node, [tree.nodes[i] for i in sorted(leaves)]
        leaves.remove(node.id)
        leaves.update(node.children)


#: What each split index maximises over the leaves whose (would-be) split is known and valid.
SPLIT_RULES = {"size": lambda n: n.size, "fval": lambda n: -n.fval, "rdepth": lambda n: n.relative_depth}


@pytest.mark.parametrize(
    "estimator,rule",
    [
        (MDHClustering(n_clusters=6, leaf_order="size-only"), "size"),
        (MDHClustering(n_clusters=6, leaf_order="fval-only"), "fval"),
        (MDHClustering(n_clusters=6, leaf_order="rdepth-only"), "rdepth"),
        (DePDDPClustering(n_clusters=6, leaf_order="fval-only"), "fval"),  # dePDDP's own rule: the lowest density minimum
    ],
    ids=["mdh-size", "mdh-fval", "mdh-rdepth", "depddp"],
)
def test_split_index_picks_the_documented_leaf(dermatology, estimator, rule):
    """Replaying the growth, every split is made on the leaf that the index ranks first among the leaves
    with a known valid split (leaves keep their would-be splits, so the ranking can be recomputed)."""
    X, _ = dermatology
    tree = clone(estimator).fit(X).tree_
    key = SPLIT_RULES[rule]
    steps = list(_splits_in_order(tree))
    assert len(steps) == 5
    for node, leaves in steps:
        known = [leaf for leaf in leaves if leaf.v is not None]
        assert node in known
        assert key(node) == max(key(leaf) for leaf in known), (node.id, [(n.id, key(n)) for n in known])


def test_the_three_split_indices_disagree_on_dermatology(dermatology):
    """The data of the test above is one where the three rules choose different leaves: at the last split
    of the "fval" tree, the largest leaf, the lowest density minimum and the largest relative depth are
    three different leaves, and the three trees differ."""
    X, _ = dermatology
    models = {rule: MDHClustering(n_clusters=6, leaf_order=f"{rule}-only").fit(X) for rule in SPLIT_RULES}
    _, leaves = list(_splits_in_order(models["fval"].tree_))[-1]
    known = [leaf for leaf in leaves if leaf.v is not None]
    chosen = {rule: max(known, key=key).id for rule, key in SPLIT_RULES.items()}
    assert len(set(chosen.values())) == 3, chosen
    partitions = {rule: tuple(m.labels_) for rule, m in models.items()}
    assert partitions["fval"] != partitions["size"] != partitions["rdepth"]


def test_fval_index_prefers_the_lowest_density(dermatology):
    """On dermatology the "fval" rule gives a better partition than its reversal would (issue 7: 0.885 vs 0.71)."""
    X, y = dermatology
    assert v_measure_score(y, MDHClustering(n_clusters=6, leaf_order="fval-only").fit(X).labels_) > 0.85
    assert v_measure_score(y, DePDDPClustering(n_clusters=6).fit(X).labels_) > 0.75


@pytest.mark.parametrize("seed", range(3))
def test_forced_split_goes_through_the_lowest_density(seed):
    """No leaf has a valid split: the largest holds one Gaussian, the other a cluster of 150 rows (3.6% of it)
    beyond MDH's alpha range. force_n_clusters splits the leaf whose best hyperplane has the lowest density, the
    gap to the small cluster (splitting the largest leaf cut its Gaussian in two: ARI 0.79)."""
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(size=5000) - 20, rng.normal(size=4000) + 10, rng.normal(size=150) + 25])[:, None]
    y = np.repeat([0, 1, 2], [5000, 4000, 150])
    with pytest.warns(UserWarning, match="1 of the 2 splits were forced"):
        model = MDHClustering(n_clusters=3, leaf_order="size-only").fit(X)  # PPCI's order: no test, no placing
    forced = [node for node in model.tree_ if node.forced]
    assert len(forced) == 1 and forced[0].size == 4150
    assert adjusted_rand_score(y, model.labels_) > 0.99


@pytest.mark.parametrize("n_clusters", [3, "auto"])
@pytest.mark.parametrize("seed", range(3))
def test_significant_split_at_the_alpha_boundary_is_placed_at_the_density_minimum(seed, n_clusters):
    """Issue 42, item 6: the small cluster beyond MDH's alpha range is significant along the hyperplane's direction,
    whose MDH split sits at the edge of the interval (relative depth 0, not valid): the split is placed at the
    projection's density minimum between the modes, as dePDDP's, and the node records it. Told K and auto alike."""
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(size=5000) - 20, rng.normal(size=4000) + 10, rng.normal(size=150) + 25])[:, None]
    y = np.repeat([0, 1, 2], [5000, 4000, 150])
    model = MDHClustering(n_clusters=n_clusters, random_state=0).fit(X)
    assert model.n_clusters_ == 3 and adjusted_rand_score(y, model.labels_) > 0.99
    assert not any(node.forced for node in model.tree_)
    placed = [node for node in model.tree_ if not node.is_leaf and node.params.get(PLACED)]
    assert [node.size for node in placed] == [4150] and placed[0].params[PLACED] == "density minimum"
    assert placed[0].stats["p_value"] < 0.01 and placed[0].stats["relative_depth"] > 0


def _mixture(seed: int, n: int = 4000, k: int = 8, d: int = 8):
    """A mixture of k unit Gaussians, centres N(0, 3²), weights Dirichlet(2) (issue 42's, smaller)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(k, d))
    y = rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 2.0)))
    return centres[y] + rng.normal(size=(n, d)), y


@pytest.mark.parametrize("name", ["MDHClustering", "NCutClustering", "MCClustering"])
def test_told_the_k_auto_finds_gives_auto_s_partition(name):
    """Issue 42, item 1: one split decision. Leaves whose best split is significant are split first, so a fit told
    the K that ``"auto"`` finds makes ``"auto"``'s splits and gives its partition."""
    import lowdens_dask as ld

    X, _ = _mixture(0)
    auto = getattr(ld, name)(n_clusters="auto", random_state=0).fit(X)
    assert auto.n_clusters_ >= 4
    told = getattr(ld, name)(n_clusters=auto.n_clusters_, random_state=0).fit(X)
    assert adjusted_rand_score(auto.labels_, told.labels_) == 1.0


def test_told_k_splits_significant_leaves_first(dermatology):
    """Replaying a told-K growth: while any leaf's would-be split is significant, the split made is significant;
    the order among the significant ones is the split index's (here the largest first)."""
    X, _ = dermatology
    tree = MDHClustering(n_clusters=8, random_state=0).fit(X).tree_
    significant = lambda node: node.stats.get("p_value", 1.0) < 0.01  # noqa: E731
    kinds = set()
    for node, leaves in _splits_in_order(tree):
        candidates = [leaf for leaf in leaves if leaf.v is not None and significant(leaf)]
        kinds.add(bool(candidates))
        if candidates:
            assert significant(node) and node.size == max(leaf.size for leaf in candidates)
    assert kinds == {True, False}  # both kinds of step were made
