"""Nightly updates by partial_fit against refits (issue 24).

1. The drift scenario: eight nightly batches of 200,000 rows (d = 16) from six well-separated Gaussian components,
   and from night 6 a seventh that makes up 8% of each batch. Each night runs
   ``partial_fit(batch)`` with ``n_clusters="auto"``; a fixed probe of the six components (and one of the seventh)
   follows the ids. In memory for MDH and NCut, and from zarr (``--chunk`` rows per chunk, default 10,000: summary
   mode makes at most 64 microclusters per chunk, so 50,000-row chunks summarise a night in 256 microclusters, and
   the 8% component's leaf was then split on night 8, not 6) on a 2-worker LocalCluster.
2. Cost: night 8's ``partial_fit`` against ``fit`` in summary mode on all eight batches stacked (in memory; from
   one zarr array for the cluster run), each the median of ``--repeats`` runs from the same state (the estimator
   before night 8 copied), the ratio of medians measured in the same run.
3. Equivalence: eight batches from one fixed distribution (the six components), the updated tree's labels against
   a summary-mode fit of all rows.
4. An update against a refit at 10^6 and 10^7 rows seen (eight batches of the six components).

    python benchmarks/incremental.py [--methods mdh,ncut] [--repeats 3] [--scale 1e6,1e7] [--workers 2]
                                     [--output FILE]
"""

import argparse
import copy
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import zarr
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import METHODS

D = 16
NIGHT_ROWS = 200_000
NIGHTS = 8
NEW_FROM, NEW_SHARE = 6, 0.08
CENTRES = np.random.default_rng(7).normal(size=(7, D)) * 12.0 / np.sqrt(2)  # nearest pair 22.8 apart


def batch(number: int, n: int = NIGHT_ROWS, drift: bool = True, seed: int = 0):
    """A night's rows and true components: six Gaussians, and from night NEW_FROM (with ``drift``) a seventh."""
    rng = np.random.default_rng([seed, number])
    new = drift and number >= NEW_FROM
    p = np.r_[np.full(6, (1 - NEW_SHARE) / 6), NEW_SHARE] if new else np.full(6, 1 / 6)
    y = rng.choice(len(p), size=n, p=p)
    return CENTRES[y] + rng.normal(size=(n, D)), y


PROBE_ROWS = 1000
OLD_PROBE = np.vstack([CENTRES[c] + np.random.default_rng(100 + c).normal(size=(PROBE_ROWS, D)) for c in range(6)])
OLD_TRUTH = np.repeat(np.arange(6), PROBE_ROWS)
NEW_PROBE = CENTRES[6] + np.random.default_rng(106).normal(size=(PROBE_ROWS, D))


def follow(est, inputs, prefix: str):
    """Run the nights (``inputs[i]`` the input of night i + 1); per night the figures of the table, the reports,
    the estimator as it was before the last night, and the acceptance checks."""
    rows, reports, previous, night5, night7, before_last = [], [], None, None, None, None
    for number, X in enumerate(inputs, start=1):
        if number == len(inputs):
            before_last = copy.deepcopy(est)
        start = time.perf_counter()
        est.partial_fit(X)
        seconds = time.perf_counter() - start
        old, new = est.predict(OLD_PROBE), est.predict(NEW_PROBE)
        ids, counts = np.unique(new, return_counts=True)
        new_id = ids[counts.argmax()]
        kept = None if previous is None else float(np.mean(old == previous))
        ari = adjusted_rand_score(np.r_[OLD_TRUTH, np.full(PROBE_ROWS, 6)], np.r_[old, new])
        actions = [r["action"] for r in est.update_report_["nodes"]]
        drift = est.update_report_["drift"]
        rows.append([prefix, number, est.n_clusters_, fmt(kept) if kept is not None else "–",
                     fmt(counts.max() / PROBE_ROWS), fmt(float(np.mean(old == new_id))), fmt(ari),
                     ", ".join(f"{a} {actions.count(a)}" for a in dict.fromkeys(actions)) or "fit",
                     fmt(drift["psi"]) if drift else "–", fmt(seconds)])  # fmt: skip
        reports.append(est.update_report_)
        if number == NEW_FROM - 1:
            night5 = old
        if number == 7:
            night7 = old
        previous = old
        print(rows[-1], flush=True)
    early = [r for r in rows if 2 <= r[1] < NEW_FROM]
    checks = {
        "nights 2-5: six clusters, ≥ 99% keep their id": all(r[2] == 6 and float(r[3]) >= 0.99 for r in early),
        "by night 7: seven clusters": rows[6][2] == 7,
        "new component: ≥ 99% share one id, ≤ 1% of old rows carry it": float(rows[6][4]) >= 0.99
        and float(rows[6][5]) <= 0.01,
        "old rows keep night 5's ids by night 7 (≥ 99%)": float(np.mean(night7 == night5)) >= 0.99,
        "ARI ≥ 0.95 (old and new probe rows)": float(rows[6][6]) >= 0.95,
    }
    return rows, reports, before_last, checks


