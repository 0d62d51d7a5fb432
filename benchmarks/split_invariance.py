"""Issue 51: copies of rows, the same copies as weights, and a few far outliers should change no cluster.

Per bundled data set (as shipped, constant columns dropped, no other preprocessing) and per method
(``METHODS[m].clustering(n_clusters="auto", random_state=0)``, defaults otherwise), the clean fit ``fit(X)``
gives K_clean and labels_clean; then four variants of the same rows are fitted. With n rows and d columns,
``rng = np.random.default_rng([seed, i])`` (i: the set's index in ``list_datasets()``, so a set gets the same
variants whichever ``--datasets`` run) draws, in this order and once per set, whatever variants run:

- ``chosen = rng.choice(n, n // 5, replace=False)``: a fifth of the rows;
- ``extra = rng.integers(2, 6, size=chosen.size)``: each chosen row recorded 2-5 more times;
- the jitter ``rng.standard_normal((extra.sum(), d))``;
- ``signs = rng.choice([-1.0, 1.0], size=(3, d))``.

The variants (``sd = X.std(axis=0)``, ``mean = X.mean(axis=0)``; the original rows first and unchanged):

- ``near``: ``np.vstack([X, np.repeat(X[chosen], extra, 0) + 1e-9 * sd * jitter])``, the copies jittered by 1e-9
  of each column's standard deviation;
- ``exact``: ``np.vstack([X, np.repeat(X[chosen], extra, 0)])``;
- ``weights``: ``fit(X, sample_weight=w)`` with w = 1 everywhere and ``1 + extra`` on the chosen rows (the same
  mass as ``exact``);
- ``outliers``: ``np.vstack([X, mean + 20 * sd * signs])``, three rows each 20 standard deviations from every
  column's mean.

Per variant: K of the fit and the ARI between its labels of the original n rows (the first n rows of the stacked
arrays; all rows for ``weights``) and labels_clean. A case (set, method, variant) passes when
``abs(K - K_clean) <= max(1, K_clean / 5)`` and ``ARI >= 0.8``; a fit that raises fails its case (the clean fit
raising fails all four). Also the wall-clock seconds of every fit (the first fit of a worker process includes
loading numba's cached kernels).

The (set, method) pairs run in ``--jobs`` worker processes (``concurrent.futures.ProcessPoolExecutor``, spawned).
NUMBA_NUM_THREADS, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS are set to 1 at the top of this
script, before numpy loads, unless already set in the environment (the workers inherit them): every fit runs
single-threaded, so that ``--jobs 2`` uses two cores. The report: per variant and method, the cases passed out of
those run, the total "N of M (set, method, variant) cases pass", then one row per set and method. The exit
status is 0 whatever the verdict (a benchmark, not a test).

    python benchmarks/split_invariance.py [--datasets a,b] [--methods mdh,ncut] [--seed 0] [--jobs 2] [--out FILE]
"""


import harness

harness.single_thread()  # before numpy, numba or scikit-learn load their thread pools

import argparse  # noqa: E402
import concurrent.futures  # noqa: E402
import multiprocessing as mp  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

# harness first: it puts the checkout being measured on sys.path.
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

from lowdens_dask import METHODS  # noqa: E402
from lowdens_dask.datasets import list_datasets, load_dataset  # noqa: E402

VARIANTS = ("near", "exact", "weights", "outliers")
SHARE, EXTRA_LOW, EXTRA_HIGH = 5, 2, 6  # a fifth of the rows, each written 2-5 more times
JITTER, OUTLIER_SD, N_OUTLIERS = 1e-9, 20.0, 3
MIN_ARI = 0.8


def load(name):
    X, _ = load_dataset(name)
    X = np.asarray(X, dtype=float)
    return X[:, X.std(0) > 0]


