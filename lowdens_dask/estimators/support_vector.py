"""SupportVectorClustering."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

from sklearn.base import BaseEstimator, ClusterMixin

from ..backend.frame import standardisation
from ..pursuit.svm_relabel import (
    rbf_gamma,
    support_vector_clusters,
)
from ._constraints import PARAMETER_CONSTRAINTS
from ._params import validate_params
from ._validation import (
    check_fit_input,
    single_threaded_blas,
)


class SupportVectorClustering(ClusterMixin, BaseEstimator):
    """Support vector clustering (SVM-internal clustering; Ben-Hur, Horn, Siegelmann & Vapnik, JMLR 2001; spec §6),
    the comparator of the SVM-relabel paper.

    The smallest sphere enclosing the data in the Gaussian feature space is found (scikit-learn's
    ``OneClassSVM`` with nu = p: for a Gaussian kernel its dual is the SVDD dual of §6 with C = 1/(N p)); two
    points are connected when the segment between them stays inside the sphere at ``n_segment_points``
    sampled points, and clusters are the connected components. Points outside the sphere (bounded support
    vectors) are outliers.

    Parameters
    ----------
    gamma : {"auto", "median"} or float, default="median"
        The width q of exp(-q |x - x'|^2) ("scale at which data is probed"); Ben-Hur et al. raise q until
        clusters separate. "median": 1 / median |x - x'|^2; "auto": 1 / (2 total variance); both are multiplied
        by ``gamma_factor``.
    gamma_factor : float, default=4.0
        Multiplies a named gamma rule (ignored for a number). 4 separates two blobs, two concentric rings and
        setosa from the rest of raw Iris, where the median rule alone (factor 1) gives one cluster on the
        rings and on Iris (benchmarks/results/svm-relabel.md).
    bsv_fraction : float or None, default=None
        p = 1/(N C), the upper bound on the fraction of bounded SVs (outliers), in [1/N, 1]. None: 1/N (C = 1:
        no outliers).
    n_segment_points : int, default=20
        Points sampled on each segment (end points included).
    n_neighbors : int or None, default=None
        Test only each point's ``n_neighbors`` nearest neighbours (O(N k) segments instead of O(N^2)); None tests
        every pair (Ben-Hur et al.).
    outliers : {"nearest", "label"}, default="nearest"
        Points outside the sphere join the cluster of the nearest point inside it, or are labelled -1.
    standardize : bool, default=False
        z-score the columns first.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    n_clusters_ : int
    inside_ : ndarray of bool, shape (n_samples,)
        The row lies inside the sphere (R(x) <= R).
    gamma_, nu_ : float
        The kernel width and OneClassSVM's nu used.
    n_features_in_ : int
    """

    _parameter_constraints = PARAMETER_CONSTRAINTS["SupportVectorClustering"]

    def __init__(
        self,
        *,
        gamma="median",
        gamma_factor=4.0,
        bsv_fraction=None,
        n_segment_points=20,
        n_neighbors=None,
        outliers="nearest",
        standardize: bool = False,
    ):
        self.gamma = gamma
        self.gamma_factor = gamma_factor
        self.bsv_fraction = bsv_fraction
        self.n_segment_points = n_segment_points
        self.n_neighbors = n_neighbors
        self.outliers = outliers
        self.standardize = standardize

    def fit(self, X, y=None, sample_weight=None):
        """Cluster X (an array in memory; the sphere and the segment tests are O(N^2))."""
        validate_params(self)
        X, weights = check_fit_input(self, X, sample_weight)
        Z = X
        if self.standardize:
            mean, scale = standardisation(X, weights)
            Z = (X - mean) / scale
        gamma = float(self.gamma) if not isinstance(self.gamma, str) else None
        if gamma is None:
            keep = weights > 0
            gamma = self.gamma_factor * rbf_gamma(Z[keep], weights[keep], self.gamma)
        with single_threaded_blas():
            found = support_vector_clusters(
                Z,
                weights,
                gamma=gamma,
                bsv_fraction=self.bsv_fraction,
                n_segment_points=self.n_segment_points,
                n_neighbors=self.n_neighbors,
                outliers=self.outliers,
            )
        self.labels_ = found.labels
        self.n_clusters_ = found.n_clusters
        self.inside_ = found.inside
        self.gamma_ = found.gamma
        self.nu_ = found.nu
        return self
