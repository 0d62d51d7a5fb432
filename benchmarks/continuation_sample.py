"""The size of MDH's continuation sample (issue 44): fits on every row against fits whose early alpha stages run on a
sample (``lowdens_dask.pursuit.hyperplanes.CONTINUATION_SAMPLE_ROWS``), on data large enough to be sampled.

Data: the scale mixture (16 Gaussians in 32 dimensions, ``benchmarks/scale.py``'s centres and weights, 100,000 rows
drawn here) and copies of three bundled sets, each row repeated (pendigits 5 times, satellite and optidigits 8
times) with a jitter of 1e-3 of each column's standard deviation, so that their nodes exceed the sample's threshold.
For each set and each sample size (``--sizes``; ``None``: every stage on every row): ``MDHClustering(n_clusters=K)``
at its defaults, single thread, one fit; seconds, ARI against the fit on every row and against the classes.

    python benchmarks/continuation_sample.py [--sizes None,25000,10000] [--output FILE]
"""

import argparse
import time

import harness

harness.single_thread(force=True)  # before numpy, numba or scikit-learn load their thread pools

import numpy as np  # noqa: E402
from harness import RESULTS_DIR, command_line, fmt, markdown_table, write_markdown  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

from lowdens_dask import MDHClustering  # noqa: E402
from lowdens_dask.datasets import load_dataset  # noqa: E402
from lowdens_dask.pursuit import hyperplanes  # noqa: E402


def scale_mixture(n: int, seed: int = 0, k: int = 16, d: int = 32):
    """Rows of ``benchmarks/scale.py``'s mixture (its centres and weights), drawn at once."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(k, d))
    weights = rng.dirichlet(2.0 * np.ones(k))
    y = rng.choice(k, size=n, p=weights)
    return (centres[y] + rng.standard_normal((n, d))).astype(np.float32), y


def jittered_copies(name: str, copies: int, seed: int = 0):
    """Each row of a bundled set ``copies`` times, with a jitter of 1e-3 of each column's standard deviation."""
    X, y = load_dataset(name)
    X = np.tile(X, (copies, 1)).astype(np.float64)
    X += 1e-3 * X.std(axis=0) * np.random.default_rng(seed).standard_normal(X.shape)
    return X, np.tile(y, copies)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="None,25000,10000")
    parser.add_argument("--output", default=str(RESULTS_DIR / "continuation-sample.md"))
    args = parser.parse_args(argv)
    sizes = [None if s == "None" else int(s) for s in args.sizes.split(",")]
    sets = {
        "scale mixture, 100,000 rows": scale_mixture(100_000),
        "pendigits x 5": jittered_copies("pendigits", 5),
        "satellite x 8": jittered_copies("satellite", 8),
        "optidigits x 8": jittered_copies("optidigits", 8),
    }
    MDHClustering(n_clusters=2).fit(sets["pendigits x 5"][0][:3000])  # numba's cache
    rows = []
    for name, (X, y) in sets.items():
        k = len(np.unique(y))
        first = None
        for size in sizes:
            hyperplanes.CONTINUATION_SAMPLE_ROWS = size
            start = time.perf_counter()
            labels = MDHClustering(n_clusters=k).fit(X).labels_
            seconds = time.perf_counter() - start
            first = labels if first is None else first
            rows.append([name, f"{len(X):,}", k, "every row" if size is None else f"{size:,}", fmt(seconds, 2),
                         fmt(adjusted_rand_score(first, labels), 4), fmt(adjusted_rand_score(y, labels), 4)])  # fmt: skip
            print(rows[-1], flush=True)
    body = (
        f"One fit per set and sample size, single thread; the first size ({sizes[0] or 'every row'}) is the "
        "reference of the ARI column.\n\n"
        + markdown_table(["set", "rows", "K", "continuation sample", "seconds", "ARI vs first", "ARI vs classes"], rows)
    )
    path = write_markdown(args.output, "MDH's continuation sample (issue 44)", command_line(), body)
    print(f"written to {path}")


if __name__ == "__main__":
    main()
