"""In-memory fits from 20,000 to 2,000,000 rows (issue 44): seconds, cost per row and labels, this checkout beside
an earlier commit, measured in one run.

The rows are those of ``benchmarks/cli.py``'s fit section: float32, 10 columns, five well-separated Gaussian groups
(centres 12 e_k, unit variances, equal weights). For each method and size: ``METHODS[m].clustering(n_clusters=5)``
(``--n-clusters``: another K, or ``auto``, the CLI's default) at its other defaults but ``mode="exact"`` (in memory at
every size), fitted on rows in memory (numpy) ``--repeats`` times after one untimed warm-up fit on 3,000
rows (numba's cache, imports); the median of the fits' seconds, the cost per row, and the ARI of the labels against
the groups and against the earlier commit's labels. Each checkout runs in a single-thread subprocess of its own
(``NUMBA_NUM_THREADS=1``, BLAS one thread), one after the other, size by size, so that the two see the same machine.

    python benchmarks/inmemory.py [--sizes 20000,200000,2000000] [--methods mdh,ncut,mc] [--repeats 5]
                                  [--base REV] [--base-sizes 20000,200000] [--threads 2] [--n-clusters auto]
                                  [--output FILE]

With ``--threads N`` this checkout is also timed with N numba threads (BLAS still one), on which the starts of a
node run (``lowdens_dask.pursuit.hyperplanes._compiled_starts``), and its labels compared with the single-thread
fit's.
"""

import argparse
import shutil
import tempfile
from pathlib import Path

from harness import (
    REPO_ROOT,
    RESULTS_DIR,
    base_checkout,
    check_checkout,
    command_line,
    emit,
    fmt,
    markdown_table,
    median_time,
    run_worker,
    write_markdown,
)


def worker(checkout: str, method: str, n: int, repeats: int, labels_path: str, n_clusters=None) -> dict:
    """Median seconds of ``repeats`` fits of ``n`` rows with the package in ``checkout``; the labels go to
    ``labels_path`` (.npy)."""
    import warnings

    import numpy as np
    from sklearn.metrics import adjusted_rand_score

    check_checkout(checkout)
    from cli import K, rows

    from lowdens_dask import METHODS

    warnings.simplefilter("ignore")
    X = rows(0, n)
    rng = np.random.default_rng([0, 0])
    y = rng.integers(0, K, size=n)  # rows() draws the groups first from the same generator
    cls = METHODS[method].clustering
    n_clusters = K if n_clusters is None else n_clusters
    cls(n_clusters=n_clusters).fit(X[:3000])
    fits = []  # in memory at every size (auto: summary above 5e6 values)
    median, seconds = median_time(lambda: fits.append(cls(n_clusters=n_clusters, mode="exact").fit(X)), repeats)
    est = fits[-1]
    np.save(labels_path, np.asarray(est.labels_))
    return {"s": median, "runs": seconds, "ari_truth": adjusted_rand_score(y, est.labels_), "k": int(est.n_clusters_)}


def run(checkout: str, method: str, n: int, repeats: int, labels_path: str, threads: int = 1, n_clusters="5") -> dict:
    args = ["--methods", method, "--sizes", n, "--repeats", repeats, "--labels", labels_path, "--n-clusters", n_clusters]
    return run_worker(__file__, checkout, args, env={"NUMBA_NUM_THREADS": str(threads)})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20000,200000,2000000")
    parser.add_argument("--methods", default="mdh,ncut,mc")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--base", default="b822319", help="the earlier commit (default b822319, before issue 44)")
    parser.add_argument("--base-sizes", default="20000,200000", help="the sizes also fitted by the earlier commit")
    parser.add_argument("--threads", type=int, default=None,
                        help="also time this checkout with this many numba threads (the starts of a node run on them)")
    parser.add_argument("--n-clusters", default="5", help="K, or auto (the CLI's default)")
    parser.add_argument("--output", default=str(RESULTS_DIR / "inmemory.md"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--labels", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    methods = [m for m in args.methods.split(",") if m]
    if args.worker:
        k = args.n_clusters if args.n_clusters == "auto" else int(args.n_clusters)
        emit(worker(args.worker, methods[0], sizes[0], args.repeats, args.labels, k))
        return
    import numpy as np
    from sklearn.metrics import adjusted_rand_score

    base_sizes = {int(float(s)) for s in args.base_sizes.split(",") if s}
    scratch = Path(tempfile.mkdtemp(prefix="lowdens-inmemory-"))
    rows = []
    with base_checkout(args.base) as base_dir:
        for method in methods:
            for n in sizes:
                k = args.n_clusters
                new = run(str(REPO_ROOT), method, n, args.repeats, str(scratch / "new.npy"), n_clusters=k)
                base = None
                if n in base_sizes:
                    base = run(str(base_dir), method, n, args.repeats, str(scratch / "base.npy"), n_clusters=k)
                    base["ari_new"] = adjusted_rand_score(np.load(scratch / "base.npy"), np.load(scratch / "new.npy"))
                threaded = []
                if args.threads:
                    more = run(str(REPO_ROOT), method, n, args.repeats, str(scratch / "threads.npy"), args.threads, k)
                    same = np.array_equal(np.load(scratch / "threads.npy"), np.load(scratch / "new.npy"))
                    threaded = [fmt(more["s"]), "yes" if same else "no"]
                rows.append([
                    method, f"{n:,}",
                    fmt(base["s"]) if base else "-", fmt(new["s"]), fmt(base["s"] / new["s"], 2) if base else "-",
                    fmt(1e6 * new["s"] / n, 3), str(new["k"]), fmt(new["ari_truth"], 4),
                    fmt(base["ari_new"], 4) if base else "-",
                    *threaded, ", ".join(fmt(s) for s in new["runs"]),
                ])
                print(" | ".join(rows[-1]), flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    header = ["method", "rows", f"{args.base} (s)", "this checkout (s)", "speed-up", "µs per row", "K", "ARI vs groups",
              f"ARI vs {args.base}"]
    if args.threads:
        header += [f"this checkout, {args.threads} numba threads (s)", "same labels"]
    header.append("this checkout's runs (s)")
    body = (
        f"n_clusters={args.n_clusters}. Median of {args.repeats} fits each, single thread unless the column says otherwise; '-' where the earlier "
        f"commit was not run (--base-sizes).\n\n" + markdown_table(header, rows)
    )
    path = write_markdown(args.output, "In-memory fits by size (issue 44)", command_line(), body)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
