"""Divisive clustering on the ten bundled data sets: MDHClustering (PPCI's ``mddc``) in detail, and
NCutClustering (``ncutdc``) and MCClustering (``mcdc``) against PPCI; quality and speed.

For each data set, ``MDHClustering(n_clusters=K)`` with K the true number of classes, at its defaults, on
the data as shipped (no preprocessing). Reported:

- ARI, V-measure and purity of the K-cluster partition, with PPCI's measured V-measure beside ours;
- warm time: median of ``--repeats`` fits after one warm-up fit, in this process;
- cold time: the first fit in a fresh subprocess whose numba cache (NUMBA_CACHE_DIR) is a new empty
  directory, so all kernels are compiled; cold minus warm is reported as the compile time;
- single-thread warm time: as the warm time, in a subprocess with NUMBA/OMP/OPENBLAS/MKL_NUM_THREADS=1;
- the plain numpy/scipy reference (``tests/reference_mdh.py``, ``mddc_reference``): its time (median of 3, or 1 with
  ``--quick``), its V-measure and the speed-up reference time / our warm time;
- our warm time over PPCI's measured time on every set where PPCI takes at least 1 s (target <= 0.2);
- the variants (``--variants``, default all): the other split indices of MDHClustering ("fval", "rdepth"),
  DePDDP at its default ("fval"), ``NCutClustering(n_clusters=K)`` ("ncut") and
  ``MCClustering(n_clusters=K, random_state=0)`` ("mc"), each fitted in a single-thread subprocess (warm: one
  warm-up fit, then the median of ``--repeats``, default 5), with their V-measure beside the default's.
- ``SCPPClustering(n_clusters=K)`` at its defaults ("scpp") against the R package SCPP's ``SCPP_cluster`` at its
  defaults (``../shared/anchors/scpp-bundled.csv``), on the same protocol and targets as NCut and MC below.
- NCut and MC against PPCI (``ncutdc``, ``mcdc``) on PPCI's protocol: the data with its constant columns
  dropped (done in the worker before the timed fits, so not timed), K = true K, single thread, warm. Per data
  set: n, d after dropping, K, leaves, ARI, V-measure beside PPCI's, our single-thread warm time beside
  PPCI's and their ratio; then our mean V-measure against PPCI's (target: at least PPCI's), the ratio
  ours / PPCI on every set where PPCI takes at least 1 s (target: at most 0.1 on each), and the total time.
  The mdh variants and the default MDHClustering run on the data as shipped.

PPCI's figures (V-measure, seconds; single thread, data as shipped with constant columns dropped, K = true
K, median of 3, same machine class) are read from ``../shared/anchors/ppci-bundled.csv``; means and totals
are computed from that file.

    python benchmarks/divisive.py [--datasets a,b] [--repeats N] [--quick] [--no-reference] [--variants a,b]
                                  [--output FILE]
"""

import argparse
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

# harness first: it puts the checkout being measured on sys.path.
from harness import (
    ANCHORS_DIR,
    RESULTS_DIR,
    command_line,
    drop_constant_columns,
    emit,
    fmt,
    load_anchors,
    load_reference,
    markdown_table,
    median_time,
    write_markdown,
)
from harness import run_worker as harness_worker

from lowdens_dask import DePDDP, MCClustering, MDHClustering, NCutClustering, SCPPClustering
from lowdens_dask.datasets import list_datasets, load_dataset
from lowdens_dask.metrics import cluster_performance

ANCHORS_FILE = "ppci-bundled.csv"
PPCI = load_anchors(ANCHORS_FILE)
#: PPCI's measured figures by method: {method: {dataset: {"seconds", "ARI", "V"}}}.
PPCI_BY_METHOD: dict[str, dict[str, dict]] = {}
for (_dataset, _method), _row in PPCI.items():
    PPCI_BY_METHOD.setdefault(_method, {})[_dataset] = _row
PPCI_VMEASURE = {d: r["V"] for d, r in PPCI_BY_METHOD["mddc"].items()}
#: The R package SCPP's ``SCPP_cluster`` at its defaults (method "scpp"), from its own anchors file.
SCPP_ANCHORS_FILE = "scpp-bundled.csv"
for (_dataset, _method), _row in load_anchors(SCPP_ANCHORS_FILE).items():
    PPCI_BY_METHOD.setdefault(_method, {})[_dataset] = _row
