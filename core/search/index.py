"""An ingest output opened for reading: ``OUT/lancedb``, table ``chunks`` (``grounded ingest --sink lancedb``).

Nothing here writes: only queries run; no index is built, no version is created. Every query reads
the table at the version the output folder's manifest publishes (``OUT/manifest.json``, written by
``grounded ingest`` after its rows are committed), re-read before each query: a re-ingest while a
viewer runs is served once it is published, never half-way and never stale. A table without a
manifest (written by another tool) is read at its latest version.

The columns are found, not assumed: the vector column is the first of ``vector`` / ``embedding``
stored as a fixed-size float list (a variable-length ``embedding`` list cannot be searched by
LanceDB and counts as "no embeddings"); the full-text column is the one that carries an FTS index.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..errors import BackendUnavailableError, GroundedError
from ..ingest.manifest import MANIFEST, read_manifest
from ..io.chunk_codec import chunk_from_row
from ..model.chunk import Chunk
from .errors import IndexNotFoundError, MixedConfigurationsError, NotAnIndexError
from .hit import ROW_COLUMNS, Hit, hit_chunk

__all__ = ["SearchIndex", "TABLE", "sql_string"]

#: the table ``grounded ingest --sink lancedb`` writes in ``OUT/lancedb``
TABLE = "chunks"
#: vector column candidates, in order of preference
VECTOR_COLUMNS = ("vector", "embedding")
#: ``lancedb.tokenize`` keyword -> the key of the full-text index's settings (``index_details``)
_TOKENIZER_OPTIONS = {
    "base_tokenizer": "base_tokenizer", "language": "language", "max_token_length": "max_token_length",
    "lower_case": "lower_case", "stem": "stem", "remove_stop_words": "remove_stop_words",
    "custom_stop_words": "custom_stop_words", "ascii_folding": "ascii_folding",
    "ngram_min_length": "min_ngram_length", "ngram_max_length": "max_ngram_length", "prefix_only": "prefix_only",
}


def sql_string(value: str) -> str:
    """``value`` as a SQL string literal for a LanceDB filter (quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def _lancedb() -> Any:
    from .light_import import import_lancedb

    try:
        lancedb = import_lancedb()
    except ImportError as exc:
        raise BackendUnavailableError("grounded search", "lancedb", "lancedb") from exc
    return lancedb


class SearchIndex:
    """``OUT`` of ``grounded ingest --sink lancedb``, validated and opened.

    Raises :class:`~grounded.search.errors.IndexNotFoundError` when ``out`` does not exist and
    :class:`~grounded.search.errors.NotAnIndexError` when it holds no chunks table (the cause says
    which command makes one). Thread-safe for concurrent queries (the viewer's threads share one).
    """

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        if not self.out.exists():
            raise IndexNotFoundError(self.out, "no such folder (the output folder of `grounded ingest`)")
        if not self.out.is_dir():
            raise NotAnIndexError(self.out, "not a folder; pass the output folder of `grounded ingest -o OUT`")
        db_path = self.out / "lancedb"
        if not (db_path / f"{TABLE}.lance").is_dir():
            hint = ("it has Parquet parts but no LanceDB table" if (self.out / "chunks").is_dir()
                    else "not an ingest output folder")
            raise NotAnIndexError(
                self.out, f"{hint}: run `grounded ingest PDFS -o {self.out} --embed minilm --sink lancedb` first"
            )
        lancedb = _lancedb()
        self._lock = threading.Lock()
        self._published: int | None = None
        self._cache_version: Any = None
        self._configs: dict[str, int] = {}
        self._sources: dict[str, str] = {}
        self.vector_column: str | None = None
        self.vector_dim: int | None = None
        try:
            db = lancedb.connect(str(db_path), read_consistency_interval=timedelta(0))
            self.table = db.open_table(TABLE)
        except (OSError, ValueError, RuntimeError) as exc:
            raise NotAnIndexError(db_path, f"cannot open the LanceDB table {TABLE!r}: {_one_line(exc)}") from exc
        self.sync()  # the published version: its schema and indexes, not those of a run in progress
        if self._published is None:
            self._read_schema()

    def _read_schema(self) -> None:
        """The columns of the checked-out version (a ``--replace`` run may change them)."""
        with self.reading():
            schema = self.table.schema
        missing = [c for c in ROW_COLUMNS if c not in schema.names]
        if missing:
            raise NotAnIndexError(self.out / "lancedb",
                                  f"table {TABLE!r} lacks the ingest columns {missing}; re-run `grounded ingest`")
        self.vector_column, self.vector_dim = _vector_column(schema)

    # -- the published version ---------------------------------------------------------------
    def _published_version(self) -> int | None:
        """The table version ``OUT/manifest.json`` publishes (None: no manifest, or none recorded)."""
        manifest = read_manifest(self.out)
        if manifest is None or manifest.lancedb is None:
            return None
        where = self.out / MANIFEST
        if not isinstance(manifest.lancedb, dict):
            raise NotAnIndexError(where, "damaged manifest: \"lancedb\" must be an object naming the table version, "
                                  f"got {type(manifest.lancedb).__name__}; re-run `grounded ingest`")
        version = manifest.lancedb.get("version")
        if version is None:
            return None
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise NotAnIndexError(where, "damaged manifest: \"lancedb.version\" must be an integer >= 1, got "
                                  f"{str(version)[:40]!r}; re-run `grounded ingest`")
        return version

    def sync(self) -> None:
        """Check the table out at the version the manifest publishes (when it changed). A manifest
        that cannot be read, or that names a version the table cannot check out, raises a typed
        error (:class:`~grounded.errors.OutputError`, :class:`NotAnIndexError`)."""
        published = self._published_version()
        if published is None:
            return
        with self._lock:
            if published == self._published:
                return
            try:
                self.table.checkout(published)
            except (OSError, ValueError, RuntimeError) as exc:
                raise NotAnIndexError(
                    self.out / "lancedb", f"the manifest publishes LanceDB table version {published}, which cannot be "
                    f"checked out ({_one_line(exc)[:200]}); re-run `grounded ingest`"
                ) from exc
            self._published = published
        self._read_schema()

    # -- what the table holds (cached per table version) --------------------------------------
    def text_column(self) -> str | None:
        """The column with a full-text index (``search_text``, then ``text`` preferred) in the published version, or None."""
        found = self.text_index()
        return found[0] if found else None

    def text_index(self) -> tuple[str, dict[str, Any]] | None:
        """(column, tokenizer settings) of the full-text index of the published version, or None."""
        self.sync()
        with self.reading():
            indexes = [(c, dict(getattr(ix, "index_details", None) or {}))
                       for ix in self.table.list_indices() if str(ix.index_type).upper() == "FTS" for c in ix.columns]
        preferred = {"search_text": 0, "text": 1}  # ingest's context + body column, else (older tables) the text
        return min(indexes, key=lambda i: preferred.get(i[0], 2)) if indexes else None

    def query_terms(self, question: str, settings: Mapping[str, Any] | None = None) -> list[str]:
        """The words of ``question`` a full-text index with ``settings`` (:meth:`text_index`) matches:
        LanceDB's own tokenizer (lower case, stemming, stop words and punctuation dropped)."""
        lancedb = _lancedb()
        options = {name: settings[key] for name, key in _TOKENIZER_OPTIONS.items()
                   if settings and settings.get(key) is not None}
        try:
            tokens = lancedb.tokenize(question, **options)
        except (TypeError, ValueError):  # settings this LanceDB version does not take: its defaults
            tokens = lancedb.tokenize(question)
        return [str(t.text) for t in tokens]

    def _refresh(self) -> None:
        self.sync()
        with self.reading(), self._lock:
            version = self.table.version
            if version == self._cache_version:
                return
            import pyarrow.compute as pc

            data = self.table.search().select(["config_fingerprint", "source_path", "source_sha256"]).limit(None).to_arrow()
            counts = pc.value_counts(data.column("config_fingerprint")).to_pylist()
            self._configs = {str(c["values"]): int(c["counts"]) for c in counts}
            pairs = data.select(["source_path", "source_sha256"]).group_by(["source_path", "source_sha256"]).aggregate([])
            self._sources = dict(zip(pairs.column("source_path").to_pylist(), pairs.column("source_sha256").to_pylist()))
            self._cache_version = version

    def configs(self) -> dict[str, int]:
        """Configuration fingerprint -> number of rows."""
        self._refresh()
        return dict(self._configs)

    def sources(self) -> Mapping[str, str]:
        """The indexed PDFs: source path (as ingest recorded it) -> sha256 of the bytes indexed."""
        self._refresh()
        return dict(self._sources)

    def choose_config(self, config: str | None) -> str | None:
        """The configuration a search is restricted to: ``config`` (a fingerprint or a unique prefix
        of one), else the table's only configuration; None for an empty table. A table of several
        configurations without ``config`` raises :class:`MixedConfigurationsError`."""
        configs = self.configs()
        if config:
            matches = [c for c in configs if c.startswith(config)]
            if len(matches) != 1:
                known = ", ".join(c[:16] for c in configs) or "none"
                what = "matches no" if not matches else "matches more than one"
                raise MixedConfigurationsError(self.out, f"config {config!r} {what} configuration of the index ({known})")
            return matches[0]
        if len(configs) > 1:
            listing = ", ".join(f"{c[:16]} ({n} rows)" for c, n in sorted(configs.items()))
            raise MixedConfigurationsError(
                self.out, f"the index holds rows of {len(configs)} ingest configurations ({listing}); "
                "choose one with --config FINGERPRINT (a search never mixes configurations)"
            )
        return next(iter(configs), None)

    def row(self, chunk_id: str) -> dict[str, Any] | None:
        """The row of ``chunk_id`` (the columns of a hit), or None."""
        self.sync()
        with self.reading():
            rows = (self.table.search().where(f"chunk_id = {sql_string(chunk_id)}")
                    .select(list(ROW_COLUMNS)).limit(1).to_list())
        return rows[0] if rows else None

    def rows(self, chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The whole rows of ``chunk_ids`` (every column but the vectors: what
        :func:`grounded.io.chunk_codec.chunk_from_row` reads), by chunk id; an id the table does
        not hold is left out."""
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            return {}
        self.sync()
        columns = [c for c in self.table.schema.names if c not in VECTOR_COLUMNS]
        where = f"chunk_id IN ({', '.join(sql_string(i) for i in ids)})"
        with self.reading():
            found = self.table.search().where(where).select(columns).limit(None).to_list()
        return {str(r["chunk_id"]): r for r in found}

    def records(self, hits: Sequence[Hit]) -> list[Chunk]:
        """The :class:`~grounded.model.Chunk` of each hit, every field of the chunk
        field table read from its row (:meth:`rows`, :func:`~grounded.io.chunk_codec.chunk_from_row`);
        a hit whose row is gone (a re-ingest published since the search) gets the record of its own
        fields (:func:`~grounded.search.hit.hit_chunk`: text, pages, boxes, heading path)."""
        rows = self.rows([h.chunk_id for h in hits])
        return [
            chunk_from_row(rows[h.chunk_id], f"{self.out / 'lancedb'} row") if h.chunk_id in rows
            else hit_chunk(h)
            for h in hits
        ]

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Errors of LanceDB while reading (a damaged or truncated table file) as
        :class:`NotAnIndexError` naming the table; grounded's own typed errors pass through."""
        try:
            yield
        except GroundedError:
            raise
        except (OSError, RuntimeError, ValueError) as exc:
            raise NotAnIndexError(
                self.out / "lancedb", f"cannot read the LanceDB table: {_one_line(exc)[:300]}; "
                "re-run `grounded ingest` (with --replace if it keeps failing)"
            ) from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _vector_column(schema: Any) -> tuple[str | None, int | None]:
    import pyarrow as pa

    for name in VECTOR_COLUMNS:
        if name in schema.names:
            kind = schema.field(name).type
            if pa.types.is_fixed_size_list(kind) and pa.types.is_floating(kind.value_type):
                return name, int(kind.list_size)
    return None, None
