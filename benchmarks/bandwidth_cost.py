"""The cost of an MDH fit across bandwidths (issue 53, item 1): time and peak memory at every legal scale.

A small fixed bandwidth once made the fine grid of b's Newton steps (the sampled continuation of nodes above 20,000
rows) span the bracket at h/32 whatever its width: bandwidth=1e-7 across a gap of 12 asked for a 12 GB grid. For
n = 20,000 and 200,000 rows, ``MDH(bandwidth=h)`` with h from 1e-8 to 1 (x10 steps) and the default (None,
the paper's rule), on two data sets: ``1-D``, two unit Gaussians 12 apart (the reproducer's rows), and ``10-D``, two
unit Gaussians 6 apart along the first axis. Each fit runs in its own process (numba's compiled kernels from the
cache; one warm-up fit first), which reports its fit's wall seconds and its peak resident memory
(``ru_maxrss``); the table gives each beside the default bandwidth's figures and their ratio (goal: at most 2).

    python benchmarks/bandwidth_cost.py [--n 20000,200000] [--out FILE]
"""

import argparse
import json
import subprocess
import sys
import textwrap

from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown

BANDWIDTHS = [None] + [10.0**e for e in range(-8, 1)]
CHILD = textwrap.dedent(
    """
    import json, resource, sys, time, warnings
    import numpy as np
    warnings.simplefilter("ignore")
    from lowdens_dask import MDH
    n, data, h = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    rng = np.random.default_rng(0)
    if data == "1-D":
        X = np.vstack([rng.normal(size=(n // 2, 1)), rng.normal(size=(n - n // 2, 1)) + 12])
    else:
        X = rng.normal(size=(n, 10))
        X[: n // 2, 0] += 6.0
    MDH(bandwidth=h).fit(X[:3000])  # the kernels, from numba's cache
    start = time.perf_counter()
    model = MDH(bandwidth=h).fit(X)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mib": peak, "b": float(model.b_)}))
    """
)


def run(n: int, data: str, h, timeout: float) -> dict:
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(n), data, json.dumps(h)], capture_output=True,
                              text=True, timeout=timeout, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["exit " + str(done.returncode)])[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", default="20000,200000")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per fit")
    parser.add_argument("--out", default=str(RESULTS_DIR / "bandwidth-cost.md"))
    args = parser.parse_args(argv)
    table, worst = [], {}
    for data in ("1-D", "10-D"):
        for n in map(int, args.n.split(",")):
            base = run(n, data, None, args.timeout)
            for h in BANDWIDTHS:
                got = base if h is None else run(n, data, h, args.timeout)
                print(data, n, h, got, flush=True)
                if "error" in got:
                    table.append([data, f"{n:,}", "default" if h is None else f"{h:g}", got["error"], "", "", "", ""])
                    worst[(data, n)] = float("inf")
                    continue
                t, m = got["seconds"] / base["seconds"], got["peak_mib"] / base["peak_mib"]
                worst[(data, n)] = max(worst.get((data, n), 0.0), t, m)
                table.append([data, f"{n:,}", "default" if h is None else f"{h:g}", fmt(got["seconds"], 3),
                              fmt(t, 2), f"{got['peak_mib']:.0f}", fmt(m, 2), fmt(got["b"], 4)])  # fmt: skip
    header = ["data", "n", "bandwidth", "fit s", "time / default", "peak MiB", "memory / default", "b"]
    summary = markdown_table(["data", "n", "largest ratio (time or memory) to the default"],
                             [[d, f"{n:,}", fmt(r, 2)] for (d, n), r in worst.items()])  # fmt: skip
    body = (
        "Protocol: see the docstring of `benchmarks/bandwidth_cost.py`. Peak memory is the fitting process's whole "
        "resident set (the interpreter and the libraries included).\n\n"
        + markdown_table(header, table)
        + "\n\n## The largest ratio per case (goal: at most 2)\n\n"
        + summary
    )
    write_markdown(args.out, "MDH's cost across bandwidths", command_line(), body)


if __name__ == "__main__":
    main()
