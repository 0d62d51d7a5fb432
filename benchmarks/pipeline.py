"""Pipeline benchmark: the demo's time, the recluster flow's overhead over calling the estimator directly, and a
nightly soak.

1. ``lowdens demo`` as a new user runs it (a fresh PREFECT_HOME each time, so Prefect's temporary server
   creates its database), in a fresh folder; median of ``--repeats`` runs. Numba's kernel cache is warm
   (the first run on a machine also compiles them, about 9 s).
2. Overhead at ``--rows`` rows (default 10^6): the scale benchmark's mixture (K = 16, d = 32, float32 zarr,
   125,000-row chunks). Direct: start a 2-worker LocalCluster, ``MDHClustering(n_clusters=16,
   random_state=0).fit(path)`` and write ``labels_`` to zarr. Flow: ``recluster(path, n_clusters=16,
   cluster=<the same LocalCluster settings>)`` into a fresh runs store (so no continuity pass), which also
   validates, fingerprints, computes metrics and commits. Both timed end to end including the cluster's
   start, alternating, median of ``--repeats``; one warm-up flow run first starts Prefect's temporary server
   (its cost is reported apart). Target: flow <= 1.1 x direct + 3 s.
3. Soak: ``--soak`` consecutive runs (default 20) on slowly drifting data at one input path (``--soak-rows``
   rows; each night the 6 centres move by N(0, 0.05^2) per coordinate and 2% of the rows are redrawn), each
   with its own temporary LocalCluster, as a nightly schedule would run them. Per run: time, stability
   against the previous run, this process's RSS after the run, live child processes, and the store's size
   on disk against the sum of its committed runs' sizes (anything else in the store would be a leak).

    python benchmarks/pipeline.py [--rows 1e6] [--repeats 3] [--soak 20] [--soak-rows 2e5] [--output FILE]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil
import zarr
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

NOTES = """
## Notes

- **Where the temporary cluster's overhead goes.** A flow run on a temporary LocalCluster starts fresh worker
  processes that import Prefect, prefect-dask, scikit-learn and the library (about 4 s of imports per
  process on this machine; the workers preload them while the cluster starts) and load the numba kernels
  from the cache on the worker that fits, while the direct call runs the estimator in a process that has
  all of that loaded. Each Prefect task also costs API round trips and a worker client (`get_dask_client`).
  On a standing cluster, whose workers have imported everything once, the overhead is within the target.
  What would close the gap for the temporary cluster: workers forked from a process that has the modules
  imported (a forkserver preloaded with them), or keeping a cluster up between runs, as the standing
  configuration does.
