"""Choosing the number of clusters: ``n_clusters="auto"`` on the ten bundled data sets, on small stratified
subsamples of them and on 200,000-row copies of them fitted in summary mode.

With ``n_clusters="auto"`` a divisive estimator splits a leaf only if its split is significant: Hartigan's dip of
the leaf's rows along it against the pursued null (:mod:`lowdens_dask.pursuit.significance`; p-value below
``significance_level``, default 0.01). The report has three tables (``--tables``, default all three):

``bundled``: each bundled data set as shipped, constant columns dropped, fitted by

- every divisive estimator (MDH, NCut, MC, PDDP, DePDDP, IPDDP, SCPP, LMSC) as
  ``Method(n_clusters="auto", random_state=0)``, defaults otherwise;
- reference rows: MDHClustering and NCutClustering with ``n_clusters=None`` (grow while a valid split exists)
  and with the true K;
- baselines on z-scored features (StandardScaler): GaussianMixture-BIC, choosing K in 1..2K and
  covariance_type in {"full", "diag"} together by the lowest BIC (``reg_covar=1e-4``, random_state=0), on the
  first 50 principal components (PCA after z-scoring) where the set has more than 50 features; a fit of the
  search that raises is left out (noted), and one cluster is an answer like any other. And
  ``HDBSCAN(min_cluster_size=max(2, n // 100))`` (K found excludes noise; ARI counts noise as one more label).

Recorded per fit: K found, ARI against the classes and the fit's wall-clock seconds (the GMM row: the whole BIC
search; its covariance type). The report has a summary table (mean ARI, median |K found - K|, sets with K found
exactly, total seconds), a per-set table of "K found / ARI", the root test of each auto fit, the fit seconds and
the acceptance checks for MDH and NCut auto (mean ARI >= 0.60, median |K - K found| <= 2).

``small``: stratified random subsamples of each bundled set (constant columns dropped first) of 200 and 600
rows, three draws each (``train_test_split(stratify=y)`` with random_state 0, 1, 2: each class keeps its share),
constant columns of the subsample dropped; a set with no more rows than the size is used whole, once. On each
subsample: MDHClustering and NCutClustering with ``n_clusters="auto"``, the same told the true K of the
subsample (the number of classes present), and the GMM-BIC baseline. Per method: mean ARI over all subsamples,
median |K found - K|; per set and size: K found and ARI averaged over the draws. Acceptance checks for MDH and
NCut auto: mean ARI >= GMM-BIC's on the same subsamples, mean ARI >= 0.85 x the same estimator told K, median
|K found - K| <= 2.

``large``: a 200,000-row copy of each bundled set (constant columns dropped): rows drawn with replacement (seed
0) plus Gaussian noise of 5% of each feature's standard deviation, the drawn rows' labels as truth, given as a
Dask array of 16 row chunks to ``Method(n_clusters="auto", mode="summary", random_state=0)`` (MDH and NCut;
Dask's default scheduler), against the in-memory auto fit of the original rows (the bundled table's fit, refitted
if that table is not run). Per set: K and ARI of each (summary: against the copy's labels), the summary fit's
seconds (labels computed included). Acceptance checks for MDH and NCut: on at least 8 of the 10 sets (80% of the
sets run, rounded up) both |K summary - K memory| <= 2 and ARI summary >= ARI memory - 0.05; mean ARI summary
>= 0.55.

Each fit runs in a forked child process, killed after ``--timeout`` seconds; a fit that raises or times out counts
as one cluster with ARI 0. BLAS runs single-threaded in the divisive and HDBSCAN fits (numba's threads as
configured) and with ``--gmm-threads`` threads in the GMM fits. Every acceptance check prints PASS or FAIL with
the measured figure; on a subset of the sets the targets are those of the full run.

    python benchmarks/auto_k.py [--tables bundled,small,large] [--methods a,b] [--datasets a,b]
                                [--timeout SECONDS] [--gmm-threads N] [--out FILE]

--tables       parts of the report, comma-separated (default bundled,small,large)
--methods      the bundled table's rows (default all); the small and large tables fit MDH and NCut among them
               (``mdh``, ``ncut``), the small one with their told-K rows and the GMM-BIC baseline its checks need
--datasets     bundled data sets to use (default all ten)
--timeout      wall-clock limit per fit, seconds (default 600)
--gmm-threads  BLAS threads in the GMM-BIC fits, 0 for BLAS's default (default 1: on a 2-core machine one
               GaussianMixture(10) fit on pendigits took 4.4-5.0 s with two threads, 1.3-1.5 s with one)
--out          markdown file to write (default benchmarks/results/auto-k.md)
"""

