"""Power where clusters touch (issue 51, item 2): ``n_clusters="auto"`` on small mixtures of touching and overlapping
Gaussians beside a Gaussian mixture chosen by BIC.

Cases (three draws each, seeds 0, 1, 2): four unit Gaussians of 100 rows in 3-D, centred at the origin and at
``sep`` along each axis (sep 3 and 4); two unit Gaussians of 1,024 rows in 32-D and 128-D, 4 apart along the first
axis. MDH and NCut at their defaults with ``n_clusters="auto"``; ``GaussianMixture`` for k = 1..8 (full covariances
up to 10 dimensions, diagonal above; ``reg_covar=1e-4``, random_state 0), the k of least BIC. Mean ARI against the
truth over the draws.

    python benchmarks/touching_clusters.py [--out FILE]
"""

import argparse
import warnings

import numpy as np
from harness import RESULTS_DIR, command_line, markdown_table, write_markdown
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture

from lowdens_dask import MDHClustering, NCutClustering


def gmm_bic(X: np.ndarray) -> np.ndarray:
    best = None
    for k in range(1, 9):
        kind = "full" if X.shape[1] <= 10 else "diag"
        model = GaussianMixture(k, covariance_type=kind, random_state=0, reg_covar=1e-4).fit(X)
        bic = model.bic(X)
        if best is None or bic < best[0]:
            best = (bic, model.predict(X))
    return best[1]


def cases():
    for seed in range(3):
        rng = np.random.default_rng(seed)
        for sep in (3.0, 4.0):
            centres = np.array([[0, 0, 0], [sep, 0, 0], [0, sep, 0], [0, 0, sep]])
            y = np.repeat(np.arange(4), 100)
            yield f"4 x 100 rows, 3-D, {sep:g} apart", centres[y] + rng.normal(size=(400, 3)), y
        for d in (32, 128):
            y = np.repeat(np.arange(2), 1024)
            centres = np.zeros((2, d))
            centres[1, 0] = 4.0
            yield f"2 x 1,024 rows, {d}-D, 4 apart", centres[y] + rng.normal(size=(2048, d)), y


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(RESULTS_DIR / "touching-clusters.md"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    scores: dict = {}
    for name, X, y in cases():
        row = scores.setdefault(name, {"MDH auto": [], "NCut auto": [], "GMM-BIC": [], "K": []})
        mdh = MDHClustering(n_clusters="auto").fit(X)
        ncut = NCutClustering(n_clusters="auto").fit(X)
        row["MDH auto"].append(adjusted_rand_score(y, mdh.labels_))
        row["NCut auto"].append(adjusted_rand_score(y, ncut.labels_))
        row["GMM-BIC"].append(adjusted_rand_score(y, gmm_bic(X)))
        row["K"].append(f"{mdh.n_clusters_}/{ncut.n_clusters_}")
        print(name, {k: v[-1] for k, v in row.items()}, flush=True)
    table = [
        [name, *(f"{np.mean(v[m]):.3f}" for m in ("MDH auto", "NCut auto", "GMM-BIC")), " ".join(v["K"])]
        for name, v in scores.items()
    ]
    body = markdown_table(["case", "MDH auto", "NCut auto", "GMM-BIC", "K found (MDH/NCut) per draw"], table)
    write_markdown(args.out, 'Touching clusters: n_clusters="auto" beside GMM-BIC', command_line(), body)


if __name__ == "__main__":
    main()
