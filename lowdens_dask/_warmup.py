"""Compile lowdens-dask's numba kernels into numba's on-disk cache: ``python -m lowdens_dask._warmup``.

The image (``deploy/Dockerfile``) runs this at build time, with ``NUMBA_CACHE_DIR`` set to a directory of the image,
so that its pods load the compiled kernels instead of compiling them in every process (issue 35: the first demo in
a fresh pod took 88 s against 41 s warm). It fits every method's divisive estimator (``n_clusters="auto"``, the
pipelines' default, so the significance tests run too) on a small bundled data set in memory, and on a Dask array in
summary mode and in exact mode (passes over the chunks), then each hyperplane and projection estimator in memory;
then it summarises a float32 and a float64 chunk large enough for the sampled k-means++ seeding that large chunks
take, and calls the one kernel no such fit reaches (``ncut_curve``, the fallback of degenerate NCut splits).
Together they call every cached kernel, with the float64 arrays the estimators convert their input to.

Numba's cache is keyed on each kernel's source file (path and modification time), its signature and the CPU it
compiles for: the image installs the package before this runs and fixes the CPU with ``NUMBA_CPU_NAME``, so the
pods' processes find the entries.

``--quick`` fits the MDH divisive estimator only (the test that checks the cache runs this twice); ``--json`` prints
what happened to the cached kernels, as JSON: how many there are, how many got a compiled signature (compiled here,
or loaded from the cache; a kernel called only by other kernels is compiled with its caller, and is not loaded on
its own), how many signatures were compiled and how many loaded, the kernels with none, and the seconds taken.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np

#: The bundled data set the fits use (699 rows x 9 columns): above SMALL_INPUT_ROWS (256), so that a Dask array
#: of it is summarised, or passed over, chunk by chunk.
DATASET = "breastcancer"
#: Rows per chunk of the Dask array.
CHUNK_ROWS = 200
#: In-memory fits use every IN_MEMORY_STEP-th row (233 rows): the same kernels, and LMSC and SVM-relabel, whose
#: cost grows fast with the rows, fit in seconds.
IN_MEMORY_STEP = 3


def cached_kernels() -> dict[str, object]:
    """Every numba dispatcher of the package that caches to disk (``cache=True``), by qualified name; not those
    inlined into their callers (``inline="always"``: compiled, and cached, as part of each caller)."""
    import numba
    from numba.core.caching import NullCache

    import lowdens_dask

    for info in pkgutil.walk_packages(lowdens_dask.__path__, "lowdens_dask."):
        if info.name.rsplit(".", 1)[-1] not in ("__main__", "_warmup"):
            importlib.import_module(info.name)
    kernels = {}
    for name, module in list(sys.modules.items()):
        if name == "lowdens_dask" or name.startswith("lowdens_dask."):
            for attr, value in vars(module).items():
                if not isinstance(value, numba.core.dispatcher.Dispatcher) or isinstance(value._cache, NullCache):
                    continue
                if value.py_func.__module__ == name and value.targetoptions.get("inline") != "always":
                    kernels[f"{name}.{attr}"] = value  # where it is defined, not where it is imported
    return kernels


def steps(quick: bool = False) -> list[tuple[str, Callable[[], object]]]:
    """(description, call) of the warm-up's steps: fits, and the kernel calls no fit of the bundled data makes."""
    import dask.array as da

    from lowdens_dask import METHODS
    from lowdens_dask.datasets import load_dataset

    X, _ = load_dataset(DATASET)
    chunked = da.from_array(X, chunks=(CHUNK_ROWS, X.shape[1]))
    rows = np.ascontiguousarray(X[::IN_MEMORY_STEP])
    out = []
    for method in ["mdh"] if quick else list(METHODS):
        clustering = METHODS[method].clustering
        for data, mode in ((rows, "auto"), (chunked, "summary"), (chunked, "exact")):
            if mode == "exact" and not clustering._exact_on_chunks:
                continue  # summary mode only (SVM-relabel)
            where = "memory" if data is rows else f"Dask, {mode}"
            # MSC's chunked growth (exact mode) has no held-out rows to test splits on: a fixed K there
            k = 3 if method == "msc" and mode == "exact" else "auto"
            params = {"n_clusters": k, "mode": mode, "random_state": 0}
            out.append((f"{clustering.__name__} ({where})", lambda c=clustering, d=data, p=params: c(**p).fit(d)))
        if not quick:
            for estimator in METHODS[method][1:]:
                if estimator is not None:
                    out.append((f"{estimator.__name__} (memory)", lambda e=estimator: e().fit(rows)))
    if not quick:
        out.append(("chunk summaries (float64, float32)", _summarise_chunks))
        out.append(("ncut_curve", _ncut_curve))
    return out


def _summarise_chunks() -> None:
    """A chunk of more than ``SAMPLE_ROWS_PER_CENTRE`` rows per microcluster: Lloyd iterations on a sample seeded by
    k-means++ (``kmeanspp_indices``), as on the large chunks of real input; float32 chunks stay float32."""
    from lowdens_dask.kernels.summaries import SAMPLE_ROWS_PER_CENTRE, microclusters

    k = 4
    x = np.random.default_rng(0).normal(size=(2 * SAMPLE_ROWS_PER_CENTRE * k, 3))
    for dtype in (np.float64, np.float32):
        microclusters(x.astype(dtype), k, 0, representatives=True)


def _ncut_curve() -> None:
    from lowdens_dask.indices.ncut import ncut_curve

    ncut_curve(np.linspace(0.0, 1.0, 8), np.ones(8), 1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lowdens_dask._warmup", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fit the MDH divisive estimator only")
    parser.add_argument("--json", action="store_true", help="print what happened to the cached kernels, as JSON")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    kernels = cached_kernels()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fits' convergence and small-data warnings say nothing here
        for description, call in steps(quick=args.quick):
            began = time.perf_counter()
            call()
            if not args.json:
                print(f"{description}: {time.perf_counter() - began:.1f} s", flush=True)
    stats = [kernel.stats for kernel in kernels.values()]
    report = {
        "kernels": len(kernels),
        "used": sum(1 for kernel in kernels.values() if kernel.signatures),
        "compiled": sum(sum(s.cache_misses.values()) for s in stats),
        "loaded": sum(sum(s.cache_hits.values()) for s in stats),
        "unused": sorted(name for name, kernel in kernels.items() if not kernel.signatures),
        "seconds": round(time.perf_counter() - start, 2),
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"{report['used']} of {report['kernels']} cached kernels used: {report['compiled']} "
            f"signatures compiled, {report['loaded']} loaded from the cache, in {report['seconds']:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
