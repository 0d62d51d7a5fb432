"""SCPP and LMSC in memory on the bundled data sets, single thread, beside the R package SCPP (issue 44).

Per bundled set: ``SCPPClustering(n_clusters=K, leaf_order="size-only")`` and
``LMSCClustering(n_clusters=K, leaf_order="size-only")`` (the estimators of ``divisive.py``'s "scpp" variant;
K = the true number of classes) on the data as shipped with its constant columns dropped (the anchors' protocol;
dropped before any timing), single thread (NUMBA/OMP/OPENBLAS/MKL_NUM_THREADS=1, set by this script before numpy
loads unless already set), warm: one warm-up fit, whose labels are scored (the fit is deterministic), then the
median of ``--repeats`` fits.

Beside our time: the R package's seconds and our own seconds of that day from
``../shared/anchors/side-by-side-r.csv`` (one interleaved run of both on the same machine class; method
``scpp`` is the R package's ``SCPP_cluster``, ``SCPPClustering`` ours), and two ratios: R / ours now (the
speed-up over the R package, target >= 10 where R takes at least a second) and ours now / ours of that day (the
drift of the machine and of the code since: above 1 means slower now, which makes the first ratio pessimistic).
The anchors file has no LMSC rows, so LMSC gets times and V-measure only. The load average before and after
each set is reported, as timings on a shared machine are noisy.

    python benchmarks/scpp_small_sets.py [--datasets a,b] [--methods scpp,lmsc] [--lmsc-datasets a,b] [--repeats 5]
                                         [--output FILE]

LMSC takes minutes per fit on the larger sets: ``--lmsc-datasets`` limits it to a few.

``LOWDENS_ANCHORS_DIR`` names the anchors folder when the checkout is not beside ``shared/``.
"""

import os

import harness

harness.single_thread()  # before numpy, numba or scikit-learn load their thread pools

import argparse  # noqa: E402
import csv  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from harness import (  # noqa: E402
    ANCHORS_DIR,
    RESULTS_DIR,
    command_line,
    drop_constant_columns,
    fmt,
    markdown_table,
    median_time,
    write_markdown,
)

from lowdens_dask import LMSCClustering, SCPPClustering  # noqa: E402
from lowdens_dask.datasets import list_datasets, load_dataset  # noqa: E402
from lowdens_dask.metrics import cluster_performance  # noqa: E402

ANCHORS_FILE = "side-by-side-r.csv"
#: Our estimator per method, and its rows in the anchors file: (the R package's method, our estimator's name).
METHODS = {
    "scpp": (lambda k: SCPPClustering(n_clusters=k, leaf_order="size-only"), ("scpp", "SCPPClustering")),
    "lmsc": (lambda k: LMSCClustering(n_clusters=k, leaf_order="size-only"), (None, "LMSCClustering")),
}
#: The speed-up over the R package is a target only where the R package takes at least this long (seconds).
R_MIN_SECONDS = 1.0
SPEEDUP_TARGET = 10.0


def load_side_by_side(name: str = ANCHORS_FILE) -> dict[tuple[str, str], float]:
    """``{(dataset, method): seconds}`` from the side-by-side anchors file (columns set, method,
    seconds_single_thread)."""
    path = ANCHORS_DIR / name
    if not path.exists():
        raise SystemExit(f"Reference figures not found at {path}; set LOWDENS_ANCHORS_DIR to the anchors folder.")
    with open(path, newline="") as fh:
        return {(row["set"], row["method"]): float(row["seconds_single_thread"]) for row in csv.DictReader(fh)}


