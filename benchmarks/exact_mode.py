"""Exact mode on a cluster (issue 13): is it practical?

On a 2-process LocalCluster with single-thread workers:

1. **The new user's case**: a persisted 2 * 10^5 x 16 float64 Dask array (a mixture of 8 Gaussians in 16
   dimensions, centres ~ N(0, 4^2 I), identity covariances, seed 0). ``MDHClustering(n_clusters=8)`` at its
   defaults in memory (in this process), then in exact mode on the Dask array with the default
   ``max_node_bytes`` (nodes gathered to a worker and split by the in-memory path), then with
   ``max_node_bytes=0`` (every node by passes over its chunks). Reported: the times (median of ``--repeats``
   for the first two), their ratio to the in-memory fit (target: at most 3 for the default), whether the labels
   equal the in-memory labels, ``n_passes_``, ``n_evaluation_passes_`` and the passes per objective
   evaluation (target: at most 2).
2. **The scale benchmark's mixture at 10^6 rows from zarr** (``benchmarks/scale.py``'s generator: K = 16, d =
   32, float32): exact mode end to end (labels written to zarr), summary mode, and summary mode with
   ``refine=5``: time, passes over the rows (``n_passes_``), ARI against the truth and against exact mode.

    python benchmarks/exact_mode.py [--repeats 3] [--skip-zarr] [--output FILE]
"""

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

import dask.array as da
import numpy as np
import zarr
from distributed import Client, LocalCluster
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown
from scale import generate
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import MDHClustering


def mixture(n=200_000, d=16, k=8, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(k, d))
    y = rng.integers(0, k, n)
    return centres[y] + rng.normal(size=(n, d)), y


def _compile() -> None:
    """Compile the kernels on a worker (numba caches them on disk, so this is quick after the first run)."""
    MDHClustering(n_clusters=8).fit(mixture(2000)[0])


def timed(fit, repeats: int):
    times, model = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        model = fit()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times, model


def new_user_case(client, repeats: int) -> str:
    X, y = mixture()
    arr = da.from_array(X, chunks=(25_000, X.shape[1])).persist()
    MDHClustering(n_clusters=8).fit(X[:5000])  # compile the kernels here and on the workers
    client.run(_compile)
    t_mem, mem_times, mem = timed(lambda: MDHClustering(n_clusters=8).fit(X), repeats)

    def exact(**params):
        model = MDHClustering(n_clusters=8, mode="exact", **params).fit(arr)
        model.labels_ = model.labels_.compute()  # part of the fit's cost: labels for every row
        return model

    t_ex, ex_times, ex = timed(exact, repeats)
    t_mr, mr_times, mr = timed(lambda: exact(max_node_bytes=0), 1)
    rows = []
    for name, t, times, model in (
        ("in memory (this process)", t_mem, mem_times, mem),
        ("exact, default max_node_bytes", t_ex, ex_times, ex),
        ("exact, max_node_bytes=0", t_mr, mr_times, mr),
    ):
        chunked = name.startswith("exact")
        rows.append(
            [
                name,
                fmt(t, 2),
                " / ".join(f"{x:.2f}" for x in times),
                fmt(t / t_mem, 2) if chunked else "1",
                str(np.array_equal(model.labels_, mem.labels_)) if chunked else "-",
                model.n_passes_ if chunked else "-",
                model.n_evaluation_passes_ if chunked else "-",
                model.n_evaluations_,
                fmt(model.n_evaluation_passes_ / model.n_evaluations_, 2) if chunked else "-",
                fmt(adjusted_rand_score(y, model.labels_), 3),
            ]
        )
    header = [
        "fit",
        "time (s, median)",
        "runs (s)",
        "/ in memory",
        "labels = in memory",
        "n_passes_",
        "evaluation passes",
        "evaluations",
        "passes per evaluation",
        "ARI vs truth",
    ]
    return markdown_table(header, rows)


def zarr_case(client, workdir: Path) -> str:
    path = workdir / "mixture.zarr"
    generate(path, 10**6)
    y = zarr.open_array(str(path / "y"), mode="r")[:]
    rows, labels = [], {}
    fits = (
        ("exact", dict(mode="exact")),
        ("summary", dict()),
        ("summary, refine=5", dict(refine=5)),
    )
    for name, params in fits:
        store = str(workdir / f"labels-{len(rows)}.zarr")
        start = time.perf_counter()
        model = MDHClustering(n_clusters=16, random_state=0, labels_store=store, **params).fit(str(path / "X"))
        seconds = time.perf_counter() - start
        labels[name] = zarr.open_array(store, mode="r")[:]
        rows.append(
            [
                name,
                fmt(seconds, 1),
                model.n_passes_,
                model.n_evaluation_passes_,
                fmt(adjusted_rand_score(y, labels[name]), 3),
                fmt(adjusted_rand_score(labels["exact"], labels[name]), 3),
            ]
        )
    return markdown_table(["fit", "time (s)", "n_passes_", "evaluation passes", "ARI vs truth", "ARI vs exact"], rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-zarr", action="store_true")
    parser.add_argument("--output", default=str(RESULTS_DIR / "exact-mode.md"))
    args = parser.parse_args(argv)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        Client(cluster) as client,
        tempfile.TemporaryDirectory() as tmp,
    ):
        first = new_user_case(client, args.repeats)
        second = "(skipped)" if args.skip_zarr else zarr_case(client, Path(tmp))
    body = f"""## 1. 2 * 10^5 x 16 float64, persisted Dask array, MDHClustering(n_clusters=8)

Exact mode's time includes computing the labels of every row. Target: the default exact fit at most 3x the
in-memory fit, with the same labels; passes per objective evaluation at most 2 with `max_node_bytes=0`.

{first}

## 2. The scale benchmark's mixture, 10^6 x 32 float32 from zarr, MDHClustering(n_clusters=16)

Labels written to zarr in every fit. "evaluation passes": passes of the pursuit's objective evaluations (exact
mode splits its nodes on workers by default, so none; `refine` polishes summary splits on the rows by passes).

{second}
"""
    path = write_markdown(args.output, "Exact mode on a 2-process LocalCluster", command_line(), body)
    print(path.read_text())


if __name__ == "__main__":
    main()
