"""The LanceDB sink (``--sink lancedb``): ``OUT/lancedb``, table ``chunks``, directly searchable.

The Parquet parts stay the source of truth (atomic per document, resumable); at the end of every
run the LanceDB table is rebuilt from the parts of the done documents, streamed part by part
(never the whole corpus in memory). Rows are the Parquet rows (nested ``boxes`` included) plus,
when the run embeds, ``vector``: the embedding as a fixed-size list, the column LanceDB's vector
search uses::

    import lancedb
    table = lancedb.connect("OUT/lancedb").open_table("chunks")
    hits = table.search(query_vector).limit(5).to_list()   # each with text, pages, boxes
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import BackendUnavailableError, OutputError
from .rows import _pa, chunk_schema

__all__ = ["TABLE", "lancedb_module", "write_lancedb"]

#: the table's name in ``OUT/lancedb``
TABLE = "chunks"


def lancedb_module() -> Any:
    try:
        import lancedb
    except ImportError as exc:
        raise BackendUnavailableError("grounded ingest --sink lancedb", "lancedb", "lancedb") from exc
    return lancedb


def _schema(dim: int | None) -> Any:
    pa = _pa()
    schema = chunk_schema()
    return schema if dim is None else schema.append(pa.field("vector", pa.list_(pa.float32(), dim)))


def _batches(parts: Iterable[Path], dim: int | None) -> Iterator[Any]:
    import pyarrow.parquet as pq

    pa = _pa()
    schema = _schema(dim)
    for part in parts:
        table = pq.read_table(part, schema=chunk_schema())
        if dim is not None:
            vectors = table.column("embedding").combine_chunks()
            if vectors.null_count == len(vectors):
                column = pa.nulls(len(vectors), type=schema.field("vector").type)
            else:
                column = vectors.cast(schema.field("vector").type)
            table = table.append_column(schema.field("vector"), column)
        yield from table.to_batches()


def write_lancedb(out: Path, parts: Iterable[Path], dim: int | None) -> None:
    """(Re)build ``out/lancedb`` table :data:`TABLE` from ``parts`` (Parquet chunk parts);
    ``dim``: the embedding size (adds ``vector``), or None."""
    lancedb = lancedb_module()
    pa = _pa()
    schema = _schema(dim)
    try:
        db = lancedb.connect(str(out / "lancedb"))
        reader = pa.RecordBatchReader.from_batches(schema, _batches(parts, dim))
        db.create_table(TABLE, data=reader, schema=schema, mode="overwrite")
    except (OSError, ValueError, RuntimeError) as exc:
        raise OutputError(out / "lancedb", f"cannot write the LanceDB table: {exc}") from exc