#: Reference package and anchors file of each reference method.
REFERENCE = {"scpp": ("the R package SCPP", SCPP_ANCHORS_FILE, "SCPP (`SCPP_cluster` at its defaults, one run)")}
#: Time comparisons against PPCI are made only where PPCI takes at least this long (seconds).
PPCI_MIN_SECONDS = 1.0
PPCI_TIME = {d: r["seconds"] for d, r in PPCI_BY_METHOD["mddc"].items() if r["seconds"] >= PPCI_MIN_SECONDS}
TIME_RATIO_TARGET = 0.2
#: Target for NCut and MC: single-thread warm time / PPCI's time, on each set where PPCI >= PPCI_MIN_SECONDS.
PPCI_VARIANT_RATIO_TARGET = 0.1

#: Estimators compared beside MDHClustering: name -> (estimator for K clusters, PPCI method). Each orders its leaves
#: by its split index alone ("<index>-only"), PPCI's order, not significant splits first (issue 42).
#: Variants with a PPCI method are fitted on PPCI's protocol (constant columns dropped) and compared with it.
VARIANTS = {
    "mdh-fval": (lambda k: MDHClustering(n_clusters=k, split_index="fval-only"), None),
    "mdh-rdepth": (lambda k: MDHClustering(n_clusters=k, split_index="rdepth-only"), None),
    "depddp": (lambda k: DePDDP(n_clusters=k, split_index="fval-only"), None),
    "ncut": (lambda k: NCutClustering(n_clusters=k, split_index="fval-only"), "ncutdc"),
    "mc": (lambda k: MCClustering(n_clusters=k, random_state=0, split_index="Fdist-only"), "mcdc"),
    "scpp": (lambda k: SCPPClustering(n_clusters=k, split_index="size-only"), "scpp"),
}


def n_classes(y) -> int:
    return int(np.unique(y).size)


def anchors_date() -> str:
    """The date the anchors README gives for the reference figures ("(these: YYYY-MM-DD)"), or "undated"."""
    import re

    try:
        text = (ANCHORS_DIR / "README.md").read_text()
    except OSError:
        return "undated"
    match = re.search(r"these:\s*(\d{4}-\d{2}-\d{2})", text)
    return match.group(1) if match else "undated"


def fit(X, k, variant=None):
    make = (lambda k: MDHClustering(n_clusters=k, split_index="size-only")) if variant is None else VARIANTS[variant][0]
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
    if variant is not None and VARIANTS[variant][1] is not None:
        X = drop_constant_columns(X)  # PPCI's protocol; before any timing
    if mode == "cold":
        start = time.perf_counter()
        fit(X, k, variant)
        return {"time": time.perf_counter() - start}
    model, _ = fit(X, k, variant)
    perf = cluster_performance(y, model.labels_)
    med, times = median_time(lambda: fit(X, k, variant), repeats)
    return {"time": med, "times": times, "n": int(X.shape[0]), "d": int(X.shape[1]), "k": k,
            "leaves": int(model.n_clusters_), "ari": perf["adjusted_rand"], "vm": perf["v_measure"]}


def run_worker(mode: str, name: str, repeats: int, single_thread: bool, variant: str | None = None,
               env: dict | None = None) -> dict:
    """The worker (``mode`` cold or warm) on one data set in a subprocess of this checkout; a failed one gives a
    nan time and its error."""
    args = ["--mode", mode, "--datasets", name, "--repeats", repeats] + (["--variant", variant] if variant else [])
    try:
        return harness_worker(__file__, None, args, single_thread=single_thread, env=env)
    except RuntimeError as error:
        tail = (str(error).strip().splitlines() or ["no output"])[-1]
        print(f"  {mode} worker failed for {name}: {tail}", file=sys.stderr)
        return {"time": float("nan"), "error": tail}


def cold_time(name: str) -> dict:
    cache = tempfile.mkdtemp(prefix="lowdens-numba-cache-")
    try:
        return run_worker("cold", name, 1, False, env={"NUMBA_CACHE_DIR": cache})
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
    single = run_worker("warm", name, repeats, True)
    row = {
        "name": name, "n": X.shape[0], "d": X.shape[1], "k": k, "leaves": int(model.n_clusters_),
        "ari": perf["adjusted_rand"], "vm": perf["v_measure"], "purity": perf["purity"],
        "warm": warm, "warm_times": warm_times, "cold": cold["time"], "single": single["time"],
        "single_times": single.get("times"), "warnings": sorted(set(m.split(";")[0][:100] for m in messages)),
        "ref_time": float("nan"), "ref_vm": float("nan"), "ref_times": None,
    }
    if reference:
        mddc_reference = load_reference().mddc_reference
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
           f"Reference = `tests/reference_mdh.py::mddc_reference` (plain numpy/scipy), median of {ref_repeats} "
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
        parts.append(variants_report(rows, variants, args.repeats))
    return "\n\n".join(parts)