def time_last_night_and_refit(before_last, last, refit, repeats: int):
    """Medians of night 8's partial_fit (from copies of the estimator before it) and of the refit, interleaved."""
    updates, refits = [], []
    for _ in range(repeats):
        est = copy.deepcopy(before_last)
        start = time.perf_counter()
        est.partial_fit(last)
        updates.append(time.perf_counter() - start)
        start = time.perf_counter()
        refit()
        refits.append(time.perf_counter() - start)
    return statistics.median(updates), statistics.median(refits)


def drift_report_table(report: dict) -> str:
    nodes = [[r["node"], r["action"], r.get("label", "–"), r.get("new_label", "–"),
              fmt(r["angle_degrees"]) if "angle_degrees" in r else "–",
              fmt(r["threshold_shift"]) if "threshold_shift" in r else "–",
              fmt(r["rerouted"]) if "rerouted" in r else "–", fmt(r.get("p_value", float("nan")))]
             for r in report["nodes"]]  # fmt: skip
    leaves = [
        [leaf["label"], leaf["node"], fmt(leaf["share_before"]), fmt(leaf["share_new"])] for leaf in report["leaves"]
    ]
    drift = report["drift"]
    return (
        markdown_table(["node", "action", "id", "new id", "angle °", "threshold moved", "rerouted", "p-value"], nodes)
        + "\n\n"
        + markdown_table(["cluster id", "leaf node", "share before", "share of the new rows"], leaves)
        + f"\n\nDrift of the partition: PSI {fmt(drift['psi'])}, chi-square {fmt(drift['chi2'])} on {drift['dof']} "
        f"degrees of freedom, p-value {fmt(drift['p_value'])}.\n"
    )


def in_memory(method: str, repeats: int):
    estimator = METHODS[method].clustering
    batches = [batch(number)[0] for number in range(1, NIGHTS + 1)]
    rows, reports, before_last, checks = follow(estimator(n_clusters="auto", random_state=0), batches, method)
    stacked = np.vstack(batches)
    update, refit = time_last_night_and_refit(
        before_last, batches[-1],
        lambda: estimator(n_clusters="auto", random_state=0, mode="summary").fit(stacked), repeats,
    )  # fmt: skip
    checks["cost: night 8 ≤ 0.3 × summary fit of all rows"] = update / refit <= 0.3
    return rows, reports, checks, [method, "in memory", fmt(update), fmt(refit), fmt(update / refit)]


def on_cluster(method: str, workers: int, repeats: int, workdir: Path, chunk: int):
    from distributed import Client, LocalCluster

    estimator = METHODS[method].clustering
    paths, whole = [], zarr.open_array(str(workdir / "all.zarr"), mode="w", shape=(NIGHTS * NIGHT_ROWS, D),
                                       chunks=(chunk, D), dtype="f8")  # fmt: skip
    for number in range(1, NIGHTS + 1):
        X = batch(number)[0]
        path = workdir / f"night{number}.zarr"
        zarr.open_array(str(path), mode="w", shape=X.shape, chunks=(chunk, D), dtype="f8")[:] = X
        whole[(number - 1) * NIGHT_ROWS : number * NIGHT_ROWS] = X
        paths.append(str(path))
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster):
            rows, reports, before_last, checks = follow(estimator(n_clusters="auto", random_state=0), paths,
                                                        f"{method} (zarr, {workers} workers)")  # fmt: skip
            update, refit = time_last_night_and_refit(
                before_last, paths[-1],
                lambda: estimator(n_clusters="auto", random_state=0, mode="summary").fit(str(workdir / "all.zarr")),
                repeats,
            )  # fmt: skip
    checks["cost: night 8 ≤ 0.3 × summary fit of all rows"] = update / refit <= 0.3
    return rows, reports, checks, [method, f"zarr, {workers} workers", fmt(update), fmt(refit), fmt(update / refit)]


def equivalence(method: str):
    estimator = METHODS[method].clustering
    batches = [batch(number, drift=False, seed=1)[0] for number in range(1, NIGHTS + 1)]
    est = estimator(n_clusters="auto", random_state=0)
    for X in batches:
        est.partial_fit(X)
    stacked = np.vstack(batches)
    refit = estimator(n_clusters="auto", random_state=0, mode="summary").fit(stacked)
    ari = adjusted_rand_score(refit.labels_, est.predict(stacked))
    return [method, stacked.shape[0], est.n_clusters_, refit.n_clusters_, fmt(ari), "PASS" if ari >= 0.95 else "FAIL"]


