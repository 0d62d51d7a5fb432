"""Paper Table 2: binary partitioning by MDH (MDP²), PDDP and dePDDP, against the published numbers.

Pavlidis, Hofmeyr & Tasoulis, "Minimum Density Hyperplanes", JMLR 17(156), 2016, Table 2 (seed-mdh §8.1),
on the eight of its data sets that we have: seven bundled ones (``chart`` is the paper's "synth") and
scikit-learn's wine. Every data set gets the same preprocessing: constant columns dropped, then
z-scored with ddof=1 (seed-mdh §5.1). Metrics are the success ratio and binary V-measure (§7.2).

    python benchmarks/table2.py [--datasets wine,breastcancer] [--no-reference] [--output FILE]
"""

import argparse
import sys
import time
import warnings

import numpy as np

# harness first: it puts the checkout being measured on sys.path.
from harness import (
    RESULTS_DIR,
    command_line,
    drop_constant_columns,
    fmt,
    load_reference,
    markdown_table,
    write_markdown,
)

from lowdens_dask import MDH, DePDDPClustering, PDDPClustering
from lowdens_dask.datasets import load_dataset
from lowdens_dask.metrics import binary_v_measure, success_ratio

mdh_reference = load_reference().mdh_reference

# (our name, the paper's label)
DATASETS = [
    ("breastcancer", "br. cancer"),
    ("optidigits", "optidigits"),
    ("pendigits", "pendigits"),
    ("imageseg", "image seg."),
    ("satellite", "satellite"),
    ("chart", "synth"),
    ("yeast", "yeast"),
    ("wine", "wine"),
]
# Paper values per method: (SR, V-m) in the order of DATASETS.
PAPER = {
    "MDH": ([0.91, 0.93, 0.74, 0.89, 0.89, 0.98, 0.92, 0.77], [0.79, 0.85, 0.39, 0.72, 0.75, 0.94, 0.76, 0.61]),
    "PDDP": ([0.91, 0.68, 0.79, 0.87, 0.71, 0.69, 0.87, 0.65], [0.78, 0.30, 0.54, 0.67, 0.37, 0.51, 0.65, 0.46]),
    "dePDDP": ([0.90, 0, 0.61, 1, 0, 1, 0, 0.68], [0.77, 0, 0.42, 1, 0, 1, 0, 0.49]),
}
PAPER_MDH_MEAN = (0.879, 0.726)  # over these eight data sets
FLAG = 0.05  # flag a row when |ours - paper| exceeds this on either metric
MEAN_SLACK = 0.01  # our MDH mean may be at most this much below the paper's


def load(name):
    if name == "wine":
        from sklearn.datasets import load_wine

        return load_wine(return_X_y=True)
    return load_dataset(name)


def preprocess(X):
    """Drop constant columns, then z-score each column (ddof=1)."""
    X = drop_constant_columns(np.asarray(X, dtype=np.float64))
    return (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)


def scores(y, labels):
    return success_ratio(y, labels), binary_v_measure(y, labels)


def run(names, reference):
    """Return {method: {dataset: dict(sr, vm, time)}}, plus the reference in method 'MDH (reference)'."""
    results = {m: {} for m in ("MDH", "PDDP", "dePDDP", "MDH (reference)")}
    estimators = {"MDH": MDH, "PDDP": lambda: PDDPClustering(n_clusters=2), "dePDDP": lambda: DePDDPClustering(n_clusters=2)}
    warm = np.random.default_rng(0).normal(size=(200, 3))  # load/compile numba code before timing
    warm[:100, 0] += 6.0
    for make in estimators.values():
        make().fit(warm)
    for name in names:
        X, y = load(name)
        X = preprocess(X)
        for method, make in estimators.items():
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                labels = make().fit(X).labels_
            elapsed = time.perf_counter() - start
            sr, vm = scores(y, labels)
            note = "; ".join(sorted({str(w.message).split(";")[0][:80] for w in caught}))
            results[method][name] = {"sr": sr, "vm": vm, "time": elapsed, "note": note}
        if reference:
            start = time.perf_counter()
            v, b, _ = mdh_reference(X)
            elapsed = time.perf_counter() - start
            sr, vm = scores(y, (X @ v >= b).astype(int))
            results["MDH (reference)"][name] = {"sr": sr, "vm": vm, "time": elapsed}
        print(f"done {name}", file=sys.stderr, flush=True)
    return results