import argparse
import collections
import functools
import math
import multiprocessing as mp
import statistics
import sys
import time
import traceback
import warnings

import dask.array as da
import numpy as np

# harness first: it puts the checkout being measured on sys.path.
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown
from sklearn.cluster import HDBSCAN
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import lowdens_dask as ld
from lowdens_dask.datasets import list_datasets, load_dataset

AUTO = {
    "mdh": ld.MDHClustering,
    "ncut": ld.NCutClustering,
    "mc": ld.MCClustering,
    "pddp": ld.PDDP,
    "depddp": ld.DePDDP,
    "ipddp": ld.IPDDP,
    "scpp": ld.SCPPClustering,
    "lmsc": ld.LMSCClustering,
}
#: key -> (label in the tables, fit(X, K) -> (labels, K found, note or None, extra fields of the result)).
METHODS = {}
TABLES = ("bundled", "small", "large")
#: BLAS threads in the divisive and HDBSCAN fits: on a loaded 2-core machine two OpenBLAS threads spin against the
#: other load (one GaussianMixture(10) fit on pendigits: 19 s with two, 1.4 s with one); numba's threads are left
#: as they are.
BLAS_THREADS = 1
GMM_COVARIANCES, GMM_MAX_FEATURES, GMM_REG_COVAR = ("full", "diag"), 50, 1e-4
SMALL_SIZES, SMALL_SEEDS = (200, 600), (0, 1, 2)
LARGE_ROWS, LARGE_NOISE, LARGE_CHUNKS = 200_000, 0.05, 16
ACCEPTANCE = ("mdh", "ncut")  # the auto rows checked, and the estimators of the small and large tables
TARGET_ARI, TARGET_DK = 0.60, 2  # bundled
SMALL_VS_K = 0.85  # small: mean ARI >= this x the estimator told K
LARGE_DK, LARGE_DARI, LARGE_SHARE, LARGE_ARI = 2, 0.05, 0.8, 0.55  # large: 80% of the sets (8 of 10)


def _root_test(model):
    stats = getattr(model.tree_.root, "stats", None)
    return {key: float(stats[key]) for key in ("dip", "p_value", "n_test") if key in stats} if stats else None


def _divisive(cls, n_clusters):
    def fit(X, k):
        model = cls(n_clusters=k if n_clusters == "K" else n_clusters, random_state=0).fit(X)
        extra = {"stats": _root_test(model)} if n_clusters == "auto" else {}
        return model.labels_, int(model.n_clusters_), None, extra

    return fit


def _summary(cls):
    def fit(X, k):
        chunks = (math.ceil(X.shape[0] / LARGE_CHUNKS), X.shape[1])
        model = cls(n_clusters="auto", mode="summary", random_state=0).fit(da.from_array(X, chunks=chunks))
        return np.asarray(model.labels_), int(model.n_clusters_), None, {}

    return fit


for _key, _cls in AUTO.items():
    METHODS[_key] = (f"{_cls.__name__} auto", _divisive(_cls, "auto"))
for _key, _cls in (("mdh", ld.MDHClustering), ("ncut", ld.NCutClustering)):
    METHODS[f"{_key}-none"] = (f"{_cls.__name__} None (ref.)", _divisive(_cls, None))
    METHODS[f"{_key}-k"] = (f"{_cls.__name__} true K (ref.)", _divisive(_cls, "K"))
#: the large table's fits: key -> (label, fit), as METHODS.
SUMMARY = {key: (f"{AUTO[key].__name__} auto, summary mode", _summary(AUTO[key])) for key in ACCEPTANCE}


