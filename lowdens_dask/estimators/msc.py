"""Maximal separation clustering (MSC): placeholder, being written (issue 12)."""

# SPDX-License-Identifier: BSD-3-Clause

from sklearn.base import BaseEstimator, ClusterMixin


class MSC(ClusterMixin, BaseEstimator):
    _method = "msc"


class MSCClustering(ClusterMixin, BaseEstimator):
    _method = "msc"
