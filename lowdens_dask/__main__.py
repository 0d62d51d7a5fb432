"""Demo: ``python -m lowdens_dask [--dataset NAME] [--n-clusters K|auto] [--method NAME]``.

Clusters a bundled dataset with a divisive estimator (MDHClustering by default; any method of
``lowdens_dask.METHODS``), prints the cluster tree and the scores against the true labels.
"""

# SPDX-License-Identifier: BSD-3-Clause

import argparse
import time

import numpy as np

from . import METHODS
from .datasets import list_datasets, load_dataset
from .metrics import cluster_performance


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lowdens_dask", description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="optidigits", choices=list_datasets())
    parser.add_argument(
        "--n-clusters",
        type=lambda text: text if text == "auto" else int(text),
        default=None,
        help="K or 'auto' (chosen by the significance of each split); default: the number of true classes",
    )
    parser.add_argument("--method", default="mdh", choices=sorted(METHODS), help="default: mdh")
    args = parser.parse_args(argv)

    X, y = load_dataset(args.dataset)
    k = args.n_clusters or len(np.unique(y))
    print(f"{args.dataset}: {X.shape[0]} rows x {X.shape[1]} features, {len(np.unique(y))} classes")
    start = time.perf_counter()
    estimator = METHODS[args.method].clustering
    model = estimator(n_clusters=k).fit(X)
    elapsed = time.perf_counter() - start
    print(
        f"{estimator.__name__}(n_clusters={k!r}) fitted in {elapsed:.2f} s, {model.n_clusters_} clusters (includes "
        "numba compilation on first run)\n"
    )
    print(model.tree_.describe())
    print()
    for name, value in cluster_performance(y, model.labels_).items():
        print(f"{name:>14}: {value:.3f}")


if __name__ == "__main__":
    main()
