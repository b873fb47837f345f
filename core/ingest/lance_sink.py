"""The LanceDB sink (``--sink lancedb``): ``OUT/lancedb``, table ``chunks``, kept in step with the manifest.

The Parquet parts stay the source of truth; the table holds exactly the rows of the documents the
live manifest names (:mod:`grounded.ingest.manifest`), with the embedding (when the run embeds) as
``vector``, the column LanceDB's vector search uses, instead of ``embedding``. :func:`sync_lancedb` runs before every
publish of the manifest:

* the table is updated **incrementally**: one ``merge_insert`` on ``chunk_id`` adds the rows of the
  documents that are new or changed since the last published generation and deletes, in the same
  commit, the rows of the paths they replace or that left the index (a run that changed nothing
  makes no commit at all; more than :data:`MERGE_BATCH_PATHS` replaced paths take one commit per
  batch of paths); a new folder or a new configuration (``--replace``) builds the table in one
  commit;
* the manifest records the table version that matches it (``lancedb.version``): a reader checks
  out that version (:func:`grounded.ingest.open_lancedb`); a run killed between the LanceDB
  commit and the manifest leaves the table ahead of the manifest, and the next run restores the
  recorded version before applying its changes (never rows of a superseded version next to the
  new ones: the old rows of a path go in the same commit that adds its new ones);
* ``search_text``: the text search reads (:func:`grounded.ingest.rows.search_text`: the section
  heading path, then the body), a column of this table only (the Parquet rows stay as they are);
* indexes: a full-text (BM25) index on ``search_text`` after every sync, so hybrid search can use it; a
  vector index (IVF-HNSW-SQ, cosine) once the table has :data:`VECTOR_INDEX_MIN_ROWS` rows -- below
  that LanceDB's brute-force search is exact and takes tens of milliseconds
  (``benchmarks/lancedb_vector_index.py``). Both are brought up to date by
  ``optimize()`` after each change (new rows are also searched before they are indexed).

Once a folder has a LanceDB table, every later run keeps it in step (``--sink`` is sticky)::

    from grounded.ingest import open_lancedb
    table = open_lancedb("OUT")                         # the version the manifest names
    hits = table.search(query_vector).limit(5).to_list()   # each with text, pages, boxes
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import BackendUnavailableError, OutputError
from ..model.chunk_fields import search_keys
from .manifest import Manifest
from .rows import _pa, chunk_schema, search_text

__all__ = ["TABLE", "SEARCH_COLUMN", "VECTOR_INDEX_MIN_ROWS", "lancedb_module", "sync_lancedb", "lance_schema"]

log = logging.getLogger(__name__)

#: the table's name in ``OUT/lancedb``
TABLE = "chunks"
#: the column the full-text index is built on (:func:`grounded.ingest.rows.search_text`)
SEARCH_COLUMN = "search_text"
#: rows from which a vector index is built (below, brute force is exact and fast enough)
VECTOR_INDEX_MIN_ROWS = 10_000
#: at most this many replaced paths per merge (the delete condition names each)
MERGE_BATCH_PATHS = 500


def lancedb_module() -> Any:
    try:
        import lancedb
    except ImportError as exc:
        raise BackendUnavailableError("grounded ingest --sink lancedb", "lancedb", "lancedb") from exc
    return lancedb


def lance_schema(dim: int | None) -> Any:
    """The chunk rows with the embedding as ``vector`` (LanceDB's default vector column; one
    vector column, so ``search(vector)`` needs no column name), or without it when not embedding."""
    pa = _pa()
    schema = chunk_schema(dim)
    schema = schema.remove(schema.get_field_index("embedding")).append(pa.field(SEARCH_COLUMN, pa.string()))
    return schema if dim is None else schema.append(pa.field("vector", pa.list_(pa.float32(), dim)))


def _batches(parts: Iterable[Path], dim: int | None) -> Iterator[Any]:
    import pyarrow.parquet as pq

    schema = lance_schema(dim)
    for part in parts:
        table = pq.read_table(part).cast(chunk_schema(dim))
        vectors = table.column("embedding")
        table = table.drop_columns(["embedding"])
        rows = table.select(["text", "body_start", *search_keys()]).to_pylist()
        table = table.append_column(schema.field(SEARCH_COLUMN), _pa().array([search_text(r) for r in rows], _pa().string()))
        if dim is not None:
            table = table.append_column(schema.field("vector"), vectors)
        yield from table.to_batches()


def _reader(parts: list[Path], dim: int | None) -> Any:
    return _pa().RecordBatchReader.from_batches(lance_schema(dim), _batches(parts, dim))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _has_index(table: Any, column: str, kind: str | None = None) -> bool:
    return any(column in i.columns and (kind is None or i.index_type == kind) for i in table.list_indices())


def _ensure_indexes(table: Any, dim: int | None) -> None:
    from lancedb.index import FTS, HnswSq

    column = SEARCH_COLUMN if SEARCH_COLUMN in table.schema.names else "text"  # a table of an older version: text
    if not _has_index(table, column, "FTS"):
        table.create_index(column, config=FTS())
    if dim is not None and not _has_index(table, "vector") and table.count_rows() >= VECTOR_INDEX_MIN_ROWS:
        log.info("ingest: building the vector index of %s (%d rows)", TABLE, table.count_rows())
        table.create_index("vector", config=HnswSq(distance_type="cosine"))


def _changes(previous: Manifest, new: Manifest) -> tuple[list[str], list[dict[str, Any]]]:
    """(paths whose rows leave the table, records of the documents whose rows come in)."""
    gone = [p for p, d in previous.documents.items() if new.documents.get(p, {}).get("part") != d.get("part")]
    come = [d for p, d in new.documents.items() if previous.documents.get(p, {}).get("part") != d.get("part")]
    return sorted(gone), sorted(come, key=lambda d: str(d["path"]))


def sync_lancedb(out: Path, previous: Manifest | None, new: Manifest, dim: int | None) -> int:
    """Bring ``out/lancedb`` table :data:`TABLE` to the documents of ``new`` (``previous``: the
    manifest published last, whose ``lancedb.version`` the table held) and return the table
    version to record in ``new``. See the module docstring."""
    lancedb = lancedb_module()
    chunks = out / "chunks"
    try:
        db = lancedb.connect(str(out / "lancedb"))
        table = _incremental(db, previous, new, dim, chunks)
        if table is None:
            parts = [chunks / str(new.documents[p]["part"]) for p in sorted(new.documents)]
            # "create" for a new table: "overwrite" of a missing one makes Lance log a WARN line on stderr
            mode = "overwrite" if (out / "lancedb" / f"{TABLE}.lance").exists() else "create"
            table = db.create_table(TABLE, data=_reader(parts, dim), schema=lance_schema(dim), mode=mode)
            log.info("ingest: LanceDB table %s built (%d rows)", TABLE, table.count_rows())
            _ensure_indexes(table, dim)
        return int(table.version)
    except (OSError, ValueError, RuntimeError) as exc:
        raise OutputError(out / "lancedb", f"cannot write the LanceDB table: {exc}") from exc


def _incremental(db: Any, previous: Manifest | None, new: Manifest, dim: int | None, chunks: Path) -> Any:
    """The table updated in place, or None when it must be (re)built."""
    if previous is None or not previous.lancedb or previous.fingerprint != new.fingerprint:
        return None
    try:
        table = db.open_table(TABLE)
    except ValueError:  # not found
        log.warning("ingest: the LanceDB table %s is missing: rebuilt", TABLE)
        return None
    recorded = int(previous.lancedb["version"])
    if table.version != recorded:  # a run was killed after changing the table, before its manifest
        try:
            table.restore(recorded)
        except Exception as exc:  # the recorded version was pruned: rebuild  # noqa: BLE001
            log.warning("ingest: LanceDB version %d cannot be restored (%s): table rebuilt", recorded, exc)
            return None
        log.warning("ingest: the LanceDB table was ahead of the manifest (an interrupted run): "
                    "version %d restored before this run's changes", recorded)
    gone, come = _changes(previous, new)
    if not gone and not come:
        _ensure_indexes(table, dim)  # nothing changed: no commit (unless an index is missing)
        return table
    # each commit: a batch of paths whose rows leave, with the new rows of the same paths
    batches: list[tuple[list[str], list[dict[str, Any]]]] = [
        (gone[i : i + MERGE_BATCH_PATHS], []) for i in range(0, max(len(gone), 1), MERGE_BATCH_PATHS)
    ]
    where = {p: k for k, (paths, _) in enumerate(batches) for p in paths}
    for d in come:  # a new document goes with its path's old rows, else with the last batch
        batches[where.get(str(d["path"]), len(batches) - 1)][1].append(d)
    for paths, docs in batches:
        condition = f"source_path IN ({', '.join(_quote(p) for p in paths)})" if paths else None
        if not docs:
            if condition:
                table.delete(condition)
            continue
        merge = table.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all()
        if condition:
            merge = merge.when_not_matched_by_source_delete(condition)
        merge.execute(_reader([chunks / str(d["part"]) for d in docs], dim))
    _ensure_indexes(table, dim)
    table.optimize()  # new rows into the indexes, small fragments compacted
    log.info("ingest: LanceDB table %s updated: %d path(s) replaced or removed, %d document(s) added",
             TABLE, len(gone), len(come))
    return table
