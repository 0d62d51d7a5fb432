"""Data layer: the few operations projection pursuit needs, over in-memory and row-chunked (Dask) data."""

from .chunked import ChunkedData, ChunkReadError, as_dask_array
from .memory import InMemoryData

__all__ = ["ChunkReadError", "ChunkedData", "InMemoryData", "as_dask_array"]
