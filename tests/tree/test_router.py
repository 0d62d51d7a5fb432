"""Routing in one product per block of rows (``tree.routing.Router`` and its compiled walk) against routing each
node's rows through its rule in float64, as ``ClusterTree.apply`` did before: same leaves for every row, rows
exactly on a hyperplane or one float64 step from it included, rows equidistant from nearest centres of both sides
likewise, float32 rows never upcast as a whole."""

import tracemalloc

import dask.array as da
import numpy as np
import pytest
from test_routing import subtree  # the node and its descendants

from lowdens_dask import ClusterTree
from lowdens_dask.kernels.routing import (
    AT_LEAF,
    LEAF,
    NONFINITE,
    OTHER_RULE,
    UNDECIDED,
    centre_grid,
    row_abs_sums,
    walk_projections,
)
from lowdens_dask.tree import HyperplaneRule, KernelExpansionRule, NearestCentreRule
from lowdens_dask.tree.routing import Router, _centre_tables


def route_node_by_node(tree, X):
    """The reference: each node's rows (float64) through ``rule.side``, from the root down."""
    X = np.asarray(X, dtype=np.float64)
    out = np.zeros(X.shape[0], dtype=np.int64)
    stack = [(0, np.arange(X.shape[0]))]
    while stack:
        node_id, rows = stack.pop()
        node = tree.nodes[node_id]
        if node.is_leaf:
            out[rows] = node_id
            continue
        above = node.rule.side(X[rows])
        stack.append((node.children[0], rows[~above]))
        stack.append((node.children[1], rows[above]))
    return out


def grow_random_tree(X, rng, n_splits, rule_kinds=("hyperplane",), direction=None):
    """A tree of random splits, each through the median projection of the rows that reach the leaf split."""
    tree = ClusterTree(X.shape[1], root_size=X.shape[0])
    X64 = np.asarray(X, dtype=np.float64)
    for _ in range(n_splits):
        ids = route_node_by_node(tree, X64)
        leaf = max(tree.leaves(), key=lambda node: (ids == node.id).sum())
        rows = X64[ids == leaf.id]
        if rows.shape[0] < 4:
            break
        kind = rule_kinds[rng.integers(len(rule_kinds))]
        v = rng.normal(size=X.shape[1]) if direction is None else direction(rng)
        if direction is None:
            v /= np.linalg.norm(v)
        if kind == "hyperplane":
            rule = HyperplaneRule(v, float(np.median(rows @ v)))
        elif kind == "centre":
            centres = rows[rng.choice(rows.shape[0], 4, replace=False)] @ v[:, None]
            rule = NearestCentreRule(v, centres, [False, True, False, True])
        elif kind == "centres":  # a two-dimensional projection and 30 centres, as SCPP's
            V = np.stack([v, rng.normal(size=X.shape[1])], axis=1)
            centres = rows[rng.choice(rows.shape[0], 30, replace=False)] @ V
            rule = NearestCentreRule(V, centres, np.arange(30) % 2 == 1)
        else:
            support = rows[rng.choice(rows.shape[0], 3, replace=False)]
            rule = KernelExpansionRule(support, [1.0, -1.0, 0.5], 0.0, gamma=0.05)
        sides = rule.side(rows)
        tree.add_rule_split(leaf, kind, rule, (float((~sides).sum()), float(sides.sum())), {}, {})
    return tree


def mixture(rng, n, d, dtype):
    centres = rng.normal(scale=4.0, size=(8, d))
    return (centres[rng.integers(8, size=n)] + rng.standard_normal((n, d))).astype(dtype)


# ---------------------------------------------------------------------------------------------- the kernel


