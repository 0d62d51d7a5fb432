"""Reliability figures for benchmarks/results/reliability.md: worker kills, memory, storage.

    python benchmarks/reliability.py kills --rows 2000000      # ten kills over a summary fit, three over exact
    python benchmarks/reliability.py memory                    # 640 MB and 1.28 GB stores, 400 MB workers
    python benchmarks/reliability.py storage                   # damaged stores

Each prints a markdown table. Workers are a LocalCluster of 2 single-thread processes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import zarr

D, K = 16, 8


def make_store(path: Path, rows: int, chunk: int, seed: int = 0) -> np.ndarray:
    """A K-component Gaussian mixture in D dimensions, float32, written chunk by chunk; returns the labels."""
    centres = np.random.default_rng(seed).normal(scale=6.0, size=(K, D))
    X = zarr.create_array(str(path), shape=(rows, D), chunks=(chunk, D), dtype="f4", overwrite=True)
    y = np.empty(rows, dtype=np.int8)
    for start in range(0, rows, chunk):
        stop = min(start + chunk, rows)
        rng = np.random.default_rng([seed, start])
        lab = rng.integers(0, K, size=stop - start)
        X[start:stop] = centres[lab] + rng.standard_normal((stop - start, D), dtype=np.float32)
        y[start:stop] = lab
    return y


def cluster(**kwargs):
    from distributed import Client, LocalCluster

    cl = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", **kwargs)
    return cl, Client(cl)


def kills(args) -> None:
    import dask.array as da

    from lowdens_dask import DePDDPClustering, MDHClustering
    from lowdens_dask.testing import kill_worker_at

    tmp = Path(tempfile.mkdtemp())
    chunk = args.rows // 20
    make_store(tmp / "X.zarr", args.rows, chunk)
    chunks = args.rows // chunk
    moments = [
        ("lowdens-summarise-", 0, "pass 1: first chunk summarised"),
        ("lowdens-summarise-", chunks // 2, "pass 1: half the chunks"),
        ("-combine-1-0", 0, "pass 1: summaries combined"),
        ("lowdens-node-data-", 0, "tree: first children's rows"),
        ("lowdens-split-node-", 0, "tree: first restart done"),
        ("lowdens-split-node-", 6, "tree: second round of splits"),
        ("lowdens-split-node-", 11, "tree: last round of splits"),
        ("lowdens-write-labels-", 0, "labels: first chunk routed and written"),
        ("lowdens-write-labels-", chunks // 2, "labels: half written"),
        ("lowdens-write-labels-", chunks - 1, "labels: last chunk written"),
    ]
    rng = np.random.default_rng(1)
    Xe = np.vstack([rng.normal(size=(args.exact_rows // 3, 4)) + [6 * i, 0, 0, 0] for i in range(3)])
    exact_X = da.from_array(Xe, chunks=(len(Xe) // 6, 4))
    exact_moments = [
        ("lowdens-chunk_stats-", 2, "exact: node statistics pass"),
        ("lowdens-project-", 40, "exact: projections held in chunks"),
        ("lowdens-route-", 3, "exact: labels routed"),
    ]

    def summary_fit():
        model = MDHClustering(n_clusters=K, random_state=0, labels_store=str(tmp / "labels.zarr"))
        return np.asarray(model.fit(str(tmp / "X.zarr")).labels_)

    def exact_fit():
        return DePDDPClustering(n_clusters=3, mode="exact").fit(exact_X).labels_.compute()

    rows = []
    cl, client = cluster()
    replaced = 0

    def ready():
        """The scheduler, once both workers run (a nanny's restarted worker now and then never registers;
        then the cluster is replaced, and counted)."""
        nonlocal cl, client, replaced
        try:
            client.wait_for_workers(2, timeout=20)
        except TimeoutError:
            client.close()
            cl.close()
            cl, client = cluster()
            replaced += 1
        return cl.scheduler

    try:
        for fit, plan in ((summary_fit, moments), (exact_fit, exact_moments)):
            with kill_worker_at(ready(), "none") as base:
                start = time.perf_counter()
                expected = fit()
                base_time = time.perf_counter() - start
            rows.append(("(undisturbed)", "", f"{base_time:.2f}", "", "", "yes"))
            for pattern, occurrence, phase in plan:
                with kill_worker_at(ready(), pattern, occurrence) as killer:
                    start = time.perf_counter()
                    labels = fit()
                    elapsed = time.perf_counter() - start
                redone = sorted(killer.redone - base.redone)
                rows.append(
                    (
                        phase,
                        killer.killed[0] if killer.killed else "(no kill)",
                        f"{elapsed:.2f}",
                        str(len(redone)),
                        ", ".join(redone[:2]) + (" ..." if len(redone) > 2 else ""),
                        "yes" if np.array_equal(labels, expected) else "NO",
                    )
                )
    finally:
        client.close()
        cl.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"Summary fit: {args.rows:,}x{D} float32 zarr, {chunks} chunks, MDHClustering(n_clusters={K}), labels_store.")
    print(f"Exact fit: {len(Xe):,}x4 Dask array, 6 chunks, DePDDPClustering(n_clusters=3, mode='exact').")
    print(f"Clusters replaced because a restarted worker never registered: {replaced}.\n")
    print("| moment | task whose worker was killed | fit time (s) | tasks recomputed | e.g. | labels identical |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def memory(args) -> None:
    import dask
    from sklearn.metrics import adjusted_rand_score

    from lowdens_dask import MDHClustering
    from lowdens_dask.testing import peak_rss_bytes

    print(
        "| store | chunk | workers' memory_limit | fit + labels (s) | peak RSS per worker (MiB) | paused | "
        "spilled | ARI |"
    )
    print("|---|---|---|---|---|---|---|---|")
    tmp = Path(tempfile.mkdtemp())
    try:
        for rows in args.sizes:
            for chunk in args.chunks:
                y = make_store(tmp / "X.zarr", rows, chunk)
                cl, client = cluster(memory_limit="400MB")
                try:
                    start = time.perf_counter()
                    model = MDHClustering(n_clusters=K, random_state=0, labels_store=str(tmp / "labels.zarr"))
                    model.fit(str(tmp / "X.zarr"))
                    elapsed = time.perf_counter() - start
                    peaks = {w: b / 2**20 for w, b in client.run(peak_rss_bytes).items()}
                    logs = client.get_worker_logs()
                    paused = sum("Pausing worker" in msg for log in logs.values() for _, msg in log)
                    spilled = sum(client.run(_spilled_bytes).values())
                finally:
                    client.close()
                    cl.close()
                labels = zarr.open_array(str(tmp / "labels.zarr"), mode="r")[:]
                ari = adjusted_rand_score(y, labels)
                peak = ", ".join(f"{p:.0f}" for p in sorted(peaks.values()))
                print(
                    f"| {rows * D * 4 / 1e9:.2f} GB ({rows:,} rows) | {chunk:,} rows ({chunk * D * 4 / 1e6:.0f} MB) "
                    f"| 400 MB | {elapsed:.1f} | {peak} | {paused} | {spilled / 1e6:.0f} MB | {ari:.3f} |",
                    flush=True,
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    del dask


def _spilled_bytes(dask_worker) -> int:
    spilled = getattr(dask_worker.data, "slow", None)
    return int(getattr(spilled, "total_weight", 0) or 0) if spilled is not None else 0


def storage(args) -> None:
    from lowdens_dask import MDHClustering

    tmp = Path(tempfile.mkdtemp())
    rows, chunk = 200_000, 20_000
    print("| damage | what the fit does |")
    print("|---|---|")
    cases = []

    def deleted():
        make_store(tmp / "X.zarr", rows, chunk)
        os.remove(tmp / "X.zarr" / "c" / "4" / "0")

    def truncated():
        make_store(tmp / "X.zarr", rows, chunk)
        path = tmp / "X.zarr" / "c" / "7" / "0"
        path.write_bytes(path.read_bytes()[:100])

    def overwritten():
        make_store(tmp / "X.zarr", rows, chunk)
        (tmp / "X.zarr" / "c" / "2" / "0").write_bytes(os.urandom(5000))

    def empty_group():
        shutil.rmtree(tmp / "X.zarr", ignore_errors=True)
        zarr.open_group(str(tmp / "X.zarr"), mode="w")

    cases = [
        ("one chunk file deleted (chunk 4 of 10)", deleted),
        ("one chunk truncated to 100 bytes (chunk 7)", truncated),
        ("one chunk overwritten with random bytes (chunk 2)", overwritten),
        ("a zarr group with no array", empty_group),
    ]
    try:
        for name, damage in cases:
            damage()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    MDHClustering(n_clusters=4, random_state=0).fit(str(tmp / "X.zarr")).labels_.compute()
                outcome = "fitted (NOT caught)"
            except Exception as exc:
                outcome = f"`{type(exc).__name__}: {str(exc).replace(str(tmp), '<tmp>')}`"
            print(f"| {name} | {outcome} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    k = sub.add_parser("kills")
    k.add_argument("--rows", type=int, default=2_000_000)
    k.add_argument("--exact-rows", type=int, default=30_000)
    m = sub.add_parser("memory")
    m.add_argument("--sizes", type=int, nargs="+", default=[10_000_000, 20_000_000])
    m.add_argument("--chunks", type=int, nargs="+", default=[125_000, 500_000])
    sub.add_parser("storage")
    args = parser.parse_args()
    {"kills": kills, "memory": memory, "storage": storage}[args.what](args)


if __name__ == "__main__":
    main()
