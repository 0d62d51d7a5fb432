"""The issue's optional "one scale for every index", measured before building it: at each node, candidate splits
by several indices (default MDH, NCut and MC), each found on the same random half of the node's rows and tested
by the held-out dip test on the other half; the most significant one is made if its p-value, Bonferroni-corrected
for the number of candidates, is below 0.01. A prototype grower (breadth first, no cap) on the ten bundled sets,
beside the same grower with each index alone, so that the comparison isolates the choice of index.

    python benchmarks/auto_k_combined.py [--candidates mdh,ncut,mc] [--output FILE]
"""

import argparse

import numpy as np
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown
from sklearn.metrics import adjusted_rand_score

from lowdens_dask.backend import InMemoryData
from lowdens_dask.datasets import list_datasets, load_dataset
from lowdens_dask.pursuit import find_hyperplane
from lowdens_dask.pursuit.significance import half_indices, held_out_test

LEVEL = 0.01


def grow(X: np.ndarray, methods: list[str]) -> np.ndarray:
    pending, final, node = [np.arange(len(X))], [], 0
    while pending:
        idx = pending.pop(0)
        node += 1
        if len(idx) < 8:
            final.append(idx)
            continue
        fit, test = half_indices(len(idx), 0, node)
        best = None
        for method in methods:
            hp = find_hyperplane(method, InMemoryData(X[idx[fit]]), min_size=0.5)
            p = held_out_test(InMemoryData(X[idx[test]]), hp.v)["p_value"] * len(methods)
            if hp.valid and (best is None or p < best[0]):
                best = (p, hp)
        side = None if best is None or best[0] >= LEVEL else X[idx] @ best[1].v >= best[1].b
        if side is None or side.all() or not side.any():
            final.append(idx)
            continue
        pending += [idx[~side], idx[side]]
    labels = np.zeros(len(X), dtype=int)
    for k, rows in enumerate(final):
        labels[rows] = k
    return labels


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", default="mdh,ncut,mc")
    parser.add_argument("--output", default=str(RESULTS_DIR / "auto-k-combined.md"))
    args = parser.parse_args(argv)
    candidates = args.candidates.split(",")
    variants = [[m] for m in candidates] + [candidates]
    data = {name: load_dataset(name) for name in list_datasets()}
    rows, summary = [], []
    found = {}
    for variant in variants:
        label = "+".join(variant)
        for name, (X, y) in data.items():
            X = X[:, X.std(0) > 0]
            labels = grow(X, variant)
            found[label, name] = (len(np.unique(labels)), len(np.unique(y)), adjusted_rand_score(y, labels))
        aris = [found[label, name][2] for name in data]
        gaps = [abs(found[label, name][0] - found[label, name][1]) for name in data]
        summary.append([label, fmt(np.mean(aris)), fmt(np.median(gaps), 1)])
        print(summary[-1], flush=True)
    for name in data:
        rows.append([name, found["+".join(variants[0]), name][1]]
                    + [f"{found['+'.join(v), name][0]} / {found['+'.join(v), name][2]:.2f}" for v in variants])
    body = (
        "## Summary\n\n" + markdown_table(["candidates", "mean ARI", "median abs(K found - K)"], summary)
        + "\n\n## Per data set: K found / ARI\n\n"
        + markdown_table(["dataset", "K", *["+".join(v) for v in variants]], rows)
    )
    write_markdown(args.output, "n_clusters='auto': the most significant of several indices at each node", command_line(), body)


if __name__ == "__main__":
    main()