- **Memory in the soak** is the RSS of the one process that ran all 20 flows (each with its own temporary
  cluster): it grows by about 1 MiB per run (Prefect and distributed state kept in the process; traced
  Python allocations after 8 runs on one in-process cluster were mostly the scheduler's message history).
  Under `lowdens serve` each flow run executes in a process of its own, so a serving process does not
  accumulate it.
"""

LOCAL = {"n_workers": 2, "threads_per_worker": 1, "dashboard_address": ":0"}


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def bench_demo(work: Path, repeats: int) -> tuple[str, list[float]]:
    times = []
    for i in range(repeats):
        folder = work / f"demo-{i}"
        folder.mkdir()
        env = {**os.environ, "PREFECT_HOME": str(folder / "prefect-home"), "PREFECT_LOGGING_LEVEL": "INFO"}
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "lowdens_pipelines.cli", "demo"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(time.perf_counter() - start)
        print(f"demo {i}: {times[-1]:.1f} s", flush=True)
    return done.stdout, times


def bench_overhead(work: Path, n: int, repeats: int) -> dict:
    sys.path.insert(0, str(Path(__file__).parent))
    from distributed import Client, LocalCluster
    from lowdens_pipelines import RunsStore
    from lowdens_pipelines.flows import recluster
    from scale import generate

    from lowdens_dask import MDHClustering

    data = work / "mixture.zarr"
    generate(data, n)
    path = f"{data}/X"

    def fit_and_write():
        model = MDHClustering(n_clusters=16, random_state=0).fit(path)
        model.labels_.to_zarr(str(work / "direct-labels.zarr"), overwrite=True)

    def direct(address=None):
        if address is None:
            with LocalCluster(**LOCAL) as cluster, Client(cluster):
                fit_and_write()
        else:
            with Client(address):
                fit_and_write()

    def flow(store, cluster):
        return recluster(path, n_clusters=16, store=str(store), cluster=cluster)

    out = {}
    start = time.perf_counter()
    flow(work / "runs-warmup", {"cluster_kwargs": LOCAL})
    out["first"] = time.perf_counter() - start
    with LocalCluster(**LOCAL) as standing:
        address = standing.scheduler_address
        flow(work / "runs-warmup-standing", {"address": address})  # its workers import the flow's modules once
        configurations = {
            "temporary": (direct, {"cluster_kwargs": LOCAL}),
            "standing": (lambda: direct(address), {"address": address}),
        }
        for name, (run_direct, cluster) in configurations.items():
            direct_times, flow_times, steps = [], [], []
            for i in range(repeats):
                start = time.perf_counter()
                run_direct()
                direct_times.append(time.perf_counter() - start)
                store = work / f"runs-{name}-{i}"
                start = time.perf_counter()
                run_id = flow(store, cluster)
                flow_times.append(time.perf_counter() - start)
                steps.append(RunsStore(str(store)).get(run_id).attrs["metrics"]["seconds"])
                print(f"{name} {i}: direct {direct_times[-1]:.1f} s, flow {flow_times[-1]:.1f} s", flush=True)
            out[name] = {"direct": direct_times, "flow": flow_times, "steps": steps}
    return out


def drifting(n: int, night: int, centres: np.ndarray, X: np.ndarray | None, rng) -> tuple[np.ndarray, np.ndarray]:
    if X is None:
        labels = rng.integers(0, len(centres), size=n)
        return (centres[labels] + rng.standard_normal((n, centres.shape[1]))).astype("f4"), centres
    centres = centres + rng.normal(scale=0.05, size=centres.shape)
    X = X.copy()
    redrawn = rng.choice(n, size=n // 50, replace=False)
    labels = rng.integers(0, len(centres), size=len(redrawn))
    X[redrawn] = centres[labels] + rng.standard_normal((len(redrawn), centres.shape[1]))
    return X, centres


def bench_soak(work: Path, nights: int, n: int) -> list[dict]:
    from lowdens_pipelines import RunsStore
    from lowdens_pipelines.flows import recluster

    rng = np.random.default_rng(0)
    centres = rng.normal(scale=4.0, size=(6, 8))
    path, store = str(work / "nightly.zarr"), work / "nightly-runs"
    X = None
    rows = []
    for night in range(1, nights + 1):
        X, centres = drifting(n, night, centres, X, rng)
        zarr.create_array(path, data=X, chunks=(20_000, X.shape[1]), overwrite=True)
        start = time.perf_counter()
        run_id = recluster(
            path, n_clusters=6, store=str(store), run_id=f"night-{night:02d}", cluster={"cluster_kwargs": LOCAL}
        )
        seconds = time.perf_counter() - start
        runs = RunsStore(str(store)).runs()
        run_bytes = sum(du(Path(run.url)) for run in runs)  # each run's committed attempt
        stability = RunsStore(str(store)).get(run_id).attrs["metrics"]["stability"] or {}
        rows.append(
            {
                "night": night,
                "seconds": seconds,
                "ari": stability.get("ari"),
                "same_id": stability.get("same_id_fraction"),
                "kept_new_gone": (stability.get("kept"), stability.get("new"), stability.get("gone")),
                "rss_mib": psutil.Process().memory_info().rss / 2**20,
                "children": len(psutil.Process().children(recursive=True)),
                "store_bytes": du(store),
                "run_bytes": run_bytes,
                "runs": len(runs),
            }
        )
        print(f"night {night}: {seconds:.1f} s, {rows[-1]}", flush=True)
    return rows


def overhead_row(name: str, figures: dict) -> list:
    direct, flow = statistics.median(figures["direct"]), statistics.median(figures["flow"])
    target = 1.1 * direct + 3
    runs = ", ".join(fmt(t, 1) for t in figures["direct"]) + " / " + ", ".join(fmt(t, 1) for t in figures["flow"])
    verdict = "met" if flow <= target else "missed"
    return [name, fmt(direct, 1), fmt(flow, 1), f"{flow - direct:+.1f} s", f"{target:.1f} s: {verdict}", runs]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--soak", type=int, default=20)
    parser.add_argument("--soak-rows", type=float, default=2e5)
    parser.add_argument("--output", default=str(RESULTS_DIR / "pipeline.md"))
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="lowdens-pipeline-"))
    try:
        demo_out, demo_times = bench_demo(work, args.repeats)
        over = bench_overhead(work, int(args.rows), args.repeats)
        soak = bench_soak(work, args.soak, int(args.soak_rows))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = statistics.median
    step_names = list(over["temporary"]["steps"][0])
    body = [
        "## 1. `lowdens demo`",
        "",
        f"A fresh folder and a fresh PREFECT_HOME per run (kernel cache warm); {args.repeats} runs: "
        f"median **{statistics.median(demo_times):.1f} s** (runs: {', '.join(f'{t:.1f}' for t in demo_times)} s). "
        "Its output:",
        "",
        "```",
        demo_out.rstrip(),
        "```",
        "",
        f"## 2. The flow's overhead at {int(args.rows):,} rows",
        "",
        "Two-worker LocalCluster, single-thread workers. *temporary*: each call starts and stops its own cluster "
        "(the flow's default); *standing*: both connect to one running cluster (`cluster={'address': ...}`), as "
        "a nightly schedule against a standing Dask cluster does. Target: flow <= 1.1 x direct + 3 s.",
        "",
        markdown_table(
            [
                "cluster",
                "direct (fit + labels to zarr), median s",
                "recluster flow, median s",
                "overhead",
                "target",
                "runs: direct / flow (s)",
            ],
            [overhead_row(name, over[name]) for name in ("temporary", "standing")],
        ),
        "",
        f"The first flow run in a process also starts Prefect's temporary server: {over['first']:.1f} s for that run.",
        "",
        "The flow's steps (median s over the runs, from the runs' metrics):",
        "",
        markdown_table(
            ["cluster", *step_names],
            [
                [name, *(fmt(med(s[k] for s in over[name]["steps"]), 2) for k in step_names)]
                for name in ("temporary", "standing")
            ],
        ),
        "",
        f"## 3. Nightly soak: {args.soak} runs, {int(args.soak_rows):,} rows drifting",
        "",
        markdown_table(
            [
                "night",
                "s",
                "ARI vs previous",
                "same id",
                "kept/new/gone",
                "RSS MiB",
                "child procs",
                "store bytes",
                "committed runs' bytes",
                "runs",
            ],
            [
                [
                    r["night"],
                    fmt(r["seconds"], 1),
                    fmt(r["ari"]),
                    fmt(r["same_id"]),
                    "/".join(map(str, r["kept_new_gone"])),
                    fmt(r["rss_mib"], 0),
                    r["children"],
                    r["store_bytes"],
                    r["run_bytes"],
                    r["runs"],
                ]
                for r in soak
            ],
        ),
        "",
        f"RSS of the flow's process: {soak[0]['rss_mib']:.0f} MiB after night 1, {soak[len(soak) // 2]['rss_mib']:.0f} MiB "
        f"at night {len(soak) // 2 + 1}, {soak[-1]['rss_mib']:.0f} MiB after night {len(soak)}. The store holds exactly "
        f"its committed runs: {'yes' if all(r['store_bytes'] == r['run_bytes'] for r in soak) else 'NO'}.",
    ]
    path = write_markdown(args.output, "Pipeline benchmark", command_line(), "\n".join(body) + NOTES)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
