"""Exact against summary mode on generated cases with a known answer (issue 34, item 4).

Each case (:func:`lowdens_dask.testing.separated_groups`) is 2 to 5 groups at least 20 apart, in irregular row
chunks; the methods take turns. For each case, both modes fit it with ``n_clusters="auto"`` as a Dask array; a case
counts when the two find different numbers of clusters, and as wrong when either differs from the groups.

    python benchmarks/mode_agreement.py [--cases 400] [--methods IPDDP,MCClustering,DePDDP,PDDP]
"""

import argparse
import warnings

import dask.array as da
import numpy as np
from sklearn.metrics import adjusted_rand_score

import lowdens_dask
from lowdens_dask.testing import separated_groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--methods", default="IPDDP,MCClustering,DePDDP,PDDP")
    args = parser.parse_args()
    methods = args.methods.split(",")
    disagree = {m: 0 for m in methods}
    wrong = {m: 0 for m in methods}
    for case in range(args.cases):
        name = methods[case % len(methods)]
        X, truth, chunks = separated_groups(case)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = da.from_array(X, chunks=(chunks, X.shape[1]))
            fits = [getattr(lowdens_dask, name)(n_clusters="auto", mode=mode).fit(arr) for mode in ("exact", "summary")]
        found = [f.n_clusters_ for f in fits]
        k = len(np.unique(truth))
        disagree[name] += found[0] != found[1]
        wrong[name] += found[0] != k or found[1] != k
        if found[0] != found[1] or found[0] != k:
            aris = [round(adjusted_rand_score(truth, np.asarray(f.labels_)), 3) for f in fits]
            print(f"case {case} {name}: k={k}, exact {found[0]}, summary {found[1]}, ARI {aris}", flush=True)
    print("| method | cases | exact != summary | either != k |\n|---|---|---|---|")
    for name in methods:
        cases = len(range(methods.index(name), args.cases, len(methods)))
        print(f"| {name} | {cases} | {disagree[name]} | {wrong[name]} |")


if __name__ == "__main__":
    main()
