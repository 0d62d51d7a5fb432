"""Issue 42: one split decision for a fit told K and for ``n_clusters="auto"``, and repeated rows as weights.

1. **Told K against auto.** The issue's mixture of 16 Gaussians in 32 dimensions (centres N(0, 3²), weights
   Dirichlet(2), unit noise; 20,000 rows, as ``benchmarks/scale.py`` draws it, in memory), seeds 0-4: each method
   told K = 16 and with ``"auto"``, ``random_state=0``: the clusters found and the ARI against the components.
   The goal: told 16 reaches at least the ARI of its own ``auto`` run whenever ``auto`` finds 16, and MDH told 16
   reaches 0.99.
2. **Repeats.** One standard Gaussian of 300 rows in 4 dimensions, every row written r = 2, 5, 20 times, with
   ``"auto"``: the clusters found (goal: 1), and whether ``fit(np.repeat(X, r, 0))`` and
   ``fit(X, sample_weight=np.full(300, r))`` give the same partition. Then on each bundled set, ``"auto"`` on
   ``np.repeat(X, 3, 0)`` against ``X`` (goal: K within 1).

    python benchmarks/split_decision.py [--seeds 0,1,2,3,4] [--methods mdh,ncut,mc,scpp] [--out FILE]
"""

import argparse
import time
import warnings

import numpy as np
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import METHODS
from lowdens_dask.datasets import list_datasets, load_dataset

K, D, N = 16, 32, 20_000


def mixture(seed: int, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """The scale mixture of ``benchmarks/scale.py`` (its centres, weights and per-chunk draws), ``n`` rows."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(K, D))
    weights = rng.dirichlet(2.0 * np.ones(K))
    chunk_rng = np.random.default_rng([seed, 0])
    labels = chunk_rng.choice(K, size=n, p=weights)
    X = centres[labels] + chunk_rng.standard_normal((n, D))
    return X.astype(np.float32).astype(np.float64), labels


def fit(method: str, n_clusters, X, **kwargs):
    start = time.perf_counter()
    est = METHODS[method].clustering(n_clusters=n_clusters, random_state=0).fit(X, **kwargs)
    return est, time.perf_counter() - start


def told_against_auto(seeds, methods) -> str:
    rows, shortfalls = [], []
    for seed in seeds:
        X, y = mixture(seed)
        for method in methods:
            told, s_told = fit(method, K, X)
            auto, s_auto = fit(method, "auto", X)
            a_told, a_auto = adjusted_rand_score(y, told.labels_), adjusted_rand_score(y, auto.labels_)
            goal = auto.n_clusters_ != K or a_told >= a_auto - 1e-12
            if method == "mdh":
                goal = goal and a_told >= 0.99
            if not goal:
                shortfalls.append(f"{method} seed {seed}")
            rows.append([seed, method, told.n_clusters_, fmt(a_told), fmt(s_told, 1), auto.n_clusters_, fmt(a_auto),
                         fmt(s_auto, 1), "yes" if goal else "**no**"])  # fmt: skip
            print(rows[-1], flush=True)
    table = markdown_table(["seed", "method", "K told", "ARI told", "s", "K auto", "ARI auto", "s", "goal met"], rows)
    verdict = "Every goal met." if not shortfalls else "Short of the goal: " + ", ".join(shortfalls) + "."
    return f"## Told K = 16 against auto, 16-Gaussian mixture ({N:,} x {D})\n\n{verdict}\n\n{table}\n"


def repeats(methods) -> str:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    rows = []
    for method in methods:
        for r in (2, 5, 20):
            repeated, _ = fit(method, "auto", np.repeat(X, r, axis=0))
            weighted, _ = fit(method, "auto", X, sample_weight=np.full(len(X), float(r)))
            same = adjusted_rand_score(np.repeat(weighted.labels_, r), repeated.labels_) == 1.0
            rows.append([method, r, repeated.n_clusters_, weighted.n_clusters_, "yes" if same else "no"])
            print(rows[-1], flush=True)
    one = markdown_table(["method", "r", "K of np.repeat(X, r, 0)", "K with sample_weight=r", "same partition"], rows)
    rows = []
    for name in list_datasets():
        X, _ = load_dataset(name)
        for method in methods:
            k_rows = fit(method, "auto", X)[0].n_clusters_
            k_rep = fit(method, "auto", np.repeat(X, 3, axis=0))[0].n_clusters_
            rows.append([name, method, k_rows, k_rep, "yes" if abs(k_rep - k_rows) <= 1 else "**no**"])
            print(rows[-1], flush=True)
    sets = markdown_table(["data set", "method", "K of X", "K of np.repeat(X, 3, 0)", "within 1"], rows)
    return (
        "## Repeated rows\n\nOne standard Gaussian, 300 x 4, every row written r times (`auto`):\n\n"
        f"{one}\n\nBundled sets, `auto` on X and on every row written 3 times:\n\n{sets}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--methods", default="mdh,ncut,mc,scpp")
    parser.add_argument("--repeat-methods", default="mdh,ncut")
    parser.add_argument("--out", default=str(RESULTS_DIR / "split-decision.md"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    seeds = [int(s) for s in args.seeds.split(",") if s]
    body = told_against_auto(seeds, args.methods.split(",")) + "\n" + repeats(args.repeat_methods.split(","))
    write_markdown(args.out, "One split decision: told K against auto, and repeats as weights", command_line(), body)


if __name__ == "__main__":
    main()