def variants_report(rows, variants: dict, repeats: int) -> str:
    """V-measure and single-thread warm time of each variant beside the default MDHClustering; then, for each
    variant with a PPCI method, its comparison against PPCI."""
    default = {r["name"]: r for r in rows}
    header = ["dataset", "default V-m", *[f"{v} V-m" for v in variants], *[f"{v} 1-thread (s)" for v in variants]]
    table = []
    for name in default:
        table.append([name, fmt(default[name]["vm"]), *[fmt(variants[v][name].get("vm")) for v in variants],
                      *[fmt(variants[v][name]["time"]) for v in variants]])
    table.append(["**mean**", fmt(float(np.mean([r["vm"] for r in rows]))),
                  *[fmt(_mean(variants[v][n].get("vm") for n in default)) for v in variants],
                  *["" for _ in variants]])

    def leaves_note(v):
        off = [f"{n} {variants[v][n].get('leaves', 'failed')}" for n in default
               if variants[v][n].get("leaves") != default[n]["k"]]
        return f"{v}: " + (", ".join(off) if off else "all K")

    protocol = [v for v in variants if VARIANTS[v][1] is not None]
    lines = ["## Variants", "",
             "Other estimators beside the default `MDHClustering`: the other split indices of `MDHClustering`, "
             "`DePDDP` at its defaults (split index \"fval\"), `NCutClustering` (\"ncut\") and `MCClustering` with "
             "random_state=0 (\"mc\"), as selected by `--variants`; K = number of classes; warm median of the "
             "repeats in a single-thread subprocess. "
             + (f"{', '.join(protocol)}: on the data with its constant columns dropped (PPCI's protocol); the others "
                "on the data as shipped. " if protocol else "")
             + "Leaves formed where not K: " + "; ".join(leaves_note(v) for v in variants) + ".",
             "", markdown_table(header, table)]
    for v in protocol:
        lines += ["", ppci_report(v, VARIANTS[v][1], variants[v], repeats)]
    return "\n".join(lines)


def _mean(values) -> float:
    values = [float(x) if x is not None else float("nan") for x in values]
    return float(np.mean(values)) if values else float("nan")


