"""Issue 54, item 3: scikit-learn's names (``max_iter``, ``tol``), ``leaf_order`` for the order of the leaves,
``penalty_exponent`` for MDH's penalty exponent, and the divisive classes named alike. The old names keep working
for one release, each with a ``FutureWarning`` that names the new one, and give the fit the new names give."""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator

import lowdens_dask
from lowdens_dask import ClusterTree, DePDDPClustering, IPDDPClustering, MDHClustering, PDDPClustering, SCPPClustering

ESTIMATORS = [
    getattr(lowdens_dask, name)
    for name in lowdens_dask.__all__
    if isinstance(getattr(lowdens_dask, name), type) and issubclass(getattr(lowdens_dask, name), BaseEstimator)
]


def blobs(seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(0, 1, (120, 3)), rng.normal(6, 1, (120, 3)), rng.normal((0, 8, 0), 1, (120, 3))])


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_init_is_written_out(cls):
    """Every public estimator's ``__init__`` is source in its class (help() and editors show it) and names each
    parameter ``get_params`` reports."""
    source = inspect.getsource(cls.__init__)
    for name in cls._get_param_names():
        assert f"self.{name} = {name}" in source, name


@pytest.mark.parametrize(
    "old, new",
    [
        ({"maxiter": 7}, {"max_iter": 7}),
        ({"ftol": 1e-3}, {"tol": 1e-3}),
        ({"eps": 0.9}, {"penalty_exponent": 0.9}),
        ({"split_index": "fval"}, {"leaf_order": "fval"}),
    ],
)
def test_old_parameter_names_warn_and_fit_alike(old, new):
    X = blobs()
    with pytest.warns(FutureWarning, match=f"{next(iter(old))} was renamed {next(iter(new))}"):
        before = MDHClustering(n_clusters=3, random_state=0, **old).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        after = MDHClustering(n_clusters=3, random_state=0, **new).fit(X)
    np.testing.assert_array_equal(before.labels_, after.labels_)


def test_spectral_max_iter_is_its_maxiter():
    X = blobs()
    with pytest.warns(FutureWarning, match="maxiter was renamed max_iter"):
        before = SCPPClustering(n_clusters=3, maxiter=5, random_state=0).fit(X)
    after = SCPPClustering(n_clusters=3, max_iter=5, random_state=0).fit(X)
    np.testing.assert_array_equal(before.labels_, after.labels_)
    assert after.tree_.params["maxiter"] == 5  # the pursuit's keyword, recorded in the tree


@pytest.mark.parametrize(
    "old, new", [("PDDP", PDDPClustering), ("DePDDP", DePDDPClustering), ("IPDDP", IPDDPClustering)]
)
def test_old_class_names_warn_and_fit_alike(old, new):
    X = blobs()
    with pytest.warns(FutureWarning, match=f"{old} was renamed {new.__name__}"):
        est = getattr(lowdens_dask, old)(n_clusters=3)
    assert isinstance(est, new) and old not in lowdens_dask.__all__
    np.testing.assert_array_equal(est.fit(X).labels_, new(n_clusters=3).fit(X).labels_)


def test_tree_update_is_n_updates():
    tree = ClusterTree(2)
    tree.n_updates = 3
    with pytest.warns(FutureWarning, match="renamed n_updates"):
        assert tree.update == 3


@pytest.mark.parametrize(
    "name, params",
    [
        ("MSCClustering", {"n_landmarks": 30, "solver": "landmarks"}),
        ("SVMRelabelClustering", {}),
        ("SCPPClustering", {"centre_init": "k-means++", "n_centres": 40}),
        ("MDHClustering", {"mode": "summary"}),
    ],
)
def test_random_state_none_is_seed_zero(name, params):
    """One meaning of ``random_state=None`` everywhere: seed 0 (before, MSC, SVM-relabel and the spectral
    estimators drew from the global generator, so two default fits could differ). The fitted trees (their split
    values, which the landmarks, restarts and centres move) are those of ``random_state=0``, whatever the global
    generator's state."""
    X = blobs(1)
    cls = getattr(lowdens_dask, name)
    trees = []
    for seed in (1, 2):
        np.random.seed(seed)
        trees.append(cls(n_clusters=3, **params).fit(X).tree_.to_json())
    assert trees[0] == trees[1] == cls(n_clusters=3, random_state=0, **params).fit(X).tree_.to_json()


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_parameter_has_its_constraints(cls):
    """Each estimator declares one table (scikit-learn's ``_parameter_constraints`` form) with every parameter it
    takes, an old name checked by its new name's; its default values satisfy it."""
    from lowdens_dask.estimators._constraints import RENAMED, check_constraints

    table = cls._parameter_constraints
    old = {RENAMED[name] for name in table if name in RENAMED}
    assert set(cls._get_param_names()) == set(table) | (old & set(cls._get_param_names()))
    check_constraints(table, cls().get_params(), cls.__name__)


def test_the_tables_option_values_are_the_librarys():
    """The tables name some options as literals (the module imports only the standard library, for the command
    line); they are the options the layers below define."""
    from lowdens_dask.estimators._constraints import BANDWIDTH_RANGE, PARAMETER_CONSTRAINTS, StrOptions
    from lowdens_dask.indices.minimum_density import BANDWIDTH_RANGE as INDEX_RANGE
    from lowdens_dask.indices.spectral import LAPLACIANS, SIMILARITIES
    from lowdens_dask.pursuit.msc import METRICS, WEIGHTS
    from lowdens_dask.pursuit.spectral import SCHEMES
    from lowdens_dask.pursuit.svm_relabel import GAMMA_RULES, PERTURBATIONS, SCHEDULES

    def options(table, name):
        return {o for c in PARAMETER_CONSTRAINTS[table][name] if isinstance(c, StrOptions) for o in c.options}

    assert BANDWIDTH_RANGE == INDEX_RANGE
    assert options("SCPP", "laplacian") == set(LAPLACIANS) and options("SCPP", "similarity") == set(SIMILARITIES)
    assert options("SCPP", "scheme") == set(SCHEMES)
    assert options("MSC", "weight") == set(WEIGHTS) and options("MSC", "metric") == set(METRICS)
    assert options("SVMRelabelClustering", "gamma") == set(GAMMA_RULES)
    assert options("SVMRelabelClustering", "perturbation") == set(PERTURBATIONS)
    assert options("SVMRelabelClustering", "schedule") == set(SCHEDULES)
