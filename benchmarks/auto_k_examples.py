"""The worked examples of issue 33 (choosing K with the power of a fit told K), each against its expected answer.

1. Summary mode, small chunks, a common offset: 2,000 x 5 standard normal rows, ``X[:1000, 0] += 10``, plus 1e9,
   as a Dask array of 500-row chunks, ``MDHClustering(n_clusters="auto", mode="summary")``: 2 clusters.
2. ``IPDDPClustering(n_clusters="auto", mode="summary")`` on four clusters (``20 * np.eye(4)`` centres, unit variance,
   6,000 rows) in irregular chunks (85, 425, 589, 1511, 453, 490, 15, 2032, 91, 309): 4 clusters.
3. ``SCPPClustering(n_clusters="auto", mode="exact")`` on five unit-variance 2-D clusters centred at (0, 0),
   (15, 0), (0, 15), (15, 15), (30, 30), 1,500 rows in 500-row chunks: 5 clusters.
4. ``lowdens fit x.csv`` with its defaults on 5,000 rows of 15 unit-variance 2-D clusters whose centres are drawn
   uniformly in a 60 x 60 square at least 8 apart (``--draws`` draws): 15 clusters.
5. The README's updates: ``MDHClustering(n_clusters="auto")``, ``partial_fit`` of pendigits' ``X[:2500]`` then
   ``X[2500:]``, against ``fit(X)``: within 2 clusters, ARI >= 0.8 between the two.
6. ``X = [N(0,1)^3 - 6: 1,500 rows; N(0,1)^3 + 6: 1,500]``, ``partial_fit(X)``, then ``partial_fit`` of X plus 400
   rows of N(0,1)^3 + (40, 0, 0): 3 clusters, as a fit of the same rows (MDH and NCut).

    python benchmarks/auto_k_examples.py [--draws 3] [--out FILE]
"""

import argparse
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import dask.array as da
import numpy as np
from harness import RESULTS_DIR, command_line, markdown_table, write_markdown
from sklearn.metrics import adjusted_rand_score

import lowdens_dask as ld
from lowdens_dask.datasets import load_dataset


def offset_summary():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 5))
    X[:1000, 0] += 10
    X += 1e9
    model = ld.MDHClustering(n_clusters="auto", mode="summary").fit(da.from_array(X, chunks=(500, 5)))
    return model.n_clusters_, 2, f"{model.n_clusters_} clusters"


def ipddp_irregular_chunks():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 6000)
    X = 20 * np.eye(4)[y] + rng.standard_normal((6000, 4))
    chunks = ((85, 425, 589, 1511, 453, 490, 15, 2032, 91, 309), (4,))
    model = ld.IPDDPClustering(n_clusters="auto", mode="summary").fit(da.from_array(X, chunks=chunks))
    return model.n_clusters_, 4, f"{model.n_clusters_} clusters"


def scpp_exact():
    rng = np.random.default_rng(0)
    centres = np.array([(0, 0), (15, 0), (0, 15), (15, 15), (30, 30)], dtype=float)
    X = centres[np.repeat(np.arange(5), 300)] + rng.standard_normal((1500, 2))
    model = ld.SCPPClustering(n_clusters="auto", mode="exact").fit(da.from_array(X, chunks=(500, 2)))
    return model.n_clusters_, 5, f"{model.n_clusters_} clusters"


def cli_defaults(draws: int):
    found = []
    for seed in range(draws):
        rng = np.random.default_rng(seed)
        centres = []
        while len(centres) < 15:
            c = rng.uniform(0, 60, 2)
            if all(np.linalg.norm(c - other) >= 8 for other in centres):
                centres.append(c)
        X = np.array(centres)[rng.integers(0, 15, 5000)] + rng.standard_normal((5000, 2))
        with tempfile.TemporaryDirectory() as folder:
            np.savetxt(Path(folder) / "x.csv", X, delimiter=",", header="a,b", comments="")
            out = subprocess.run(
                [str(Path(sys.executable).with_name("lowdens")), "fit", "x.csv"],
                cwd=folder, capture_output=True, text=True, check=True,
            )  # fmt: skip
        found.append(int(out.stdout.split("\t")[1].split()[0]))  # "<run id>\t<k> clusters\t<url>"
    return all(k == 15 for k in found), True, f"clusters found: {found}"


def readme_updates():
    X, _ = load_dataset("pendigits")
    fitted = ld.MDHClustering(n_clusters="auto").fit(X)
    nightly = ld.MDHClustering(n_clusters="auto")
    for batch in (X[:2500], X[2500:]):
        nightly.partial_fit(batch)
    ari = adjusted_rand_score(fitted.labels_, nightly.predict(X))
    ok = abs(nightly.n_clusters_ - fitted.n_clusters_) <= 2 and ari >= 0.8
    detail = f"update {nightly.n_clusters_} clusters, fit {fitted.n_clusters_}; ARI between them {ari:.3f}"
    return ok, True, detail


def far_component_update():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(1500, 3)) - 6, rng.normal(size=(1500, 3)) + 6])
    Y = np.vstack([X, rng.normal(size=(400, 3)) + [40, 0, 0]])
    found = []
    for estimator in (ld.MDHClustering, ld.NCutClustering):
        model = estimator(n_clusters="auto")
        model.partial_fit(X)
        model.partial_fit(Y)
        found.append((estimator.__name__, model.n_clusters_, estimator(n_clusters="auto").fit(Y).n_clusters_))
    ok = all(update == 3 and fit == 3 for _, update, fit in found)
    return ok, True, "; ".join(f"{name}: update {update}, fit {fit}" for name, update, fit in found)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=3, help="draws of the CLI example")
    parser.add_argument("--out", default=str(RESULTS_DIR / "auto-k-examples.md"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    examples = [
        ("1e9 offset, summary mode, 500-row chunks", offset_summary),
        ("IPDDP, summary mode, irregular chunks", ipddp_irregular_chunks),
        ("SCPP, exact mode, 500-row chunks", scpp_exact),
        ("`lowdens fit` with its defaults, 15 clusters", lambda: cli_defaults(args.draws)),
        ("README updates against fit(X) (pendigits)", readme_updates),
        ("update with a component 34 sd away", far_component_update),
    ]
    rows = []
    for name, example in examples:
        found, expected, detail = example()
        rows.append([name, detail, "PASS" if found == expected else "**FAIL**"])
        print(rows[-1], flush=True)
    body = markdown_table(["example", "found", "check"], rows)
    path = write_markdown(args.out, "Issue 33's worked examples", command_line(), body)
    print(path)


if __name__ == "__main__":
    main()
