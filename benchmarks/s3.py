"""S3 benchmark (issue 22, point 19): ``lowdens fit`` from an S3-compatible store against the same fit from local disk.

The S3 server is moto's (``python -m moto.server``, a separate process on 127.0.0.1), configured as users configure
S3: the standard AWS_* variables only (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_DEFAULT_REGION). For each size, the same rows (``--features`` float32 columns, five well-separated Gaussian
groups, zarr v3 in chunks of ``--chunk`` rows) are written to a local zarr store and to ``s3://bench/data-N.zarr/X``;
then, interleaved run by run (local, S3, local, S3, ...), each program is

    lowdens fit DATA --n-clusters 5 --param mode=MODE --store RUNS --run-id <fresh>

with RUNS a local folder for the local fit and ``s3://bench/runs`` for the S3 fit, in a subprocess with
PREFECT_API_URL removed (the command fits in its own process and starts no Prefect server). Each run's time is the
whole command (``time.perf_counter`` around the subprocess) and the job's steps as the run records them
(``metrics["seconds"]``: load and validate, fit, continuity, write the labels, metrics); the ratio S3 / local is
of the medians, measured in the same run of this script. One untimed warm-up fit per program comes first.

moto on localhost is not AWS: no network latency and no bandwidth limit, but every request goes through boto's
HTTP stack and moto's Python server, which shares the machine's cores with the fit. The ratio is the cost of the
object-store path on one machine, not a forecast of S3 over a network.

    python benchmarks/s3.py [--sizes 200000,2000000] [--modes summary,exact] [--exact-max-rows 200000]
                            [--repeats 3] [--features 10] [--chunk 100000] [--out benchmarks/results/s3.md]

Exact mode runs on the sizes up to ``--exact-max-rows`` only (at 2·10⁶ rows one exact fit takes over 15 minutes
on 2 cores).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown

K = 5
STEPS = ("load_and_validate", "fit", "continuity", "write_labels", "metrics")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_moto(port: int) -> subprocess.Popen:
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the moto server did not start within 60 s")


def write_data(paths: list[str], n_rows: int, n_features: int, chunk: int) -> None:
    """The same rows into each zarr store: five groups at 12 e_k, unit variances, written chunk by chunk."""
    import zarr

    arrays = []
    for path in paths:
        if path.startswith("s3://"):
            arrays.append(
                zarr.open_group(path.rsplit("/", 1)[0], mode="w").create_array(
                    "X", shape=(n_rows, n_features), chunks=(chunk, n_features), dtype="f4"
                )
            )
        else:
            arrays.append(
                zarr.create_array(
                    path, shape=(n_rows, n_features), chunks=(chunk, n_features), dtype="f4", overwrite=True
                )
            )
    centres = (12.0 * np.eye(K, n_features)).astype("f4")
    rng = np.random.default_rng(0)
    for start in range(0, n_rows, chunk):
        stop = min(start + chunk, n_rows)
        y = rng.integers(0, K, size=stop - start)
        block = rng.normal(size=(stop - start, n_features)).astype("f4") + centres[y]
        for array in arrays:
            array[start:stop] = block


def fit(lowdens: str, data: str, store: str, run_id: str, mode: str, env: dict, cwd: str) -> dict:
    argv = [
        lowdens,
        "fit",
        data,
        "--n-clusters",
        str(K),
        "--param",
        f"mode={mode}",
        "--store",
        store,
        "--run-id",
        run_id,
    ]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=1800, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr}")
    shown = subprocess.run(
        [lowdens, "runs", "show", run_id, "--store", store],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=True,
    )
    metrics = json.loads(shown.stdout)["metrics"]
    return {"command": seconds, "steps": metrics["seconds"], "n_leaves": metrics["n_leaves"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="200000,2000000")
    parser.add_argument("--modes", default="summary,exact")
    parser.add_argument("--exact-max-rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--out", default=str(RESULTS_DIR / "s3.md"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    modes = args.modes.split(",")
    lowdens = str(Path(sys.executable).with_name("lowdens"))

    port = free_port()
    aws = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    os.environ.update(aws)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    server = start_moto(port)
    rows, started = [], time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_start = os.getloadavg()
    try:
        import s3fs

        s3fs.S3FileSystem().mkdir("bench")
        with tempfile.TemporaryDirectory(prefix="lowdens-s3-bench-") as scratch:
            for n in sizes:
                local = f"{scratch}/data-{n}.zarr"
                remote = f"s3://bench/data-{n}.zarr/X"
                write_data([local, remote], n, args.features, args.chunk)
                programs = {"local": (local, f"{scratch}/runs"), "s3": (remote, "s3://bench/runs")}
                for mode in modes:
                    if mode == "exact" and n > args.exact_max_rows:
                        continue
                    results = {name: [] for name in programs}
                    for name, (data, store) in programs.items():  # warm-up, untimed
                        fit(lowdens, data, store, f"warm-{name}-{mode}-{n}", mode, env, scratch)
                    for repeat in range(args.repeats):
                        for name, (data, store) in programs.items():
                            run_id = f"{name}-{mode}-{n}-{repeat}"
                            results[name].append(fit(lowdens, data, store, run_id, mode, env, scratch))
                            print(name, mode, n, repeat, f"{results[name][-1]['command']:.1f} s", flush=True)
                    rows.append((n, mode, results))
    finally:
        server.kill()
        server.wait()
    load_end = os.getloadavg()

    def median(runs, key=None):
        values = [run["command"] if key is None else sum(run["steps"].get(s, 0.0) for s in key) for run in runs]
        return statistics.median(values)

    table = []
    for n, mode, results in rows:
        local, s3 = results["local"], results["s3"]
        table.append(
            [
                f"{n:,}",
                mode,
                fmt(median(local), 2),
                fmt(median(s3), 2),
                fmt(median(s3) / median(local), 2),
                fmt(median(local, STEPS), 2),
                fmt(median(s3, STEPS), 2),
                fmt(median(s3, STEPS) / median(local, STEPS), 2),
                " / ".join(
                    f"{statistics.median(r['steps'].get(s, 0.0) for r in local):.2f}"
                    f"→{statistics.median(r['steps'].get(s, 0.0) for r in s3):.2f}"
                    for s in STEPS
                ),
                f"{local[0]['n_leaves']} / {s3[0]['n_leaves']}",
            ]
        )
    versions = []
    for name in ("zarr", "s3fs", "fsspec", "botocore", "moto", "dask", "lowdens-dask"):
        try:
            from importlib.metadata import version

            versions.append(f"{name} {version(name)}")
        except Exception:  # noqa: BLE001
            versions.append(f"{name} not installed")
    body = f"""## Set-up