def test_row_abs_sums_match_numpy():
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        X = rng.normal(size=(500, 7)).astype(dtype)
        X[3, 2], X[7, 0], X[9, 6] = np.nan, np.inf, -np.inf
        X[11] = np.finfo(dtype).max  # finite, but the sum overflows
        out = np.empty(500)
        row_abs_sums(X, out)
        with np.errstate(over="ignore"):
            expected = np.abs(X.astype(np.float64)).sum(axis=1)
        finite = np.isfinite(X).all(axis=1)
        np.testing.assert_allclose(out[finite], expected[finite], rtol=1e-13)
        assert np.isnan(out[~finite]).all() and (~finite).sum() == 3
        assert out[11] == (np.inf if dtype == np.float64 else expected[11])


def reference_walk(P, abs_sums, column, threshold, tolerance, slack, children):
    """The walk level by level over all rows at once, in numpy."""
    n = P.shape[0]
    node = np.zeros(n, dtype=np.int64)
    status = np.where(np.isnan(abs_sums), NONFINITE, -1)
    while (status == -1).any():
        moving = np.flatnonzero(status == -1)
        col = column[node[moving]]
        status[moving[col == LEAF]] = AT_LEAF
        status[moving[col == OTHER_RULE]] = UNDECIDED
        hyper = moving[col >= 0]
        j = node[hyper]
        diff = P[hyper, column[j]].astype(np.float64) - threshold[j]
        tie = ~np.isfinite(diff) | (np.abs(diff) <= tolerance[column[j]] * abs_sums[hyper] + slack)
        status[hyper[tie]] = UNDECIDED
        go = hyper[~tie]
        node[go] = children[node[go], (diff[~tie] >= 0).astype(int)]
    return node, status


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(4))
def test_walk_kernel_matches_numpy_reference(dtype, seed):
    rng = np.random.default_rng(seed)
    n, m = 3000, 4
    # a full tree of depth 3 over nodes 0-6 (node 3 split by another rule), nodes 5 and 6 split again
    column = np.array([0, 1, 2, OTHER_RULE, 3, 1, 3, LEAF, LEAF, LEAF, LEAF, LEAF, LEAF])
    children = np.zeros((column.size, 2), dtype=np.int64)
    children[:7] = [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12], [11, 12]]
    P = rng.normal(size=(n, m)).astype(dtype)
    P[::50, 0] = 0.25  # exactly on the root's threshold
    P[1::97, 1] = np.nan
    P[2::89, 2] = np.inf
    abs_sums = rng.uniform(0, 10, size=n)
    abs_sums[rng.random(n) < 0.01] = np.nan
    abs_sums[5::301] = np.inf  # a finite row whose sum overflowed: undecided wherever it meets a hyperplane
    threshold = np.array([0.25, -0.1, 0.3, 0, 0.0, 0.5, -0.5, 0, 0, 0, 0, 0, 0])
    tolerance = rng.uniform(0, 1e-3, size=m)
    args = (abs_sums, column, threshold, tolerance, 1e-30, children)
    node, status = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int8)
    walk_projections(P, *args, _centre_tables(np.full(column.size, -1), []), node, status)
    ref_node, ref_status = reference_walk(P, *args)
    np.testing.assert_array_equal(status, ref_status)
    np.testing.assert_array_equal(node, ref_node)
    assert {AT_LEAF, UNDECIDED, NONFINITE} <= set(status.tolist())


# ---------------------------------------------------------------------------------------------- the router


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(3))
def test_router_matches_node_by_node_routing(dtype, seed):
    rng = np.random.default_rng(seed)
    X = mixture(rng, 20_000, 12, dtype)
    tree = grow_random_tree(X, rng, 15)
    np.testing.assert_array_equal(tree.apply(X), route_node_by_node(tree, X))
    Y = mixture(np.random.default_rng(seed + 100), 5000, 12, dtype)  # new rows
    np.testing.assert_array_equal(tree.apply(Y), route_node_by_node(tree, Y))
    np.testing.assert_array_equal(tree.predict(Y), [tree.leaf_labels()[i] for i in route_node_by_node(tree, Y)])


