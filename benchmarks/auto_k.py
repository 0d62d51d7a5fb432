"""Choosing the number of clusters: ``n_clusters="auto"`` on the ten bundled data sets.

With ``n_clusters="auto"`` a divisive estimator splits a leaf only if the split, found on a random half of the
leaf's rows, is significant by Hartigan's dip test on the other half (p-value below ``significance_level``,
default 0.01). For each bundled data set (as shipped, constant columns dropped) this script fits:

- every divisive estimator (MDH, NCut, MC, PDDP, DePDDP, IPDDP, SCPP, LMSC) as
  ``Method(n_clusters="auto", random_state=0)``, defaults otherwise;
- reference rows: MDHClustering and NCutClustering with ``n_clusters=None`` (grow while a valid split exists)
  and with the true K;
- baselines on z-scored features (StandardScaler): GaussianMixture choosing K by BIC over 1..2K
  (covariance_type="full", random_state=0; "diag" for the whole search on a set where a full fit fails), and
  ``HDBSCAN(min_cluster_size=max(2, n // 100))`` (K found excludes noise; ARI counts noise as one more label).

Recorded per fit: K found, ARI against the classes and the fit's wall-clock seconds (the GMM row: the whole BIC
search). Each fit runs in a forked child process, killed after ``--timeout`` seconds; a fit that raises or times
out counts as one cluster with ARI 0. BLAS runs single-threaded in every fit (numba's threads as configured).
The report has a summary table (mean ARI, median |K found - K|, sets with K found exactly, total seconds), a
per-set table of "K found / ARI", the root test of each auto fit, the fit seconds and the acceptance checks for
MDH and NCut auto (mean ARI >= 0.60, median |K - K found| <= 2).

    python benchmarks/auto_k.py [--methods a,b] [--datasets a,b] [--timeout SECONDS] [--out FILE]
"""

import argparse
import multiprocessing as mp
import statistics
import sys
import time
import traceback
import warnings

import numpy as np

# _common first: it puts the repository root on sys.path.
from _common import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown
from sklearn.cluster import HDBSCAN
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import lowdens_dask as ld
from lowdens_dask.datasets import list_datasets, load_dataset

AUTO = {"mdh": ld.MDHClustering, "ncut": ld.NCutClustering, "mc": ld.MCClustering, "pddp": ld.PDDP,
        "depddp": ld.DePDDP, "ipddp": ld.IPDDP, "scpp": ld.SCPPClustering, "lmsc": ld.LMSCClustering}
#: key -> (label in the tables, fit(X, K) -> (labels, K found, note or None, root test stats or None)).
METHODS = {}


def _divisive(cls, n_clusters):
    def fit(X, k):
        model = cls(n_clusters=k if n_clusters == "K" else n_clusters, random_state=0).fit(X)
        stats = getattr(model.tree_.root, "stats", None) if n_clusters == "auto" else None
        stats = {key: float(stats[key]) for key in ("dip", "p_value", "n_test") if key in stats} if stats else None
        return model.labels_, int(model.n_clusters_), None, stats
    return fit


for _key, _cls in AUTO.items():
    METHODS[_key] = (f"{_cls.__name__} auto", _divisive(_cls, "auto"))
for _key, _cls in (("mdh", ld.MDHClustering), ("ncut", ld.NCutClustering)):
    METHODS[f"{_key}-none"] = (f"{_cls.__name__} None (ref.)", _divisive(_cls, None))
    METHODS[f"{_key}-k"] = (f"{_cls.__name__} true K (ref.)", _divisive(_cls, "K"))


def gmm_bic(X, k):
    Z = StandardScaler().fit_transform(X)
    try:
        fits = [GaussianMixture(j, covariance_type="full", random_state=0).fit(Z) for j in range(1, 2 * k + 1)]
        note = None
    except (ValueError, np.linalg.LinAlgError) as exc:  # e.g. an ill-defined (singular) covariance
        fits = [GaussianMixture(j, covariance_type="diag", random_state=0).fit(Z) for j in range(1, 2 * k + 1)]
        note = f"full covariance failed ({type(exc).__name__}); diag used"
    best = min(fits, key=lambda g: g.bic(Z))
    return best.predict(Z), int(best.n_components), note, None


