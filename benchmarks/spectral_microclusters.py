"""Sensitivity of SCPPClustering to the number of microclusters (the paper's §7.4 and Figs. 9-10 argue that 200
suffice): V-measure, ARI and time at its defaults, K = true K, for each ``n_microclusters``, on the bundled
sets above 1,000 rows (the data as shipped, constant columns dropped). Each setting is fitted ``--seeds``
times with k-means++ microclusters seeded 0, 1, ... (the mean is reported; time is the median fit).

    python benchmarks/spectral_microclusters.py [--counts 50,100,200,400] [--datasets a,b] [--seeds 2]
                                                [--output FILE]
"""

import argparse
import statistics
import time
import warnings

import numpy as np
from harness import RESULTS_DIR, command_line, drop_constant_columns, markdown_table, write_markdown

from lowdens_dask import SCPPClustering
from lowdens_dask.datasets import load_dataset
from lowdens_dask.metrics import cluster_performance

DATASETS = ["imageseg", "mfdigits", "optidigits", "pendigits", "satellite"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="50,100,200,400")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--output", default=str(RESULTS_DIR / "spectral-microclusters.md"))
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    rows = []
    for name in args.datasets.split(","):
        X, y = load_dataset(name, return_X_y=True)
        X = drop_constant_columns(X)
        k = int(np.unique(y).size)
        line = [name, X.shape[0]]
        for count in counts:
            scores, times = [], []
            for seed in range(args.seeds):
                model = SCPPClustering(k, n_centres=count, centre_init="k-means++", random_state=seed)
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X)
                times.append(time.perf_counter() - start)
                scores.append(cluster_performance(y, model.labels_)["v_measure"])
            line.append(f"{np.mean(scores):.3f} ({statistics.median(times):.1f} s)")
            print(name, count, line[-1], flush=True)
        rows.append(line)
    body = (
        f"`SCPPClustering(K, n_centres=m, centre_init='k-means++', random_state=seed)`, seeds 0-"
        f"{args.seeds - 1}: mean V-measure (median time per fit).\n\n"
        + markdown_table(["dataset", "n"] + [f"m = {c}" for c in counts], rows)
    )
    write_markdown(args.output, "SCPP: sensitivity to the number of microclusters", command_line(), body)


if __name__ == "__main__":
    main()
