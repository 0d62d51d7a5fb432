"""The parameters of each registered method, by name, so that the ``lowdens`` command refuses an unknown
``--param`` in a fraction of a second, before it imports the library (scikit-learn alone takes seconds to import).

The estimators are the source: ``tests/test_cli.py::test_parameter_names_are_the_estimators`` compares this table
with each method's ``get_params()`` (and says what to change) so that the two cannot drift apart.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

#: The parameters SCPP and LMSC share (SCPP also takes ``laplacian``).
_SPECTRAL = frozenset(
    {
        "betas",
        "centre_init",
        "centres_above",
        "decay",
        "labels_store",
        "max_clusters",
        "max_microclusters",
        "max_iter",
        "maxiter",
        "microcluster_init",
        "microclusters_above",
        "min_side",
        "mode",
        "n_centres",
        "n_clusters",
        "n_components",
        "n_microclusters",
        "nonfinite",
        "omega",
        "random_state",
        "rows_per_microcluster",
        "scale_multiplier",
        "scheme",
        "significance_level",
        "similarity",
        "leaf_order",
        "split_index",
        "standardize",
        "storage_options",
    }
)

#: The parameters of the hyperplane tree growers (PDDP takes these and no more).
_GROWER = frozenset(
    {
        "decay",
        "force_n_clusters",
        "labels_store",
        "max_clusters",
        "max_microclusters",
        "max_node_bytes",
        "min_cluster_size",
        "min_size",
        "mode",
        "n_clusters",
        "nonfinite",
        "random_state",
        "rows_per_microcluster",
        "significance_level",
        "leaf_order",
        "split_index",
        "standardize",
        "storage_options",
    }
)
#: The growers whose hyperplanes are pursued (MDH, NCut, MC) add the pursuit's parameters.
_PURSUED = _GROWER | {"ftol", "max_iter", "maxiter", "refine", "tol", "v0"}

#: method name (``lowdens_dask.METHODS``) -> the names its clustering estimator's ``get_params()`` returns (the
#: renamed parameters' old names, ``maxiter``, ``ftol``, ``eps`` and ``split_index``, included: they work for one
#: release, with a FutureWarning)
PARAMETER_NAMES: dict[str, frozenset[str]] = {
    "mdh": _PURSUED | {"alphas", "bandwidth", "eps", "eta", "penalty_exponent"},
    "ncut": _PURSUED | {"scale"},
    "mc": _PURSUED,
    "pddp": _GROWER,
    "depddp": _GROWER | {"bandwidth"},
    "ipddp": _GROWER | {"percentile"},
    "scpp": _SPECTRAL | {"laplacian"},
    "lmsc": _SPECTRAL,
    "msc": frozenset(
        {
            "labels_store",
            "max_clusters",
            "max_microclusters",
            "metric",
            "mode",
            "n_clusters",
            "n_landmarks",
            "nonfinite",
            "random_state",
            "rows_per_microcluster",
            "sigma2",
            "significance_level",
            "solver",
            "standardize",
            "storage_options",
            "weight",
        }
    ),
    "svm-relabel": frozenset(
        {
            "C",
            "annealing",
            "beta",
            "gamma",
            "labels_store",
            "max_clusters",
            "max_iter",
            "max_microclusters",
            "max_points",
            "min_cluster_fraction",
            "mode",
            "n_anneal_steps",
            "n_clusters",
            "n_null",
            "n_restarts",
            "nonfinite",
            "null_alpha",
            "patience",
            "perturbation",
            "random_state",
            "relabel_fraction",
            "rows_per_microcluster",
            "schedule",
            "significance_level",
            "standardize",
            "storage_options",
            "t0",
        }
    ),
}


#: A run's settings where it is not given them (the ``lowdens`` command, the flow, ``job.plan_run``); n_clusters and
#: random_state are not the estimators' defaults (8 and None).
RUN_DEFAULTS = {"method": "mdh", "n_clusters": "auto", "random_state": 0}


def check_parameter_names(method: str, names) -> None:
    """A ``ValueError`` naming the parameters in ``names`` that ``method`` does not take, and those it takes."""
    accepted = PARAMETER_NAMES[method]
    unknown = sorted(set(names) - accepted)
    if unknown:
        raise ValueError(f"Unknown parameters {unknown} for method {method!r}; it takes {sorted(accepted)}.")