def method_table(method, names, results):
    paper_sr, paper_vm = PAPER[method]
    ours = results[method]
    ref = results["MDH (reference)"] if method == "MDH" else {}
    header = ["dataset", "ours SR", "paper SR", "diff", "ours V-m", "paper V-m", "diff"]
    if ref:
        header += ["reference SR", "reference V-m", "ours time (s)", "reference time (s)"]
    header.append("flag")
    rows, cols = [], {k: [] for k in ("sr", "psr", "vm", "pvm", "rsr", "rvm")}
    for name, label in DATASETS:
        if name not in names:
            continue
        i = [n for n, _ in DATASETS].index(name)
        r = ours[name]
        dsr, dvm = r["sr"] - paper_sr[i], r["vm"] - paper_vm[i]
        flag = "**off by > %.2f**" % FLAG if max(abs(dsr), abs(dvm)) > FLAG else ""
        if r.get("note"):
            flag = (flag + " " if flag else "") + f"({r['note']})"
        row = [f"{name} ({label})", fmt(r["sr"]), fmt(paper_sr[i], 2), f"{dsr:+.3f}",
               fmt(r["vm"]), fmt(paper_vm[i], 2), f"{dvm:+.3f}"]
        for k, val in zip(("sr", "psr", "vm", "pvm"), (r["sr"], paper_sr[i], r["vm"], paper_vm[i])):
            cols[k].append(val)
        if ref:
            rr = ref.get(name)
            row += [fmt(rr and rr["sr"]), fmt(rr and rr["vm"]), fmt(r["time"], 2), fmt(rr and rr["time"], 2)]
            if rr:
                cols["rsr"].append(rr["sr"])
                cols["rvm"].append(rr["vm"])
        rows.append(row + [flag])
    mean = {k: (float(np.mean(v)) if v else float("nan")) for k, v in cols.items()}
    mean_row = ["**mean**", fmt(mean["sr"]), fmt(mean["psr"]), f"{mean['sr'] - mean['psr']:+.3f}",
                fmt(mean["vm"]), fmt(mean["pvm"]), f"{mean['vm'] - mean['pvm']:+.3f}"]
    if ref:
        mean_row += [fmt(mean["rsr"]), fmt(mean["rvm"]), "", ""]
    rows.append(mean_row + [""])
    return markdown_table(header, rows), mean


