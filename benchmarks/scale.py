"""Scale benchmark: a summary-mode divisive estimator end to end from zarr on a LocalCluster, with the time of
each step and strong scaling over the number of workers.

The estimator is ``lowdens_dask.METHODS[--method].clustering`` (default ``mdh``: MDHClustering), constructed
as ``(n_clusters=16, random_state=0, labels_store=...)`` at its other defaults; the warm-up fit uses it too.

Data: a float32 mixture of K = 16 Gaussians in d = 32 (centres ~ N(0, 3^2 I), identity covariances,
weights ~ Dirichlet(2 * 1), seed 0), generated chunk by chunk into a local zarr store (zstd,
125 000-row chunks, or ``--chunk`` rows) so it is never whole in memory. For each n and each number of workers (``--workers``; a
LocalCluster of that many single-thread worker processes):

- the end-to-end fit (zarr in, labels written to zarr and read back as ``labels_``) after the cluster has started and the kernels
  are compiled (start-up reported separately), against one plain Dask pass ``(X @ v).sum()`` over the
  same array measured in the same run;
- the fit's steps, from the estimator's ``timings_``: pass 1 (the summarising pass), the tree grown on the
  client from the microclusters, and pass 2 (labelling every row and writing the labels);
- peak RSS summed over the client, the scheduler and the workers, sampled every 0.2 s;
- the number of full passes over the data (the estimator's ``n_passes_``: each pass's tasks read their chunks
  themselves, so there are no separate chunk-read tasks to count);
- ARI against the truth;
- with 1 and 2 workers among ``--workers``, the serial part: Amdahl's T(p) = s + P / p fitted to the two fit times
  (s = 2 T2 - T1) and the parallel efficiency it predicts at 16 and 64 workers, beside the client-side tree time
  and the fit's wall time not covered by worker tasks;
- with 1 worker among ``--workers``, the serial model (issue 44): each step's client CPU seconds
  (``client_seconds_``: the client process, with its LocalCluster's scheduler) stay at every worker count, the rest
  of the step's wall time (waiting on the worker) is shared among the workers, and the fit's seconds outside the
  steps stay; a plain pass is modelled the same way. It predicts the fit in passes at 1 to 16 workers, beside the
  passes measured at the worker counts run;
- with ``--peers``, scikit-learn's BisectingKMeans(16) and KMeans(16, n_init=1) in memory (n <= 10^7).

    python benchmarks/scale.py [--method mdh] [--param NAME=VALUE ...] [--n 1e6,1e7] [--workers 2] [--chunk 125000] [--peers]
                               [--workdir DIR] [--output FILE]

The default output is ``benchmarks/results/scale.md`` for mdh and ``benchmarks/results/scale-<method>.md``
otherwise.

The agreement of summary mode with exact mode is measured by ``benchmarks/agreement.py``.
"""

import argparse
import ast
import functools
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import dask.array as da
import numpy as np
import zarr
from distributed import Client, LocalCluster, get_task_stream
from harness import RESULTS_DIR, PeakRSS, command_line, fmt, markdown_table, write_markdown
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import METHODS

K, D, CHUNK = 16, 32, 125_000
POINTERS = (
    "## Other acceptance measurements\n\n- Agreement of summary mode with exact mode: `benchmarks/results/agreement.md` "
    "(`python benchmarks/agreement.py`).\n- Memory-bounded fit (two 400 MB workers at Dask's default memory thresholds, a "
    "1.28 GB zarr array): `tests/test_scale_out.py::test_fit_over_a_store_three_times_a_workers_memory_limit`, run by "
    "`.ci/run`.\n- In-memory `predict` with the one-product router against the earlier node-by-node routing: "
    "`benchmarks/results/routing.md` (`python benchmarks/routing.py`)."
)
#: Fits and plain passes are timed this many times (median reported) up to REPEAT_MAX_N rows, once above.
FIT_REPEATS = 3
REPEAT_MAX_N = 10**7
#: In-memory peers need the whole array (and several copies) in RAM: not at 10^8 on 24 GB.
PEERS_MAX_N = 10**7
#: The steps of a summary-mode fit, as the estimator's ``timings_`` names them.
STEPS = ("summary_pass", "tree", "label_pass")


