"""Batch ingestion: a folder, glob or list of PDFs -> an index of Parquet chunk rows with exact boxes.

``grounded.ingest.ingest(...)`` / ``grounded ingest ...``: parse -> chunk -> (embed) -> write,
one document per task in a pool of worker processes, resumable, failure-isolated and
deterministic (see :mod:`grounded.ingest.job`). Read the index with :func:`open_chunks` (pyarrow)
or :func:`open_lancedb` (``--sink lancedb``): both follow the folder's manifest.
"""

from __future__ import annotations

from .config import config_fingerprint
from .errors import (
    ConfigurationMismatchError,
    IngestError,
    NoInputsError,
    OutputLockedError,
    UnguardedMainError,
)
from .inputs import expand_inputs, source_exists
from .job import IngestReport, ingest
from .reader import open_chunks, open_lancedb

__all__ = [
    "ingest",
    "IngestReport",
    "IngestError",
    "NoInputsError",
    "OutputLockedError",
    "ConfigurationMismatchError",
    "UnguardedMainError",
    "expand_inputs",
    "source_exists",
    "config_fingerprint",
    "open_chunks",
    "open_lancedb",
]
