"""In-memory predict: this checkout against an earlier commit, measured side by side in one run.

Both checkouts fit ``MDHClustering(n_clusters=16, random_state=0)`` on the first 20,000 rows of the scale
benchmark's mixture (K = 16, d = 32, seed 0) and time ``predict`` on 10^6 rows of it, as float64 and as
float32 (median of 5 warm calls per process). The two checkouts alternate in separate processes
(``--rounds`` rounds), with one BLAS/numba thread and with the machine's default threads; the table gives the
median over rounds and the ratio earlier / this. Labels must be identical.

    python benchmarks/routing.py [--base REV] [--rounds N] [--n 1e6] [--output FILE]

The earlier commit is checked out into a temporary git worktree, removed afterwards (``harness.base_checkout``).
"""

import argparse
import hashlib
import statistics
import sys

from harness import (
    REPO_ROOT,
    RESULTS_DIR,
    base_checkout,
    check_checkout,
    command_line,
    emit,
    markdown_table,
    median_time,
    run_worker,
    write_markdown,
)

K, D, FIT_ROWS = 16, 32, 20_000


def mixture(n: int, seed: int = 0):
    """The scale benchmark's mixture (benchmarks/scale.py::generate), in memory, as float32."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(K, D))
    weights = rng.dirichlet(2.0 * np.ones(K))
    labels = np.random.default_rng([seed, 1]).choice(K, size=n, p=weights)
    noise = np.random.default_rng([seed, 2]).standard_normal((n, D), dtype=np.float32)
    return (centres[labels] + noise).astype(np.float32)


def worker(checkout: str, n: int) -> dict:
    """Predict times and a digest of the labels, for the package in ``checkout``."""
    import numpy as np

    check_checkout(checkout)
    from lowdens_dask import MDHClustering

    X32 = mixture(n)
    X64 = X32.astype(np.float64)
    model = MDHClustering(n_clusters=K, random_state=0).fit(X64[:FIT_ROWS])
    out = {"times": {}, "digests": {}}
    for name, X in (("float64", X64), ("float32", X32)):
        labels = model.predict(X)
        out["times"][name] = median_time(lambda: model.predict(X), 5)[0]
        out["digests"][name] = hashlib.sha1(np.ascontiguousarray(labels, dtype=np.int64).tobytes()).hexdigest()
    return out


def run(checkout: str, n: int, single_thread: bool) -> dict:
    return run_worker(__file__, checkout, ["--n", n], single_thread=single_thread)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="2ed4805", help="the earlier commit (default 2ed4805, before the router)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", default="1e6")
    parser.add_argument("--output", default=str(RESULTS_DIR / "routing.md"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    n = int(float(args.n))
    if args.worker:
        emit(worker(args.worker, n))
        return
    results = {(who, threads): [] for who in ("earlier", "this") for threads in ("1 thread", "default threads")}
    with base_checkout(args.base) as base_dir:
        for r in range(args.rounds):
            print(f"round {r + 1} ...", file=sys.stderr, flush=True)
            for threads in ("1 thread", "default threads"):
                for who, checkout in (("earlier", base_dir), ("this", str(REPO_ROOT))):
                    results[who, threads].append(run(checkout, n, threads == "1 thread"))
    rows, same = [], []
    for threads in ("1 thread", "default threads"):
        for dtype in ("float64", "float32"):
            a = statistics.median(r["times"][dtype] for r in results["earlier", threads])
            b = statistics.median(r["times"][dtype] for r in results["this", threads])
            rows.append([dtype, threads, f"{a:.3f}", f"{b:.3f}", f"{a / b:.1f}"])
            same.append(
                results["earlier", threads][0]["digests"][dtype] == results["this", threads][0]["digests"][dtype]
            )
    body = (
        f"Earlier commit: `{args.base}`. `MDHClustering(n_clusters={K}, random_state=0)` fitted on {FIT_ROWS:,} rows "
        f"of the scale mixture, `predict` on {n:.0e} rows; labels identical in {sum(same)} of {len(same)} cases.\n\n"
        f"The two checkouts alternate in separate processes, {args.rounds} rounds (median over rounds of each "
        "process's median of 5 warm calls):\n\n"
        + markdown_table(["input", "threads", "earlier (s)", "this (s)", "speed-up (earlier / this)"], rows)
    )
    path = write_markdown(args.output, "In-memory predict against an earlier commit", command_line(), body)
    print(path.read_text())
    if not all(same):
        sys.exit("labels differ between the checkouts")


if __name__ == "__main__":
    main()