def generate(path: Path, n: int, seed: int = 0, chunk: int = CHUNK) -> None:
    """Write X (n, 32) float32 and the true labels y, chunk by chunk (the rows do not depend on ``chunk``).
    A store already at ``path`` with that shape and chunking is kept."""
    if (path / "X").exists():
        X = zarr.open_array(str(path / "X"), mode="r")
        if X.shape == (n, D) and X.chunks == (chunk, D) and (path / "y").exists():
            return
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(K, D))
    weights = rng.dirichlet(2.0 * np.ones(K))
    group = zarr.open_group(str(path), mode="w")
    codec = zarr.codecs.ZstdCodec(level=1)
    X = group.create_array("X", shape=(n, D), chunks=(chunk, D), dtype="f4", compressors=[codec])
    y = group.create_array("y", shape=(n,), chunks=(chunk,), dtype="i2", compressors=[codec])
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        chunk_rng = np.random.default_rng([seed, start])
        labels = chunk_rng.choice(K, size=m, p=weights)
        X[start : start + m] = (centres[labels] + chunk_rng.standard_normal((m, D), dtype=np.float32)).astype("f4")
        y[start : start + m] = labels


def busy_seconds(task_stream) -> float:
    """Seconds the workers spent running tasks (compute, transfer and disk intervals of the task stream)."""
    return sum(span["stop"] - span["start"] for t in task_stream for span in t.get("startstops", ()))


def amdahl(t1: float, t2: float) -> tuple[float, float]:
    """The serial and parallel seconds of T(p) = s + P / p fitted to the 1- and 2-worker times: s = 2 T2 - T1,
    P = 2 (T1 - T2)."""
    return 2.0 * t2 - t1, 2.0 * (t1 - t2)


def efficiency(serial: float, parallel: float, workers: int) -> float:
    """Amdahl's parallel efficiency T1 / (p T(p)) at ``workers``."""
    return (serial + parallel) / (workers * serial + parallel)


#: Worker counts the serial model predicts the fit at (beside those measured).
MODEL_WORKERS = (1, 2, 4, 8, 16)


def modelled_fit(row: dict, workers: int) -> float:
    """The fit's seconds at ``workers`` from a 1-worker row: the CPU seconds the client (with the scheduler of its
    LocalCluster) spent in each step (``client_seconds_``) stay, the rest of the step's wall time, waiting on the
    worker, is shared among the workers; the fit's seconds outside the steps (checks, graph, labels read back) stay."""
    seconds = row["rest_s"]
    for step in STEPS:
        client = min(row[f"{step}_client_s"], row[f"{step}_s"])
        seconds += client + (row[f"{step}_s"] - client) / workers
    return seconds


def modelled_pass(row: dict, workers: int) -> float:
    """One plain pass's seconds at ``workers`` from a 1-worker row, by the same rule (its client CPU seconds stay)."""
    client = min(row["plain_pass_client_s"], row["plain_pass_s"])
    return client + (row["plain_pass_s"] - client) / workers


