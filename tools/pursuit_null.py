"""Build the shipped null of the pursued split's dip (``lowdens_dask/pursuit/pursuit_null.npz``).

For each projection index, each one-cluster shape (isotropic Gaussian, uniform cube), each size n and each
dimension d of the grid, ``--draws`` samples are pursued exactly as a tree node's rows are with
``n_clusters="auto"``: ``find_hyperplane`` with the estimator's default index parameters and ``min_size``, all
its starts (SCPP, LMSC: ``spectral_split`` with the estimator's defaults, and its one test direction). The statistic of a draw is ``sqrt(n)`` times the largest dip of the rows' projections on the
directions of the valid starts (0 when no start is valid), and its effective dimension is the participation
ratio of the sample's covariance (:func:`lowdens_dask.pursuit.significance.participation_ratio`), by which the
table is looked up. Per (shape, n, d) the table keeps the share of draws with a valid split, the median and the
scale (90% quantile minus median) of the statistic over the valid draws of that size and its two neighbours in
the grid (``sqrt(n)`` times the dip is nearly constant in n: three sizes' draws estimate the tail's scale with
less noise than one's 120), and their mean effective dimension; the
standardised statistic ``(T - median) / scale``, pooled over the cells with at least 10 valid draws, gives the
tail's shape (:func:`lowdens_dask.pursuit.significance.pursued_pvalue`).

Each index's draws are saved under ``--work`` as they finish (one file per index), so indices can be run in
separate processes; ``--write`` merges the saved files into the shipped table.

    python tools/pursuit_null.py --methods mdh --draws 120        # simulate one index
    python tools/pursuit_null.py --methods scpp --draws 30 --dimensions 1,2,4,8,16,32,64
    python tools/pursuit_null.py --methods lmsc --draws 20 --dimensions 1,2,4,16,64 --sizes 16,64,256,1024,4096
    python tools/pursuit_null.py --write                          # merge every saved index
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
# The table is built from this checkout's package, also when lowdens_dask is not installed.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(1, str(REPO_ROOT))

import lowdens_dask as ld  # noqa: E402
from lowdens_dask.backend import InMemoryData  # noqa: E402
from lowdens_dask.growth.spectral_splitter import _test_direction  # noqa: E402
from lowdens_dask.kernels.dip import dip_statistic, spread_ties  # noqa: E402
from lowdens_dask.pursuit import find_hyperplane  # noqa: E402
from lowdens_dask.pursuit.significance import NULL_SHAPES, PURSUIT_NULL, participation_ratio  # noqa: E402
from lowdens_dask.pursuit.spectral import spectral_split  # noqa: E402

ESTIMATORS = {"mdh": ld.MDHClustering, "ncut": ld.NCutClustering, "mc": ld.MCClustering, "pddp": ld.PDDP,
              "depddp": ld.DePDDP, "ipddp": ld.IPDDP, "scpp": ld.SCPPClustering, "lmsc": ld.LMSCClustering}  # fmt: skip
SPECTRAL = ("scpp", "lmsc")
SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
DIMENSIONS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
#: Cumulative probabilities of the pooled standardised tail.
PROBABILITIES = np.concatenate([np.linspace(0.0, 0.9, 91), 1.0 - np.logspace(-1, -3.5, 51)[1:]])
MIN_VALID = 10


def sample(shape: str, n: int, d: int, rng) -> np.ndarray:
    return rng.standard_normal((n, d)) if shape == "gaussian" else rng.random((n, d)) - 0.5


def statistic(method: str, X: np.ndarray, est) -> tuple[float, float]:
    """(sqrt(n) times the largest dip over the valid starts' directions or 0, effective dimension); a spectral
    split's one direction is from side 0's projected centres to side 1's (the splitters' own tests)."""
    data = InMemoryData(X)
    if method in SPECTRAL:
        split = spectral_split(X, data.weights, min_side=est._min_side(len(X)), random_state=0, **est._split_params())
        directions = [_test_direction(split)]
    else:
        hp = find_hyperplane(method, data, min_size=est.min_size, **est._index_params())
        directions = [s.v for s in hp.per_start or (hp,) if s.valid]
    dips = [dip_statistic(spread_ties(X @ v)) for v in directions]
    return (np.sqrt(len(X)) * max(dips) if dips else 0.0), participation_ratio(data)


def simulate(method: str, draws: int, work: Path, dimensions=DIMENSIONS, sizes=SIZES) -> None:
    est = ESTIMATORS[method](n_clusters="auto")
    out = {}
    for s, shape in enumerate(NULL_SHAPES):
        T = np.zeros((len(sizes), len(dimensions), draws))
        D = np.zeros_like(T)
        for i, n in enumerate(sizes):
            start = time.perf_counter()
            for j, d in enumerate(dimensions):
                rng = np.random.default_rng([s, n, d])
                for k in range(draws):
                    T[i, j, k], D[i, j, k] = statistic(method, sample(shape, n, d, rng), est)
            print(f"{method} {shape} n={n}: {time.perf_counter() - start:.1f} s", flush=True)
        out[f"{shape}.T"], out[f"{shape}.D"] = T, D
    np.savez_compressed(work / f"{method}.npz", n=np.array(sizes), d=np.array(dimensions), **out)


def table(raw) -> dict:
    """The shipped arrays of one index from its draws (module docstring)."""
    out = {"n": raw["n"]}
    for shape in NULL_SHAPES:
        T, D = raw[f"{shape}.T"], raw[f"{shape}.D"]
        valid = (T > 0).mean(axis=2)
        median, scale, pooled = np.zeros(valid.shape), np.ones(valid.shape), []
        for i, j in np.ndindex(valid.shape):
            near = T[max(i - 1, 0) : i + 2, j]  # this size and its neighbours (sqrt(n) dip is nearly constant in n)
            t = near[near > 0]
            if t.size:
                median[i, j] = np.median(t)
                scale[i, j] = max(np.quantile(t, 0.9) - median[i, j], 1e-3)
            own = T[i, j][T[i, j] > 0]
            if own.size >= MIN_VALID:
                pooled.append((own - median[i, j]) / scale[i, j])
        out[f"{shape}.valid"], out[f"{shape}.median"], out[f"{shape}.scale"] = valid, median, scale
        out[f"{shape}.d_eff"] = np.maximum.accumulate(D.mean(axis=2), axis=1)  # increasing in d, as looked up
        out[f"{shape}.z"] = np.maximum.accumulate(np.quantile(np.concatenate(pooled), PROBABILITIES))
    return out


def write(work: Path) -> Path:
    merged = {"probabilities": PROBABILITIES}
    for path in sorted(work.glob("*.npz")):
        with np.load(path) as raw:
            merged.update({f"{path.stem}/{key}": value for key, value in table(raw).items()})
    target = REPO_ROOT / "lowdens_dask" / "pursuit" / PURSUIT_NULL
    np.savez_compressed(target, **merged)
    return target


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default="", help="comma list of: " + ",".join(ESTIMATORS))
    parser.add_argument("--draws", type=int, default=120)
    parser.add_argument(
        "--dimensions", default=",".join(map(str, DIMENSIONS)), help="comma list of the grid's dimensions (a coarser "
        "grid for the costly spectral indices; the table is looked up by the draws' effective dimension)"
    )
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma list of the grid's sizes")
    parser.add_argument("--work", default=str(REPO_ROOT / "tools" / "pursuit-null"))
    parser.add_argument("--write", action="store_true", help="merge the saved draws into the shipped table")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    warnings.simplefilter("ignore")
    for method in filter(None, args.methods.split(",")):
        dimensions, sizes = (tuple(int(v) for v in text.split(",")) for text in (args.dimensions, args.sizes))
        simulate(method, args.draws, work, dimensions, sizes)
    if args.write:
        print("wrote", write(work))


if __name__ == "__main__":
    main()
