"""The PDDP family beside HiPart (issue 52): the Python peer a user finds for PDDP, dePDDP and iPDDP.

For each bundled data set (as shipped, K = its number of classes), ``PDDP``, ``DePDDP`` and ``IPDDP`` with
``n_clusters=K`` at their defaults, against HiPart's ``PDDP``, ``DePDDP`` and ``IPDDP`` with
``max_clusters_number=K`` (``visualization_utility=False``, otherwise their defaults). Each program runs in its own
single-thread process (``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` = 1): this checkout,
``--base`` (an earlier commit, checked out into a temporary git worktree) and HiPart (``--hipart-python``, the
interpreter of a separate environment with ``pip install HiPart``). Each times ``--repeats`` fits after one untimed
warm-up fit and reports the median; the table gives the medians, the ratios ours / HiPart's, and the ARI of each
against the classes. The processes alternate set by set, so that all see the same machine.

    python -m venv /tmp/hipart && /tmp/hipart/bin/pip install HiPart
    python benchmarks/hipart.py --hipart-python /tmp/hipart/bin/python [--base REV] [--repeats 5] [--out FILE]
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import textwrap

from harness import (
    REPO_ROOT,
    RESULTS_DIR,
    SINGLE_THREAD_ENV,
    base_checkout,
    command_line,
    fmt,
    markdown_table,
    subprocess_env,
    write_markdown,
)

from lowdens_dask.datasets import list_datasets

METHODS = ("PDDP", "DePDDP", "IPDDP")
#: Times the fits of one program on one set: ``argv``: which ("ours" or "hipart"), the set, repeats, the rows file.
CHILD = textwrap.dedent(
    """
    import json, statistics, sys, time, warnings
    import numpy as np
    from sklearn.metrics import adjusted_rand_score
    warnings.simplefilter("ignore")
    which, name, repeats, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    data = np.load(rows)
    X, y = data["X"], data["y"]
    K = len(np.unique(y))
    if which == "hipart":
        import HiPart.clustering as hp
        make = {m: (lambda m=m: getattr(hp, m)(max_clusters_number=K, visualization_utility=False))
                for m in ("PDDP", "DePDDP", "IPDDP")}
        fit = lambda est: np.asarray(est.fit_predict(X))
    else:
        import lowdens_dask as ld
        make = {m: (lambda m=m: getattr(ld, m)(n_clusters=K)) for m in ("PDDP", "DePDDP", "IPDDP")}
        fit = lambda est: np.asarray(est.fit(X).labels_)
    out = {}
    for method, new in make.items():
        try:
            labels = fit(new())  # warm-up: imports, numba's cache
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                labels = fit(new())
                times.append(time.perf_counter() - start)
            out[method] = {"seconds": statistics.median(times), "ari": adjusted_rand_score(y, labels)}
        except Exception as exc:  # a peer that fails on a set is reported, not fatal
            out[method] = {"error": f"{type(exc).__name__}: {str(exc)[:60]}"}
    print(json.dumps(out))
    """
)


def measure(python: str, which: str, name: str, repeats: int, rows: str, path: str | None) -> dict:
    env = {**os.environ, **SINGLE_THREAD_ENV} if path is None else subprocess_env(path)
    done = subprocess.run([python, "-c", CHILD, which, name, str(repeats), rows], capture_output=True, text=True,
                          env=env, timeout=3600, check=False)  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"{which} on {name}: {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hipart-python", required=True, help="the interpreter of an environment with HiPart")
    parser.add_argument("--base", default=None, help="an earlier commit, timed in the same run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--datasets", default=",".join(list_datasets()))
    parser.add_argument("--out", default=str(RESULTS_DIR / "hipart.md"))
    args = parser.parse_args(argv)
    import numpy as np

    from lowdens_dask.datasets import load_dataset

    rows_table = []
    base_context = base_checkout(args.base) if args.base else contextlib.nullcontext()
    with tempfile.TemporaryDirectory(prefix="hipart-") as tmp, base_context as base_path:
        for name in args.datasets.split(","):
            X, y = load_dataset(name)
            rows = os.path.join(tmp, f"{name}.npz")
            np.savez(rows, X=X, y=y)
            ours = measure(sys.executable, "ours", name, args.repeats, rows, str(REPO_ROOT))
            base = measure(sys.executable, "ours", name, args.repeats, rows, base_path) if base_path else None
            peer = measure(args.hipart_python, "hipart", name, args.repeats, rows, None)
            for method in METHODS:
                o, p = ours[method], peer[method]
                b = base[method] if base else None
                ratio = o["seconds"] / p["seconds"] if "seconds" in p else float("nan")
                rows_table.append([
                    name, method, f"{o['seconds'] * 1e3:.1f}",
                    "-" if b is None else f"{b['seconds'] * 1e3:.1f}",
                    p.get("error") or f"{p['seconds'] * 1e3:.1f}", fmt(ratio, 2),
                    fmt(o["ari"], 3), "-" if "ari" not in p else fmt(p["ari"], 3),
                ])  # fmt: skip
                print(rows_table[-1], flush=True)
    header = ["data set", "method", "ours ms", f"base ({args.base}) ms" if args.base else "base ms", "HiPart ms",
              "ours / HiPart", "ARI ours", "ARI HiPart"]  # fmt: skip
    slower = [r for r in rows_table if r[5] != "nan" and float(r[5]) > 1.0]
    body = (
        "Protocol: see the docstring of `benchmarks/hipart.py`. Medians of the warm fits, single thread.\n\n"
        + markdown_table(header, rows_table)
        + f"\n\n{len(slower)} of the {len(rows_table)} (set, method) pairs are slower than HiPart's.\n"
    )
    write_markdown(args.out, "The PDDP family beside HiPart", command_line(), body)


if __name__ == "__main__":
    main()