def test_router_matches_node_by_node_routing_with_other_rules():
    rng = np.random.default_rng(7)
    X = mixture(rng, 6000, 6, np.float32)
    tree = grow_random_tree(X, rng, 12, rule_kinds=("hyperplane", "centre", "kernel"))
    kinds = {type(node.rule) for node in tree.nodes.values() if not node.is_leaf}
    assert kinds == {HyperplaneRule, NearestCentreRule, KernelExpansionRule}
    np.testing.assert_array_equal(tree.apply(X), route_node_by_node(tree, X))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_on_and_next_to_hyperplanes(dtype):
    """Integer rows and dyadic directions: every projection is exact in any precision and order, so rows can be
    put exactly on a threshold, or one float64 step to either side of it."""
    rng = np.random.default_rng(3)
    d = 16
    X = rng.integers(-20, 21, size=(4000, d)).astype(dtype)

    def dyadic(rng):
        return rng.integers(-8, 9, size=d) / 8.0

    tree = grow_random_tree(X, rng, 9, direction=dyadic)
    ids = route_node_by_node(tree, X)
    for node in tree.nodes.values():  # move each threshold onto (or next to) a row of the node
        if node.is_leaf:
            continue
        below = np.flatnonzero(np.isin(ids, list(subtree(tree, node.id))))
        on = float(X[below[0]].astype(np.float64) @ node.rule.v)
        node.rule.b = [on, np.nextafter(on, np.inf), np.nextafter(on, -np.inf)][node.id % 3]
    projections = X.astype(np.float64) @ np.stack([n.rule.v for n in tree.nodes.values() if not n.is_leaf], axis=1)
    thresholds = np.array([n.rule.b for n in tree.nodes.values() if not n.is_leaf])
    assert (projections == thresholds).any() and (np.abs(projections - thresholds) < 1e-12).sum() > 10
    np.testing.assert_array_equal(tree.apply(X), route_node_by_node(tree, X))
    router = Router(tree)
    _, status = router.walk(X)
    assert (status == UNDECIDED).any()  # the ties were routed by the rules, not guessed


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_within_rounding_of_a_threshold(dtype):
    """Each threshold 1e-10 (relative) from a row's float64 projection: float64 routes that row the same way in
    any summation order, while a float32 product errs by about 1e-6 relative."""
    rng = np.random.default_rng(4)
    X = mixture(rng, 5000, 32, dtype)
    tree = grow_random_tree(X, rng, 11)
    ids = route_node_by_node(tree, X)
    for node in tree.nodes.values():
        if node.is_leaf:
            continue
        row = X[np.flatnonzero(np.isin(ids, list(subtree(tree, node.id))))[0]].astype(np.float64)
        sign = 1.0 if node.id % 2 else -1.0
        node.rule.b = float(row @ node.rule.v + sign * 1e-10 * np.abs(row).sum())
        ids = route_node_by_node(tree, X)
    np.testing.assert_array_equal(tree.apply(X), route_node_by_node(tree, X))


def test_nonfinite_rows_route_as_the_rules_do_and_label_minus_one_in_chunks():
    rng = np.random.default_rng(5)
    X = mixture(rng, 3000, 4, np.float32)
    tree = grow_random_tree(X, rng, 5)
    X[::7, 1] = np.nan
    X[3::11, 2] = np.inf
    np.testing.assert_array_equal(tree.apply(X), route_node_by_node(tree, X))
    labels = tree.predict(da.from_array(X, chunks=(700, 4))).compute()
    finite = np.isfinite(X).all(axis=1)
    np.testing.assert_array_equal(labels[~finite], -1)
    np.testing.assert_array_equal(labels[finite], tree.predict(X[finite]))


def test_integer_and_fortran_ordered_rows():
    rng = np.random.default_rng(6)
    X = mixture(rng, 2000, 5, np.float64)
    tree = grow_random_tree(X, rng, 6)
    np.testing.assert_array_equal(tree.apply(np.asfortranarray(X)), route_node_by_node(tree, X))
    Xi = np.round(X).astype(np.int32)
    np.testing.assert_array_equal(tree.apply(Xi), route_node_by_node(tree, Xi))