def gmm_bic(X, k):
    Z = StandardScaler().fit_transform(X)
    if Z.shape[1] > GMM_MAX_FEATURES:
        Z = PCA(GMM_MAX_FEATURES, random_state=0).fit_transform(Z)
    fits, failed = [], []
    for covariance in GMM_COVARIANCES:
        for j in range(1, 2 * k + 1):
            try:
                gmm = GaussianMixture(j, covariance_type=covariance, reg_covar=GMM_REG_COVAR, random_state=0)
                fits.append(gmm.fit(Z))
            except (ValueError, np.linalg.LinAlgError) as exc:  # e.g. an ill-defined (singular) covariance
                failed.append(f"{covariance} K={j} ({type(exc).__name__})")
    best = min(fits, key=lambda g: g.bic(Z))
    note = "left out of the search: " + ", ".join(failed) if failed else None
    return best.predict(Z), int(best.n_components), note, {"covariance": best.covariance_type}


def hdbscan(X, k):
    labels = HDBSCAN(min_cluster_size=max(2, X.shape[0] // 100)).fit_predict(StandardScaler().fit_transform(X))
    noise = float(np.mean(labels == -1))
    return labels, int(np.unique(labels[labels >= 0]).size), f"noise {noise:.0%}", {}


METHODS["gmm-bic"] = ("GaussianMixture BIC (baseline)", gmm_bic)
METHODS["hdbscan"] = ("HDBSCAN (baseline)", hdbscan)


def load(name):
    X, y = load_dataset(name)
    X = np.asarray(X, dtype=float)
    return X[:, X.std(0) > 0], np.asarray(y)


def subsample(name, size, seed):
    """A stratified random subsample of ``size`` rows (``seed`` None: all rows), constant columns dropped."""
    X, y = load(name)
    if seed is not None:
        rows, _ = train_test_split(np.arange(y.size), train_size=size, stratify=y, random_state=seed)
        X, y = X[rows], y[rows]
    return X[:, X.std(0) > 0], y


def large_copy(name):
    """``LARGE_ROWS`` rows drawn with replacement (seed 0), plus noise of ``LARGE_NOISE`` x each feature's std."""
    X, y = load(name)
    rng = np.random.default_rng(0)
    rows = rng.integers(0, y.size, LARGE_ROWS)
    copy = rng.standard_normal((LARGE_ROWS, X.shape[1]))
    copy *= LARGE_NOISE * X.std(0)
    copy += X[rows]
    return copy, y[rows]


def _child(conn, fit, data, blas):
    """Runs in the forked child: build the data, fit, send back the result (or the error type)."""
    start = time.perf_counter()
    try:
        X, y = data()
        k = int(np.unique(y).size)
        with warnings.catch_warnings(), threadpool_limits(blas, user_api="blas"):
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            labels, k_found, note, extra = fit(X, k)
            seconds = time.perf_counter() - start
        ari = float(adjusted_rand_score(y, labels))
        conn.send({"k_found": k_found, "ari": ari, "seconds": seconds, "note": note, **extra})
    except BaseException as exc:  # noqa: BLE001 - any failure is a finding, reported as one cluster
        detail = traceback.format_exception_only(exc)[-1].strip()
        conn.send({"error": type(exc).__name__, "detail": detail, "seconds": time.perf_counter() - start})


def run_fit(fit, data, timeout, blas):
    """``fit(*data())`` in a forked child with a wall-clock limit and ``blas`` BLAS threads (None: BLAS's
    default); failures and timeouts count as 1 cluster, ARI 0."""
    parent, child = mp.Pipe(duplex=False)
    proc = mp.get_context("fork").Process(target=_child, args=(child, fit, data, blas))
    proc.start()
    child.close()
    try:
        result = parent.recv() if parent.poll(timeout) else {"error": "timeout", "detail": f"over {timeout:g} s"}
    except EOFError:  # the child died without an answer
        proc.join()
        result = {"error": "crash", "detail": f"child exited with code {proc.exitcode}"}
    if proc.is_alive():
        proc.join(5 if "error" not in result else 0)
        proc.kill()
    proc.join()
    if "error" in result:
        result.update(k_found=1, ari=0.0, seconds=result.get("seconds", timeout))
    return result


def logged_fit(args, key, fit, data, what, k):
    """``run_fit`` with the options' limits, one progress line on stderr."""
    blas = (args.gmm_threads or None) if key == "gmm-bic" else BLAS_THREADS
    r = run_fit(fit, data, args.timeout, blas)
    status = r.get("error", f"K {r['k_found']}/{k}, ARI {r['ari']:.3f}")
    print(f"{what:20s} {key:12s} {r['seconds']:8.2f} s  {status}", file=sys.stderr, flush=True)
    return r


def mean_ari(rs) -> float:
    return float(np.mean([r["ari"] for r in rs]))


def summary_row(label, rs, ks) -> list:
    """method, mean ARI, median |K found - K|, K exact, total seconds, timed out, failed."""
    dk = [abs(r["k_found"] - k) for r, k in zip(rs, ks)]
    timed_out = sum(r.get("error") == "timeout" for r in rs)
    failed = sum("error" in r for r in rs) - timed_out
    total = sum(r["seconds"] for r in rs if r["seconds"] == r["seconds"])
    return [
        label,
        fmt(mean_ari(rs)),
        fmt(statistics.median(dk), 1),
        f"{sum(d == 0 for d in dk)}/{len(rs)}",
        (">= " if timed_out else "") + fmt(total, 1),
        timed_out or "",
        failed or "",
    ]


SUMMARY_HEADER = ["method", "mean ARI", "median abs(K found - K)", "K exact", "total (s)", "timed out", "failed"]


def check(label, target, measured, ok) -> str:
    return f"- {label}: {target}: {measured}, **{'PASS' if ok else 'FAIL'}**"


def checks_section(title, names, lines, subset="the targets apply to all ten sets") -> str:
    scope = "" if len(names) == len(list_datasets()) else f" (subset run: {subset})"
    return f"### {title}{scope}\n\n" + "\n".join(lines)


def annotate(text, items, notes) -> str:
    """``text`` with footnotes for the (what, result) of ``items`` that failed or have a note (into ``notes``),
    e.g. "1 / 0.00 (failed) [3]", or over several results "0.8 / 0.41 (2 failed, 1 timed out) [3, 4, 5]"."""
    marks, states = [], collections.Counter()
    for what, r in items:
        if "error" in r or r.get("note"):
            notes.append(f"{what}: " + (f"{r['error']} ({r['detail']})" if "error" in r else r["note"]))
            marks.append(str(len(notes)))
            if "error" in r:
                states["timed out" if r["error"] == "timeout" else "failed"] += 1
    state = ", ".join(f"{m} {s}" if len(items) > 1 else s for s, m in states.items())
    return text + (f" ({state})" if state else "") + (f" [{', '.join(marks)}]" if marks else "")


def notes_section(notes) -> list[str]:
    return ["Notes:\n\n" + "\n".join(f"{i}. {t}" for i, t in enumerate(notes, 1))] if notes else []


def covariances(rs) -> str:
    """How often GMM-BIC chose each covariance type, e.g. "full 7, diag 3"."""
    counts = collections.Counter(r["covariance"] for r in rs if "covariance" in r)
    return ", ".join(f"{c} {m}" for c, m in counts.most_common()) or "none (every search failed)"


def bundled_report(results, names, keys, truth, timeout) -> str:
    ks = [truth[n] for n in names]
    summary = [summary_row(METHODS[key][0], [results[key][n] for n in names], ks) for key in keys]
    parts = [
        (
            "## Bundled data sets\n\n"
            f"Bundled data sets ({len(names)} of {len(list_datasets())}), as shipped with constant columns dropped. "
            'Divisive methods: `Method(n_clusters="auto", random_state=0)`, defaults otherwise (a leaf is split only '
            "if its dip test against the pursued null gives p < 0.01); reference rows: `n_clusters=None` and "
            "`n_clusters=K` (true K), random_state=0. Baselines on z-scored features; GMM-BIC chooses K in 1..2K and "
            'covariance_type in {"full", "diag"} together by the lowest BIC (reg_covar=1e-4, random_state=0), on the '
            f"first {GMM_MAX_FEATURES} principal components of sets with more. Each fit runs in a forked child "
            f"process with a wall-clock limit of {timeout:g} s; a fit that raises or times out counts as K found = 1 "
            "and ARI 0 (seconds: until it raised, or the limit). Seconds: the fit alone (GMM: the whole BIC search), "
            "one fit, numba kernels loaded from the on-disk cache, BLAS limited to "
            f"{BLAS_THREADS} thread (threadpoolctl) in every fit but GMM's."
        ),
        markdown_table(SUMMARY_HEADER, summary),
    ]
    if "gmm-bic" in keys:
        parts.append(f"GMM-BIC covariance type chosen: {covariances(results['gmm-bic'].values())}.")
    checks = []
    for key in ACCEPTANCE:
        if key not in keys:
            continue
        rs = [results[key][n] for n in names]
        med_dk = statistics.median(abs(r["k_found"] - k) for r, k in zip(rs, ks))
        checks += [
            check(METHODS[key][0], f"mean ARI >= {TARGET_ARI:.2f}", fmt(mean_ari(rs)), mean_ari(rs) >= TARGET_ARI),
            check(METHODS[key][0], f"median abs(K - K found) <= {TARGET_DK}", f"{med_dk:g}", med_dk <= TARGET_DK),
        ]
    if checks:
        parts.append(checks_section("Acceptance checks", names, checks))

    per_set, notes = [], []
    for n in names:
        row = [n, truth[n]]
        for key in keys:
            r = results[key][n]
            text = f"{r['k_found']} / {fmt(r['ari'], 2)}" + (f" ({r['covariance']})" if "covariance" in r else "")
            row.append(annotate(text, [(f"{METHODS[key][0]} on {n}", r)], notes))
        per_set.append(row)
    parts.append(
        "### Per data set: K found / ARI\n\n"
        + markdown_table(["dataset", "K", *[METHODS[k][0] for k in keys]], per_set)
    )
    parts += notes_section(notes)

    auto = [k for k in keys if k in AUTO]
    if auto:
        rows = []
        for n in names:
            cells = []
            for key in auto:
                s = results[key][n].get("stats")
                cells.append(f"{fmt(s['p_value'], 4)} ({s['dip']:.3f}, {int(s['n_test'])})" if s else "-")
            rows.append([n, *cells])
        parts.append(
            "### Root test of each auto fit\n\np-value (dip, rows tested) of the dip test of the "
            'root\'s split; a root with p >= 0.01 is not split (K found = 1). "-": no test recorded (the '
            "fit failed or timed out, or the root had no valid split).\n\n"
            + markdown_table(["dataset", *[METHODS[k][0] for k in auto]], rows)
        )
    seconds = [[n, *[fmt(results[k][n]["seconds"], 2) for k in keys]] for n in names]
    parts.append("### Fit seconds\n\n" + markdown_table(["dataset", *[METHODS[k][0] for k in keys]], seconds))
    return "\n\n".join(parts)


def small_draws(names, n_rows):
    """(set, size, seed) of each subsample; seed None: the set has no more rows than the size, used whole."""
    return [
        (n, size, seed)
        for n in names
        for size in SMALL_SIZES
        for seed in (SMALL_SEEDS if n_rows[n] > size else (None,))
    ]


def small_report(results, draws, keys, truth, names, n_rows) -> str:
    ks = [truth[d] for d in draws]
    summary = [summary_row(METHODS[key][0], [results[key][d] for d in draws], ks) for key in keys]
    whole = [f"{n} ({n_rows[n]} rows) at {size}" for n, size, seed in draws if seed is None]
    parts = [
        f"## Small data: stratified subsamples of {' and '.join(map(str, SMALL_SIZES))} rows\n\n"
        f"{len(draws)} subsamples of {len(names)} bundled sets: {len(SMALL_SEEDS)} draws at each size "
        f"(`train_test_split(stratify=y)`, random_state {', '.join(map(str, SMALL_SEEDS))}; each class keeps its "
        "share), constant columns dropped before and after drawing"
        + (f"; used whole, once, where a set has no more rows than the size: {', '.join(whole)}" if whole else "")
        + ". K: the classes present in the subsample. Auto and told-K rows as in the bundled table, GMM-BIC the "
        "same baseline; fits as there (forked child, time limit, failures count as K found = 1 and ARI 0).",
        markdown_table(SUMMARY_HEADER, summary),
        f"GMM-BIC covariance type chosen: {covariances(results['gmm-bic'].values())}.",
    ]
    gmm = mean_ari(results["gmm-bic"].values())
    checks = []
    for key in [k for k in ACCEPTANCE if k in keys]:
        rs, label = [results[key][d] for d in draws], METHODS[key][0]
        told = mean_ari(results[f"{key}-k"].values())
        med_dk = statistics.median(abs(r["k_found"] - k) for r, k in zip(rs, ks))
        checks += [
            check(label, "mean ARI >= GMM-BIC's", f"{fmt(mean_ari(rs))} vs {fmt(gmm)}", mean_ari(rs) >= gmm),
            check(
                label,
                f"mean ARI >= {SMALL_VS_K} x told K's",
                f"{fmt(mean_ari(rs))} vs {SMALL_VS_K} x {fmt(told)} = {fmt(SMALL_VS_K * told)}",
                mean_ari(rs) >= SMALL_VS_K * told,
            ),
            check(label, f"median abs(K - K found) <= {TARGET_DK}", f"{med_dk:g}", med_dk <= TARGET_DK),
        ]
    parts.append(checks_section("Acceptance checks, small data", names, checks))

    per_set, notes = [], []
    for n in names:
        for size in SMALL_SIZES:
            group = [d for d in draws if d[:2] == (n, size)]
            row = [n, min(size, n_rows[n]), len(group), "/".join(map(str, sorted({truth[d] for d in group})))]
            for key in keys:
                rs = [results[key][d] for d in group]
                text = f"{fmt(float(np.mean([r['k_found'] for r in rs])), 1)} / {fmt(mean_ari(rs), 2)}"
                items = [(f"{METHODS[key][0]} on {n}, {size} rows, draw {d[2]}", results[key][d]) for d in group]
                row.append(annotate(text, items, notes))
            per_set.append(row)
    parts.append(
        "### Per data set and size: mean K found / mean ARI over the draws\n\n"
        + markdown_table(["dataset", "rows", "draws", "K", *[METHODS[k][0] for k in keys]], per_set)
    )
    return "\n\n".join(parts + notes_section(notes))


def large_report(results, memory, names, keys, truth, timeout) -> str:
    need = math.ceil(LARGE_SHARE * len(names))
    summary, checks, within = [], [], {}
    for key in keys:
        rs, ms = [results[key][n] for n in names], [memory[key][n] for n in names]
        within[key] = [
            abs(r["k_found"] - m["k_found"]) <= LARGE_DK and r["ari"] >= m["ari"] - LARGE_DARI for r, m in zip(rs, ms)
        ]
        timed_out = sum(r.get("error") == "timeout" for r in rs)
        summary.append(
            [
                SUMMARY[key][0],
                fmt(mean_ari(rs)),
                fmt(mean_ari(ms)),
                f"{sum(within[key])}/{len(names)}",
                fmt(statistics.median(abs(r["k_found"] - m["k_found"]) for r, m in zip(rs, ms)), 1),
                (">= " if timed_out else "") + fmt(sum(r["seconds"] for r in rs), 1),
                timed_out or "",
                sum("error" in r for r in rs) - timed_out or "",
            ]
        )
        checks += [
            check(
                SUMMARY[key][0],
                f"abs(K summary - K memory) <= {LARGE_DK} and ARI summary >= ARI memory - "
                f"{LARGE_DARI} on at least {need} of {len(names)} sets",
                f"{sum(within[key])}",
                sum(within[key]) >= need,
            ),
            check(SUMMARY[key][0], f"mean ARI summary >= {LARGE_ARI}", fmt(mean_ari(rs)), mean_ari(rs) >= LARGE_ARI),
        ]
    parts = [
        (
            f"## Large copies in summary mode: {LARGE_ROWS:,} rows\n\n"
            f"Each bundled set (constant columns dropped), {LARGE_ROWS:,} rows drawn with replacement (seed 0) plus "
            f"Gaussian noise of {LARGE_NOISE:.0%} of each feature's standard deviation, the drawn rows' labels as "
            f"truth, as a Dask array of {LARGE_CHUNKS} row chunks, fitted by "
            '`Method(n_clusters="auto", mode="summary", random_state=0)` (Dask\'s default scheduler, BLAS limited to '
            f"{BLAS_THREADS} thread), in a forked child with a limit of {timeout:g} s (a failure counts as K = 1, ARI "
            "0). Memory: the in-memory auto fit of the original rows, ARI against their labels. Within: "
            f"abs(K summary - K memory) <= {LARGE_DK} and ARI summary >= ARI memory - {LARGE_DARI}. Seconds: the "
            "summary fit, labels computed included."
        ),
        markdown_table(
            [
                "method",
                "mean ARI summary",
                "mean ARI memory",
                "within",
                "median abs(K summary - K memory)",
                "total summary (s)",
                "timed out",
                "failed",
            ],
            summary,
        ),
        checks_section(
            "Acceptance checks, large copies",
            names,
            checks,
            f"the count target is {LARGE_SHARE:.0%} of the sets run, rounded up; the others apply to all ten sets",
        ),
    ]
    per_set, notes = [], []
    for i, n in enumerate(names):
        row = [n, truth[n]]
        for key in keys:
            r, m = results[key][n], memory[key][n]
            k_cell = annotate(
                f"{r['k_found']} / {m['k_found']}",
                [(f"{SUMMARY[key][0]} on {n}", r), (f"{METHODS[key][0]} on {n}", m)],
                notes,
            )
            row += [
                k_cell,
                f"{fmt(r['ari'], 2)} / {fmt(m['ari'], 2)}",
                "yes" if within[key][i] else "no",
                fmt(r["seconds"], 1),
            ]
        per_set.append(row)
    header = ["dataset", "K"]
    for key in keys:
        label = AUTO[key].__name__
        header += [f"{label} K summary / memory", "ARI summary / memory", "within", "summary (s)"]
    parts.append("### Per data set\n\n" + markdown_table(header, per_set))
    return "\n\n".join(parts + notes_section(notes))


def _list(parser, text, choices, what):
    items = [s.strip() for s in text.split(",") if s.strip()] if text else list(choices)
    if set(items) - set(choices):
        parser.error(f"unknown {what} {sorted(set(items) - set(choices))}; choose from {list(choices)}")
    return items


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", help="comma-separated subset of: " + ",".join(TABLES))
    parser.add_argument("--methods", help="comma-separated subset of: " + ",".join(METHODS))
    parser.add_argument("--datasets", help="comma-separated subset of: " + ",".join(list_datasets()))
    parser.add_argument("--timeout", type=float, default=600.0, help="wall-clock limit per fit, seconds (600)")
    parser.add_argument("--gmm-threads", type=int, default=1, help="BLAS threads in the GMM fits, 0: BLAS's default")
    parser.add_argument("--out", default=str(RESULTS_DIR / "auto-k.md"), help="markdown file to write")
    args = parser.parse_args(argv)
    tables = _list(parser, args.tables, TABLES, "tables")
    keys = _list(parser, args.methods, METHODS, "methods")
    names = _list(parser, args.datasets, list_datasets(), "datasets")
    estimators = [k for k in ACCEPTANCE if k in keys]  # of the small and large tables

    truth = {n: int(np.unique(load(n)[1]).size) for n in names}
    parts = []
    results = {key: {} for key in keys}
    if "bundled" in tables:
        for n in names:
            for key in keys:
                results[key][n] = logged_fit(args, key, METHODS[key][1], functools.partial(load, n), n, truth[n])
        parts.append(bundled_report(results, names, keys, truth, args.timeout))
    if {"small", "large"} & set(tables) and not estimators:
        parts.append("The small and large tables fit MDH and NCut: `--methods` selects neither, not run.")
    if "small" in tables and estimators:
        n_rows = {n: load(n)[1].size for n in names}
        draws = small_draws(names, n_rows)
        small_truth = {d: int(np.unique(subsample(*d)[1]).size) for d in draws}
        small_keys = [*estimators, *[f"{k}-k" for k in estimators], "gmm-bic"]
        small = {key: {} for key in small_keys}
        for d in draws:
            what = f"{d[0]} {min(d[1], n_rows[d[0]])} #{'all' if d[2] is None else d[2]}"
            for key in small_keys:
                data = functools.partial(subsample, *d)
                small[key][d] = logged_fit(args, key, METHODS[key][1], data, what, small_truth[d])
        parts.append(small_report(small, draws, small_keys, small_truth, names, n_rows))
    if "large" in tables and estimators:
        large, memory = {key: {} for key in estimators}, {key: {} for key in estimators}
        for n in names:
            for key in estimators:
                data = functools.partial(load, n)
                memory[key][n] = results[key].get(n) or logged_fit(args, key, METHODS[key][1], data, n, truth[n])
                data = functools.partial(large_copy, n)
                large[key][n] = logged_fit(args, f"{key}-summary", SUMMARY[key][1], data, f"{n} copy", truth[n])
        parts.append(large_report(large, memory, names, estimators, truth, args.timeout))
    title = 'Choosing K: n_clusters="auto" on the bundled data sets, small subsamples and large copies'
    path = write_markdown(args.out, title, command_line(), "\n\n".join(parts))
    print(path.read_text())
    print(f"written to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
