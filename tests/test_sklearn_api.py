"""scikit-learn's estimator checks (API conformance) on every estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from lowdens_dask import MDH, PDDP, DePDDP, MDHClustering


def expected_failures(estimator):
    if isinstance(estimator, MDH):
        return {
            # Weighted and repeated fits agree to ~1e-6 relative (BFGS and the b search stop at finite
            # tolerances; see tests/test_mdh.py::test_integer_weights_equal_repeated_rows), not 1e-7.
            "check_sample_weight_equivalence_on_dense_data": "equal to ~1e-6, the optimiser's tolerance",
        }
    return {}


@parametrize_with_checks(
    [MDH(), MDHClustering(n_clusters=2), PDDP(n_clusters=2), DePDDP(n_clusters=2)],
    expected_failed_checks=expected_failures,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
