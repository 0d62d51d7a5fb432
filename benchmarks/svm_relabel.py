"""SVM-relabel clustering on raw Iris (Winters-Hilt & Merat; spec shared/research/seed-svm.md §9), with support
vector clustering (Ben-Hur et al. 2001) as the comparator.

Settings of the spec's own validation (§9): raw Iris (no scaling), Gaussian kernel sigma = 2 (gamma = 1/8),
C = 1.5, relabelling factor 0.15, misclassified points as flip candidates. Reported per seed: the adjusted Rand
index of the two clusters against setosa-versus-rest (1.0: the split the paper's Fig. 6 shows), the kernel SSE
of the split (§5.2, on the 149 distinct rows), the cluster sizes, SVM fits and the time. Runs:

1. the plain relabeller, one run from fair-coin labels and no stabilisation, 10 seeds: the paper's algorithm
   as it is (no guard against collapse: min_weight 0), and ``SVMRelabelClustering(annealing=False)`` (the same
   run with the collapse guard, which redraws runs that end below 5% on a side);
2. restart stabilisation (§4.4): 20 runs per fit, lowest SSE kept, 10 seeds;
3. simulated annealing (§4.6), variable perturbation (the default) and constant perturbation, 5 seeds;
4. the defaults ``SVMRelabelClustering()`` (gamma "auto": sigma^2 = total variance, sigma = 2.14), 5 seeds;
5. annealing at the paper's sigma = 0.5 and at sigma = 1 (3 seeds each), where the spec saw it fail or wobble;
6. the random-labelling null of the sigma = 2 split (5000 labellings, §4.5), with a Johnson S_B fit;
7. three clusters by recursive splitting, against the three species;
8. ``SupportVectorClustering`` at its defaults and over a grid of kernel widths.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown


def load():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    return X, y, (y == 0).astype(int)


def ari(a, b) -> float:
    from sklearn.metrics import adjusted_rand_score

    return float(adjusted_rand_score(a, b))


def sizes(labels) -> str:
    return "/".join(str(int(c)) for c in sorted(np.bincount(np.asarray(labels)[np.asarray(labels) >= 0])))


def unguarded_run(X, gamma: float, seed: int) -> dict:
    """One run of the paper's relabeller (no guard) on the distinct rows, from fair-coin labels."""
    from lowdens_dask.pursuit.svm_relabel import SVMRelabeler, kernel_sse, rbf_kernel

    U, inverse = np.unique(X, axis=0, return_inverse=True)
    K = rbf_kernel(U, gamma)
    relabeler = SVMRelabeler(K, C=1.5, relabel_fraction=0.15, min_weight=0.0)
    start = time.perf_counter()
    result = relabeler.relabel(relabeler.labels(np.random.default_rng(seed)))
    labels = (result.labels[inverse.ravel()] > 0).astype(int)
    return {
        "labels": labels,
        "sse": kernel_sse(K, result.labels),
        "converged": result.converged,
        "fits": relabeler.n_fits,
        "seconds": time.perf_counter() - start,
    }


def fit(X, seed: int, **params) -> dict:
    from lowdens_dask import SVMRelabelClustering

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = SVMRelabelClustering(random_state=seed, **params).fit(X)
    seconds = time.perf_counter() - start
    root = model.tree_.root
    return {
        "labels": model.labels_,
        "sse": root.stats.get("sse", np.nan),
        "threshold": root.stats.get("sse_null_threshold", np.nan),
        "successful": root.stats.get("n_successful", np.nan),
        "runs": root.stats.get("n_relabel_runs", np.nan),
        "converged": bool(root.stats.get("converged", 0.0)),
        "fits": model.n_evaluations_,
        "seconds": seconds,
        "model": model,
    }


def seed_table(results: list[dict], truth, runs: bool = False) -> str:
    header = ["seed", "ARI to setosa-vs-rest", "kernel SSE", "sizes", "fixed point", "SVM fits", "time s"]
    rows = []
    for seed, r in enumerate(results):
        row = [seed, fmt(ari(truth, r["labels"])), fmt(r["sse"], 2), sizes(r["labels"]), r["converged"], r["fits"]]
        row.append(fmt(r["seconds"], 2))
        if runs:
            row.append(f"{int(r['successful'])} of {int(r['runs'])}")
        rows.append(row)
    return markdown_table(header + (["runs below null threshold"] if runs else []), rows)


