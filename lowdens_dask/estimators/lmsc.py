"""LMSC and LMSCClustering: large-margin spectral clustering (Hofmeyr, Pavlidis & Eckley, Statistics and Computing 29, 2019, §9.3)."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from collections.abc import Callable

from ._constraints import PARAMETER_CONSTRAINTS
from .scpp import _DIVISIVE_PARAMETERS_DOC, _ONE_SPLIT_ATTRIBUTES, _clustering_doc, _OneSplit, _SpectralClustering


class LMSCClustering(_SpectralClustering):
    __doc__ = _clustering_doc(
        """Divisive large-margin spectral clustering (LMSC; Hofmeyr, Pavlidis & Eckley, Statistics and
    Computing 2019, §5 and §9.3): SCPP with the standard Laplacian and σ halved after each minimisation until
    the projection stops changing, which tends to the largest-margin hyperplane (Theorem 4); above the
    microcluster threshold the microclusters are recomputed on the projected rows at each σ. The paper's
    LMSC is ``n_components=1`` (a hyperplane), LMSC_o ``n_components=2``. The R package has no LMSC: the
    defaults are the paper's.

    Parameters
    ----------
"""
        + _DIVISIVE_PARAMETERS_DOC,
        1,
        None,
        "paper",
    )

    _method = "lmsc"
    _large_margin = True
    laplacian = "standard"  # not a parameter: LMSC's theory is for L (§9.3)

    _parameter_constraints = PARAMETER_CONSTRAINTS["LMSCClustering"]

    def __init__(
        self,
        n_clusters: int | str | None = 8,
        *,
        leaf_order: str | Callable = "size",
        max_clusters: int | None = None,
        significance_level: float = 0.01,
        decay: float | None = None,
        n_components: int = 1,
        scheme="paper",
        omega=1.0,
        similarity=None,
        scale_multiplier=1.0,
        betas=None,
        n_centres=200,
        centres_above=None,
        centre_init="farthest",
        min_side=None,
        max_iter: int = 100,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        split_index="deprecated",  # now leaf_order (FutureWarning)
        maxiter="deprecated",  # now max_iter (FutureWarning)
        n_microclusters="deprecated",  # now n_centres (FutureWarning)
        microclusters_above="deprecated",  # now centres_above (FutureWarning)
        microcluster_init="deprecated",  # now centre_init (FutureWarning)
    ):
        self.n_clusters = n_clusters
        self.leaf_order = leaf_order
        self.max_clusters = max_clusters
        self.significance_level = significance_level
        self.decay = decay
        self.n_components = n_components
        self.scheme = scheme
        self.omega = omega
        self.similarity = similarity
        self.scale_multiplier = scale_multiplier
        self.betas = betas
        self.n_centres = n_centres
        self.centres_above = centres_above
        self.centre_init = centre_init
        self.min_side = min_side
        self.max_iter = max_iter
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.split_index = split_index
        self.maxiter = maxiter
        self.n_microclusters = n_microclusters
        self.microclusters_above = microclusters_above
        self.microcluster_init = microcluster_init


class LMSC(_OneSplit, _SpectralClustering):
    __doc__ = (
        _clustering_doc(
            """One large-margin spectral bi-partition (LMSC; Hofmeyr, Pavlidis & Eckley, Statistics and Computing
    2019, §9.3): see :class:`LMSCClustering`. With ``n_components=1`` the split is a hyperplane.

    Parameters
    ----------""",
            1,
            None,
            "paper",
        )
        + _ONE_SPLIT_ATTRIBUTES
    )

    _method = "lmsc"
    _large_margin = True
    laplacian = "standard"  # not a parameter: LMSC's theory is for L (§9.3)

    _parameter_constraints = PARAMETER_CONSTRAINTS["LMSC"]

    def __init__(
        self,
        *,
        n_components: int = 1,
        scheme="paper",
        omega=1.0,
        similarity=None,
        scale_multiplier=1.0,
        betas=None,
        n_centres=200,
        centres_above=None,
        centre_init="farthest",
        min_side=None,
        max_iter: int = 100,
        standardize: bool = False,
        mode: str = "auto",
        rows_per_microcluster: float = 20,
        max_microclusters: int | None = 1024,
        nonfinite: str = "raise",
        random_state: int | None = None,
        storage_options: dict | None = None,
        labels_store: str | None = None,
        maxiter="deprecated",  # now max_iter (FutureWarning)
        n_microclusters="deprecated",  # now n_centres (FutureWarning)
        microclusters_above="deprecated",  # now centres_above (FutureWarning)
        microcluster_init="deprecated",  # now centre_init (FutureWarning)
    ):
        self.n_components = n_components
        self.scheme = scheme
        self.omega = omega
        self.similarity = similarity
        self.scale_multiplier = scale_multiplier
        self.betas = betas
        self.n_centres = n_centres
        self.centres_above = centres_above
        self.centre_init = centre_init
        self.min_side = min_side
        self.max_iter = max_iter
        self.standardize = standardize
        self.mode = mode
        self.rows_per_microcluster = rows_per_microcluster
        self.max_microclusters = max_microclusters
        self.nonfinite = nonfinite
        self.random_state = random_state
        self.storage_options = storage_options
        self.labels_store = labels_store
        self.maxiter = maxiter
        self.n_microclusters = n_microclusters
        self.microclusters_above = microclusters_above
        self.microcluster_init = microcluster_init
