"""Read chunks from any file a chunk is stored in: ``chunks.json``, ``chunks.jsonl``, an ingest
Parquet part (``OUT/chunks/part-*.parquet``) or a folder of such parts (a Parquet dataset).

Parquet rows become chunks through the field table (:func:`grounded.metadata.read_stored_chunk`);
their result metadata records the source PDF's sha256 when the rows name exactly one PDF, so
``grounded highlight`` checks the PDF as it does for a chunks file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import BackendUnavailableError, SchemaError
from ..model.chunk import ChunkingResult
from .chunk_codec import read_stored_chunk
from .codec import load_chunking_result

__all__ = ["load_chunks_file", "is_parquet"]


def is_parquet(path: str | Path) -> bool:
    """A Parquet part (``.parquet``) or a folder holding Parquet parts."""
    p = Path(path)
    return p.suffix.lower() == ".parquet" or (p.is_dir() and any(p.rglob("*.parquet")))


def load_chunks_file(path: str | Path, *, source_sha256: str | None = None) -> ChunkingResult:
    """Chunks of ``path`` (see the module docstring). ``source_sha256``: keep only the Parquet rows
    of that PDF (an ingest part holds the chunks of many PDFs). A damaged file raises
    :class:`~grounded.errors.SchemaError` naming it."""
    p = Path(path)
    if not is_parquet(p):
        return load_chunking_result(p)
    rows = _parquet_rows(p)
    if source_sha256 is not None:
        rows = [r for r in rows if r.get("source_sha256") in (None, "", source_sha256)]
    shas = {str(r["source_sha256"]) for r in rows if r.get("source_sha256")}
    try:
        chunks = [read_stored_chunk(r) for r in rows]
    except SchemaError as exc:
        raise SchemaError(f"{p}: {exc}") from exc
    metadata: dict[str, Any] = {}
    if len(shas) == 1:
        metadata["document"] = {"source": {"sha256": shas.pop()}}
    return ChunkingResult(chunks=chunks, metadata=metadata)


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise BackendUnavailableError("reading chunks from Parquet", "ingest", "pyarrow") from exc
    import pyarrow as pa

    try:
        if path.is_dir():
            table = ds.dataset(str(path), format="parquet").to_table()
        else:
            table = pq.read_table(str(path))
    except (OSError, pa.ArrowException) as exc:
        raise SchemaError(f"{path}: not a readable Parquet chunks file ({exc})") from exc
    columns = [c for c in table.column_names if c != "embedding"]
    rows: list[dict[str, Any]] = table.select(columns).to_pylist()
    return rows
