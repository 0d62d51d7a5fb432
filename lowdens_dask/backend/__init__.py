"""Data layer: the few operations projection pursuit needs, over in-memory and row-chunked (Dask) data."""

from .chunked import ChunkedData
from .memory import InMemoryData
from .passes import chunks_read
from .workers import WorkerMemoryError
from .zarr_input import INTEGRITY_ATTRIBUTE, ChunkReadError, as_dask_array, write_integrity_manifest

__all__ = [
    "INTEGRITY_ATTRIBUTE",
    "ChunkReadError",
    "ChunkedData",
    "InMemoryData",
    "WorkerMemoryError",
    "as_dask_array",
    "chunks_read",
    "write_integrity_manifest",
]