def run_scale(client, path: Path, workdir: Path, n: int, peers: bool, estimator) -> dict:
    """Time one plain pass and the fit (labels written, then read back) over the zarr mixture at ``path`` on the
    client's cluster."""
    X = da.from_zarr(str(path / "X"))
    v = np.random.default_rng(1).normal(size=D).astype("f4")
    repeats = FIT_REPEATS if n <= REPEAT_MAX_N else 1
    plain, plain_cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        (X @ v).sum().compute()
        plain.append(time.perf_counter() - t)
        plain_cpu.append(time.process_time() - c)
    labels_path = workdir / f"labels_{n}.zarr"
    fits, steps, client_cpu = [], [], []
    for r in range(repeats):  # memory and passes from the first fit, the times as medians
        shutil.rmtree(labels_path, ignore_errors=True)
        with PeakRSS() as rss_r, get_task_stream(client) as ts_r:
            t = time.perf_counter()
            model = estimator(n_clusters=K, random_state=0, labels_store=str(labels_path)).fit(str(path / "X"))
            np.asarray(model.labels_)
            fits.append(time.perf_counter() - t)
        steps.append({**model.timings_, "rest": fits[-1] - sum(model.timings_.values())})
        client_cpu.append(model.client_seconds_)
        if r == 0:
            rss, ts = rss_r, ts_r
    y_true = zarr.open_array(str(path / "y"), mode="r")[:]
    labels = zarr.open_array(str(labels_path), mode="r")[:]
    row = {
        "n": n,
        "workers": len(client.scheduler_info()["workers"]),
        "plain_pass_s": statistics.median(plain),
        "chunk": X.chunks[0][0],
        "fit_s": statistics.median(fits),
        **{f"{step}_s": statistics.median(run[step] for run in steps) for step in (*STEPS, "rest")},
        **{f"{step}_client_s": statistics.median(run[step] for run in client_cpu) for step in STEPS},
        "plain_pass_client_s": statistics.median(plain_cpu),
        "repeats": repeats,
        "peak_rss_gb": rss.peak / 1e9,
        "passes": model.n_passes_,  # the passes tasks read chunks in (they read them themselves, no from-zarr tasks)
        # wall time of the first fit not covered by the workers' tasks, spread over the workers: client-side work
        # (graph construction, the tree) and waiting on stragglers
        "idle_s": fits[0] - busy_seconds(ts.data) / len(client.scheduler_info()["workers"]),
        "ari": adjusted_rand_score(y_true, labels),
        "leaves": model.n_clusters_,
        "microclusters": model.n_microclusters_,
    }
    if peers and n <= PEERS_MAX_N:
        from sklearn.cluster import BisectingKMeans, KMeans

        Xm = zarr.open_array(str(path / "X"), mode="r")[:]
        for name, est in [("BisectingKMeans", BisectingKMeans(K, random_state=0)), ("KMeans", KMeans(K, n_init=1, random_state=0))]:
            with PeakRSS() as prss:
                t = time.perf_counter()
                est.fit(Xm)
                row[f"{name}_s"] = time.perf_counter() - t
            row[f"{name}_ari"] = adjusted_rand_score(y_true, est.labels_)
            row[f"{name}_rss_gb"] = prss.peak / 1e9
        del Xm
    shutil.rmtree(labels_path, ignore_errors=True)
    return row