def at_scale(method: str, seen: int, repeats: int):
    """Seven updates of seen/8 rows each, then the eighth timed against a refit on all rows (summary mode)."""
    estimator = METHODS[method].clustering
    n = seen // NIGHTS
    est = estimator(n_clusters="auto", random_state=0)
    batches = []
    for number in range(1, NIGHTS + 1):
        X = batch(number, n=n, drift=False, seed=2)[0].astype(np.float32)
        batches.append(X)
        if number < NIGHTS:
            est.partial_fit(X)
    stacked = np.vstack(batches)
    update, refit = time_last_night_and_refit(
        est, batches[-1], lambda: estimator(n_clusters="auto", random_state=0, mode="summary").fit(stacked), repeats
    )
    after = copy.deepcopy(est).partial_fit(batches[-1])
    return [method, seen, n, after.summary_.n_microclusters, fmt(update), fmt(refit), fmt(update / refit)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="mdh,ncut")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", default="1e6,1e7")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=10_000, help="rows per zarr chunk of the cluster run")
    parser.add_argument("--skip-cluster", action="store_true")
    parser.add_argument("--output", default=str(RESULTS_DIR / "incremental.md"))
    args = parser.parse_args(argv)
    methods = args.methods.split(",")
    night_rows, cost_rows, check_rows, equivalent, scale_rows, night6 = [], [], [], [], [], {}
    workdir = Path(tempfile.mkdtemp(prefix="lowdens-incremental-"))
    try:
        for method in methods:
            runs = [in_memory(method, args.repeats)]
            if not args.skip_cluster:
                runs.append(on_cluster(method, args.workers, args.repeats, workdir, args.chunk))
            for rows, reports, checks, cost in runs:
                night_rows += rows
                cost_rows.append(cost)
                check_rows += [[rows[0][0], name, "PASS" if ok else "FAIL"] for name, ok in checks.items()]
                night6.setdefault(method, reports[NEW_FROM - 1])
            equivalent.append(equivalence(method))
            print(equivalent[-1], flush=True)
            for seen in args.scale.split(","):
                scale_rows.append(at_scale(method, int(float(seen)), args.repeats if float(seen) < 1e7 else 1))
                print(scale_rows[-1], flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    body = (
        "## The drift scenario, night by night\n\n"
        "Eight nightly batches of 200,000 rows (d = 16) from six Gaussian components, a seventh making up 8% of each "
        'batch from night 6; `partial_fit(batch)` with `n_clusters="auto"` each night. Probe: 1,000 fixed rows of '
        "each of the six components, and 1,000 of the seventh. *kept*: probe rows of the six with the previous "
        "night's id; *new: top id share*: the share of the seventh's probe rows with their most common id; *old "
        "rows with it*: the share of the six's probe rows with that id; ARI over both probes against the truth.\n\n"
        + markdown_table(
            [
                "run",
                "night",
                "clusters",
                "kept",
                "new: top id share",
                "old rows with it",
                "ARI",
                "splits",
                "PSI",
                "partial_fit s",
            ],
            night_rows,
        )
        + "\n\n## Acceptance checks\n\n"
        + markdown_table(["run", "check", "result"], check_rows)
        + "\n\n## Cost: night 8's partial_fit against a summary-mode fit of all eight batches\n\n"
        f"Medians of {args.repeats} runs each, interleaved (night 8 rerun from copies of the estimator before it).\n\n"
        + markdown_table(["method", "input", "night 8 partial_fit s", "fit of 1.6M rows s", "ratio (≤ 0.3)"], cost_rows)
        + "\n\n## Equivalence with a refit (eight batches of one fixed distribution)\n\n"
        + markdown_table(["method", "rows", "clusters (updated)", "clusters (refit)", "ARI", "≥ 0.95"], equivalent)
        + "\n\n## An update against a refit, by rows seen (eight equal batches, float32, in memory)\n\n"
        f"Medians of {args.repeats} runs at 10⁶ rows, one run at 10⁷.\n\n"
        + markdown_table(
            ["method", "rows seen", "batch rows", "microclusters kept", "update s", "refit s", "update / refit"],
            scale_rows,
        )
        + "\n\n## The drift report of night 6 (the seventh component appears)\n\n"
        + "\n".join(f"### {method}\n\n{drift_report_table(report)}" for method, report in night6.items())
        + "\n\nThe full report of each night is `update_report_`; as JSON, night 6 of the first method:\n\n```json\n"
        + json.dumps(night6[methods[0]], indent=1)[:3000]
        + "\n```\n"
    )
    write_markdown(args.output, "Nightly updates by partial_fit", command_line(), body)


if __name__ == "__main__":
    main()