def variants(X, seed: int, index: int) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """``{variant: (rows to fit, sample_weight or None)}``; every draw made up front, in a fixed order."""
    n, d = X.shape
    rng = np.random.default_rng([seed, index])
    chosen = rng.choice(n, n // SHARE, replace=False)
    extra = rng.integers(EXTRA_LOW, EXTRA_HIGH, size=chosen.size)
    jitter = rng.standard_normal((int(extra.sum()), d))
    signs = rng.choice([-1.0, 1.0], size=(N_OUTLIERS, d))
    sd, mean = X.std(axis=0), X.mean(axis=0)
    copies = np.repeat(X[chosen], extra, axis=0)
    weights = np.ones(n)
    weights[chosen] += extra
    return {
        "near": (np.vstack([X, copies + JITTER * sd * jitter]), None),
        "exact": (np.vstack([X, copies]), None),
        "weights": (X, weights),
        "outliers": (np.vstack([X, mean + OUTLIER_SD * sd * signs]), None),
    }


def fit(method: str, X, sample_weight=None):
    """(labels, K, seconds, error or None)."""
    start = time.perf_counter()
    try:
        kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
        est = METHODS[method].clustering(n_clusters="auto", random_state=0).fit(X, **kwargs)
        return np.asarray(est.labels_), int(est.n_clusters_), time.perf_counter() - start, None
    except Exception as exc:  # noqa: BLE001 - a fit that raises fails its case, the run goes on
        return None, None, time.perf_counter() - start, f"{type(exc).__name__}: {exc}"


def passes(k, ari, k_clean) -> bool:
    return k is not None and k_clean is not None and abs(k - k_clean) <= max(1, k_clean / 5) and ari >= MIN_ARI


def run_case(name: str, index: int, method: str, seed: int) -> dict:
    """One (set, method) pair: the clean fit and the four variants. Runs in a worker process."""
    warnings.simplefilter("ignore")
    X = load(name)
    n = X.shape[0]
    labels_clean, k_clean, s_clean, err_clean = fit(method, X)
    result = {"set": name, "method": method, "n": n, "d": X.shape[1], "K": k_clean, "s": s_clean,
              "error": err_clean, "variants": {}}  # fmt: skip
    for variant, (rows, weight) in variants(X, seed, index).items():
        labels, k, s, err = fit(method, rows, weight)
        ari = float("nan")
        if labels is not None and labels_clean is not None:
            ari = float(adjusted_rand_score(labels_clean, labels[:n]))
        result["variants"][variant] = {"K": k, "ARI": ari, "s": s, "error": err, "pass": passes(k, ari, k_clean)}
    return result


def progress(r: dict) -> None:
    cells = [f"{v} K={c['K']} ARI={fmt(c['ARI'])} {'pass' if c['pass'] else 'FAIL'} ({c['s']:.1f} s)"
             for v, c in r["variants"].items()]  # fmt: skip
    print(f"{r['set']} {r['method']}: K_clean={r['K']} ({r['s']:.1f} s); " + "; ".join(cells), flush=True)


def report(results: list[dict], methods: list[str], seed: int) -> tuple[str, str]:
    summary_rows = []
    for variant in VARIANTS:
        row = [variant]
        for method in methods:
            cases = [r["variants"][variant]["pass"] for r in results if r["method"] == method]
            row.append(f"{sum(cases)} of {len(cases)}")
        summary_rows.append(row)
    total = sum(c["pass"] for r in results for c in r["variants"].values())
    runs = sum(len(r["variants"]) for r in results)
    verdict = f"{total} of {runs} (set, method, variant) cases pass."
    header = ["set", "method", "n x d", "K_clean", *(f"{v}: K / ARI / pass" for v in VARIANTS),
              "seconds: clean / " + " / ".join(VARIANTS)]  # fmt: skip
    case_rows = []
    for r in results:
        cells = []
        for variant in VARIANTS:
            c = r["variants"][variant]
            cells.append(f"{'-' if c['K'] is None else c['K']} / {fmt(c['ARI'])} / {'yes' if c['pass'] else '**no**'}")
        seconds = " / ".join(fmt(t, 1) for t in (r["s"], *(r["variants"][v]["s"] for v in VARIANTS)))
        case_rows.append([r["set"], r["method"], f"{r['n']} x {r['d']}", "-" if r["K"] is None else r["K"], *cells,
                          seconds])  # fmt: skip
    errors = [f"- {r['set']} {r['method']} {v}: {e}" for r in results
              for v, e in [("clean", r["error"]), *((v, c["error"]) for v, c in r["variants"].items())] if e]
    body = (
        "Each bundled set (constant columns dropped) fitted with `n_clusters=\"auto\", random_state=0`, then four "
        f"variants drawn with `np.random.default_rng([{seed}, index of the set])`: `near` (a fifth of the rows "
        f"written 2-5 more times, jittered by {JITTER:g} of each column's sd), `exact` (the same copies, unjittered), "
        "`weights` (the original rows, weight 1 + the number of copies) and `outliers` (three rows 20 sd from every "
        "column's mean). A case passes when |K - K_clean| <= max(1, K_clean / 5) and the ARI of the original rows' "
        f"labels against the clean fit's is at least {MIN_ARI}. Single-threaded fits.\n\n"
        f"## Summary\n\n**{verdict}**\n\n"
        + markdown_table(["variant", *methods], summary_rows)
        + "\n\n## Per case\n\n"
        + markdown_table(header, case_rows)
        + "\n"
    )
    if errors:
        body += "\n## Fits that raised\n\n" + "\n".join(errors) + "\n"
    return body, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="", help="bundled sets to use, comma-separated (default all ten)")
    parser.add_argument("--methods", default="mdh,ncut")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2; 1: in this process)")
    parser.add_argument("--out", default=str(RESULTS_DIR / "split-invariance.md"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    names = list_datasets()
    chosen = [s for s in args.datasets.split(",") if s] or names
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        raise SystemExit(f"unknown data sets: {', '.join(unknown)} (bundled: {', '.join(names)})")
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise SystemExit(f"unknown methods: {', '.join(unknown)} (known: {', '.join(METHODS)})")
    pairs = [(name, names.index(name), method) for name in chosen for method in methods]
    start = time.perf_counter()
    results = {}
    if args.jobs <= 1:
        for name, index, method in pairs:
            results[name, method] = run_case(name, index, method, args.seed)
            progress(results[name, method])
    else:
        with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("spawn")) as pool:
            futures = {pool.submit(run_case, name, index, method, args.seed): (name, method)
                       for name, index, method in pairs}  # fmt: skip
            for future in concurrent.futures.as_completed(futures):
                results[futures[future]] = future.result()
                progress(results[futures[future]])
    ordered = [results[name, method] for name, _, method in pairs]
    body, verdict = report(ordered, methods, args.seed)
    body += f"\nWall-clock time of the run: {time.perf_counter() - start:.0f} s with {args.jobs} job(s).\n"
    path = write_markdown(args.out, "Split invariance: copies, weights and outliers (issue 51)", command_line(), body)
    print(verdict, flush=True)
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()
