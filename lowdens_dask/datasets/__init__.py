"""Benchmark data sets bundled with lowdens-dask.

Ten labelled benchmark data sets, as distributed with the authors' R packages PPCI
(minimum density hyperplanes and divisive clustering) and SCPP (spectral projection
pursuit), are shipped as gzipped CSV files. Each file has a header row, numeric
feature columns and a final ``label`` column. Several were already imputed and scaled
in those packages. The ``source`` column names the original source, then the R package
the copy was taken from; the ``NOTICE`` file gives full sources and citations.

============  =====  ===  =======  ============================================
name          n      d    classes  source
============  =====  ===  =======  ============================================
breastcancer  699    9    2        UCI Breast Cancer Wisconsin (Original), PPCI
chart         600    60   6        UCI Synthetic Control Chart, SCPP
dermatology   366    34   6        UCI Dermatology, PPCI
imageseg      2310   19   7        UCI Statlog Image Segmentation, SCPP
mfdigits      2000   216  10       UCI Multiple Features (mfeat-fac), SCPP
optidigits    5620   64   10       UCI Optical Handwritten Digits, PPCI
pendigits     10992  16   10       UCI Pen-Based Handwritten Digits, PPCI
satellite     6435   36   6        UCI Statlog (Landsat Satellite), SCPP
yale          2000   600  10       Yale Face Database B (downsampled), PPCI
yeast         698    72   5        Stanford Yeast Cell Cycle Project, SCPP
============  =====  ===  =======  ============================================

Labels are the original class codes: integers for every data set except ``imageseg``,
whose labels are strings such as ``"BRICKFACE"``. Class codes need not be contiguous
(``satellite`` has no class 6).
"""

# Authors: The lowdens-dask developers
# SPDX-License-Identifier: BSD-3-Clause

import gzip
from importlib.resources import files
from typing import NamedTuple

import numpy as np
from sklearn.utils import Bunch

__all__ = ["dataset_info", "list_datasets", "load_dataset"]


class _DatasetInfo(NamedTuple):
    """Shape, class count and provenance of one bundled data set."""

    n_samples: int
    n_features: int
    n_classes: int
    source: str


_DATASETS: dict[str, _DatasetInfo] = {
    "breastcancer": _DatasetInfo(699, 9, 2, "UCI Breast Cancer Wisconsin (Original), PPCI"),
    "chart": _DatasetInfo(600, 60, 6, "UCI Synthetic Control Chart, SCPP"),
    "dermatology": _DatasetInfo(366, 34, 6, "UCI Dermatology, PPCI"),
    "imageseg": _DatasetInfo(2310, 19, 7, "UCI Statlog Image Segmentation, SCPP"),
    "mfdigits": _DatasetInfo(2000, 216, 10, "UCI Multiple Features (mfeat-fac), SCPP"),
    "optidigits": _DatasetInfo(5620, 64, 10, "UCI Optical Handwritten Digits, PPCI"),
    "pendigits": _DatasetInfo(10992, 16, 10, "UCI Pen-Based Handwritten Digits, PPCI"),
    "satellite": _DatasetInfo(6435, 36, 6, "UCI Statlog (Landsat Satellite), SCPP"),
    "yale": _DatasetInfo(2000, 600, 10, "Yale Face Database B (downsampled), PPCI"),
    "yeast": _DatasetInfo(698, 72, 5, "Stanford Yeast Cell Cycle Project, SCPP"),
}


def _check_name(name: str) -> None:
    """Raise a ValueError naming the available data sets if `name` is unknown."""
    if name not in _DATASETS:
        raise ValueError(f"Unknown dataset {name!r}. Available datasets: {', '.join(list_datasets())}.")


def list_datasets() -> list[str]:
    """Return the names of the bundled data sets.

    Returns
    -------
    names : list of str
        Data set names in sorted order, each accepted by :func:`load_dataset`.
    """
    return sorted(_DATASETS)


def dataset_info(name: str) -> dict:
    """Describe a bundled data set without loading it.

    Parameters
    ----------
    name : str
        Data set name, one of :func:`list_datasets`.

    Returns
    -------
    info : dict
        Keys ``"n_samples"``, ``"n_features"``, ``"n_classes"`` (int) and
        ``"source"`` (str, the original source, then the R package the copy was
        taken from).

    Raises
    ------
    ValueError
        If `name` is not a bundled data set.
    """
    _check_name(name)
    return _DATASETS[name]._asdict()


def _parse_labels(tokens: list[str]) -> np.ndarray:
    """Return labels as int64 if every token is an integer, otherwise as strings."""
    try:
        return np.array([int(token) for token in tokens], dtype=np.int64)
    except ValueError:
        return np.array(tokens)


def load_dataset(name: str, *, return_X_y: bool = True) -> tuple[np.ndarray, np.ndarray] | Bunch:
    """Load a bundled data set.

    The file is read afresh on every call, so the returned arrays may be modified
    freely.

    Parameters
    ----------
    name : str
        Data set name, one of :func:`list_datasets`.
    return_X_y : bool, default=True
        If True, return ``(X, y)``. If False, return a :class:`~sklearn.utils.Bunch`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features as a C-contiguous float64 array. Returned when `return_X_y` is True.
    y : ndarray of shape (n_samples,)
        Original class labels: int64, or strings for ``imageseg``. Returned when
        `return_X_y` is True.
    data : :class:`~sklearn.utils.Bunch`
        Returned when `return_X_y` is False, with attributes ``data`` (X),
        ``target`` (y), ``feature_names`` (list of str, the CSV header),
        ``target_names`` (ndarray, the sorted distinct labels) and ``source`` (str).

    Raises
    ------
    ValueError
        If `name` is not a bundled data set.

    Examples
    --------
    >>> from lowdens_dask.datasets import load_dataset
    >>> X, y = load_dataset("breastcancer")
    >>> X.shape, X.dtype
    ((699, 9), dtype('float64'))
    >>> sorted(set(y.tolist()))
    [2, 4]
    """
    _check_name(name)
    resource = files(__name__) / "data" / f"{name}.csv.gz"
    with resource.open("rb") as raw, gzip.open(raw, "rt", encoding="ascii") as fh:
        lines = fh.read().splitlines()
    feature_names = lines[0].split(",")[:-1]
    X = np.loadtxt(
        lines[1:],
        delimiter=",",
        usecols=range(len(feature_names)),
        dtype=np.float64,
        ndmin=2,
    )
    y = _parse_labels([line.rsplit(",", 1)[1] for line in lines[1:]])
    X = np.ascontiguousarray(X)
    if return_X_y:
        return X, y
    return Bunch(
        data=X,
        target=y,
        feature_names=feature_names,
        target_names=np.unique(y),
        source=_DATASETS[name].source,
    )
