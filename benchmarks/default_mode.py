"""The default mode across sizes (issue 52): what ``mode="auto"`` costs beside each of the three ways to fit.

Data: a float32 mixture of K = 12 heavy-tailed clusters (centres ~ N(0, 4^2 I), Student t with 5 degrees of freedom
around them, equal shares, seed 0) in d = 16 and 64, generated chunk by chunk (125,000-row chunks) into a local zarr
store, for n from 10^4 to 10^7 rows in steps of sqrt(10) (``--n``). For each (n, d) and each input (a numpy array, a
Dask array of the same rows, the zarr store), ``MDHClustering(n_clusters=12, random_state=0)`` (``--param`` adds
parameters) is fitted on a 2-worker ``LocalCluster`` (single-thread workers) at the default ``mode="auto"`` and at
each mode:

- ``memory``: the rows in memory (the numpy array, ``mode="exact"``; for chunked input the rows read into memory and
  fitted there, the read included);
- ``summary``: ``mode="summary"``;
- ``exact``: ``mode="exact"`` on chunked input (passes over the chunks, two per evaluation).

Each row gives the default's mode and time, each mode's time and ARI against the truth and against the in-memory
fit (where one ran), and the time of one plain pass ``(X @ v).sum()`` over the same input measured in the same run
(the one-pass time). A mode whose time at the last size it ran predicts (linearly in n) more than ``--limit`` seconds
is not run and shown as "-" (memory and exact mode at the largest sizes). Fits are timed once (the fits at the
smaller sizes are the repeats of the curve's shape); the kernels are compiled before the first timed fit.

    python benchmarks/default_mode.py [--n 1e4,...,1e7] [--d 16,64] [--inputs numpy,dask,zarr]
                                      [--modes memory,summary,exact] [--limit 240] [--workdir DIR] [--out FILE]

Writes ``benchmarks/results/default-mode.md`` and the plot ``benchmarks/results/default-mode.png``.
"""

import argparse
import ast
import itertools
import math
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import zarr
from distributed import Client, LocalCluster
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import MDHClustering

K, CHUNK = 12, 125_000
SIZES = ",".join(f"{10 ** (e / 2):.0f}" for e in range(8, 15))  # 1e4 ... 1e7 by sqrt(10)
INPUTS = ("numpy", "dask", "zarr")
MODES = ("memory", "summary", "exact")


def generate(path: Path, n: int, d: int, seed: int = 0) -> None:
    """Write X (n, d) float32 and the labels y chunk by chunk (kept if a store of that shape is there)."""
    if (path / "X").exists() and zarr.open_array(str(path / "X"), mode="r").shape == (n, d):
        return
    rng = np.random.default_rng([seed, d])
    centres = rng.normal(scale=4.0, size=(K, d))
    group = zarr.open_group(str(path), mode="w")
    codec = zarr.codecs.ZstdCodec(level=1)
    X = group.create_array("X", shape=(n, d), chunks=(CHUNK, d), dtype="f4", compressors=[codec])
    y = group.create_array("y", shape=(n,), chunks=(CHUNK,), dtype="i2", compressors=[codec])
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        chunk_rng = np.random.default_rng([seed, d, start])
        labels = chunk_rng.integers(0, K, m)
        X[start : start + m] = (centres[labels] + chunk_rng.standard_t(5, size=(m, d))).astype("f4")
        y[start : start + m] = labels


def open_input(kind: str, stored: str, d: int):
    """The rows as the input ``kind``: a numpy array, a Dask array of it, or the zarr store's path."""
    if kind == "zarr":
        return stored
    rows = zarr.open_array(stored, mode="r")[:]
    return rows if kind == "numpy" else da.from_array(rows, chunks=(CHUNK, d))


def labels_of(model) -> np.ndarray:
    labels = model.labels_
    return np.asarray(labels.compute() if hasattr(labels, "compute") else labels)


def fit(params: dict, X, mode: str, kind: str):
    """(seconds, labels, fit_mode_, reason) of one fit; ``mode`` "default" is mode="auto"."""
    start = time.perf_counter()
    if mode == "memory":  # exact mode on the rows in memory; the read of chunked input is part of its cost
        rows = X if kind == "numpy" else np.asarray(X.compute() if hasattr(X, "compute") else da.from_zarr(X).compute())
        model = MDHClustering(**params, mode="exact").fit(rows)
    else:
        model = MDHClustering(**params, mode="auto" if mode == "default" else mode).fit(X)
    labels = labels_of(model)
    return time.perf_counter() - start, labels, model.fit_mode_, model.fit_mode_reason_