- Started {started}; {args.features} float32 columns, five well-separated Gaussian groups (centres 12 e_k), zarr v3
  in chunks of {args.chunk:,} rows, the same rows on local disk (a temporary folder) and in a moto S3 server
  (`python -m moto.server` on 127.0.0.1, a process of its own on the same machine), reached through the standard
  AWS_* variables only.
- Each fit: `lowdens fit DATA --n-clusters {K} --param mode=MODE --store RUNS --run-id <fresh>`, a subprocess without
  PREFECT_API_URL (fitted in its own process, threaded Dask, no Prefect server); the local fit's runs store on local
  disk, the S3 fit's at `s3://bench/runs`. Interleaved local, S3, local, S3, ...; one untimed warm-up per program
  and mode; medians of {args.repeats}.
- "command": the whole process (imports, checks, fit, labels written, run committed) by `time.perf_counter`;
  "job": the sum of the steps the run records (`metrics["seconds"]`: {", ".join(STEPS)}); the steps column gives
  each step's median, local→S3.
- Versions: {", ".join(versions)}.
- Load average (1, 5, 15 min) at the start: {", ".join(f"{x:.2f}" for x in load_start)}; at the end:
  {", ".join(f"{x:.2f}" for x in load_end)}.

## Results (seconds)

{
        markdown_table(
            [
                "rows",
                "mode",
                "command local",
                "command S3",
                "ratio",
                "job local",
                "job S3",
                "ratio",
                "steps local→S3 (" + " / ".join(STEPS) + ")",
                "clusters local / S3",
            ],
            table,
        )
    }

moto on localhost is not AWS: no network latency or bandwidth limit, while boto's HTTP stack and moto's Python
server share the 2 cores with the fit. The ratio is the cost of the object-store path on one machine.
"""
    path = write_markdown(
        args.out, "S3 benchmark: `lowdens fit` from S3 against local disk (issue 22)", command_line(), body
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