def test_a_tree_of_one_leaf_and_an_empty_input():
    tree = ClusterTree(3)
    np.testing.assert_array_equal(tree.predict(np.ones((4, 3))), 0)
    assert tree.apply(np.zeros((0, 3))).shape == (0,)


def test_float32_rows_are_not_copied_or_upcast():
    """Routing 200,000 float32 rows allocates far less than the rows themselves (node-by-node routing made a
    float64 copy of all of them, and copies of each node's rows)."""
    rng = np.random.default_rng(8)
    X = mixture(rng, 200_000, 32, np.float32)
    tree = grow_random_tree(X[:20_000], rng, 15)
    tree.predict(X[:10])  # compile
    tracemalloc.start()
    try:
        labels = tree.predict(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 4, f"peak {peak / 1e6:.1f} MB for {X.nbytes / 1e6:.1f} MB of rows"
    np.testing.assert_array_equal(labels, tree.predict(X.astype(np.float64)))


def test_estimator_predict_routes_float32_as_float64_and_skips_nonfinite():
    from lowdens_dask import MDHClustering

    rng = np.random.default_rng(9)
    X = mixture(rng, 4000, 6, np.float32)
    model = MDHClustering(n_clusters=5, random_state=0, nonfinite="skip").fit(X.astype(np.float64))
    np.testing.assert_array_equal(model.predict(X), model.predict(X.astype(np.float64)))
    np.testing.assert_array_equal(model.predict(X.astype(np.float64)), model.labels_)
    X[::9, 3] = np.nan
    labels = model.predict(X)
    assert (labels[::9] == -1).all() and (labels[1::9] >= 0).all()


# ---------------------------------------------------------------------------------------------- nearest centres


def centre_tree(V, centres, sides):
    """A tree of one nearest-centre split."""
    tree = ClusterTree(V.shape[0], root_size=1.0)
    tree.add_rule_split(tree.root, "scpp", NearestCentreRule(V, centres, sides), (1.0, 1.0), {}, {})
    return tree


@pytest.mark.slow
def test_centre_grid_candidates_hold_the_nearest_centre():
    """Numpy reference: for random points of each cell, the nearest centre (all distances) is among the cell's
    candidates, every centre left out is farther than it by more than the cell's room, and a pure cell's side
    is the nearest centre's."""
    rng = np.random.default_rng(10)
    for l in (1, 2, 3):
        centres = rng.normal(size=(rng.integers(2, 60), l)) * rng.uniform(0.1, 10, size=l)
        sides = rng.random(len(centres)) < 0.5
        lo, inv_width, size, cell_ptr, candidates, room, pure = centre_grid(centres, sides)
        points = lo + rng.uniform(0, size, size=(20_000, l)) / inv_width
        cell = np.ravel_multi_index(tuple(((points - lo) * inv_width).astype(int).T), tuple(size))
        distance = np.sqrt(((points[:, None, :] - centres[None]) ** 2).sum(axis=2))
        nearest = distance.argmin(axis=1)
        for i in range(len(points)):
            members = candidates[cell_ptr[cell[i]] : cell_ptr[cell[i] + 1]]
            assert nearest[i] in members
            others = np.setdiff1d(np.arange(len(centres)), members)
            assert (distance[i, others] - distance[i, nearest[i]] > room[cell[i]] / 2).all()
            if pure[cell[i]] >= 0:
                assert pure[cell[i]] == sides[nearest[i]]
        assert (pure >= 0).any() and (pure < 0).any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("l", [1, 2, 3])
def test_nearest_centre_routing_matches_the_rule(dtype, l):
    """The compiled nearest-centre walk against ``NearestCentreRule.side`` (a k-d tree over the centres, in
    float64), row by row: random rules and rows, rows far outside the centres (no grid cell), and rows placed in
    the projection halfway between two centres of opposite sides."""
    rng = np.random.default_rng(11 + l)
    d = 9
    for _ in range(6):
        V = rng.normal(size=(d, l))
        X = (rng.normal(size=(3000, d)) * rng.uniform(0.5, 3)).astype(dtype)
        X[:100] *= 50  # outside the grid
        P = X.astype(np.float64) @ V
        centres = P[rng.choice(len(P), rng.integers(2, 80), replace=False)] + rng.normal(size=l) * 0.1
        sides = rng.random(len(centres)) < 0.5
        sides[:2] = [False, True]
        # rows whose projection is (about) the midpoint of two centres of opposite sides: x + V (m - x V) / (V'V)
        a, b = rng.choice(np.flatnonzero(~sides)), rng.choice(np.flatnonzero(sides))
        mid = 0.5 * (centres[a] + centres[b])
        X64 = X.astype(np.float64)
        X64[100:200] += np.linalg.lstsq(V.T, (mid - P[100:200]).T, rcond=None)[0].T
        X = X64.astype(dtype)
        tree = centre_tree(V, centres, sides)
        np.testing.assert_array_equal(tree.apply(X), route_node_by_node(tree, X))
        _, status = Router(tree).walk(X)
        assert (status == AT_LEAF).mean() > 0.9  # the compiled walk decided nearly all rows itself


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_equidistant_from_centres_of_both_sides(dtype):
    """Integer rows, a dyadic projection and centres placed symmetrically about rows' projections: each such
    row is exactly equidistant from a centre of either side in any precision, or one float64 step off. The
    router leaves them to the rule (the k-d tree breaks the tie its own way) and routes the same."""
    rng = np.random.default_rng(12)
    d = 16
    X = rng.integers(-20, 21, size=(2000, d)).astype(dtype)
    V = rng.integers(-8, 9, size=(d, 2)) / 8.0
    P = X.astype(np.float64) @ V
    centres, sides = [], []
    for i in range(0, 40, 2):
        offset = rng.integers(1, 9, size=2) / 4.0
        shift = [0.0, np.spacing(P[i, 0]), -np.spacing(P[i, 0])][i % 3]
        centres += [P[i] + offset + [shift, 0.0], P[i] - offset]
        sides += [False, True]
    tree = centre_tree(V, np.array(centres), np.array(sides))
    np.testing.assert_array_equal(tree.apply(X), route_node_by_node(tree, X))
    _, status = Router(tree).walk(X)
    assert (status[:40:2][::3] == UNDECIDED).all()  # the exact ties
    assert (status == AT_LEAF).mean() > 0.9


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tree_of_hyperplanes_and_nearest_centres(dtype):
    """A tree mixing hyperplane and two-dimensional nearest-centre splits routes through the router as node by
    node, the nearest-centre nodes decided in the compiled walk."""
    rng = np.random.default_rng(13)
    X = mixture(rng, 20_000, 10, dtype)
    tree = grow_random_tree(X, rng, 14, rule_kinds=("hyperplane", "centres"))
    assert {type(node.rule) for node in tree.nodes.values() if not node.is_leaf} == {HyperplaneRule, NearestCentreRule}
    for node in tree.nodes.values():  # off the median row: float64 itself routes a row on a threshold either way
        if isinstance(node.rule, HyperplaneRule):  # with the rows beside it (BLAS blocks the product by them)
            node.rule.b += 1e-7
    np.testing.assert_array_equal(tree.apply(X), route_node_by_node(tree, X))
    Y = mixture(np.random.default_rng(14), 5000, 10, dtype)
    np.testing.assert_array_equal(tree.apply(Y), route_node_by_node(tree, Y))
    _, status = Router(tree).walk(Y)
    assert (status == AT_LEAF).mean() > 0.99