def one_pass(X) -> float:
    """Seconds of one plain pass (X @ v).sum() over the input."""
    arr = X if isinstance(X, (np.ndarray, da.Array)) else da.from_zarr(X)
    v = np.ones(arr.shape[1], dtype=np.float32)
    start = time.perf_counter()
    result = arr @ v
    float(result.sum().compute() if hasattr(result, "compute") else result.sum())
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", default=SIZES, help="comma-separated row counts (1e4 ... 1e7 by sqrt(10))")
    parser.add_argument("--d", default="16,64")
    parser.add_argument("--inputs", default=",".join(INPUTS))
    parser.add_argument("--modes", default=",".join(MODES), help="the modes timed beside the default")
    parser.add_argument("--param", action="append", default=[], help="NAME=VALUE (a Python literal)")
    parser.add_argument("--limit", type=float, default=240.0, help="skip a mode predicted to take longer (s)")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--out", default=str(RESULTS_DIR / "default-mode.md"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    params = {"n_clusters": K, "random_state": 0}
    for item in args.param:
        name, value = item.split("=", 1)
        params[name] = ast.literal_eval(value)
    sizes = [int(float(n)) for n in args.n.split(",")]
    dims = [int(d) for d in args.d.split(",")]
    inputs = args.inputs.split(",")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="default-mode-"))
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    client = Client(cluster)
    rows, curve = [], {}
    try:
        warm = np.random.default_rng(0).standard_normal((3000, 4)).astype("f4")
        for mode in ("exact", "summary"):
            MDHClustering(n_clusters=2, mode=mode).fit(warm)
            MDHClustering(n_clusters=2, mode=mode).fit(da.from_array(warm, chunks=1000))
        for d in dims:
            last = {}  # (kind, mode) -> (n, seconds) of the last size it ran at
            for n in sizes:
                path = workdir / f"n{n}-d{d}.zarr"
                generate(path, n, d)
                y = zarr.open_array(str(path / "y"), mode="r")[:]
                stored = str(path / "X")
                for kind in inputs:
                    X = open_input(kind, stored, d)
                    passed = one_pass(X)
                    seconds, labels, taken, reason = fit(params, X, "default", kind)
                    row = {
                        "n": n,
                        "d": d,
                        "input": kind,
                        "pass_s": passed,
                        "default_mode": taken,
                        "reason": reason,
                        "default_s": seconds,
                        "default_ari": adjusted_rand_score(y, labels),
                    }
                    found = {"default": labels}
                    for mode in args.modes.split(","):
                        if mode == "exact" and kind == "numpy":
                            continue  # exact mode on an array is the memory mode
                        before = last.get((kind, mode))
                        if before is not None and before[1] * n / before[0] > args.limit:
                            continue
                        if mode == taken:  # the default's own fit, not run twice
                            row[f"{mode}_s"], found[mode] = seconds, labels
                        else:
                            row[f"{mode}_s"], found[mode], _, _ = fit(params, X, mode, kind)
                        last[(kind, mode)] = (n, row[f"{mode}_s"])
                        row[f"{mode}_ari"] = adjusted_rand_score(y, found[mode])
                    if "memory" in found:
                        for mode in ("default", *MODES):
                            if mode in found:
                                row[f"{mode}_vs_memory"] = adjusted_rand_score(found["memory"], found[mode])
                    rows.append(row)
                    curve.setdefault((kind, d), []).append((n, seconds))
                    write(args, rows, curve)  # after every point: a long run's table is never lost
                    print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
                    del X
                if n >= 10**6:
                    shutil.rmtree(path, ignore_errors=True)  # keep the disk for the next size
    finally:
        client.close()
        cluster.close()
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def write(args, rows: list[dict], curve: dict) -> None:
    header = [
        "n",
        "d",
        "input",
        "default: mode (why)",
        "default s",
        "memory s",
        "summary s",
        "exact s",
        "default / fastest good",
        "default in one-pass times",
        "ARI default / memory / summary / exact",
        "vs memory: default / summary / exact",
    ]
    table = []
    for r in rows:
        times = {m: r[f"{m}_s"] for m in MODES if f"{m}_s" in r}
        reference = r.get("memory_ari")
        good = [t for m, t in times.items() if reference is None or abs(r[f"{m}_ari"] - reference) <= 0.02]
        ratio = r["default_s"] / min(good) if good else math.nan
        table.append(
            [
                f"{r['n']:,}",
                r["d"],
                r["input"],
                f"{r['default_mode']} ({r['reason']})",
                fmt(r["default_s"], 2),
                *(fmt(times[m], 2) if m in times else "-" for m in MODES),
                fmt(ratio, 2),
                fmt(r["default_s"] / r["pass_s"], 1) if r["input"] != "numpy" else "-",
                " / ".join(fmt(r.get(f"{m}_ari"), 3) if f"{m}_ari" in r else "-" for m in ("default", *MODES)),
                " / ".join(
                    fmt(r.get(f"{m}_vs_memory"), 3) if f"{m}_vs_memory" in r else "-"
                    for m in ("default", "summary", "exact")
                ),
            ]
        )
    steps = []
    for (kind, d), points in sorted(curve.items()):
        per_row = [t / n for n, t in points]
        worst = max((b / a for a, b in itertools.pairwise(per_row)), default=math.nan)
        steps.append([kind, d, fmt(worst, 2)])
    body = (
        'Protocol: see the docstring of `benchmarks/default_mode.py`. "default / fastest good": the default\'s '
        "time over the fastest mode whose ARI against the truth is within 0.02 of the in-memory fit's (of every mode "
        'where no in-memory fit ran). "-": not run (predicted over the time limit, or exact mode on an array, '
        "which is the memory mode).\n\n"
        + markdown_table(header, table)
        + "\n\n## The default's time per row between neighbouring sizes\n\nThe largest ratio of the default's "
        "seconds per row at one size to those at the size before (goal: at most 2).\n\n"
        + markdown_table(["input", "d", "largest ratio"], steps)
    )
    write_markdown(
        args.out,
        'The default mode across sizes: mode="auto" beside memory, summary and exact mode',
        command_line(),
        body + "\n\n![default time per row](default-mode.png)\n",
    )
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        for (kind, d), points in sorted(curve.items()):
            ns, ts = zip(*points)
            ax.loglog(ns, np.array(ts) / np.array(ns) * 1e6, marker="o", label=f"{kind}, d={d}")
        ax.set_xlabel("rows")
        ax.set_ylabel("default fit: microseconds per row")
        ax.set_title('mode="auto", MDHClustering(n_clusters=12), 2-worker LocalCluster')
        ax.legend()
        fig.tight_layout()
        fig.savefig(Path(args.out).with_suffix(".png"), dpi=110)
    except ImportError:  # pragma: no cover - matplotlib is in the plot extras
        pass


if __name__ == "__main__":
    main()
