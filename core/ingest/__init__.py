"""Batch ingestion: a folder, glob or list of PDFs -> Parquet chunk rows with exact boxes.

``grounded.ingest.ingest(...)`` / ``grounded ingest ...``: parse -> chunk -> (embed) -> write,
one document per task in a pool of worker processes, resumable, failure-isolated and
deterministic (see :mod:`grounded.ingest.job`).
"""

from __future__ import annotations

from .job import IngestError, IngestReport, config_fingerprint, expand_inputs, ingest

__all__ = ["ingest", "IngestReport", "IngestError", "expand_inputs", "config_fingerprint"]
