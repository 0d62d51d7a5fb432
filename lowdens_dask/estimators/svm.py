"""SVM-relabel clustering and support vector clustering: placeholder, being written (issue 12)."""

# SPDX-License-Identifier: BSD-3-Clause

from sklearn.base import BaseEstimator, ClusterMixin


class SVMRelabelClustering(ClusterMixin, BaseEstimator):
    _method = "svm-relabel"


class SupportVectorClustering(ClusterMixin, BaseEstimator):
    pass
