"""Divisive MDH clustering (MDHClustering, PPCI's ``mddc``) on the ten bundled data sets: quality and speed.

For each data set, ``MDHClustering(n_clusters=K)`` with K the true number of classes, at its defaults, on
the data as shipped (no preprocessing). Reported:

- ARI, V-measure and purity of the K-cluster partition, with PPCI's measured V-measure beside ours;
- warm time: median of ``--repeats`` fits after one warm-up fit, in this process;
- cold time: the first fit in a fresh subprocess whose numba cache (NUMBA_CACHE_DIR) is a new empty
  directory, so all kernels are compiled; cold minus warm is reported as the compile time;
- single-thread warm time: as the warm time, in a subprocess with NUMBA/OMP/OPENBLAS/MKL_NUM_THREADS=1;
- the plain numpy/scipy reference (``reference_mdh.mddc_reference``): its time (median of 3, or 1 with
  ``--quick``), its V-measure and the speed-up reference time / our warm time;
- our warm time over PPCI's measured time on every set where PPCI takes at least 1 s (target <= 0.2);
- the variants (``--variants``): the other split indices of MDHClustering ("fval", "rdepth") and DePDDP at
  its default ("fval"), each fitted in a single-thread subprocess (warm, median of ``--repeats``), with
  their V-measure beside the default's.

PPCI's figures (V-measure, seconds; single thread, median of 3, same machine class) are read from
``../shared/anchors/ppci-bundled.csv``.

    python benchmarks/divisive.py [--datasets a,b] [--repeats N] [--quick] [--no-reference] [--variants a,b]
                                  [--output FILE]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

# _common first: it puts the repository root on sys.path.
from _common import (
    REPO_ROOT,
    RESULTS_DIR,
    command_line,
    fmt,
    load_anchors,
    markdown_table,
    median_time,
    write_markdown,
)

from lowdens_dask import DePDDP, MDHClustering
from lowdens_dask.datasets import list_datasets, load_dataset
from lowdens_dask.metrics import cluster_performance

PPCI = load_anchors()
PPCI_VMEASURE = {d: r["V"] for (d, m), r in PPCI.items() if m == "mddc"}
PPCI_TIME = {d: r["seconds"] for (d, m), r in PPCI.items() if m == "mddc" and r["seconds"] >= 1.0}
TIME_RATIO_TARGET = 0.2

#: Estimators compared beside the default MDHClustering: name -> (estimator for K clusters, PPCI method).
VARIANTS = {
    "mdh-fval": (lambda k: MDHClustering(n_clusters=k, split_index="fval"), None),
    "mdh-rdepth": (lambda k: MDHClustering(n_clusters=k, split_index="rdepth"), None),
    "depddp": (lambda k: DePDDP(n_clusters=k), None),
}
SINGLE_THREAD_ENV = {k: "1" for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                       "MKL_NUM_THREADS")}
RESULT_TAG = "RESULT "


def n_classes(y) -> int:
    return int(np.unique(y).size)


def fit(X, k, variant=None):
    make = (lambda k: MDHClustering(n_clusters=k)) if variant is None else VARIANTS[variant][0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = make(k).fit(X)
    return model, [str(w.message) for w in caught]


# --- subprocess side -------------------------------------------------------------------------------

def worker(mode: str, name: str, repeats: int, variant: str | None = None) -> dict:
    """``cold``: time the first fit in this process; ``warm``: one warm-up fit (scored), then the median of
    repeats."""
    X, y = load_dataset(name)
    k = n_classes(y)
    if mode == "cold":
        start = time.perf_counter()
        fit(X, k, variant)
        return {"time": time.perf_counter() - start}
    model, _ = fit(X, k, variant)
    perf = cluster_performance(y, model.labels_)
    med, times = median_time(lambda: fit(X, k, variant), repeats)
    return {"time": med, "times": times, "leaves": int(model.n_clusters_), "ari": perf["adjusted_rand"],
            "vm": perf["v_measure"]}


def run_worker(mode: str, name: str, repeats: int, env_update: dict, variant: str | None = None) -> dict:
    env = dict(os.environ, **env_update)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", mode, "--datasets", name, "--repeats", str(repeats)]
    if variant is not None:
        cmd += ["--variant", variant]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(REPO_ROOT))
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG):])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    print(f"  {mode} worker failed for {name}: {tail}", file=sys.stderr)
    return {"time": float("nan"), "error": tail}


def cold_time(name: str) -> dict:
    cache = tempfile.mkdtemp(prefix="lowdens-numba-cache-")
    try:
        return run_worker("cold", name, 1, {"NUMBA_CACHE_DIR": cache})
    finally:
        shutil.rmtree(cache, ignore_errors=True)


# --- main side -------------------------------------------------------------------------------------

def bench(name: str, repeats: int, ref_repeats: int, reference: bool) -> dict:
    X, y = load_dataset(name)
    k = n_classes(y)
    model, messages = fit(X, k)  # warm-up; the fit is deterministic, so its labels are scored
    perf = cluster_performance(y, model.labels_)
    warm, warm_times = median_time(lambda: fit(X, k), repeats)
    print(f"  {name}: warm {warm:.3f} s", file=sys.stderr, flush=True)
    cold = cold_time(name)
    single = run_worker("warm", name, repeats, SINGLE_THREAD_ENV)
    row = {
        "name": name, "n": X.shape[0], "d": X.shape[1], "k": k, "leaves": int(model.n_clusters_),
        "ari": perf["adjusted_rand"], "vm": perf["v_measure"], "purity": perf["purity"],
        "warm": warm, "warm_times": warm_times, "cold": cold["time"], "single": single["time"],
        "single_times": single.get("times"), "warnings": sorted(set(m.split(";")[0][:100] for m in messages)),
        "ref_time": float("nan"), "ref_vm": float("nan"), "ref_times": None,
    }
    if reference:
        from reference_mdh import mddc_reference

        labels = []
        row["ref_time"], row["ref_times"] = median_time(lambda: labels.append(mddc_reference(X, k)), ref_repeats)
        row["ref_vm"] = cluster_performance(y, labels[-1])["v_measure"]
    return row


def report(rows, args, ref_repeats, variants) -> str:
    names = [r["name"] for r in rows]
    main_rows = []
    for r in rows:
        ppci = PPCI_VMEASURE.get(r["name"])
        main_rows.append([
            r["name"], r["n"], r["d"], r["k"], r["leaves"], fmt(r["ari"]), fmt(r["vm"]), fmt(ppci),
            f"{r['vm'] - ppci:+.3f}" if ppci is not None else "-", fmt(r["purity"]),
            fmt(r["warm"]), fmt(r["single"]), fmt(r["cold"], 2), fmt(r["cold"] - r["warm"], 2),
            fmt(r["ref_time"], 2), fmt(r["ref_vm"]), fmt(r["ref_time"] / r["warm"], 1),
        ])
    mean_vm = float(np.mean([r["vm"] for r in rows]))
    mean_ref_vm = float(np.mean([r["ref_vm"] for r in rows]))
    ppci_subset = float(np.mean([PPCI_VMEASURE[n] for n in names]))
    main_rows.append(["**mean**", "", "", "", "", fmt(float(np.mean([r["ari"] for r in rows]))), fmt(mean_vm),
                      fmt(ppci_subset), f"{mean_vm - ppci_subset:+.3f}",
                      fmt(float(np.mean([r["purity"] for r in rows]))), "", "", "", "", "", fmt(mean_ref_vm), ""])
    header = ["dataset", "n", "d", "K", "leaves", "ARI", "V-m", "PPCI V-m", "diff", "purity", "warm (s)",
              "1-thread warm (s)", "cold (s)", "compile (s)", "reference (s)", "reference V-m",
              "speed-up (ref / warm)"]
    parts = [
        "`MDHClustering(n_clusters=K)` at its defaults, K = number of classes, data as shipped (no preprocessing). "
        f"Warm = median of {args.repeats} fits after one warm-up fit. 1-thread warm = the same in a subprocess with "
        "NUMBA_NUM_THREADS=OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=1. Cold = the first fit in a fresh "
        "subprocess with an empty numba cache (new NUMBA_CACHE_DIR); compile = cold - warm. "
        + ("Reference: skipped (--no-reference). " if args.no_reference else
           f"Reference = `benchmarks/reference_mdh.py::mddc_reference` (plain numpy/scipy), median of {ref_repeats} "
           "run(s), measured in the same run. ")
        + "PPCI V-m = PPCI's measured V-measure.",
        markdown_table(header, main_rows),
    ]
    if set(names) == set(PPCI_VMEASURE):
        ok = mean_vm >= ppci_subset
        parts.append(f"Mean V-measure over the ten data sets: **{mean_vm:.3f}** vs PPCI {ppci_subset:.3f} "
                     f"({'at least PPCI' if ok else 'below PPCI'}, {mean_vm - ppci_subset:+.3f}).")
    else:
        parts.append(f"Subset run ({len(names)} of 10 data sets): mean V-measure {mean_vm:.3f} vs PPCI's mean over the "
                     f"same subset {ppci_subset:.3f} ({mean_vm - ppci_subset:+.3f}); PPCI's ten-set mean is "
                     f"{np.mean(list(PPCI_VMEASURE.values())):.3f}.")

    time_rows = []
    for r in rows:
        if r["name"] in PPCI_TIME:
            ratio = r["warm"] / PPCI_TIME[r["name"]]
            time_rows.append([r["name"], fmt(r["warm"]), fmt(r["single"]), PPCI_TIME[r["name"]], fmt(ratio),
                              "yes" if ratio <= TIME_RATIO_TARGET else "**NO**"])
    if time_rows:
        parts.append(f"## Time against PPCI\n\nOur warm time / PPCI's measured time (`mddc`, single thread, sets where "
                     f"PPCI takes at least 1 s); target <= {TIME_RATIO_TARGET}.\n\n"
                     + markdown_table(["dataset", "ours warm (s)", "ours 1-thread (s)", "PPCI (s)", "ratio",
                                       f"<= {TIME_RATIO_TARGET}"], time_rows))

    detail = []
    for r in rows:
        times = ", ".join(f"{t:.3f}" for t in r["warm_times"])
        single = ", ".join(f"{t:.3f}" for t in (r["single_times"] or []))
        ref = "[" + ", ".join(f"{t:.2f}" for t in r["ref_times"]) + "]" if r["ref_times"] else "skipped"
        line = f"- {r['name']}: warm [{times}]; 1-thread [{single}]; reference {ref}"
        if r["warnings"]:
            line += "; warnings: " + " | ".join(r["warnings"])
        detail.append(line)
    parts.append("## All times (s)\n\n" + "\n".join(detail))
    if variants:
        parts.append(variants_report(rows, variants))
    return "\n\n".join(parts)


def variants_report(rows, variants: dict) -> str:
    """V-measure and single-thread warm time of each variant beside the default MDHClustering."""
    default = {r["name"]: r for r in rows}
    header = ["dataset", "default V-m", *[f"{v} V-m" for v in variants], *[f"{v} 1-thread (s)" for v in variants]]
    table = []
    for name in default:
        table.append([name, fmt(default[name]["vm"]), *[fmt(variants[v][name]["vm"]) for v in variants],
                      *[fmt(variants[v][name]["time"]) for v in variants]])
    table.append(["**mean**", fmt(float(np.mean([r["vm"] for r in rows]))),
                  *[fmt(float(np.mean([variants[v][n]["vm"] for n in default]))) for v in variants],
                  *["" for _ in variants]])
    lines = ["## Variants", "",
             "The other split indices of `MDHClustering` and `DePDDP` at its defaults (split index \"fval\"), "
             "K = number of classes; warm median of the repeats in a single-thread subprocess. Leaves formed: "
             + "; ".join(f"{v}: " + ", ".join(f"{n} {variants[v][n]['leaves']}" for n in default
                                                if variants[v][n]["leaves"] != default[n]["k"]) or f"{v}: all K"
                         for v in variants) + ".", "", markdown_table(header, table)]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", help="comma-separated subset of: " + ",".join(list_datasets()))
    parser.add_argument("--repeats", type=int, default=5, help="timed warm fits per data set (default 5)")
    parser.add_argument("--quick", action="store_true", help="time the reference once instead of 3 times")
    parser.add_argument("--no-reference", action="store_true", help="skip the numpy/scipy reference")
    parser.add_argument("--output", default=str(RESULTS_DIR / "divisive.md"), help="markdown file to write")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated variants to compare (default: all of " + ",".join(VARIANTS)
                        + "); '' for none")
    parser.add_argument("--worker", choices=("cold", "warm"), help=argparse.SUPPRESS)
    parser.add_argument("--variant", choices=tuple(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = list_datasets() if not args.datasets else [s.strip() for s in args.datasets.split(",") if s.strip()]
    unknown = sorted(set(names) - set(list_datasets()))
    if unknown:
        parser.error(f"unknown datasets {unknown}; choose from {list_datasets()}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    if args.worker:
        print(RESULT_TAG + json.dumps(worker(args.worker, names[0], args.repeats, args.variant)), flush=True)
        return
    chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
    if sorted(set(chosen) - set(VARIANTS)):
        parser.error(f"unknown variants {sorted(set(chosen) - set(VARIANTS))}; choose from {list(VARIANTS)}")

    ref_repeats = 1 if args.quick else 3
    rows = []
    for name in names:
        print(f"{name} ...", file=sys.stderr, flush=True)
        rows.append(bench(name, args.repeats, ref_repeats, reference=not args.no_reference))
    variants = {}
    for variant in chosen:
        print(f"variant {variant} ...", file=sys.stderr, flush=True)
        variants[variant] = {name: run_worker("warm", name, args.repeats, SINGLE_THREAD_ENV, variant) for name in names}
    body = report(rows, args, ref_repeats, variants)
    path = write_markdown(args.output, "Divisive MDH clustering on the bundled data sets", command_line(), body)
    print(path.read_text())
    print(f"written to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
