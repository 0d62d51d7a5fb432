"""``n_clusters="auto"``: calibration under a one-cluster null, power on well-separated mixtures, and cost.

A leaf is split under ``n_clusters="auto"`` only if its split is significant: the dip of all the leaf's rows along
it against the pursued null, the dips the same pursuit finds in one-cluster samples of the leaf's size and effective
dimension (p-value below ``significance_level``, default 0.01; :mod:`lowdens_dask.pursuit.significance`; SCPP and
LMSC without a shipped table: the held-out test). Every estimator is fitted in memory on numpy arrays at its defaults
apart from ``n_clusters`` and ``random_state``.

1. **Calibration** (``calibration``): for each method, ``--draws`` independent draws (draw i: data from
   ``numpy.random.default_rng(i)``, ``Method(n_clusters="auto", random_state=i)``) of one standard Gaussian
   N(0, I_d), d in {2, 10, 50}, and of one uniform cube U[0, 1]^d, d in {2, 10}, at every n of ``--sizes``.
   Reported per (method, distribution, d, n): the share of draws that found exactly one cluster (PASS where
   >= 95%), the largest number of clusters found, and the median fit time.
2. **Power** (``power``): Gaussian mixtures in d = 10 with K in {2, 5, 10, 20} unit-covariance components of 500
   rows each; the K centres are drawn from N(0, 6^2 I) and the whole set is redrawn until every pair of centres is
   at least 10 apart. Draw i: data from ``default_rng(i)``, ``random_state=i``. Reported per (method, K): the share
   of draws with ``n_clusters_ == K`` (PASS where >= 90%), how many found fewer or more, the mean ARI against
   the true components and the median fit time.
3. **Cost** (``cost``): the K = 5, 10 and 20 mixtures above with 4,000 rows per component (one data set per K,
   seed 0). In one worker process per method: one warm-up fit of each (numba compilation excluded), then 5
   rounds, each timing ``n_clusters="auto"`` and ``n_clusters=K`` (``random_state=0``) one after the other,
   the order alternating by round. Reported: the two medians and their ratio auto / K (target <= 1.5), the
   clusters found by "auto" and both ARIs. Methods: MDHClustering and NCutClustering, or those named by
   ``--methods`` when it is given.

Every (method, config) runs its draws one at a time in a worker process (one per method, after a small warm-up
fit); ``--time-budget`` seconds (default 900) bound the wall time of a config's draws: when they exceed it the
config stops (the worker is killed, even in the middle of a fit, and a fresh one started for the next config)
and is reported as partial with the number of draws done. ``--large-draws`` sets fewer draws for n >= 100,000.
A config's draws are saved every 30 s; ``--resume`` keeps the configs already finished with the same plan (draws
and budget) and goes on with an interrupted one from its next draw, within what is left of its budget.

Results are kept in a JSON sidecar beside the markdown file (``auto-k-null.json``) and merged across runs: a
run replaces the configs it measures and keeps the others, and the markdown file is rewritten from the sidecar
after every config, so partial results survive an interrupted run.

    python benchmarks/auto_k_null.py [--parts calibration,power,cost] [--methods A,B] [--draws 100]
                                     [--large-draws N] [--sizes 500,5000,100000] [--ks 2,5,10,20]
                                     [--gaussian-dims 100,200,450,600]
                                     [--time-budget 900] [--resume] [--note TEXT] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import signal
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

# harness first: it puts the checkout being measured on sys.path.
from harness import RESULTS_DIR, command_line, fmt, markdown_table, median, write_markdown

METHODS = (
    "MDHClustering",
    "NCutClustering",
    "MCClustering",
    "PDDP",
    "DePDDP",
    "IPDDP",
    "SCPPClustering",
    "LMSCClustering",
)
COST_DEFAULT_METHODS = ("MDHClustering", "NCutClustering")
PARTS = ("calibration", "power", "cost")
#: One-cluster nulls: (distribution, d).
NULLS = (("gaussian", 2), ("gaussian", 10), ("gaussian", 50), ("uniform", 2), ("uniform", 10))
LARGE_N = 100_000
CALIBRATION_TARGET = 0.95
POWER_TARGET = 0.90
COST_TARGET = 1.5
MIX_D, CENTRE_SD, MIN_SEPARATION = 10, 6.0, 10.0
POWER_KS, POWER_ROWS = (2, 5, 10, 20), 500
COST_KS, COST_ROWS, COST_REPEATS = (5, 10, 20), 4_000, 5
WARMUP_TIMEOUT = 600.0
#: A config's draws are saved to the sidecar at least this often (seconds), so an interrupted run can resume.
CHECKPOINT_SECONDS = 30.0
TITLE = 'n_clusters="auto": calibration under a one-cluster null, power and cost'


# --- data ---------------------------------------------------------------------------------------------


def null_data(dist: str, d: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dist == "gaussian":
        return rng.standard_normal((n, d))
    return rng.random((n, d))


def centres(k: int, rng) -> np.ndarray:
    """K centres from N(0, CENTRE_SD^2 I), the whole set redrawn until every pair is MIN_SEPARATION apart."""
    while True:
        c = rng.normal(scale=CENTRE_SD, size=(k, MIX_D))
        gaps = np.linalg.norm(c[:, None, :] - c[None, :, :], axis=-1)[np.triu_indices(k, 1)]
        if k < 2 or gaps.min() >= MIN_SEPARATION:
            return c


def mixture(k: int, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """K unit-covariance Gaussian components of ``rows`` rows each in d = MIX_D, rows shuffled; (X, labels)."""
    rng = np.random.default_rng(seed)
    c = centres(k, rng)
    y = np.repeat(np.arange(k), rows)
    X = c[y] + rng.standard_normal((k * rows, MIX_D))
    order = rng.permutation(k * rows)
    return X[order], y[order]


# --- worker process -----------------------------------------------------------------------------------


def _fit(method: str, X, n_clusters, seed: int):
    import lowdens_dask

    est = getattr(lowdens_dask, method)(n_clusters=n_clusters, random_state=seed)
    start = time.perf_counter()
    est.fit(X)
    return est, time.perf_counter() - start


def _task(conn, kind: str, p: dict):
    from sklearn.metrics import adjusted_rand_score

    if kind == "warmup":
        X, _ = mixture(2, 150, 12345)
        _fit(p["method"], X, "auto", 0)
        _fit(p["method"], X, 2, 0)
        return {}
    if kind == "calibration":
        X = null_data(p["dist"], p["d"], p["n"], p["draw"])
        est, t = _fit(p["method"], X, "auto", p["draw"])
        return {"k": int(est.n_clusters_), "time": t}
    if kind == "power":
        X, y = mixture(p["k"], POWER_ROWS, p["draw"])
        est, t = _fit(p["method"], X, "auto", p["draw"])
        return {"k": int(est.n_clusters_), "ari": float(adjusted_rand_score(y, est.labels_)), "time": t}
    if kind == "cost":
        X, y = mixture(p["k"], COST_ROWS, 0)
        variants = {"auto": "auto", "fixed": p["k"]}
        for name in ("auto", "fixed"):  # warm-up, not timed
            _fit(p["method"], X, variants[name], 0)
        conn.send(("progress", {"warm": True}))
        for r in range(p["repeats"]):
            for name in ("auto", "fixed") if r % 2 == 0 else ("fixed", "auto"):
                est, t = _fit(p["method"], X, variants[name], 0)
                conn.send(("progress", {"variant": name, "time": t, "k": int(est.n_clusters_),
                                        "ari": float(adjusted_rand_score(y, est.labels_))}))
        return {}
    raise ValueError(kind)


def worker_main(conn) -> None:
    import warnings

    warnings.simplefilter("ignore")
    while True:
        msg = conn.recv()
        if msg is None:
            return
        kind, p = msg
        try:
            conn.send(("done", _task(conn, kind, p)))
        except Exception as exc:  # noqa: BLE001 - reported per draw
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class Timeout(Exception):
    pass


class Worker:
    """A worker process for one method: warmed up at start, killed when a config runs past its budget."""

    def __init__(self, method: str):
        self.method = method
        self.proc = None
        self.conn = None

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        start = time.perf_counter()
        try:
            self.request("warmup", {"method": self.method}, WARMUP_TIMEOUT)
        except Timeout:
            log(f"  {self.method}: warm-up fit did not finish in {WARMUP_TIMEOUT:.0f} s; going on")
            self.kill()
            self._start_bare()
        log(f"  {self.method}: worker started and warmed up in {time.perf_counter() - start:.1f} s")

    def _start_bare(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child,), daemon=True)
        self.proc.start()
        child.close()

    def request(self, kind: str, p: dict, timeout: float, on_progress=None):
        """Send a task; return its result or raise Timeout (the worker is then killed). Errors come back as
        ``{"error": message}``."""
        if self.proc is None:
            self._start()
        deadline = time.perf_counter() + timeout
        self.conn.send((kind, p))
        while True:
            left = deadline - time.perf_counter()
            if left <= 0 or not self.conn.poll(left):
                self.kill()
                raise Timeout
            tag, value = self.conn.recv()
            if tag == "progress":
                if on_progress is not None:
                    on_progress(value)
                continue
            return value if tag == "done" else {"error": value}

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.conn.close()
        self.proc = None

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.conn.send(None)
                self.proc.join(10)
            finally:
                self.kill()


def utc_now(with_zone: bool = True) -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M" + (" UTC" if with_zone else ""))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- results store ------------------------------------------------------------------------------------


class Store:
    """The JSON sidecar: ``{"runs": [...], "calibration": {key: rec}, "power": {...}, "cost": {...}}``."""

    def __init__(self, md_path: Path):
        self.md_path = md_path
        self.path = md_path.with_suffix(".json")
        self.data = {"runs": [], "calibration": {}, "power": {}, "cost": {}}
        if self.path.exists():
            self.data.update(json.loads(self.path.read_text()))

    def put(self, part: str, key: str, rec: dict) -> None:
        self.data[part][key] = rec
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data, indent=1, sort_keys=True))
        write_markdown(self.md_path, TITLE, self.data["runs"][-1]["command"], render(self.data))


# --- parts --------------------------------------------------------------------------------------------


def run_draws(store: Store, part: str, key: str, meta: dict, worker: Worker, kind: str, params: dict, draws: int,
              budget: float, resume: bool) -> dict | None:
    """Draws 0..draws-1 of one config, stopping once they have taken ``budget`` seconds; saved to the store every
    CHECKPOINT_SECONDS and at the end. With ``resume``, a finished config of the same plan is kept (None is
    returned) and an interrupted one goes on from its next draw, its budget less the time it has had."""
    old = store.data[part].get(key)
    same_plan = old is not None and old.get("planned") == draws and old.get("budget") == budget
    if resume and same_plan and not old.get("in_progress"):
        log(f"{part} {key}: kept from {old['date']}")
        return None
    rec = {**meta, "planned": draws, "results": [], "errors": [], "partial": False, "wall": 0.0,
           "budget": budget, "in_progress": True, "date": utc_now()}
    if resume and same_plan:  # interrupted: go on from its next draw
        rec.update(results=old["results"], errors=old["errors"], wall=old["wall"], resumed=old.get("resumed", 0) + 1)
    first = rec["done"] = len(rec["results"]) + len(rec["errors"])
    wall0, start, saved = rec["wall"], time.perf_counter(), time.perf_counter()
    for draw in range(first, draws):
        left = budget - wall0 - (time.perf_counter() - start)
        if left <= 0:
            rec["partial"] = True
            break
        try:
            res = worker.request(kind, {**params, "draw": draw}, left)
        except Timeout:
            rec["partial"] = True
            break
        if "error" in res:
            rec["errors"].append(f"draw {draw}: {res['error']}")
        else:
            rec["results"].append({"draw": draw, **res})
        rec["done"] = len(rec["results"]) + len(rec["errors"])
        rec["wall"] = wall0 + time.perf_counter() - start
        if time.perf_counter() - saved > CHECKPOINT_SECONDS:
            store.put(part, key, rec)
            saved = time.perf_counter()
    rec.update(done=len(rec["results"]) + len(rec["errors"]), wall=wall0 + time.perf_counter() - start,
               in_progress=False, date=utc_now())
    store.put(part, key, rec)
    return rec


def calibration(store: Store, methods, sizes, draws: int, large_draws: int, budget: float, resume: bool,
                nulls=NULLS) -> None:
    for method in methods:
        worker = Worker(method)
        try:
            for dist, d in nulls:
                for n in sizes:
                    planned = large_draws if n >= LARGE_N else draws
                    meta = {"method": method, "dist": dist, "d": d, "n": n}
                    rec = run_draws(store, "calibration", f"{method}|{dist}|{d}|{n}", meta, worker, "calibration",
                                    meta, planned, budget, resume)
                    if rec is None:
                        continue
                    ks = [r["k"] for r in rec["results"]]
                    log(f"calibration {method} {dist} d={d} n={n}: {ks.count(1)}/{rec['done']} one cluster"
                        f"{' (partial)' if rec['partial'] else ''}, {rec['wall']:.0f} s")
        finally:
            worker.close()


def power(store: Store, methods, ks, draws: int, budget: float, resume: bool) -> None:
    for method in methods:
        worker = Worker(method)
        try:
            for k in ks:
                meta = {"method": method, "k": k}
                rec = run_draws(store, "power", f"{method}|{k}", meta, worker, "power", meta, draws, budget, resume)
                if rec is None:
                    continue
                ks_found = [r["k"] for r in rec["results"]]
                log(f"power {method} K={k}: {ks_found.count(k)}/{rec['done']} exact"
                    f"{' (partial)' if rec['partial'] else ''}, {rec['wall']:.0f} s")
        finally:
            worker.close()


def cost(store: Store, methods, budget: float) -> None:
    for method in methods:
        worker = Worker(method)
        try:
            for k in COST_KS:
                fits = []
                start = time.perf_counter()
                partial = False
                try:
                    res = worker.request("cost", {"method": method, "k": k, "repeats": COST_REPEATS}, budget,
                                         on_progress=lambda v, fits=fits: fits.append(v) if "variant" in v else None)
                except Timeout:
                    partial, res = True, {}
                rec = {"method": method, "k": k, "n": k * COST_ROWS, "fits": fits, "partial": partial,
                       "error": res.get("error"), "wall": time.perf_counter() - start, "budget": budget,
                       "repeats": COST_REPEATS,
                       "date": utc_now()}
                store.put("cost", f"{method}|{k}", rec)
                log(f"cost {method} K={k}: {len(fits)} fits{' (partial)' if partial else ''}, {rec['wall']:.0f} s")
        finally:
            worker.close()


# --- report -------------------------------------------------------------------------------------------


def _order(method: str) -> int:
    return METHODS.index(method) if method in METHODS else len(METHODS)


def _draws_cell(rec: dict) -> str:
    cell = f"{rec['done']}/{rec['planned']}" + (" (resumed)" if rec.get("resumed") else "")
    if rec.get("in_progress"):
        return cell + " (interrupted)"
    return cell + " (partial)" if rec["partial"] else cell


def _verdict(share: float | None, target: float, rec: dict) -> str:
    if share is None:
        return "no draw done in budget" if rec["partial"] else "-"
    word = "PASS" if share >= target else "**FAIL**"
    if rec.get("in_progress"):
        return word + " (interrupted)"
    return word + (" (partial)" if rec["partial"] else "")


def render_calibration(recs: dict) -> tuple[str, list[str]]:
    rows, below = [], []
    for rec in sorted(recs.values(), key=lambda r: (_order(r["method"]), r["dist"] != "gaussian", r["d"], r["n"])):
        ks = [r["k"] for r in rec["results"]]
        n_ok = len(ks) + len(rec["errors"])
        share = ks.count(1) / n_ok if n_ok else None
        verdict = _verdict(share, CALIBRATION_TARGET, rec)
        if share is not None and share < CALIBRATION_TARGET:
            below.append(f"calibration: {rec['method']}, {rec['dist']} d={rec['d']}, n={rec['n']:,}: "
                         f"{fmt(100 * share, 0)}% one cluster ({ks.count(1)}/{n_ok})")
        if share is None:
            below.append(f"calibration: {rec['method']}, {rec['dist']} d={rec['d']}, n={rec['n']:,}: no draw "
                         f"done in the {rec['budget']:.0f} s budget")
        rows.append([rec["method"], rec["dist"], rec["d"], f"{rec['n']:,}", _draws_cell(rec),
                     "-" if share is None else f"{100 * share:.0f}%", max(ks) if ks else "-",
                     len(rec["errors"]) or "", fmt(median([r["time"] for r in rec["results"]])), verdict])
    header = ["method", "null", "d", "n", "draws done/planned", "one cluster", "max k", "errors",
              "median fit (s)", f">= {100 * CALIBRATION_TARGET:.0f}%"]
    return markdown_table(header, rows), below


def render_power(recs: dict) -> tuple[str, list[str]]:
    rows, below = [], []
    for rec in sorted(recs.values(), key=lambda r: (_order(r["method"]), r["k"])):
        ks = [r["k"] for r in rec["results"]]
        k = rec["k"]
        n_ok = len(ks) + len(rec["errors"])
        share = ks.count(k) / n_ok if n_ok else None
        if share is not None and share < POWER_TARGET:
            below.append(f"power: {rec['method']}, K={k}: {fmt(100 * share, 0)}% exactly K ({ks.count(k)}/{n_ok}); "
                         f"found k: {dict(sorted(Counter(ks).items()))}")
        if share is None:
            below.append(f"power: {rec['method']}, K={k}: no draw done in the {rec['budget']:.0f} s budget")
        aris = [r["ari"] for r in rec["results"]]
        rows.append([rec["method"], k, _draws_cell(rec), "-" if share is None else f"{100 * share:.0f}%",
                     sum(x < k for x in ks), sum(x > k for x in ks),
                     f"{min(ks)}-{max(ks)}" if ks else "-", fmt(statistics.fmean(aris)) if aris else "-",
                     len(rec["errors"]) or "", fmt(median([r["time"] for r in rec["results"]])),
                     _verdict(share, POWER_TARGET, rec)])
    header = ["method", "K", "draws done/planned", "k = K", "k < K", "k > K", "k range", "mean ARI", "errors",
              "median fit (s)", f">= {100 * POWER_TARGET:.0f}%"]
    return markdown_table(header, rows), below


def render_cost(recs: dict) -> tuple[str, list[str]]:
    rows, below = [], []
    for rec in sorted(recs.values(), key=lambda r: (_order(r["method"]), r["k"])):
        auto = [f for f in rec["fits"] if f["variant"] == "auto"]
        fixed = [f for f in rec["fits"] if f["variant"] == "fixed"]
        ta, tk = median([f["time"] for f in auto]), median([f["time"] for f in fixed])
        ratio = ta / tk if ta is not None and tk else None
        if ratio is None:
            verdict = "timed out" if rec["partial"] else (rec.get("error") or "-")
        else:
            verdict = ("PASS" if ratio <= COST_TARGET else "**FAIL**") + (" (partial)" if rec["partial"] else "")
        if ratio is not None and ratio > COST_TARGET:
            below.append(f"cost: {rec['method']}, K={rec['k']}: auto / K = {ratio:.2f}")
        if ratio is None:
            below.append(f"cost: {rec['method']}, K={rec['k']}: no ratio ({verdict})")
        found = sorted({f["k"] for f in auto})
        rows.append([rec["method"], rec["k"], f"{rec['n']:,}", f"{len(auto)}/{len(fixed)}", fmt(ta), fmt(tk),
                     fmt(ratio, 2), ",".join(map(str, found)) or "-",
                     fmt(auto[0]["ari"]) if auto else "-", fmt(fixed[0]["ari"]) if fixed else "-", verdict])
    header = ["method", "K", "n", "timed fits auto/K", "auto median (s)", "n_clusters=K median (s)", "auto / K",
              "auto found k", "ARI auto", "ARI K", f"<= {COST_TARGET}"]
    return markdown_table(header, rows), below


def render(data: dict) -> str:
    parts = []
    runs = [[f"`{r['command']}`", r["started"], fmt(r.get("wall"), 0) if r.get("wall") is not None else "running",
             r.get("note", "")] for r in data["runs"]]
    parts.append(
        "Protocol: see the docstring of `benchmarks/auto_k_null.py`. In short: every fit is in memory at the "
        "estimator's defaults apart from `n_clusters` and `random_state`; draw i draws its data from seed i and "
        "fits with `random_state=i`; each (method, config) has a time budget (wall seconds for its draws), after "
        "which it stops and is marked partial. The shares count errors as failures. Fit times are medians over "
        "the draws, in a warmed-up worker process (2 cores shared with other work, run under `nice -n 10`).\n\n"
        "## Runs merged into this file\n\n"
        + markdown_table(["command", "started (UTC)", "wall (s)", "note"], runs)
    )
    all_below = []
    for part, render_part, intro in (
        ("calibration", render_calibration, (
         "Share of draws of a one-cluster null (N(0, I_d) or U[0, 1]^d) on which `n_clusters=\"auto\"` found "
         f"exactly one cluster; target >= {100 * CALIBRATION_TARGET:.0f}% (the dip test's level is 0.01 per "
         "split).")),
        ("power", render_power, (
         f"Share of draws of a K-component mixture (d = {MIX_D}, {POWER_ROWS} rows per component, centres from "
         f"N(0, {CENTRE_SD:.0f}² I) at least {MIN_SEPARATION:.0f} apart) on which `n_clusters=\"auto\"` found exactly "
         f"K clusters; target >= {100 * POWER_TARGET:.0f}%. Mean ARI against the true components.")),
        ("cost", render_cost, (
         f"The K-component mixtures with {COST_ROWS:,} rows per component (seed 0): median of {COST_REPEATS} fits "
         f"each of `n_clusters=\"auto\"` and `n_clusters=K`, interleaved in one process after one warm-up fit of "
         f"each; target auto / K <= {COST_TARGET}. ARI of the first timed fit of each.")),
    ):
        title = {"calibration": "1. Calibration under a one-cluster null", "power": "2. Power",
                 "cost": "3. Cost of auto against a given K"}[part]
        if not data.get(part):
            parts.append(f"## {title}\n\nNot run yet.")
            continue
        table, below = render_part(data[part])
        all_below += below
        extra = ""
        errors = [f"- {rec['method']} {key}: {e}" for key, rec in data[part].items() for e in rec.get("errors", [])]
        if errors:
            extra = "\n\nErrors:\n\n" + "\n".join(errors[:50]) + (f"\n- ... {len(errors) - 50} more" if len(errors) > 50 else "")
        parts.append(f"## {title}\n\n{intro}\n\n{table}{extra}")
    parts.append("## Configurations below target\n\n" + ("\n".join(f"- {b}" for b in all_below) or "None."))
    return "\n\n".join(parts) + "\n"


# --- main ---------------------------------------------------------------------------------------------


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--methods", default=None, help="comma list (default: all eight; cost: MDH and NCut)")
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--large-draws", type=int, default=None,
                        help=f"draws at n >= {LARGE_N:,} in calibration (default: --draws)")
    parser.add_argument("--sizes", default="500,5000,100000")
    parser.add_argument("--gaussian-dims", default=None,
                        help="calibration: the Gaussian nulls' dimensions (default 2,10,50 and the uniform's 2,10); "
                             "given, only these Gaussian nulls are run (issue 42: 100,200,450,600)")
    parser.add_argument("--ks", default=",".join(map(str, POWER_KS)), help="the K of the power part")
    parser.add_argument("--time-budget", type=float, default=900.0, help="seconds per (method, config)")
    parser.add_argument("--resume", action="store_true",
                        help="keep finished configs of the same plan; go on with interrupted ones")
    parser.add_argument("--note", default="", help="a note on this run for the runs table")
    parser.add_argument("--out", default=str(RESULTS_DIR / "auto-k-null.md"))
    args = parser.parse_args(argv)

    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; choose from {PARTS}")
    methods = [m for m in (args.methods or ",".join(METHODS)).split(",") if m]
    bad = set(methods) - set(METHODS)
    if bad:
        parser.error(f"unknown methods {sorted(bad)}; choose from {METHODS}")
    cost_methods = methods if args.methods else list(COST_DEFAULT_METHODS)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    ks = [int(k) for k in args.ks.split(",") if k]
    large_draws = args.draws if args.large_draws is None else args.large_draws

    store = Store(Path(args.out))
    note = args.note
    if large_draws != args.draws and "calibration" in parts and any(n >= LARGE_N for n in sizes):
        note = (note + "; " if note else "") + f"{large_draws} draws (not {args.draws}) at n >= {LARGE_N:,}"
    run = {"command": command_line(), "started": utc_now(with_zone=False), "wall": None, "note": note}
    store.data["runs"].append(run)
    store.save()
    start = time.perf_counter()

    def terminated(signum, frame):
        run["note"] = (run["note"] + "; " if run["note"] else "") + "stopped by SIGTERM"
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)
    try:
        if "calibration" in parts:
            nulls = NULLS if args.gaussian_dims is None else tuple(
                ("gaussian", int(d)) for d in args.gaussian_dims.split(",") if d
            )
            calibration(store, methods, sizes, args.draws, large_draws, args.time_budget, args.resume, nulls)
        if "power" in parts:
            power(store, methods, ks, args.draws, args.time_budget, args.resume)
        if "cost" in parts:
            cost(store, cost_methods, args.time_budget)
    finally:
        run["wall"] = time.perf_counter() - start
        store.save()
    print(store.md_path.read_text())


if __name__ == "__main__":
    main()
