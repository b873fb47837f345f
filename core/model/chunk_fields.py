"""The one field table of a chunk: how each field of :class:`~grounded.model.Chunk`
is stored on every surface, who sees it, and what a re-split part does with it.

Columns of :data:`FIELDS` (one :class:`FieldSpec` per field):

* ``key``: the name on every store surface (metadata key, Parquet/LanceDB column);
* ``kind``: the metadata encoding - ``scalar`` (str/int/float/bool, the same in flat and nested
  metadata), ``json`` (a list/dict: a compact JSON string in flat metadata, the value itself in
  nested metadata), ``boxes`` (compact box dicts, see :func:`grounded.io.box_codec.boxes_to_metadata`),
  ``text`` (the node text / ``page_content`` / the ``text`` column: not metadata);
* ``type``: the field's value type, from which reading a stored value (:func:`coerce`: Arrow gives
  numpy/list types, JSON floats for ints other tools wrote) and checking chunks JSON
  (:func:`check_metadata`) are derived: ``str``, ``count`` (an int >= 0, checked), ``int``,
  ``float``, ``bool``, ``list[int]`` / ``list[str]`` (checked element by element), ``list[list]``,
  ``dict`` or ``boxes``;
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import SchemaError
from ._checks import _is_int, _kind

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
    "coerce",
    "check_metadata",
    "check_field_table",
]

Kind = Literal["scalar", "json", "boxes", "text"]
Type = Literal["str", "count", "int", "float", "bool", "list[int]", "list[str]", "list[list]", "dict", "boxes"]
Resplit = Literal["inherit", "recompute", "drop"]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One row of the field table (see the module docstring)."""

    attr: str
    key: str
    kind: Kind
    type: Type
    arrow: str
    embed: bool
    llm: bool
    resplit: Resplit
    derived: bool = False
    implied_by: str = ""
    search: bool = False


def _f(attr: str, kind: Kind, type_: Type, arrow: str, resplit: Resplit, *, key: str | None = None, sees: bool = False,
       derived: bool = False, implied_by: str = "", search: bool = False) -> FieldSpec:
    return FieldSpec(attr, key or attr, kind, type_, arrow, sees, sees, resplit, derived, implied_by, search)


#: the field table: order is the column order of the Parquet rows
FIELDS: tuple[FieldSpec, ...] = (
    _f("id", "scalar", "str", "string", "recompute", key="chunk_id"),
    _f("content", "text", "str", "string", "recompute", key="text"),
    _f("start_char", "scalar", "count", "int64", "recompute"),
    _f("end_char", "scalar", "count", "int64", "recompute"),
    _f("body_start", "scalar", "count", "int64", "recompute"),
    _f("pages", "json", "list[int]", "list<int32>", "recompute", sees=True),
    _f("page_start", "scalar", "int", "int32", "recompute", derived=True),
    _f("page_end", "scalar", "int", "int32", "recompute", derived=True),
    _f("boxes", "boxes", "boxes", "boxes", "recompute"),
    _f("section", "scalar", "str", "string", "inherit", sees=True, derived=True, search=True),
    _f("heading_path", "json", "list[str]", "list<string>", "inherit", implied_by="section"),
    _f("heading_ids", "json", "list[str]", "list<string>", "inherit"),
    _f("element_ids", "json", "list[str]", "list<string>", "recompute"),
    _f("element_spans", "json", "list[list]", "json", "recompute"),
    _f("token_count", "scalar", "count", "int32", "recompute"),
    _f("strategy", "scalar", "str", "string", "inherit"),
    _f("strategy_params", "json", "dict", "json", "inherit"),
    _f("index", "scalar", "int", "int32", "drop"),
    _f("text_hash", "scalar", "str", "string", "recompute", derived=True),
    _f("grounded", "scalar", "bool", "bool", "drop"),
    _f("grounding_status", "scalar", "str", "string", "drop"),
    _f("grounding_score", "scalar", "float", "float64", "drop"),
    _f("grounding_reason", "scalar", "str", "string", "drop"),
    _f("grounding_spans", "json", "list[list]", "json", "drop"),
    _f("grounding_furniture_boxes", "json", "list[list]", "json", "drop"),
    _f("vision_continues", "scalar", "str", "string", "drop"),
    _f("vision_batch", "scalar", "int", "int32", "inherit"),
    _f("vision_pages", "json", "list[int]", "list<int32>", "inherit"),
    _f("vision_merged", "scalar", "int", "int32", "drop"),
    _f("vision_issues", "scalar", "str", "string", "drop"),
    _f("vision_text", "scalar", "str", "string", "drop"),
    _f("extra", "json", "dict", "json", "inherit"),
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


#: reads a stored value as its field's type (see :func:`coerce`)
_COERCE: dict[str, Callable[[Any], Any]] = {
    "str": str,
    "count": int,
    "int": int,
    "float": float,
    "bool": bool,
    "list[int]": lambda v: [int(p) for p in v],
    "list[str]": lambda v: [str(x) for x in v],
    "list[list]": lambda v: [list(x) for x in v],
    "dict": dict,
}
_TYPE_BY_ATTR: dict[str, Type] = {f.attr: f.type for f in FIELDS}


def coerce(attr: str, key: str, value: Any) -> Any:
    """A stored value of field ``attr`` with its type (the ``type`` column): Arrow gives numpy/list
    types, JSON gives floats for ints written by other tools. A value that cannot be read raises
    :class:`SchemaError` naming ``key``."""
    try:
        return _COERCE[_TYPE_BY_ATTR[attr]](value)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"chunk metadata {key!r} is malformed ({type(exc).__name__}: {exc})") from exc


