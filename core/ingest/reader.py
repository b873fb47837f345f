"""Readers that follow the manifest: the live chunk rows of an ingest output folder.

``OUT/chunks`` may hold, while a run is writing (or after one was killed), part files that the
manifest does not name (a new version not yet published, an old one not yet removed); after a
completed run it holds exactly the live parts. These readers take only what ``OUT/manifest.json``
names, so they never see two versions of one document::

    from grounded.ingest import open_chunks, open_lancedb
    rows = open_chunks("OUT").to_table()          # pyarrow: one version of every document
    table = open_lancedb("OUT")                    # LanceDB, at the version the manifest names
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import OutputError
from .manifest import Manifest, read_manifest
from .rows import _pa

__all__ = ["open_chunks", "open_lancedb", "live_manifest"]


def live_manifest(out: str | Path) -> Manifest:
    """The live manifest of ``out``; :class:`~grounded.errors.OutputError` when ``out`` is not an
    ingest output folder."""
    manifest = read_manifest(out)
    if manifest is None:
        raise OutputError(Path(out), "not an ingest output folder (no manifest.json): run grounded ingest -o into it first")
    return manifest


def open_chunks(out: str | Path) -> Any:
    """A :class:`pyarrow.dataset.Dataset` of the live chunk rows of ``out`` (the part files its
    manifest names, in path order): ``.to_table()``, ``.to_batches()``, filters, DuckDB."""
    _pa()
    import pyarrow.dataset as ds

    manifest = live_manifest(out)
    chunks = Path(out) / "chunks"
    parts = [str(chunks / str(manifest.documents[p]["part"])) for p in sorted(manifest.documents)]
    if not parts:
        from .rows import chunk_schema
        from .worker import EMBED_DIMS

        dim = EMBED_DIMS.get(str(manifest.config.get("settings", {}).get("embed")))
        return ds.dataset(_pa().Table.from_pylist([], schema=chunk_schema(dim)))
    return ds.dataset(parts, format="parquet")


def open_lancedb(out: str | Path) -> Any:
    """The LanceDB table of ``out`` (``--sink lancedb``), checked out at the version its manifest
    names (read-only: the rows of exactly the live documents)."""
    from .lance_sink import TABLE, lancedb_module

    manifest = live_manifest(out)
    if not manifest.lancedb:
        raise OutputError(Path(out) / "lancedb", "this output folder has no LanceDB table (ingest with --sink lancedb)")
    table = lancedb_module().connect(str(Path(out) / "lancedb")).open_table(TABLE)
    table.checkout(int(manifest.lancedb["version"]))
    return table
