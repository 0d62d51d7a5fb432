"""Numba-compiled, chunk-local kernels (binning, kernel sums, derivative weights)."""
