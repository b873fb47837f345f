"""The one field table of a chunk: how each field of :class:`~grounded.model.Chunk`
is stored on every surface, who sees it, and what a re-split part does with it.

Columns of :data:`FIELDS` (one :class:`FieldSpec` per field):

* ``key``: the name on every store surface (metadata key, Parquet/LanceDB column);
* ``kind``: the metadata encoding - ``scalar`` (str/int/float/bool, the same in flat and nested
  metadata), ``json`` (a list/dict: a compact JSON string in flat metadata, the value itself in
  nested metadata), ``boxes`` (compact box dicts, see :func:`grounded.io.box_codec.boxes_to_metadata`),
  ``text`` (the node text / ``page_content`` / the ``text`` column: not metadata);
* ``arrow``: the Parquet column type (LanceDB reads the same Arrow type): ``string``, ``int32``,
  ``int64``, ``float64``, ``bool``, ``list<int32>``, ``list<string>``, ``boxes`` (the nested box
  struct of :func:`grounded.ingest.rows.box_type`) or ``json`` (a string column of compact JSON);
  ``chunks.jsonl`` / chunks JSON write :meth:`Chunk.to_dict`'s dict (JSON types);
* ``embed`` / ``llm``: whether the embedder / the LLM sees the field when an adapter attaches it;
* ``resplit``: what a part of a re-split chunk (LlamaIndex ``SentenceSplitter``, LangChain splitters)
  does with it: ``inherit`` (the parent's value holds for the part), ``recompute`` (the part's own
  value from the parse tree; withheld when there is no tree), ``drop`` (it belongs to the parent only);
* ``implied_by``: the field whose stored value gives this one back exactly (``heading_path`` from
  ``section`` when no heading holds " > "): node/document metadata leaves it out (no field stored
  twice under two names), :func:`grounded.io.chunk_codec.chunk_from_metadata` fills it in;
  store rows keep every column;
* ``derived``: computed from other fields (written for filters and readers, never read back;
  ``text_hash`` is read to check the text it came with);
* ``search``: the field's value is context in what search reads -- written on its own line before
  the chunk body in the text the full-text (BM25) index holds and ``grounded ingest --embed`` embeds
  (:func:`grounded.ingest.rows.search_text`); the stored chunk text stays as it is.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from .chunk import Chunk

__all__ = [
    "FieldSpec",
    "FIELDS",
    "FIELD_BY_KEY",
    "STORED_KEYS",
    "LIST_KEYS",
    "embed_hidden_keys",
    "llm_hidden_keys",
    "resplit_keys",
    "search_keys",
]

Kind = Literal["scalar", "json", "boxes", "text"]
Resplit = Literal["inherit", "recompute", "drop"]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One row of the field table (see the module docstring)."""

    attr: str
    key: str
    kind: Kind
    arrow: str
    embed: bool
    llm: bool
    resplit: Resplit
    derived: bool = False
    implied_by: str = ""
    search: bool = False


def _f(attr: str, kind: Kind, arrow: str, resplit: Resplit, *, key: str | None = None, sees: bool = False,
       derived: bool = False, implied_by: str = "", search: bool = False) -> FieldSpec:
    return FieldSpec(attr, key or attr, kind, arrow, sees, sees, resplit, derived, implied_by, search)


#: the field table: order is the column order of the Parquet rows
FIELDS: tuple[FieldSpec, ...] = (
    _f("id", "scalar", "string", "recompute", key="chunk_id"),
    _f("content", "text", "string", "recompute", key="text"),
    _f("start_char", "scalar", "int64", "recompute"),
    _f("end_char", "scalar", "int64", "recompute"),
    _f("body_start", "scalar", "int64", "recompute"),
    _f("pages", "json", "list<int32>", "recompute", sees=True),
    _f("page_start", "scalar", "int32", "recompute", derived=True),
    _f("page_end", "scalar", "int32", "recompute", derived=True),
    _f("boxes", "boxes", "boxes", "recompute"),
    _f("section", "scalar", "string", "inherit", sees=True, derived=True, search=True),
    _f("heading_path", "json", "list<string>", "inherit", implied_by="section"),
    _f("heading_ids", "json", "list<string>", "inherit"),
    _f("element_ids", "json", "list<string>", "recompute"),
    _f("element_spans", "json", "json", "recompute"),
    _f("token_count", "scalar", "int32", "recompute"),
    _f("strategy", "scalar", "string", "inherit"),
    _f("strategy_params", "json", "json", "inherit"),
    _f("index", "scalar", "int32", "drop"),
    _f("text_hash", "scalar", "string", "recompute", derived=True),
    _f("grounded", "scalar", "bool", "drop"),
    _f("grounding_status", "scalar", "string", "drop"),
    _f("grounding_score", "scalar", "float64", "drop"),
    _f("grounding_reason", "scalar", "string", "drop"),
    _f("grounding_spans", "json", "json", "drop"),
    _f("grounding_furniture_boxes", "json", "json", "drop"),
    _f("vision_continues", "scalar", "string", "drop"),
    _f("vision_batch", "scalar", "int32", "inherit"),
    _f("vision_pages", "json", "list<int32>", "inherit"),
    _f("vision_merged", "scalar", "int32", "drop"),
    _f("vision_issues", "scalar", "string", "drop"),
    _f("vision_text", "scalar", "string", "drop"),
    _f("extra", "json", "json", "inherit"),
)

FIELD_BY_KEY: dict[str, FieldSpec] = {f.key: f for f in FIELDS}
#: every metadata key a chunk writes (``text`` excepted: it is the node text, not metadata)
STORED_KEYS: tuple[str, ...] = tuple(f.key for f in FIELDS if f.kind != "text")
#: keys whose flat-metadata value is a JSON string
LIST_KEYS: tuple[str, ...] = tuple(f.key for f in FIELDS if f.kind in ("json", "boxes"))


def embed_hidden_keys() -> tuple[str, ...]:
    """Chunk metadata keys the embedder does not see."""
    return tuple(f.key for f in FIELDS if f.kind != "text" and not f.embed)


def llm_hidden_keys() -> tuple[str, ...]:
    """Chunk metadata keys the LLM does not see."""
    return tuple(f.key for f in FIELDS if f.kind != "text" and not f.llm)


def resplit_keys(rule: Resplit) -> tuple[str, ...]:
    """Metadata keys a re-split part treats by ``rule``."""
    return tuple(f.key for f in FIELDS if f.kind != "text" and f.resplit == rule)


def search_keys() -> tuple[str, ...]:
    """Keys whose value search reads as context before the body (the ``search`` column)."""
    return tuple(f.key for f in FIELDS if f.search)


def _check_table() -> None:
    stored = {f.attr for f in FIELDS if not f.derived}
    record = {f.name for f in dataclasses.fields(Chunk)}
    if stored != record:  # pragma: no cover - a programming error, caught by the import in every test
        raise AssertionError(f"chunk field table and Chunk differ: {sorted(stored ^ record)}")
    for f in FIELDS:
        if f.derived and not isinstance(getattr(Chunk, f.attr, None), property):
            raise AssertionError(f"derived field {f.attr} is not a Chunk property")  # pragma: no cover


_check_table()
