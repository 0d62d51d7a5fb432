"""Semi-supervised MDH: placeholder, being written (issue 12)."""

# SPDX-License-Identifier: BSD-3-Clause

from sklearn.base import BaseEstimator, ClassifierMixin


class MDHClassifier(ClassifierMixin, BaseEstimator):
    pass
