"""Data layer: the few operations projection pursuit needs, over in-memory (and later Dask) data."""

from .memory import InMemoryData

__all__ = ["InMemoryData"]