NOTES = """## Notes

- **Optimiser sensitivity (MDH).** MDP² is a nonconvex pursuit, and which local minimum BFGS reaches
  depends on its first step. An earlier version of the library (Armijo backtracking instead of the
  weak Wolfe line search now used) reached a different local minimum on optidigits (SR 0.905,
  V-m 0.752) and pendigits was unchanged; with the weak Wolfe search (Lewis & Overton 2013, the
  paper's own reference for BFGS on nonsmooth problems) optidigits gives 0.929 / 0.839, matching
  the plain scipy-BFGS reference column. With the weak Wolfe search, the first step length (10% of
  |v|, unchanged throughout) was also tried at 30% and 100%: optidigits then gives 0.930 / 0.842 and
  0.904 / 0.751, and pendigits 0.848 / 0.604 both times (better than the paper). The configuration
  reported above is the library default and is the same for every data set.
- **dePDDP.** PDDP is fully specified and matches the paper to two decimals. dePDDP ("split at the
  lowest local minimum of the PC1 KDE") leaves the KDE evaluation unspecified. Our minima are exact
  minima of the Gaussian KDE with h = 0.9 sigma_pc1 n^(-1/5) (checked against a dense direct-sum grid
  in `tests/test_kernels.py`). On satellite and yeast the paper reports SR 0 (no majority of any
  class separated: an outlier split, or no minimum found); our KDE has a clear interior minimum there
  (split sizes 4001/2434 and 299/399), so we split well. On chart we cut one row-group differently
  (0.975 / 0.934 vs 1 / 1); on wine we score higher (0.750 / 0.616 vs 0.68 / 0.49). With the
  normal-reference factor 1.06 instead of 0.9, wine becomes 0.68 / 0.53 and the others stay within
  0.02 of the numbers above, so the bandwidth factor is a plausible source of the wine gap but not of
  the satellite and yeast ones.
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", help="comma-separated subset of: " + ",".join(n for n, _ in DATASETS))
    parser.add_argument("--no-reference", action="store_true", help="skip the numpy/scipy reference MDH")
    parser.add_argument("--output", default=str(RESULTS_DIR / "table2.md"), help="markdown file to write")
    args = parser.parse_args(argv)
    all_names = [n for n, _ in DATASETS]
    names = all_names if not args.datasets else [s.strip() for s in args.datasets.split(",") if s.strip()]
    unknown = sorted(set(names) - set(all_names))
    if unknown:
        parser.error(f"unknown datasets {unknown}; choose from {all_names}")

    results = run(names, reference=not args.no_reference)
    parts = [
        "Binary partitioning (one split) on the paper's Table 2 data sets. Preprocessing for every data set: "
        "constant columns dropped, then z-scored (ddof=1). `MDH()` at its defaults, `PDDPClustering(n_clusters=2)`, "
        "`DePDDPClustering(n_clusters=2)`. SR = success ratio, V-m = binary V-measure (seed-mdh §7.2). "
        f"Rows whose SR or V-m differs from the paper by more than {FLAG} are flagged. "
        "`chart` is the paper's \"synth\"; `wine` is scikit-learn's `load_wine`; our imageseg and optidigits "
        "copies have 2310 and 5620 rows against the paper's 2309 and 5618."
    ]
    mdh_mean = None
    for method in ("MDH", "PDDP", "dePDDP"):
        table, mean = method_table(method, names, results)
        if method == "MDH":
            mdh_mean = mean
            note = ("The reference columns are `tests/reference_mdh.py::mdh_reference` (plain numpy/scipy) "
                    "on the same data. Times are single fits, after a warm-up fit.\n\n"
                    if results["MDH (reference)"] else "")
            parts.append(f"## MDH (MDP²)\n\n{note}{table}")
        else:
            parts.append(f"## {method}\n\n{table}")

    sr_ok = mdh_mean["sr"] >= PAPER_MDH_MEAN[0] - MEAN_SLACK
    vm_ok = mdh_mean["vm"] >= PAPER_MDH_MEAN[1] - MEAN_SLACK
    if set(names) == set(all_names):
        summary = (
            f"MDH mean over the eight data sets: SR {mdh_mean['sr']:.3f} (paper {PAPER_MDH_MEAN[0]}), "
            f"V-m {mdh_mean['vm']:.3f} (paper {PAPER_MDH_MEAN[1]}).\n\n"
            f"- SR no more than {MEAN_SLACK} below the paper: **{'yes' if sr_ok else 'NO'}**\n"
            f"- V-m no more than {MEAN_SLACK} below the paper: **{'yes' if vm_ok else 'NO'}**"
        )
    else:
        sr_ok = mdh_mean["sr"] >= mdh_mean["psr"] - MEAN_SLACK
        vm_ok = mdh_mean["vm"] >= mdh_mean["pvm"] - MEAN_SLACK
        summary = (
            f"Subset run ({len(names)} of 8 data sets), so the comparison is with the paper's mean over the same "
            f"subset (its eight-set means are SR {PAPER_MDH_MEAN[0]}, V-m {PAPER_MDH_MEAN[1]}): "
            f"SR {mdh_mean['sr']:.3f} vs {mdh_mean['psr']:.3f} ({'ok' if sr_ok else 'more than %.2f below' % MEAN_SLACK}), "
            f"V-m {mdh_mean['vm']:.3f} vs {mdh_mean['pvm']:.3f} ({'ok' if vm_ok else 'more than %.2f below' % MEAN_SLACK})."
        )
    parts.append("## MDH mean against the paper\n\n" + summary)
    parts.append(NOTES)
    body = "\n\n".join(parts)
    path = write_markdown(args.output, "Table 2: binary partitioning", command_line(), body)
    print(path.read_text())
    print(f"written to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
