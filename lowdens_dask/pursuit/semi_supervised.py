"""Semi-supervised minimum density hyperplanes (MDP² for SSC; Pavlidis, Hofmeyr & Tasoulis, JMLR 2016, §2.4 and
§5.2.1): the pursuit of :class:`~lowdens_dask.indices.semi_supervised.SemiSupervisedDensityIndex` from the best
of the paper's initial directions, with the result oriented so that ``v.x > b`` is the positive class."""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from ..backend import InMemoryData
from ..indices.semi_supervised import SemiSupervisedDensityIndex
from .hyperplanes import Hyperplane, pursue


def initial_directions(
    data: InMemoryData, labels: np.ndarray, vecs: np.ndarray, svm_C: float, random_state: int | None = None
) -> list[np.ndarray]:
    """The paper's candidates (§5.2.1): +-PC1, +-PC2 (f_SSC depends on the orientation) and the normal of a
    linear SVM trained on the labelled rows alone (its sign already meaningful).

    The SVM weighs each labelled row by its label weight relative to the largest, so that its per-row cost is
    ``svm_C`` times a number in (0, 1]: liblinear's solver did not return when every per-row cost was tiny (label
    weights of 1e-300 with C = 1e12: issue 22, point 6). ``random_state`` seeds liblinear's coordinate descent (its
    result differed from fit to fit where it stops at ``max_iter``)."""
    starts = [sign * vecs[:, j] for j in range(min(2, vecs.shape[1])) for sign in (1.0, -1.0)]
    lab = np.flatnonzero(labels)
    if np.unique(np.sign(labels[lab])).size == 2:
        weight = np.abs(labels[lab])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svm = LinearSVC(C=svm_C, max_iter=10_000, random_state=random_state)
            svm.fit(data.X[lab], np.sign(labels[lab]), sample_weight=weight / weight.max())
        w = svm.coef_[0]
        if np.all(np.isfinite(w)) and np.any(w != 0):
            starts.append(w / np.linalg.norm(w))
    return starts


def semi_supervised_hyperplane(
    data: InMemoryData,
    labels: np.ndarray,
    *,
    bandwidth=None,
    alphas=None,
    gammas=None,
    eta: float = 1e-2,
    eps: float = 1.0 - 1e-6,
    maxiter: int = 50,
    ftol: float = 1e-5,
    svm_C: float = 1.0,
    starts: str = "best",
    random_state: int | None = None,
) -> Hyperplane:
    """The semi-supervised MDH of ``data`` for ``labels`` (aligned with the rows: the class, +1 or -1, times the
    row's label weight; 0 for unlabelled rows).

    ``starts="best"`` (the paper) runs the continuation from the candidate with the smallest phi_SSC at the first
    stage; ``"all"`` runs it from every candidate and keeps the lowest final f_SSC. The hyperplane is returned
    with ``v.x > b`` on the side of the labels +1 (where the labelled rows disagree, the orientation that
    classifies more of them correctly; ties by the sum of their signed distances). ``random_state`` seeds the SVM.
    """
    params = {"labels": labels, "eta": eta, "eps": eps, "bandwidth": bandwidth}
    if alphas is not None:
        params["alphas"] = alphas
    if gammas is not None:
        params["gammas"] = gammas
    vals, vecs = data.leading_eigenvectors(2)
    index = SemiSupervisedDensityIndex.for_node(data, vals, vecs, **params)
    candidates = initial_directions(data, labels, vecs, svm_C, random_state)
    if starts == "best":
        mean = data.mean()
        first = index.stages[0]
        values = [index.evaluate(data.project(u) - mean @ u, data.weights, first).value for u in candidates]
        candidates = [candidates[int(np.argmin(values))]]
    hp = pursue(data, index, candidates, maxiter=maxiter, ftol=ftol)
    return orient(hp, data.X, labels)


def orient(hp: Hyperplane, X: np.ndarray, labels: np.ndarray) -> Hyperplane:
    """(v, b) or (-v, -b), whichever puts more label weight on its side: +1 on ``v.x > b`` (the pursuit returns
    hyperplanes in a canonical orientation that ignores the labels)."""
    lab = np.flatnonzero(labels)
    margin = np.sign(labels[lab]) * (X[lab] @ hp.v - hp.b)
    weight = np.abs(labels[lab])
    correct = float(weight @ np.sign(margin))
    if correct < 0 or (correct == 0 and weight @ margin < 0):
        return hp._replace(v=-hp.v, b=-hp.b)
    return hp