def bench(name: str, method: str, repeats: int, anchors: dict) -> dict:
    X, y = load_dataset(name)
    X = drop_constant_columns(X)
    k = int(np.unique(y).size)
    make, (r_method, our_method) = METHODS[method]
    load_before = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make(k).fit(X)  # warm-up; deterministic, so its labels are scored
        seconds, times = median_time(lambda: make(k).fit(X), repeats)
    perf = cluster_performance(y, model.labels_)
    r_seconds = anchors.get((name, r_method)) if r_method else None
    day_seconds = anchors.get((name, our_method))
    return {
        "name": name, "method": method, "n": X.shape[0], "d": X.shape[1], "k": k,
        "leaves": int(model.n_clusters_), "vm": perf["v_measure"], "seconds": seconds, "times": times,
        "r": r_seconds, "day": day_seconds,
        "speedup": r_seconds / seconds if r_seconds else None,
        "drift": seconds / day_seconds if day_seconds else None,
        "load": (load_before, os.getloadavg()[0]),
    }


def report(rows: list[dict], repeats: int) -> str:
    header = ["dataset", "method", "n", "d", "K", "leaves", "V-measure", "ours now (s)", "runs (s)", "R (s)",
              "ours that day (s)", "R / ours now", ">= 10", "ours now / that day", "load 1-min before/after"]
    table = []
    for r in rows:
        target = "-"
        if r["r"] is not None and r["r"] >= R_MIN_SECONDS:
            target = "yes" if r["speedup"] >= SPEEDUP_TARGET else "**no**"
        table.append([
            r["name"], r["method"], r["n"], r["d"], r["k"], r["leaves"], fmt(r["vm"]), fmt(r["seconds"]),
            " ".join(f"{t:.2f}" for t in r["times"]), fmt(r["r"]), fmt(r["day"]), fmt(r["speedup"], 1), target,
            fmt(r["drift"], 2), f"{r['load'][0]:.2f} / {r['load'][1]:.2f}",
        ])
    short = [f"{r['name']} {r['method']} ({r['speedup']:.1f}x)" for r in rows
             if r["r"] is not None and r["r"] >= R_MIN_SECONDS and r["speedup"] < SPEEDUP_TARGET]
    return (
        "## SCPP and LMSC, single thread, beside the R package SCPP\n\n"
        "Each fit: `SCPPClustering(n_clusters=K, split_index=\"size-only\")` or "
        "`LMSCClustering(n_clusters=K, split_index=\"size-only\")`, K = true number of classes, on the data as "
        "shipped with its constant columns dropped; single thread (NUMBA/OMP/OPENBLAS/MKL_NUM_THREADS=1); one "
        f"warm-up fit (scored), then the median of {repeats} fit(s). R (s) and ours that day (s): "
        f"`shared/anchors/{ANCHORS_FILE}` (the R package SCPP's `SCPP_cluster` and our `SCPPClustering`, one "
        "interleaved run on the same machine class, single thread, reference BLAS in R); no LMSC rows there. "
        "Ratios: R / ours now (target >= 10 where R takes at least 1 s); ours now / ours that day (drift of "
        "machine and code; above 1 means slower now, so R / ours now understates the speed-up).\n\n"
        + markdown_table(header, table)
        + "\n\n"
        + (f"- Below the 10x target: {', '.join(short)}.\n" if short else "- No set below the 10x target among "
           "those where R takes >= 1 s.\n")
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default=",".join(list_datasets()))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--lmsc-datasets", default=None, help="LMSC on these sets only (default: --datasets)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default=str(RESULTS_DIR / "scpp-small-sets.md"))
    args = parser.parse_args(argv)
    anchors = load_side_by_side()
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise SystemExit(f"Unknown methods {unknown}; choose from {sorted(METHODS)}.")
    rows = []
    lmsc_sets = set((args.lmsc_datasets if args.lmsc_datasets is not None else args.datasets).split(","))
    for name in args.datasets.split(","):
        for method in methods:
            if method == "lmsc" and name not in lmsc_sets:
                continue
            row = bench(name, method, args.repeats, anchors)
            print(f"  {name} {method}: {row['seconds']:.3f} s, V {row['vm']:.3f}", file=sys.stderr, flush=True)
            rows.append(row)
    path = write_markdown(args.output, "SCPP and LMSC on the bundled sets, single thread (issue 44)", command_line(),
                          report(rows, args.repeats))
    print(path.read_text())


if __name__ == "__main__":
    main()