#: what :func:`check_metadata` checks: the ``count`` fields, then the ``list[int]``/``list[str]`` ones
_COUNT_KEYS = tuple(f.attr for f in FIELDS if f.type == "count")
_LIST_ITEM: dict[str, tuple[Callable[[Any], bool], str]] = {
    f.attr: ((_is_int, "integers") if f.type == "list[int]" else ((lambda v: isinstance(v, str)), "strings"))
    for f in FIELDS if f.type in ("list[int]", "list[str]")
}


def check_metadata(meta: Mapping[str, Any], length: int, where: str) -> None:
    """The typed keys of a chunks-JSON chunk's ``metadata`` have their field's type (``count``:
    an int >= 0; ``list[int]``/``list[str]``: an array of those) and ``body_start`` lies within the
    content (``length`` characters); anything else raises :class:`SchemaError` naming ``where``."""
    for key in _COUNT_KEYS:
        v = meta.get(key)
        if v is not None and (not _is_int(v) or v < 0):
            raise SchemaError(f"{where}: metadata.{key} must be an integer >= 0, got {_kind(v)} {v!r:.40}")
    body_start = meta.get("body_start")
    if body_start is not None and body_start > length:
        raise SchemaError(f"{where}: metadata.body_start {body_start} lies beyond the content ({length} characters)")
    for key, (ok, what) in _LIST_ITEM.items():
        v = meta.get(key)
        if v is not None and (not isinstance(v, list) or not all(ok(x) for x in v)):
            raise SchemaError(f"{where}: metadata.{key} must be an array of {what}")


def check_field_table(fields_class: type, chunk_class: type) -> None:
    """The table has a row per dataclass field of ``fields_class`` and every derived row is a
    property of ``chunk_class`` (called once :class:`~grounded.model.Chunk` exists)."""
    stored = {f.attr for f in FIELDS if not f.derived}
    record = {f.name for f in dataclasses.fields(fields_class)}
    if stored != record:  # pragma: no cover - a programming error, caught by the import in every test
        raise AssertionError(f"chunk field table and Chunk differ: {sorted(stored ^ record)}")
    for f in FIELDS:
        if f.derived and not isinstance(getattr(chunk_class, f.attr, None), property):
            raise AssertionError(f"derived field {f.attr} is not a Chunk property")  # pragma: no cover