def start_cluster(workers: int, workdir: Path, estimator):
    """A LocalCluster of single-thread worker processes, with the kernels compiled by a warm-up fit:
    ``(cluster, client, start-up s, warm-up s)``."""
    t = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    client = Client(cluster)
    startup = time.perf_counter() - t
    t = time.perf_counter()
    warm = workdir / "warm.zarr"
    generate(warm, 2 * CHUNK)
    estimator(n_clusters=4, random_state=0).fit(str(warm / "X")).labels_.compute()
    shutil.rmtree(warm, ignore_errors=True)
    return cluster, client, startup, time.perf_counter() - t


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="mdh", choices=tuple(METHODS),
                        help="divisive estimator to benchmark: a key of lowdens_dask.METHODS (default mdh)")
    parser.add_argument("--leaf-order", "--split-index", dest="leaf_order", default=None,
                        help="the estimator's leaf_order (split_index before; default: the estimator's own default)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="another estimator parameter (a Python literal; repeatable), e.g. min_side=0")
    parser.add_argument("--n", default="1e6,1e7")
    parser.add_argument("--workers", default="2",
                        help="comma-separated numbers of single-thread worker processes, e.g. 1,2 (default 2)")
    parser.add_argument("--chunk", type=int, default=CHUNK, help=f"rows per zarr chunk (default {CHUNK})")
    parser.add_argument("--peers", action="store_true")
    parser.add_argument("--workdir", default=None, help="where the mixtures are written (and kept, when given)")
    parser.add_argument("--output", default=None,
                        help="default: benchmarks/results/scale.md for mdh, scale-<method>.md otherwise")
    args = parser.parse_args(argv)
    estimator = METHODS[args.method].clustering
    name = args.method + ("" if args.leaf_order is None else f"-{args.leaf_order}")
    params = {} if args.leaf_order is None else {"leaf_order": args.leaf_order}
    for item in args.param:
        key, _, text = item.partition("=")
        try:
            params[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            params[key] = text
        name += f"-{key}{text}"
    if params:
        estimator = functools.partial(estimator, **params)
        estimator.__name__ = METHODS[args.method].clustering.__name__
    output = args.output or str(RESULTS_DIR / ("scale.md" if name == "mdh" else f"scale-{name}.md"))
    sizes = [int(float(s)) for s in args.n.split(",") if s]
    worker_counts = [int(w) for w in args.workers.split(",") if w]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="lowdens-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)

    results, startups = [], []
    for n in sizes:
        path = workdir / f"mixture_{n}_{args.chunk}.zarr"
        t = time.perf_counter()
        generate(path, n, chunk=args.chunk)
        print(f"n = {n:.0e}: generated in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        for workers in worker_counts:
            cluster, client, startup, compile_time = start_cluster(workers, workdir, estimator)
            startups.append((workers, startup, compile_time))
            try:
                results.append(run_scale(client, path, workdir, n, args.peers and workers == worker_counts[-1], estimator))
            finally:
                client.close()
                cluster.close()
            print(results[-1], file=sys.stderr)
        if args.workdir is None:
            shutil.rmtree(path, ignore_errors=True)

    header = ["n", "chunk", "workers", "microclusters", "leaves", "runs", "fit end to end (s)", "one pass (s)",
              "fit / pass", "pass 1 (s)", "tree (s)", "pass 2 (s)", "pass 1 / pass", "tree / pass", "pass 2 / pass",
              "peak RSS (GB)", "passes", "ARI", "not covered by tasks (s)"]
    rows = [[f"{r['n']:.0e}", r["chunk"], r["workers"], r["microclusters"], r["leaves"], r["repeats"], fmt(r["fit_s"], 2),
             fmt(r["plain_pass_s"], 2), fmt(r["fit_s"] / r["plain_pass_s"], 2)]
            + [fmt(r[f"{step}_s"], 2) for step in STEPS]
            + [fmt(r[f"{step}_s"] / r["plain_pass_s"], 2) for step in STEPS]
            + [fmt(r["peak_rss_gb"], 2), fmt(r["passes"], 2), fmt(r["ari"]), fmt(r["idle_s"], 2)] for r in results]
    start_text = "; ".join(f"{w} workers: start-up {s:.1f} s, warm-up {c:.1f} s" for w, s, c in startups[: len(worker_counts)])
    parts = [
        f"Estimator: `{estimator.__name__}(n_clusters={K}, random_state=0, labels_store=...)` "
        f"(`--method {args.method}`"
        + ("" if args.leaf_order is None else f" `--leaf-order {args.leaf_order}`")
        + "".join(f" `--param {item}`" for item in args.param)
        + "), other parameters at their defaults. LocalCluster of single-thread worker processes, started afresh "
        f"for each row; cluster start-up and the warm-up fit (numba compilation in the workers) are excluded ({start_text}). "
        "Times are medians over the runs; pass 1 (summarising), tree (grown on the client from the microclusters) "
        "and pass 2 (labelling, labels written) come from the estimator's `timings_`; one pass is a plain "
        "`(X @ v).sum()` over the same array in the same cluster. Peers run once.\n\n"
        + markdown_table(header, rows)
    ]
    serial_rows = []
    for n in sizes:
        by_workers = {r["workers"]: r for r in results if r["n"] == n}
        if 1 in by_workers and 2 in by_workers:
            t1, t2 = by_workers[1]["fit_s"], by_workers[2]["fit_s"]
            s_, p_ = amdahl(t1, t2)
            pass_s, pass_p = amdahl(by_workers[1]["plain_pass_s"], by_workers[2]["plain_pass_s"])
            serial_rows.append([f"{n:.0e}", fmt(t1, 2), fmt(t2, 2), fmt(s_, 2), fmt(p_, 2),
                                fmt(pass_s, 2), fmt(efficiency(pass_s, pass_p, 16)),
                                fmt(by_workers[2]["tree_s"], 2), fmt(by_workers[2]["idle_s"], 2),
                                fmt(efficiency(s_, p_, 16)), fmt(efficiency(s_, p_, 64))])  # fmt: skip
    if serial_rows:
        parts.append(
            "## Serial part (Amdahl, from the 1- and 2-worker fits)\n\nT(p) = s + P / p fitted to the two fits: s = 2 T2 "
            "- T1, P = 2 (T1 - T2); efficiency at p workers T1 / (p T(p)). Beside it, the client-side tree "
            "(`timings_[\"tree\"]`) and the 2-worker fit's wall time not covered by worker tasks (task stream busy "
            "seconds / workers subtracted). The same fit to the plain pass's 1- and 2-worker times gives the serial "
            "part of a pass with no client-side work at all (on a 2-core machine, the workers share the cores with "
            "the scheduler and the client).\n\n"
            + markdown_table(["n", "T1 (s)", "T2 (s)", "serial s (s)", "parallel P (s)", "plain pass: serial s (s)",
                              "plain pass: efficiency at 16", "tree, 2 workers (s)",
                              "not covered by tasks, 2 workers (s)", "efficiency at 16", "efficiency at 64"],
                             serial_rows)  # fmt: skip
        )
    model_rows = []
    for n in sizes:
        by_workers = {r["workers"]: r for r in results if r["n"] == n}
        if 1 not in by_workers:
            continue
        one = by_workers[1]
        clients = [fmt(one[f"{step}_client_s"], 2) + " / " + fmt(one[f"{step}_s"], 2) for step in STEPS]
        for workers in sorted(set(MODEL_WORKERS) | set(by_workers)):
            fit_s, pass_s = modelled_fit(one, workers), modelled_pass(one, workers)
            got = by_workers.get(workers)
            model_rows.append([f"{n:.0e}", workers, *(clients if workers == 1 else [""] * len(STEPS)),
                               fmt(one["rest_s"], 2) if workers == 1 else "", fmt(fit_s, 2), fmt(pass_s, 2),
                               fmt(fit_s / pass_s, 2), "" if got is None else fmt(got["fit_s"] / got["plain_pass_s"], 2)])  # fmt: skip
    if model_rows:
        parts.append(
            "## Serial model (from the 1-worker fit)\n\nEach step's client CPU seconds (`client_seconds_`: this "
            "process, the client, with its LocalCluster's scheduler) are serial and stay at every worker count; the "
            "rest of the step's wall time (`timings_`), spent waiting on the worker, is shared among the workers; "
            "the fit's seconds outside the three steps (\"rest\": checks, graph construction, labels read back) "
            "stay. A plain pass is modelled the same way from its own client CPU seconds. Passes = modelled fit / "
            "modelled pass; beside them, the passes measured at the worker counts run here.\n\n"
            + markdown_table(["n", "workers", *(f"{step}: client / wall (s)" for step in STEPS), "rest (s)",
                              "modelled fit (s)", "modelled pass (s)", "modelled passes", "measured passes"],
                             model_rows)  # fmt: skip
        )
    for workers in worker_counts:
        mine = [r for r in results if r["workers"] == workers]
        if len(mine) > 1:
            a, b = mine[-2], mine[-1]
            parts.append(f"{workers} workers: time(n={b['n']:.0e}) / time(n={a['n']:.0e}) = {b['fit_s'] / a['fit_s']:.2f}")
    if args.peers:
        prow = []
        for r in results:
            for peer in ("BisectingKMeans", "KMeans"):
                if f"{peer}_s" in r:
                    prow.append([f"{r['n']:.0e}", peer, fmt(r[f"{peer}_s"], 2), fmt(r[f"{peer}_rss_gb"], 2),
                                 fmt(r[f"{peer}_ari"]), fmt(r[f"{peer}_s"] / r["fit_s"], 2), fmt(r["ari"])])
        parts.append("## Peers (in memory, same data, same run)\n\n" + markdown_table(
            ["n", "peer", "peer time (s)", "peer peak RSS (GB)", "peer ARI", "peer time / our end-to-end", "our ARI"], prow))
    parts.append(POINTERS)
    body = "\n\n".join(parts)
    path = write_markdown(output, f"Scale-out: {estimator.__name__}, summary mode from zarr", command_line(), body)
    print(body)
    print(f"written to {path}", file=sys.stderr)
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
