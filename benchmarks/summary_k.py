"""Does summary mode reach an integer n_clusters wherever a fit in memory reaches it? (issue 43, item 2)

    python benchmarks/summary_k.py --cases 100

Two generators of the fuzz rounds, every divisive method with a summary mode:

- ``mixture``: up to three Gaussian groups 4 apart, 300-3,000 rows in 1-5 dimensions, Dask chunks of 20 rows or
  more, ``n_clusters`` 2-8;
- ``stored``: the small odd inputs of tests/test_properties_chunked.py (2-120 rows, a column constant or varying
  in its last bits, float16/int8/bool storage, one-row and one-column chunks), fitted in summary mode with the
  small-input shortcut off, ``n_clusters`` 2-4.

A case counts as short when summary mode gives fewer clusters than memory; it is explained when one warning says
why (``Only N clusters could be formed ...``). Prints a markdown table.
"""

import argparse
import sys
import time
import warnings

import dask.array as da
import numpy as np

from lowdens_dask import METHODS
from lowdens_dask.estimators import _summary_pass

NAMES = ("mdh", "pddp", "depddp", "ipddp", "ncut", "mc", "scpp")


def mixture(rng):
    n, d = int(rng.integers(300, 3000)), int(rng.integers(1, 6))
    X = 4.0 * rng.integers(0, rng.integers(1, 4), size=n)[:, None] + rng.normal(size=(n, d))
    return X, X, (int(rng.integers(20, n)), d), int(rng.integers(2, 9))


def stored(rng):
    n, d = int(rng.integers(2, 121)), int(rng.integers(1, 6))
    X = 4.0 * rng.integers(0, rng.integers(1, 4), size=n)[:, None] + rng.normal(size=(n, d))
    column = rng.choice(["plain", "plain", "rounding", "constant"])
    if column == "rounding":
        X[:, -1] = np.nextafter(1.0, 2.0) ** rng.integers(0, 3, size=n)
    elif column == "constant":
        X[:, -1] = 3.0
    dtype = str(rng.choice(["float64", "float32", "float16", "int8", "bool"]))
    if dtype == "int8":
        X = np.clip(np.round(X * 10), -128, 127)
    chunking = rng.choice(["one-row", "ragged", "columns"])
    if chunking == "one-row":
        n = min(n, 30)
        X, chunks = X[:n], (1, d)
    elif chunking == "ragged":
        chunks = (int(rng.integers(2, max(2, n - 1) + 1)), d)
    else:
        chunks = (int(rng.integers(1, n + 1)), 1)
    stored_rows = X.astype(dtype)
    return stored_rows, stored_rows.astype(np.float64), chunks, int(rng.integers(2, 5))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=100, help="cases per generator")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    _summary_pass.SMALL_INPUT_ROWS = 1  # the stored generator's inputs take the chunked path
    start = time.perf_counter()
    print("| generator | method | cases fitted | memory reaches K | summary reaches it too | short, said why "
          "| short, silent |")
    print("|---|---|---|---|---|---|---|")
    silent_total = 0
    for generator in (mixture, stored):
        for name in NAMES:
            master = np.random.default_rng([args.seed, NAMES.index(name), generator is stored])
            fitted = reached = same = said = silent = 0
            for _ in range(args.cases):
                rows, X, chunks, k = generator(np.random.default_rng(int(master.integers(1 << 62))))
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        memory = METHODS[name].clustering(n_clusters=k, random_state=0).fit(X)
                        summary = METHODS[name].clustering(n_clusters=k, random_state=0, mode="summary")
                        summary.fit(da.from_array(rows, chunks=chunks))
                    except ValueError:
                        continue
                fitted += 1
                if memory.n_clusters_ < k:
                    continue
                reached += 1
                if summary.n_clusters_ >= k:
                    same += 1
                elif any("could be formed" in str(w.message) for w in caught):
                    said += 1
                else:
                    silent += 1
            silent_total += silent
            row = (generator.__name__, name, fitted, reached, same, said, silent)
            print("| " + " | ".join(map(str, row)) + " |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s; python {sys.version.split()[0]}")
    return 1 if silent_total else 0


if __name__ == "__main__":
    raise SystemExit(main())
