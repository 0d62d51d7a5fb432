"""Quality side by side: every method on the ten bundled sets, and summary mode against exact mode, in this checkout
and in an earlier commit, measured in one run.

For each method of ``lowdens_dask.METHODS`` and each bundled data set (as shipped, K = number of classes):
``METHODS[m].clustering(n_clusters=K, random_state=0)`` at its other defaults; ARI and V-measure against the
classes, and whether the labels are identical in the two checkouts. Then summary mode against exact mode, as
``benchmarks/agreement.py`` measures it: ``MDHClustering(n_clusters=K, mode="summary", random_state=0)`` against
the exact fit, on the ten sets and on the 10^6-row scale mixture (K = 16, also against its truth).

    python benchmarks/quality_side_by_side.py [--base REV] [--methods mdh,pddp,...] [--datasets NAME,...]
        [--mixture-n 1e6] [--output FILE]

The earlier commit is checked out into a temporary git worktree (removed afterwards, ``harness.base_checkout``); each
checkout runs in its own single-thread subprocess (``harness.start_worker``), the two at once (their times are
comparable only as a rough guide). Each worker
writes its results to a JSON file in a scratch folder after every fit, so that a run that fails keeps the fits it
finished (the error names the file); the folder is removed after a run that succeeds.
"""

import argparse
import json
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

from harness import (
    REPO_ROOT,
    RESULTS_DIR,
    base_checkout,
    bundled,
    check_checkout,
    command_line,
    fmt,
    git,
    markdown_table,
    scores,
    start_worker,
    timed,
    write_markdown,
)


def worker(checkout: str, methods: list[str], mixture_n: int, datasets: list[str] | None, output: str) -> None:
    """Labels, ARI and V-measure of every fit, for the package in ``checkout``, written to ``output`` (JSON) after
    each fit."""
    import numpy as np
    from sklearn.metrics import adjusted_rand_score

    check_checkout(checkout)
    from lowdens_dask import METHODS, MDHClustering

    warnings.simplefilter("ignore")
    out = {}

    def record(key, labels, y, seconds, exact=None):
        labels = np.asarray(labels)
        score = scores(y, labels)
        out[key] = {
            "labels": labels.tolist(),
            "ari": score["ari"],
            "v": score["v"],
            "vs_exact": None if exact is None else adjusted_rand_score(exact, labels),
            "s": seconds,
        }
        Path(output).write_text(json.dumps(out))

    for name, X, y, k in bundled(datasets):
        for method in methods:
            est, s = timed(lambda: METHODS[method].clustering(n_clusters=k, random_state=0).fit(X))
            record(f"{name}/{method}", est.labels_, y, s)
        exact = out[f"{name}/mdh"]["labels"] if "mdh" in methods else MDHClustering(n_clusters=k).fit(X).labels_
        est, s = timed(lambda: MDHClustering(n_clusters=k, mode="summary", random_state=0).fit(X))
        record(f"{name}/mdh summary", est.labels_, y, s, exact)
    if mixture_n:
        import zarr
        from scale import K, generate

        path = tempfile.mkdtemp(prefix="lowdens-mixture-")
        generate(Path(path), mixture_n)
        X = zarr.open_array(f"{path}/X", mode="r")[:]
        y = zarr.open_array(f"{path}/y", mode="r")[:]
        est, s = timed(lambda: MDHClustering(n_clusters=K, random_state=0).fit(X))
        record("mixture/mdh", est.labels_, y, s)
        est, s = timed(lambda: MDHClustering(n_clusters=K, mode="summary", random_state=0).fit(X))
        record("mixture/mdh summary", est.labels_, y, s, out["mixture/mdh"]["labels"])
        out["mixture/mdh summary"]["microclusters"] = int(est.n_microclusters_)
        Path(output).write_text(json.dumps(out))
        shutil.rmtree(path, ignore_errors=True)


def start(checkout: str, args, output: str) -> subprocess.Popen:
    """The worker for ``checkout`` in a single-thread subprocess (the two checkouts run at once), writing its
    results to ``output``."""
    argv = ["--worker-output", output, "--methods", args.methods, "--datasets", args.datasets,
            "--mixture-n", str(int(args.mixture_n))]  # fmt: skip
    return start_worker(__file__, checkout, argv)


def result(process: subprocess.Popen, output: str) -> dict:
    if process.wait():
        raise RuntimeError(f"worker failed with status {process.returncode} (the fits it finished: {output})")
    return json.loads(Path(output).read_text())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="a795db1", help="the earlier commit (default a795db1, before issue 25)")
    parser.add_argument("--methods", default="mdh,pddp,depddp,ipddp,ncut,mc,scpp,lmsc,msc,svm-relabel")
    parser.add_argument("--datasets", default="", help="bundled sets, comma-separated (default: all ten)")
    parser.add_argument("--mixture-n", type=float, default=1e6)
    parser.add_argument("--output", default=str(RESULTS_DIR / "quality-side-by-side.md"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-output", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        methods = [m for m in args.methods.split(",") if m]
        datasets = [d for d in args.datasets.split(",") if d] or None
        worker(args.worker, methods, int(args.mixture_n), datasets, args.worker_output)
        return
    scratch = tempfile.mkdtemp(prefix="lowdens-quality-")
    outputs = [f"{scratch}/{side}.json" for side in ("earlier", "this")]
    with base_checkout(args.base) as base_dir:
        workers = [start(checkout, args, out) for checkout, out in zip((base_dir, str(REPO_ROOT)), outputs)]
        earlier, this = (result(process, out) for process, out in zip(workers, outputs))
    shutil.rmtree(scratch)
    rows, worse = [], []
    for key, a in earlier.items():
        b = this[key]
        measure = "vs_exact" if a["vs_exact"] is not None else "ari"
        if b[measure] < a[measure] - 1e-9:
            worse.append(key)
        rows.append(
            [
                key,
                fmt(a["ari"]),
                fmt(b["ari"]),
                fmt(a["v"]),
                fmt(b["v"]),
                "" if a["vs_exact"] is None else fmt(a["vs_exact"]),
                "" if b["vs_exact"] is None else fmt(b["vs_exact"]),
                "yes" if a["labels"] == b["labels"] else "no",
                fmt(a["s"], 2),
                fmt(b["s"], 2),
            ]
        )
    identical = sum(earlier[k]["labels"] == this[k]["labels"] for k in earlier)
    micro = this.get("mixture/mdh summary", {}).get("microclusters")
    body = (
        f"Earlier commit: `{args.base}` ({git('rev-parse', '--short', args.base)}). Labels identical on {identical} of {len(earlier)} fits. "
        + (
            f"Lower in this checkout (ARI, or ARI against exact mode for summary rows): {', '.join(worse)}."
            if worse
            else "No figure is lower in this checkout."
        )
        + ("" if micro is None else f" Mixture in summary mode: {micro} microclusters in this checkout.")
        + '\n\nSingle thread, one fit each; `mdh summary` is MDHClustering(mode="summary", random_state=0) and its '
        "`vs exact` the ARI against the exact MDHClustering fit of the same checkout.\n\n"
        + markdown_table(
            [
                "fit",
                "ARI earlier",
                "ARI this",
                "V earlier",
                "V this",
                "vs exact earlier",
                "vs exact this",
                "labels identical",
                "s earlier",
                "s this",
            ],
            rows,
        )
    )
    path = write_markdown(args.output, "Quality against an earlier commit, side by side", command_line(), body)
    print(path.read_text())


if __name__ == "__main__":
    main()
