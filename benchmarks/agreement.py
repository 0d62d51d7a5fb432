"""Agreement benchmark: summary mode (with and without refine) and exact chunked mode against in-memory exact fits.

1. Summary vs exact. On the ten bundled data sets (MDHClustering(k = number of classes), defaults) and
   on the 10^6-row scale mixture (K = 16): summary mode forced at one microcluster per 20 rows
   (random_state=0), with ``refine=0`` and ``refine=5``; ARI of its labels against exact mode's, and
   V-measure against the truth. As a yardstick of the method's own stability, exact mode refitted on a
   random 95% of the rows (the rest labelled by ``predict``) against exact mode on all rows (mean over
   5 subsamples; one for the mixture).
2. Exact chunked mode vs in memory. The same data as a Dask array in several row chunkings (local
   threads): whether the labels are identical, the largest hyperplane difference, and the times. As the
   yardstick of what "the same" can mean, the largest hyperplane difference of the in-memory fit itself
   when only the order of the rows changes (a different floating-point summation order).

    python benchmarks/agreement.py [--mixture-n 1e6] [--output FILE]
"""

import argparse
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import zarr
from harness import RESULTS_DIR, command_line, drop_constant_columns, fmt, markdown_table, write_markdown
from scale import K, generate
from sklearn.metrics import adjusted_rand_score, v_measure_score

from lowdens_dask import MDHClustering
from lowdens_dask.datasets import list_datasets, load_dataset

REFINES = (0, 5, 20)
#: The stability yardstick is averaged over this many random 95% subsamples (one above YARDSTICK_MAX_N rows).
YARDSTICK_SEEDS = 5
YARDSTICK_MAX_N = 100_000


def summary_rows(data) -> list[list]:
    rows = []
    for name, X, y, k, source in data:
        t = time.perf_counter()
        exact = MDHClustering(n_clusters=k).fit(X)
        t_exact = time.perf_counter() - t
        row = [name, len(X), v_measure_score(y, exact.labels_)]
        for refine in REFINES:
            t = time.perf_counter()
            s = MDHClustering(n_clusters=k, mode="summary", rows_per_microcluster=20, random_state=0, refine=refine)
            labels = np.asarray(s.fit(source).labels_)
            row += [adjusted_rand_score(exact.labels_, labels), v_measure_score(y, labels), time.perf_counter() - t]
        yard = []
        for seed in range(YARDSTICK_SEEDS if len(X) <= YARDSTICK_MAX_N else 1):
            sub = np.random.default_rng(seed).random(len(X)) < 0.95
            yard.append(adjusted_rand_score(exact.labels_, MDHClustering(n_clusters=k).fit(X[sub]).predict(X)))
        row.append(float(np.mean(yard)))
        row += [s.n_microclusters_, t_exact]
        print(row, file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def chunked_rows(names=("breastcancer", "satellite", "optidigits"), chunkings=(500, 2000)) -> list[list]:
    rows = []
    for name in names:
        X, y = load_dataset(name)
        X = drop_constant_columns(X)
        k = len(np.unique(y))
        t = time.perf_counter()
        ref = MDHClustering(n_clusters=k).fit(X)
        t_mem = time.perf_counter() - t
        perm = np.random.default_rng(0).permutation(len(X))
        permuted = MDHClustering(n_clusters=k).fit(X[perm])
        dv_perm = _max_v_difference(permuted.tree_, ref.tree_)
        for chunks in chunkings:
            t = time.perf_counter()
            with dask.config.set(scheduler="threads"):
                model = MDHClustering(n_clusters=k, mode="exact").fit(da.from_array(X, chunks=(chunks, X.shape[1])))
                labels = model.labels_.compute()
            t_chunked = time.perf_counter() - t
            rows.append(
                [
                    name,
                    X.shape[0],
                    -(-X.shape[0] // chunks),
                    bool(np.array_equal(labels, ref.labels_)),
                    f"{_max_v_difference(model.tree_, ref.tree_):.1e}",
                    f"{dv_perm:.1e}",
                    fmt(t_mem, 2),
                    fmt(t_chunked, 1),
                ]
            )
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def _max_v_difference(tree, ref) -> float:
    return max(float(np.abs(a.v - b.v).max()) for a, b in zip(tree, ref) if not a.is_leaf and not b.is_leaf)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mixture-n", default="1e6")
    parser.add_argument("--output", default=str(RESULTS_DIR / "agreement.md"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", UserWarning)
    data = []
    for name in list_datasets():
        X, y = load_dataset(name)
        data.append((name, X, y, len(np.unique(y)), X))
    workdir = Path(tempfile.mkdtemp(prefix="lowdens-agree-"))
    n = int(float(args.mixture_n))
    if n:
        generate(workdir / "mix.zarr", n)
        Xm = zarr.open_array(str(workdir / "mix.zarr" / "X"), mode="r")[:].astype(np.float64)
        ym = zarr.open_array(str(workdir / "mix.zarr" / "y"), mode="r")[:]
        data.append((f"mixture {n:.0e} (from zarr)", Xm, ym, K, str(workdir / "mix.zarr" / "X")))
    rows = summary_rows(data)
    shutil.rmtree(workdir, ignore_errors=True)

    header = ["data", "n", "V-m exact"]
    for r in REFINES:
        header += [f"ARI vs exact (refine={r})", f"V-m (refine={r})", f"time s (refine={r})"]
    header += ["yardstick: exact on 95% vs exact (ARI, mean of 5)", "microclusters", "exact time s"]
    table = markdown_table(
        header, [[r[0], r[1]] + [fmt(x) if isinstance(x, float) else x for x in r[2:]] for r in rows]
    )
    lines = []
    for q, refine in enumerate(REFINES):
        ari = np.mean([r[3 + 3 * q] for r in rows])
        dvm = np.mean([r[4 + 3 * q] for r in rows]) - np.mean([r[2] for r in rows])
        lines.append(
            f"- refine={refine}: mean ARI {ari:.3f} (target >= 0.95), mean V-measure summary - exact {dvm:+.3f} "
            "(target within 0.02)"
        )
    yard = np.mean([r[3 + 3 * len(REFINES)] for r in rows])
    lines.append(
        f"- yardstick: exact mode on a random 95% of the rows agrees with exact mode on all rows at mean ARI {yard:.3f}"
    )
    chunk_table = markdown_table(
        [
            "data",
            "n",
            "chunks",
            "labels identical",
            "max abs difference of v over splits",
            "yardstick: in memory, rows permuted",
            "in memory s",
            "chunked exact s",
        ],
        chunked_rows(),
    )
    body = (
        "## Summary mode against exact mode\n\nSummary mode forced with at most one microcluster per 20 rows "
        f"(random_state=0); exact mode in memory.\n\n{table}\n\n"
        + "\n".join(lines)
        + "\n\n## Exact mode on chunked data against in memory\n\nMDHClustering(k) on Dask arrays with local "
        f"threads; constant columns dropped.\n\n{chunk_table}"
    )
    path = write_markdown(
        args.output, "Agreement: summary and chunked exact modes against in-memory exact fits", command_line(), body
    )
    print(body)
    print(f"written to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