def ppci_report(variant: str, method: str, results: dict, repeats: int) -> str:
    """``variant`` against PPCI's ``method``: quality per data set and on average, time per data set, total."""
    ppci = PPCI_BY_METHOD[method]
    names = [n for n in results if n in ppci]
    missing = [n for n in results if n not in ppci]
    target = PPCI_VARIANT_RATIO_TARGET
    table, slow = [], []
    for n in names:
        r, p = results[n], ppci[n]
        ratio = r["time"] / p["seconds"]
        if p["seconds"] >= PPCI_MIN_SECONDS:
            ok = ratio <= target  # False for a failed run (nan)
            slow.append((n, ratio, ok))
            verdict = "yes" if ok else "**NO**"
        else:
            verdict = "-"
        table.append([n, r.get("n", "-"), r.get("d", "-"), r.get("k", "-"), r.get("leaves", "-"), fmt(r.get("ari")),
                      fmt(r.get("vm")), fmt(p["V"]), fmt(r["time"]), fmt(p["seconds"]), fmt(ratio),
                      verdict])
    ours_vm = _mean(results[n].get("vm") for n in names)
    ppci_vm = _mean(ppci[n]["V"] for n in names)
    ours_total = float(sum(results[n]["time"] for n in names))
    ppci_total = float(sum(ppci[n]["seconds"] for n in names))
    table.append(["**mean / total**", "", "", "", "", fmt(_mean(results[n].get("ari") for n in names)),
                  fmt(ours_vm), fmt(ppci_vm), fmt(ours_total), fmt(ppci_total),
                  fmt(ours_total / ppci_total if ppci_total else float("nan")), ""])
    header = ["dataset", "n", "d", "K", "leaves", "ARI", "V-m", "PPCI V-m", "ours 1-thread warm (s)", "PPCI (s)",
              "ratio ours / PPCI", f"<= {target}"]
    full = set(names) == set(ppci)
    package, anchors, measured = REFERENCE.get(
        method, ("PPCI", ANCHORS_FILE, "PPCI 0.1.5, single thread, median of 3"))
    lines = [
        f"## {variant} against {package} `{method}`", "",
        f"`{_estimator_text(variant)}` against {package}'s `{method}` on PPCI's protocol: the data as shipped with "
        "its constant columns dropped (dropped in the worker before the warm-up fit, not timed; d below is after "
        "dropping), K = true number of classes, single thread (NUMBA/OMP/OPENBLAS/MKL_NUM_THREADS=1), warm (one "
        f"warm-up fit, then the median of {repeats} fit(s)"
        + (", fewer than PPCI's 3: a trial run" if repeats < 3 else "")
        + "; the warm-up fit is scored). Reference figures: "
        f"`shared/anchors/{anchors}` (measured {anchors_date()}; {measured}); in the table its columns are "
        f"headed PPCI. Targets: mean V-measure at least the reference's; ours / reference <= {target} on every set "
        f"where it takes at least {PPCI_MIN_SECONDS:g} s (\"-\": under {PPCI_MIN_SECONDS:g} s).", "",
        markdown_table(header, table), "",
    ]
    scope = "the ten data sets" if full else f"this subset ({len(names)} of {len(ppci)} data sets)"
    if ours_vm != ours_vm:  # nan: a run failed
        verdict = "not determined: failed runs"
    else:
        verdict = f"{'meets' if ours_vm >= ppci_vm else '**below**'} target, {ours_vm - ppci_vm:+.3f}"
    vm_line = f"- Mean V-measure over {scope}: **{fmt(ours_vm)}** vs PPCI {fmt(ppci_vm)} ({verdict})."
    if not full:
        vm_line += (f" PPCI's mean over all {len(ppci)} sets: {_mean(r['V'] for r in ppci.values()):.3f}; the "
                    "target applies to the full run.")
    lines.append(vm_line)
    if slow:
        listed = ", ".join(f"{n} {fmt(ratio)} ({'yes' if ok else 'NO'})" for n, ratio, ok in slow)
        all_ok = all(ok for _, _, ok in slow)
        time_line = (f"- Time, sets where PPCI >= {PPCI_MIN_SECONDS:g} s (ours / PPCI): {listed}; "
                     + ("**all meet** the" if all_ok else "**not all meet** the") + f" <= {target} target.")
    else:
        time_line = f"- Time: no set in this run where PPCI takes at least {PPCI_MIN_SECONDS:g} s."
    all_slow = sorted(n for n, r in ppci.items() if r["seconds"] >= PPCI_MIN_SECONDS)
    if not full:
        time_line += f" Over all {len(ppci)} sets, PPCI takes >= {PPCI_MIN_SECONDS:g} s on {', '.join(all_slow)}."
    lines.append(time_line)
    total_line = (f"- Total time over {scope}: ours {ours_total:.3f} s vs PPCI {ppci_total:.3f} s "
                  f"(ratio {ours_total / ppci_total:.3f}).")
    if not full:
        total_line += f" PPCI's total over all {len(ppci)} sets: {sum(r['seconds'] for r in ppci.values()):.1f} s."
    lines.append(total_line)
    failed = [n for n in names if "error" in results[n]]
    if failed:
        lines.append(f"- Failed runs (no figures): {', '.join(failed)}.")
    if missing:
        lines.append(f"- No PPCI figures for: {', '.join(missing)}.")
    return "\n".join(lines)


def _estimator_text(variant: str) -> str:
    return {"ncut": "NCutClustering(n_clusters=K)", "mc": "MCClustering(n_clusters=K, random_state=0)",
            "scpp": "SCPPClustering(n_clusters=K)"}.get(variant, variant)


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
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("cold", "warm"), default="warm", help=argparse.SUPPRESS)
    parser.add_argument("--variant", choices=tuple(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = list_datasets() if not args.datasets else [s.strip() for s in args.datasets.split(",") if s.strip()]
    unknown = sorted(set(names) - set(list_datasets()))
    if unknown:
        parser.error(f"unknown datasets {unknown}; choose from {list_datasets()}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    if args.worker:
        emit(worker(args.mode, names[0], args.repeats, args.variant))
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
        variants[variant] = {name: run_worker("warm", name, args.repeats, True, variant) for name in names}
    body = report(rows, args, ref_repeats, variants)
    path = write_markdown(args.output, "Divisive MDH clustering on the bundled data sets", command_line(), body)
    print(path.read_text())
    print(f"written to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