def hdbscan(X, k):
    labels = HDBSCAN(min_cluster_size=max(2, X.shape[0] // 100)).fit_predict(StandardScaler().fit_transform(X))
    noise = float(np.mean(labels == -1))
    return labels, int(np.unique(labels[labels >= 0]).size), f"noise {noise:.0%}", None


METHODS["gmm-bic"] = ("GaussianMixture BIC (baseline)", gmm_bic)
METHODS["hdbscan"] = ("HDBSCAN (baseline)", hdbscan)
ACCEPTANCE = ("mdh", "ncut")  # auto rows checked against the targets below
TARGET_ARI, TARGET_DK = 0.60, 2
#: BLAS threads in every fit: on a loaded 2-core machine two OpenBLAS threads spin against the other load (one
#: GaussianMixture(10) fit on pendigits: 19 s with two, 1.4 s with one); numba's threads are left as they are.
BLAS_THREADS = 1


def load(name):
    X, y = load_dataset(name)
    X = np.asarray(X, dtype=float)
    return X[:, X.std(0) > 0], np.asarray(y)


def _child(conn, key, name):
    """Runs in the forked child: load the set, fit, send back the result (or the error type)."""
    start = time.perf_counter()
    try:
        X, y = load(name)
        k = int(np.unique(y).size)
        with warnings.catch_warnings(), threadpool_limits(BLAS_THREADS, user_api="blas"):
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            labels, k_found, note, stats = METHODS[key][1](X, k)
            seconds = time.perf_counter() - start
        conn.send({"k_found": k_found, "ari": float(adjusted_rand_score(y, labels)), "seconds": seconds,
                   "note": note, "stats": stats})
    except BaseException as exc:  # noqa: BLE001 - any failure is a finding, reported as one cluster
        conn.send({"error": type(exc).__name__, "detail": traceback.format_exception_only(exc)[-1].strip(),
                   "seconds": time.perf_counter() - start})


def run_fit(key, name, timeout):
    """One fit in a forked child with a wall-clock limit; failures and timeouts count as 1 cluster, ARI 0."""
    parent, child = mp.Pipe(duplex=False)
    proc = mp.get_context("fork").Process(target=_child, args=(child, key, name))
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


def report(results, names, keys, truth, timeout) -> str:
    summary, notes = [], []
    for key in keys:
        rs = [results[key][n] for n in names]
        dk = [abs(r["k_found"] - truth[n]) for r, n in zip(rs, names)]
        timed_out = sum(r.get("error") == "timeout" for r in rs)
        failed = sum("error" in r for r in rs) - timed_out
        total = sum(r["seconds"] for r in rs if r["seconds"] == r["seconds"])
        summary.append([METHODS[key][0], fmt(float(np.mean([r["ari"] for r in rs]))), fmt(statistics.median(dk), 1),
                        f"{sum(d == 0 for d in dk)}/{len(names)}", (">= " if timed_out else "") + fmt(total, 1),
                        timed_out or "", failed or ""])
    parts = [
        ("## Summary\n\n"
         f"Bundled data sets ({len(names)} of {len(list_datasets())}), as shipped with constant columns dropped. "
         "Divisive methods: `Method(n_clusters=\"auto\", random_state=0)`, defaults otherwise (a leaf is split only "
         "if the dip test on the held-out half gives p < 0.01); reference rows: `n_clusters=None` and "
         "`n_clusters=K` (true K), random_state=0. Baselines on z-scored features. Each fit runs in a forked child "
         f"process with a wall-clock limit of {timeout:g} s; a fit that raises or times out counts as K found = 1 "
         "and ARI 0 (seconds: until it raised, or the limit). Seconds: the fit alone (GMM: the whole BIC search "
         "over 1..2K), one fit, numba kernels loaded from the on-disk cache, BLAS limited to "
         f"{BLAS_THREADS} thread (threadpoolctl) in every fit."),
        markdown_table(["method", "mean ARI", "median abs(K found - K)", "K exact", "total (s)", "timed out",
                        "failed"], summary),
    ]
    checks = []
    for key in ACCEPTANCE:
        if key not in keys:
            continue
        rs = [results[key][n] for n in names]
        mean_ari = float(np.mean([r["ari"] for r in rs]))
        med_dk = statistics.median(abs(r["k_found"] - truth[n]) for r, n in zip(rs, names))
        ari_ok = "PASS" if mean_ari >= TARGET_ARI else f"FAIL (short by {TARGET_ARI - mean_ari:.3f})"
        dk_ok = "PASS" if med_dk <= TARGET_DK else f"FAIL (over by {med_dk - TARGET_DK:g})"
        checks += [f"- {METHODS[key][0]}: mean ARI >= {TARGET_ARI:.2f}: {fmt(mean_ari)}, **{ari_ok}**",
                   f"- {METHODS[key][0]}: median abs(K - K found) <= {TARGET_DK}: {med_dk:g}, **{dk_ok}**"]
    if checks:
        scope = "" if len(names) == len(list_datasets()) else " (subset run: the targets apply to all ten sets)"
        parts.append(f"## Acceptance checks{scope}\n\n" + "\n".join(checks))

    per_set = []
    for n in names:
        row = [n, truth[n]]
        for key in keys:
            r = results[key][n]
            cell = f"{r['k_found']} / {fmt(r['ari'], 2)}"
            if "error" in r or r.get("note"):
                text = (f"{METHODS[key][0]} on {n}: " + (f"{r['error']} ({r['detail']})" if "error" in r
                                                          else r["note"]))
                notes.append(text)
                cell += (" (timed out)" if r.get("error") == "timeout" else " (failed)" if "error" in r else "") \
                    + f" [{len(notes)}]"
            row.append(cell)
        per_set.append(row)
    parts.append("## Per data set: K found / ARI\n\n" + markdown_table(
        ["dataset", "K", *[METHODS[k][0] for k in keys]], per_set))
    if notes:
        parts.append("Notes:\n\n" + "\n".join(f"{i}. {t}" for i, t in enumerate(notes, 1)))

    auto = [k for k in keys if k in AUTO]
    if auto:
        rows = []
        for n in names:
            cells = []
            for key in auto:
                s = results[key][n].get("stats")
                cells.append(f"{fmt(s['p_value'], 4)} ({s['dip']:.3f}, {int(s['n_test'])})" if s else "-")
            rows.append([n, *cells])
        parts.append("## Root test of each auto fit\n\np-value (dip, rows tested) of the held-out dip test of the "
                     "root's split; a root with p >= 0.01 is not split (K found = 1). \"-\": no test recorded (the "
                     "fit failed or timed out, or the root had no valid split).\n\n"
                     + markdown_table(["dataset", *[METHODS[k][0] for k in auto]], rows))
    seconds = [[n, *[fmt(results[k][n]["seconds"], 2) for k in keys]] for n in names]
    parts.append("## Fit seconds\n\n" + markdown_table(["dataset", *[METHODS[k][0] for k in keys]], seconds))
    return "\n\n".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", help="comma-separated subset of: " + ",".join(METHODS))
    parser.add_argument("--datasets", help="comma-separated subset of: " + ",".join(list_datasets()))
    parser.add_argument("--timeout", type=float, default=600.0, help="wall-clock limit per fit, seconds (600)")
    parser.add_argument("--out", default=str(RESULTS_DIR / "auto-k.md"), help="markdown file to write")
    args = parser.parse_args(argv)
    keys = [s.strip() for s in args.methods.split(",") if s.strip()] if args.methods else list(METHODS)
    names = [s.strip() for s in args.datasets.split(",") if s.strip()] if args.datasets else list_datasets()
    if set(keys) - set(METHODS):
        parser.error(f"unknown methods {sorted(set(keys) - set(METHODS))}; choose from {list(METHODS)}")
    if set(names) - set(list_datasets()):
        parser.error(f"unknown datasets {sorted(set(names) - set(list_datasets()))}; choose from {list_datasets()}")

    truth = {n: int(np.unique(load(n)[1]).size) for n in names}
    results = {key: {} for key in keys}
    for n in names:
        for key in keys:
            r = results[key][n] = run_fit(key, n, args.timeout)
            status = r.get("error", f"K {r['k_found']}/{truth[n]}, ARI {r['ari']:.3f}")
            print(f"{n:13s} {key:8s} {r['seconds']:8.2f} s  {status}", file=sys.stderr, flush=True)
    body = report(results, names, keys, truth, args.timeout)
    path = write_markdown(args.out, 'Choosing K: n_clusters="auto" on the bundled data sets', command_line(), body)
    print(path.read_text())
    print(f"written to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
