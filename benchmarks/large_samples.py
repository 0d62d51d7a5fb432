"""Issue 42: ``n_clusters="auto"`` on large samples drawn from the bundled sets, summary mode against memory.

For each bundled set (constant columns dropped), 200,000 rows are drawn by a smoothed bootstrap: rows with
replacement (seed 0) plus Gaussian noise per feature of

- **Scott**: sd · n^(-1/(d+4)) (n = 200,000): ``Method(n_clusters="auto", mode="summary", random_state=0)`` on the
  sample as a Dask array of 16 row chunks, against ``Method(n_clusters="auto", random_state=0)`` in memory on the
  first 20,000 rows of the same sample. Goal: within 2 clusters and 0.05 ARI (each against the drawn rows' classes)
  on at least 8 of the 10 sets, with ``min_cluster_size`` at its default.
- **Silverman**: 0.9 · min(sd, IQR / 1.34) · n^(-1/5), tight enough that each original row's clump is real
  structure: summary mode with ``min_cluster_size=0.01``, against ``auto`` in memory on the original rows (at its
  default). Goal: K within 2 on at least 8 of the 10 sets.

    python benchmarks/large_samples.py [--methods mdh,ncut] [--datasets a,b] [--rules scott,silverman] [--out FILE]
"""

import argparse
import time
import warnings

import dask.array as da
import numpy as np
from harness import RESULTS_DIR, command_line, drop_constant_columns, fmt, markdown_table, write_markdown
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import METHODS
from lowdens_dask.datasets import list_datasets, load_dataset

N, CHUNKS, FIRST = 200_000, 16, 20_000


def smoothed_bootstrap(X: np.ndarray, rule: str, n: int = N, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of X drawn with replacement plus Gaussian noise of the rule's bandwidth per feature, and the
    indices of the rows drawn."""
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(X), n)
    sd = X.std(axis=0, ddof=1)
    if rule == "scott":
        h = sd * n ** (-1.0 / (X.shape[1] + 4))
    else:
        iqr = np.subtract(*np.percentile(X, [75, 25], axis=0))
        spread = np.minimum(sd, iqr / 1.34)
        h = 0.9 * np.where(spread > 0, spread, sd) * n ** (-0.2)
    return X[index] + rng.standard_normal((n, X.shape[1])) * h, index


def run(method: str, name: str, rule: str) -> list:
    X, y = load_dataset(name)
    X = drop_constant_columns(X)
    sample, index = smoothed_bootstrap(X, rule)
    make = METHODS[method].clustering
    summary_params = {"min_cluster_size": 0.01} if rule == "silverman" else {}
    start = time.perf_counter()
    summary = make(n_clusters="auto", mode="summary", random_state=0, **summary_params).fit(
        da.from_array(sample, chunks=(N // CHUNKS, X.shape[1]))
    )
    labels = np.asarray(summary.labels_)
    seconds = time.perf_counter() - start
    ari_summary = adjusted_rand_score(y[index], labels)
    if rule == "scott":
        memory = make(n_clusters="auto", random_state=0).fit(sample[:FIRST])
        ari_memory = adjusted_rand_score(y[index[:FIRST]], memory.labels_)
        ok = abs(summary.n_clusters_ - memory.n_clusters_) <= 2 and abs(ari_summary - ari_memory) <= 0.05
    else:
        memory = make(n_clusters="auto", random_state=0).fit(X)
        ari_memory = adjusted_rand_score(y, memory.labels_)
        ok = abs(summary.n_clusters_ - memory.n_clusters_) <= 2
    return [name, method, summary.n_clusters_, fmt(ari_summary), fmt(seconds, 1), memory.n_clusters_, fmt(ari_memory),
            "yes" if ok else "**no**"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", default="mdh,ncut")
    parser.add_argument("--datasets", default=",".join(list_datasets()))
    parser.add_argument("--rules", default="scott,silverman")
    parser.add_argument("--out", default=str(RESULTS_DIR / "large-samples.md"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    body = ""
    for rule in args.rules.split(","):
        rows = []
        for method in args.methods.split(","):
            for name in args.datasets.split(","):
                rows.append(run(method, name, rule))
                print(rule, rows[-1], flush=True)
        memory = "memory: first 20,000 rows" if rule == "scott" else "memory: the original rows"
        goal = "K within 2 and ARI within 0.05" if rule == "scott" else "K within 2"
        met = {m: sum(r[-1] == "yes" for r in rows if r[1] == m) for m in args.methods.split(",")}
        body += (
            f"## {rule.capitalize()}'s bandwidth\n\n"
            + ("Summary mode with `min_cluster_size=0.01`. " if rule == "silverman" else "Defaults. ")
            + "Goal met on: " + ", ".join(f"{m} {k} of {len(args.datasets.split(','))}" for m, k in met.items())
            + " (goal: 8 of 10).\n\n"
            + markdown_table(["data set", "method", "K summary", "ARI summary", "s", f"K {memory}", "ARI", goal], rows)
            + "\n\n"
        )
    write_markdown(args.out, "n_clusters='auto' on 200,000-row smoothed bootstraps of the bundled sets",
                   command_line(), body)


if __name__ == "__main__":
    main()
