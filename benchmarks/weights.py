"""Weights in every mode (issue 53, item 10): a fit of distinct rows with integer weights against the same rows
repeated, in summary mode and in exact mode, on the ten bundled sets.

For each set (K = number of classes), integer weights w drawn uniformly from {1, 2, 3} (seed 0):

- summary mode: ``MDHClustering(n_clusters=K, mode="summary", random_state=0)`` fitted on ``np.repeat(X, w, 0)``
  and on ``(X, sample_weight=w)``; K of each and the ARI between the repeated fit's labels of X (``predict``) and the
  weighted fit's. Beside it, summary mode's own spread: the repeated rows fitted with ``random_state=1`` against
  ``random_state=0`` (two summaries of the same rows: different microclusters), the ARI of the two.
- exact mode: the same estimator with ``mode="exact"`` on Dask arrays (chunks of 500 rows; weights as a Dask array),
  repeated against weighted, and whether the weighted exact fit's labels are identical to the weighted fit in memory;
  beside it, the same pair (repeated against weighted) in memory, where exact mode's figure comes from: the
  repeated rows' sums are taken in another order than the weighted rows', and a split that rounding moves by
  1e-9 can change the splits below it.

    python benchmarks/weights.py [--sets a,b] [--output FILE]
"""

import argparse
import time
import warnings

import dask.array as da
import numpy as np
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown
from sklearn.metrics import adjusted_rand_score as ari

from lowdens_dask import MDHClustering
from lowdens_dask.datasets import list_datasets, load_dataset


def one_set(name: str) -> list:
    X, y = load_dataset(name, return_X_y=True)
    K = len(np.unique(y))
    w = np.random.default_rng(0).integers(1, 4, X.shape[0])
    R = np.repeat(X, w, 0)
    start = time.perf_counter()

    def summary(data, seed, **kw):
        return MDHClustering(n_clusters=K, mode="summary", random_state=seed).fit(data, **kw)

    rep, wtd, rep1 = summary(R, 0), summary(X, 0, sample_weight=w), summary(R, 1)
    lr = rep.predict(X)

    def exact(data, **kw):
        chunks = (500, X.shape[1])
        return MDHClustering(n_clusters=K, mode="exact", random_state=0).fit(da.from_array(data, chunks=chunks), **kw)

    erep, ewtd = exact(R), exact(X, sample_weight=da.from_array(w, chunks=500))
    le = np.asarray(ewtd.labels_)
    memory = MDHClustering(n_clusters=K, random_state=0).fit(X, sample_weight=w).labels_
    memory_repeated = MDHClustering(n_clusters=K, random_state=0).fit(R).predict(X)
    return [
        name, X.shape[0], int(w.sum()), K,
        f"{rep.n_clusters_} / {wtd.n_clusters_}", f"{rep.n_microclusters_} / {wtd.n_microclusters_}",
        fmt(ari(lr, wtd.labels_)), fmt(ari(lr, rep1.predict(X))),
        f"{erep.n_clusters_} / {ewtd.n_clusters_}", fmt(ari(np.asarray(erep.predict(X)), le)),
        "yes" if np.array_equal(le, memory) else f"no ({int((le != memory).sum())} rows)",
        fmt(ari(memory_repeated, memory)),
        fmt(time.perf_counter() - start, 1),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(list_datasets()))
    parser.add_argument("--output", default=str(RESULTS_DIR / "weights.md"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for name in args.sets.split(","):
        rows.append(one_set(name))
        print(" | ".join(map(str, rows[-1])), flush=True)
    header = [
        "set", "rows", "total weight", "K", "summary K: repeated / weighted", "microclusters: repeated / weighted",
        "summary ARI repeated vs weighted", "summary ARI seed 0 vs seed 1 (repeated)",
        "exact K: repeated / weighted", "exact ARI repeated vs weighted", "exact weighted = memory weighted",
        "in memory: ARI repeated vs weighted", "s",
    ]  # fmt: skip
    summary_ok = sum(r[4].split(" / ")[0] == r[4].split(" / ")[1] and float(r[6]) >= 0.99 for r in rows)
    exact_ok = sum(r[8].split(" / ")[0] == r[8].split(" / ")[1] and float(r[9]) >= 0.99 for r in rows)
    body = (
        "Protocol: see the docstring of `benchmarks/weights.py`. Goal (issue 53, item 10): the same K and ARI >= 0.99 "
        "against the repeated rows, in summary and in exact mode.\n\n"
        + markdown_table(header, rows)
        + f"\n\nSummary mode: the goal holds on {summary_ok} of {len(rows)} sets; exact mode: on {exact_ok} of "
        f"{len(rows)}.\n"
    )
    write_markdown(args.output, "Weights in every mode: weighted rows against the rows repeated", command_line(), body)


if __name__ == "__main__":
    main()