def summary(results: list[dict], truth) -> str:
    aris = np.array([ari(truth, r["labels"]) for r in results])
    sse = np.array([r["sse"] for r in results], dtype=float)
    finite = sse[np.isfinite(sse)]
    spread = f"{finite.min():.2f}-{finite.max():.2f}" if finite.size else "-"
    return (
        f"setosa-vs-rest (ARI = 1) in **{int((aris == 1.0).sum())} of {len(results)}** seeds; ARI "
        f"{aris.min():.3f}-{aris.max():.3f} (median {np.median(aris):.3f}); kernel SSE {spread}; mean time "
        f"{np.mean([r['seconds'] for r in results]):.2f} s"
    )


def sb_p(p: float) -> str:
    return f"{p:.1e}" if p > 0 else "0 (underflow)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default=str(RESULTS_DIR / "svm-relabel.md"))
    args = parser.parse_args()
    X, species, truth = load()
    spec = {"gamma": 0.125, "C": 1.5, "relabel_fraction": 0.15}
    sections = [
        (
            "Raw Iris (150 rows, 149 distinct; setosa 50 rows). ARI: adjusted Rand index of the two clusters against "
            "setosa-versus-rest. Kernel SSE (§5.2): the estimator's on the 149 distinct rows weighted by their "
            "multiplicity, rescaled to mean 1 (true split: 28.37 at sigma = 2, 25.76 at the default sigma = 2.13); "
            "the unguarded runs' on the 149 distinct rows with unit weights (true split: 28.45; the spec's 28.56 "
            'counts all 150 rows). "fixed point": the kept labelling is a relabelling fixed point (no point '
            "misclassified by its SVM). Timings are single wall-clock fits on the machine above, with other work "
            "running beside them."
        )
    ]

    print("plain relabeller", file=sys.stderr)
    raw = [unguarded_run(X, 0.125, s) for s in range(10)]
    guarded = [fit(X, s, annealing=False, **spec) for s in range(10)]
    sections.append(
        "## 1. Plain relabelling: no annealing, no restarts (spec §4.3; sigma = 2, C = 1.5, rho = 0.15)\n\n"
        "The paper's relabeller, one run per seed from fair-coin labels, no collapse guard:\n\n"
        + seed_table(raw, truth)
        + "\n\n"
        + summary(raw, truth)
        + "\n\n`SVMRelabelClustering(annealing=False, n_restarts=1, gamma=0.125)`: the same run with the collapse "
        "guard (a run that ends with less than 5% of the rows on a side is rejected and redrawn):\n\n"
        + seed_table(guarded, truth)
        + "\n\n"
        + summary(guarded, truth)
    )

    print("restarts", file=sys.stderr)
    restarts = [fit(X, s, annealing=False, n_restarts=20, **spec) for s in range(10)]
    sections.append(
        "## 2. Restart stabilisation (§4.4): 20 runs per fit, lowest kernel SSE kept\n\n"
        "`SVMRelabelClustering(annealing=False, n_restarts=20, gamma=0.125)`; the last column counts the runs whose "
        "SSE is below the random-labelling null threshold (the 0.001 quantile of 5000 labellings, §4.5):\n\n"
        + seed_table(restarts, truth, runs=True)
        + "\n\n"
        + summary(restarts, truth)
    )

    print("annealing", file=sys.stderr)
    variable = [fit(X, s, **spec) for s in range(5)]
    constant = [fit(X, s, perturbation="constant", **spec) for s in range(5)]
    sections.append(
        "## 3. Simulated annealing (§4.6): 40 steps, T0 = 10, beta = 0.96, geometric cooling\n\n"
        "Variable perturbation (flip probability min(0.5, 0.1 + 0.1 stall), the default), "
        "`SVMRelabelClustering(gamma=0.125)`:\n\n"
        + seed_table(variable, truth)
        + "\n\n"
        + summary(variable, truth)
        + "\n\nConstant perturbation (p = 0.1, the paper's Fig. 10a), "
        '`SVMRelabelClustering(gamma=0.125, perturbation="constant")`:\n\n'
        + seed_table(constant, truth)
        + "\n\n"
        + summary(constant, truth)
    )

    print("defaults", file=sys.stderr)
    defaults = [fit(X, s) for s in range(5)]
    gamma = defaults[0]["model"].tree_.root.params["gamma"]
    sections.append(
        "## 4. Defaults: `SVMRelabelClustering()` on raw Iris\n\n"
        f'gamma "auto" = 1 / (2 total variance) = {gamma:.4f} (sigma = {1 / np.sqrt(2 * gamma):.3f}), C = 1.5, '
        "annealing with variable perturbation (acceptance: setosa-vs-rest in at least 4 of 5 seeds):\n\n"
        + seed_table(defaults, truth)
        + "\n\n"
        + summary(defaults, truth)
    )

    print("other widths", file=sys.stderr)
    rows = []
    for sigma in (0.5, 1.0):
        runs = [fit(X, s, gamma=1 / (2 * sigma**2), C=1.5) for s in range(3)]
        for seed, r in enumerate(runs):
            rows.append(
                [sigma, seed, fmt(ari(truth, r["labels"])), fmt(r["sse"], 2), sizes(r["labels"]), fmt(r["seconds"], 2)]
            )
    sections.append(
        "## 5. Annealing at the paper's sigma = 0.5 (Fig. 6) and at sigma = 1\n\n"
        "At sigma = 0.5 the SVM fits almost any labelling of raw Iris (spec §9.1), hence the data-driven default "
        "width:\n\n" + markdown_table(["sigma", "seed", "ARI to setosa-vs-rest", "kernel SSE", "sizes", "time s"], rows)
    )

    print("null", file=sys.stderr)
    from scipy import stats

    from lowdens_dask.pursuit.svm_relabel import kernel_sse, random_label_null, rbf_kernel

    U = np.unique(X, axis=0)
    K = rbf_kernel(U, 0.125)
    null = random_label_null(K, None, 5000, np.random.default_rng(0))
    found = kernel_sse(K, np.isin(np.arange(len(U)), np.flatnonzero(U[:, 2] < 2.5)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        params = stats.johnsonsb.fit(null)
    sections.append(
        "## 6. Random-labelling null (§4.5), sigma = 2\n\n"
        + markdown_table(
            [
                "labellings",
                "null mean",
                "null sd",
                "0.001 quantile (threshold)",
                "min",
                "setosa-vs-rest SSE",
                "empirical p",
                "Johnson S_B p",
            ],
            [
                [
                    5000,
                    fmt(null.mean(), 2),
                    fmt(null.std(), 2),
                    fmt(np.quantile(null, 1e-3), 2),
                    fmt(null.min(), 2),
                    fmt(found, 2),
                    f"{(1 + (null <= found).sum()) / 5001:.1e}",
                    sb_p(stats.johnsonsb.cdf(found, *params)),
                ]
            ],
        )
        + "\n\nAll annealing and restart results are far below the threshold, and so are the plain runs that stop in a "
        "local optimum; only the runs that collapse to one class (SSE 72.79, the one-cluster SSE) are above it: the "
        "null removes unsuccessful runs, not local optima (§4.5)."
    )

    print("three clusters", file=sys.stderr)
    three = [fit(X, s, n_clusters=3) for s in range(3)]
    sections.append(
        "## 7. Three clusters by recursive splitting (largest leaf), defaults\n\n"
        + markdown_table(
            ["seed", "ARI to species", "sizes", "SVM fits", "time s"],
            [
                [s, fmt(ari(species, r["labels"])), sizes(r["labels"]), r["fits"], fmt(r["seconds"], 2)]
                for s, r in enumerate(three)
            ],
        )
    )

    print("support vector clustering", file=sys.stderr)
    from lowdens_dask import SupportVectorClustering

    rows = []
    for factor in (1, 2, 4, 8, 16, 32):
        for p in (None, 0.05):
            start = time.perf_counter()
            model = SupportVectorClustering(gamma_factor=factor, bsv_fraction=p).fit(X)
            seconds = time.perf_counter() - start
            rows.append(
                [
                    factor,
                    "1/N" if p is None else p,
                    fmt(model.gamma_, 4),
                    model.n_clusters_,
                    int((~model.inside_).sum()),
                    fmt(ari(truth, model.labels_)),
                    fmt(ari(species, model.labels_)),
                    sizes(model.labels_),
                    fmt(seconds, 2),
                ]
            )
    sections.append(
        "## 8. Comparator: support vector clustering (Ben-Hur et al. 2001; spec §6)\n\n"
        "`SupportVectorClustering(gamma_factor=f, bsv_fraction=p)`: q = f / median |x - x'|^2 (the default is f = 4, "
        "p = 1/N), all-pairs segment test with 20 points, points outside the sphere joined to the nearest "
        "cluster:\n\n"
        + markdown_table(
            [
                "factor f",
                "p",
                "q",
                "clusters",
                "outside sphere",
                "ARI to setosa-vs-rest",
                "ARI to species",
                "sizes",
                "time s",
            ],
            rows,
        )
    )

    body = "\n\n".join(sections)
    path = write_markdown(args.output, "SVM-relabel clustering on Iris", command_line(), body)
    print(body)
    print(f"written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
