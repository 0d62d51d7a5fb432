"""n_clusters="auto" in summary mode, from zarr on a LocalCluster: the scale benchmark's mixture (K = 16, d = 32,
float32, 125,000-row chunks; ``benchmarks/scale.py``), fitted told K = 16 and with ``n_clusters="auto"``, the two
interleaved in one run (median of ``--repeats`` fits each, labels written to zarr and read back), in summary mode
(``mode="summary"``; the mixture is beyond ``mode="auto"``'s 2 million rows anyway); and one Gaussian
(d = 32, the same chunking) of each size in ``--null-n``, where ``auto`` must find one cluster.

    python benchmarks/auto_k_summary.py [--n 1e7] [--null-n 1e6,1e7] [--methods mdh,ncut] [--workers 2]
                                        [--repeats 3] [--output FILE]
"""

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import zarr
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown
from scale import CHUNK, D, K, generate, start_cluster
from sklearn.metrics import adjusted_rand_score

from lowdens_dask import METHODS

#: A fit with n_clusters="auto" takes at most this many times a fit told K = 16 (issue 33).
MAX_RATIO = 1.1


def generate_gaussian(path: Path, n: int, seed: int = 0) -> None:
    """One standard Gaussian in d = 32, float32, chunk by chunk."""
    X = zarr.open_group(str(path), mode="w").create_array("X", shape=(n, D), chunks=(CHUNK, D), dtype="f4")
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        X[start : start + m] = np.random.default_rng([seed, start]).standard_normal((m, D), dtype=np.float32)


def fit(estimator, n_clusters, X: str, labels: Path):
    shutil.rmtree(labels, ignore_errors=True)
    t = time.perf_counter()
    model = estimator(n_clusters=n_clusters, mode="summary", random_state=0, labels_store=str(labels)).fit(X)
    found = zarr.open_array(str(labels), mode="r")[:]
    return time.perf_counter() - t, model, found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="1e7")
    parser.add_argument("--null-n", default="1e6,1e7")
    parser.add_argument("--methods", default="mdh,ncut")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--output", default=str(RESULTS_DIR / "auto-k-summary.md"))
    args = parser.parse_args(argv)
    n = int(float(args.n))
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="lowdens-auto-k-"))
    mixture, labels = workdir / "mixture.zarr", workdir / "labels.zarr"
    generate(mixture, n)
    nulls = {int(float(m)): workdir / f"gaussian-{m}.zarr" for m in args.null_n.split(",") if m}
    for m, path in nulls.items():
        generate_gaussian(path, m)
    y = zarr.open_array(str(mixture / "y"), mode="r")[:]
    rows, null_rows = [], []
    for method in args.methods.split(","):
        estimator = METHODS[method].clustering
        cluster, client, _, _ = start_cluster(args.workers, workdir, estimator)
        try:
            times, trees = {K: [], "auto": []}, {K: [], "auto": []}
            for _ in range(args.repeats):
                for k in (K, "auto"):
                    seconds, model, found = fit(estimator, k, str(mixture / "X"), labels)
                    times[k].append(seconds)
                    trees[k].append(model.timings_["tree"])
                    outcome = (model.n_clusters_, adjusted_rand_score(y, found))
                    if k == "auto":
                        auto = outcome
                    else:
                        told = outcome
            ratio = statistics.median(times["auto"]) / statistics.median(times[K])
            tree_told, tree_auto = statistics.median(trees[K]), statistics.median(trees["auto"])
            rows.append([method, n, args.workers, fmt(statistics.median(times[K])), told[0], fmt(told[1]),
                         fmt(statistics.median(times["auto"])), auto[0], fmt(auto[1]), fmt(tree_told), fmt(tree_auto),
                         fmt(tree_auto / tree_told), fmt(ratio),
                         "PASS" if auto[0] == K and auto[1] >= 0.99 and ratio <= MAX_RATIO else "FAIL"])
            for m, path in nulls.items():
                seconds, model, _ = fit(estimator, "auto", str(path / "X"), labels)
                null_rows.append([method, m, model.n_clusters_, model.n_microclusters_,
                                  fmt(model.tree_.root.stats["p_value"]), fmt(seconds),
                                  "PASS" if model.n_clusters_ == 1 else "FAIL"])
            print(rows[-1], null_rows[-len(nulls):], flush=True)
        finally:
            client.close()
            cluster.close()
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    body = (
        "## The mixture (K = 16): auto against told K, interleaved in one run\n\n"
        + markdown_table(["method", "rows", "workers", "told K: fit s", "K", "ARI", "auto: fit s", "K found", "ARI",
                          "tree s (told)", "tree s (auto)", "tree auto / told", "fit auto / told",
                          f"K = 16, ARI ≥ 0.99, ≤ {MAX_RATIO}×"], rows)
        + "\n\nFit and tree seconds (``timings_[\"tree\"]``): medians over the repeats, labels written to zarr and "
        "read back.\n\n"
        "## One Gaussian (d = 32): auto must find one cluster\n\n"
        + markdown_table(["method", "rows", "K found", "microclusters", "root p-value", "fit s", "one cluster"], null_rows)
    )
    write_markdown(args.output, "n_clusters='auto' in summary mode", command_line(), body)


if __name__ == "__main__":
    main()
