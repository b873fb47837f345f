"""The chunk codec: a :class:`~grounded.model.Chunk` <-> the metadata dict an adapter attaches to a
node / Document (flat: lists as compact JSON strings; nested: lists kept), <-> a store row (ingest
Parquet / LanceDB), and back from anything a chunk is stored as (:func:`read_stored_chunk`, which reads
what is stored as it is; :func:`grounded.metadata.chunk_of` also re-grounds a re-split part). Which
field is stored how is the field table's (:mod:`grounded.model.chunk_fields`); boxes go through
:mod:`.box_codec`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import SchemaError
from ..model.boxes import ParsingBoundingBox
from ..model.chunk import Chunk, text_hash
from ..model.chunk_fields import FIELD_BY_KEY, FIELDS, STORED_KEYS, coerce, embed_hidden_keys, resplit_keys
from ..model.chunk_fields import LIST_KEYS as _FIELD_LIST_KEYS
from .box_codec import (
    BOXES_KEY,
    TEXT_HASH_KEY,
    box_struct,
    boxes_from_metadata,
    boxes_to_metadata,
    compact_json,
)
from .tree_payload import TREE_KEY

__all__ = [
    "LIST_KEYS",
    "PAYLOAD_KEYS",
    "CHUNK_GROUNDING_KEYS",
    "chunk_metadata",
    "part_fields",
    "part_metadata",
    "flatten_metadata",
    "unflatten_metadata",
    "with_list_pages",
    "chunk_from_metadata",
    "chunk_to_row",
    "chunk_from_row",
    "read_stored_chunk",
]

#: keys whose flat-metadata value is a JSON string (from the field table)
LIST_KEYS = _FIELD_LIST_KEYS
#: keys of chunks whose text was grounded after it was written (the ``vision`` strategy's model
#: chunks), from the field table
CHUNK_GROUNDING_KEYS = tuple(k for k in STORED_KEYS if k == "grounded" or k.startswith(("grounding_", "vision_")))
#: machine payload: never useful to an embedder (the field table's ``embed`` column, plus the tree)
PAYLOAD_KEYS = (*embed_hidden_keys(), TREE_KEY)


def chunk_metadata(chunk: Chunk, flat: bool = True, *, line_spans: bool = True, text: str | None = None) -> dict[str, Any]:
    """The metadata an adapter attaches to a chunk's node/document: every stored field of the
    field table (:mod:`grounded.model.chunk_fields`) that has a value - ``chunk_id``, ``strategy``,
    ``strategy_params``, ``token_count``, ``start_char``/``end_char`` (body offsets in the document
    text), ``body_start`` (body offset inside the chunk content), ``pages``, ``page_start``/``page_end``
    (1-based ints, for range filters), ``section`` (heading path joined with " > "),
    ``heading_path``, ``element_ids``, ``element_spans``, ``heading_ids``, ``boxes``, the grounding and
    vision details, and ``text_hash`` of ``text`` (the text the adapter stores: default the chunk
    content). Absent values (None, empty lists) and fields another stored field gives back (the field table's ``implied_by``: ``heading_path``
    from ``section``) are left out; :func:`chunk_from_metadata` fills them in.

    ``flat=True`` (default) gives scalars only (lists as compact JSON strings): safe for every
    vector store; ``flat=False`` keeps lists.
    """
    out: dict[str, Any] = {}
    for f in FIELDS:
        if f.kind == "text":
            continue
        value: Any = text_hash(text) if f.key == TEXT_HASH_KEY and text is not None else getattr(chunk, f.attr)
        if value is None or (isinstance(value, (list, dict)) and not value and f.key not in _KEPT_EMPTY):
            continue
        if f.implied_by and _IMPLIED[f.key](chunk):
            continue
        if f.kind == "boxes":
            out[f.key] = boxes_to_metadata(value, flat=flat, line_spans=line_spans)
        elif f.kind == "json" and flat:
            out[f.key] = compact_json(value)
        else:
            out[f.key] = value
    return out


#: list keys written even when empty (readers and filters expect them on every chunk)
_KEPT_EMPTY = frozenset({"pages", "element_ids", BOXES_KEY})
#: when a field with ``implied_by`` (the field table) is given back exactly by that field
_IMPLIED: dict[str, Callable[[Chunk], bool]] = {
    "heading_path": lambda r: all(h and " > " not in h for h in r.heading_path),
}


#: the fields a chunk's place in the document gives (offsets, pages, boxes, element ids): the field
#: table's ``recompute`` keys less the id, the token count and the text hash
_PLACE_KEYS = frozenset(resplit_keys("recompute")) - {"chunk_id", "token_count", TEXT_HASH_KEY}


def part_fields(chunk: Chunk, flat: bool = True, *, line_spans: bool = True) -> dict[str, Any]:
    """The chunk fields an adapter writes on a part it made (a node/Document of a wrapped or
    re-split splitter), from the part's ``chunk``: :func:`chunk_metadata`, less what the part
    does not know. A part not located in the document text (``start_char`` None: grounding refused
    it, or it is page furniture only) gets no place fields (offsets, ``body_start``, pages,
    ``page_start``/``page_end``, boxes, element ids) rather than empty ones; a part with no heading
    path gets no ``section`` (it may keep its parent's). The caller adds its surface's own keys."""
    out = chunk_metadata(chunk, flat, line_spans=line_spans)
    if chunk.start_char is None:
        out = {k: v for k, v in out.items() if k not in _PLACE_KEYS}
    if not chunk.heading_path:
        out.pop("section", None)
    return out


def flatten_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Copy of ``meta`` whose list/dict values are compact JSON strings (flat-store safe)."""
    return {k: compact_json(v) if isinstance(v, (list, tuple, dict)) else v for k, v in meta.items()}


def unflatten_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`flatten_metadata` for :data:`LIST_KEYS` (other keys are left alone)."""
    out = dict(meta)
    for key in LIST_KEYS:
        value = out.get(key)
        if isinstance(value, str):
            try:
                out[key] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise SchemaError(f"metadata {key!r} is not valid JSON ({exc})") from exc
    return out


def with_list_pages(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Copy of ``meta`` whose ``pages`` is a list of 1-based ints (the flat JSON string parsed),
    everything else left as it is (``boxes`` stays a compact JSON string): the form for stores that
    take lists of scalars and filter on membership - Chroma >= 0.6 through LangChain's ``Chroma``
    (``filter={"pages": {"$contains": 5}}``) or LangChain's ``InMemoryVectorStore``. Stores that refuse
    list values (LlamaIndex's ``ChromaVectorStore`` checks for flat scalars) take the
    ``page_start``/``page_end`` range filter instead, which works everywhere."""
    out = dict(meta)
    pages = out.get("pages")
    if isinstance(pages, str):
        try:
            pages = json.loads(pages)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"metadata 'pages' is not valid JSON ({exc})") from exc
    if pages is not None:
        if not isinstance(pages, list) or not all(isinstance(p, int) for p in pages):
            raise SchemaError(f"metadata 'pages' is not a list of page numbers: {pages!r}")
        out["pages"] = list(pages)
    return out


def chunk_from_metadata(content: str, meta: Mapping[str, Any], chunk_id: str | None = None) -> Chunk:
    """The :class:`~grounded.model.Chunk` of a retrieved node/document (text +
    metadata in nested or flat form, or a store row's values). Boxes recorded for another text (see
    :func:`boxes_from_metadata`) are dropped with a :class:`GroundingWarning`; a malformed value
    raises :class:`SchemaError` naming the key."""
    plain = unflatten_metadata(meta)
    values: dict[str, Any] = {}
    for f in FIELDS:
        if f.derived or f.kind == "text" or f.key not in plain or plain[f.key] is None:
            continue
        if f.kind == "boxes":
            values[f.attr] = boxes_from_metadata(plain, text=content)
            continue
        values[f.attr] = coerce(f.attr, f.key, plain[f.key])
    values["id"] = str(chunk_id if chunk_id is not None else plain.get("chunk_id", ""))
    if "heading_path" not in plain and plain.get("section"):
        values["heading_path"] = str(plain["section"]).split(" > ")
    if "element_ids" not in plain and values.get("element_spans"):
        values["element_ids"] = [str(s[0]) for s in values["element_spans"]]
    if not values.get("pages") and plain.get("page_start"):
        values["pages"] = list(range(int(plain["page_start"]), int(plain.get("page_end") or plain["page_start"]) + 1))
    return Chunk(content=content, **values)


def part_metadata(
    parent: Mapping[str, Any],
    text: str,
    *,
    span: tuple[int, int] | None = None,
    boxes: Sequence[ParsingBoundingBox] | None = None,
    token_count: int | None = None,
) -> dict[str, Any]:
    """The metadata of a part of a re-split chunk (a splitter copied ``parent`` onto the part whose
    text is ``text``), by the field table's ``resplit`` column: ``inherit`` keys are kept, ``drop``
    keys removed, ``recompute`` keys made from the part's own ``span`` (document-text offsets),
    ``boxes`` and ``token_count`` - and left out when those are not known (never the parent's).
    Keys that are not chunk fields (the source's) are kept. Flat or nested like ``parent``."""
    out = {k: v for k, v in parent.items() if k not in FIELD_BY_KEY or FIELD_BY_KEY[k].resplit == "inherit"}
    flat = any(isinstance(parent.get(k), str) for k in ("pages", BOXES_KEY, "element_ids"))
    values: dict[str, Any] = {}
    if token_count is not None:
        values["token_count"] = int(token_count)
    if span is not None:
        values.update(start_char=int(span[0]), end_char=int(span[1]), body_start=0)
    own = chunk_metadata(Chunk.of_boxes("", text, list(boxes or ()), **values), flat=flat, text=text)
    known = {"text_hash", *(["token_count"] if token_count is not None else []),
             *(["start_char", "end_char", "body_start"] if span is not None else []),
             *([BOXES_KEY, "pages", "page_start", "page_end", "element_ids"] if boxes is not None else [])}
    out.update({k: v for k, v in own.items() if k in known})
    return out


# -- store rows (ingest Parquet / LanceDB) --------------------------------------------------------
def chunk_to_row(chunk: Chunk) -> dict[str, Any]:
    """One chunk as a store row: a value per field-table key (Parquet/LanceDB column), plus
    ``body``. ``json`` columns hold compact JSON (None when empty); boxes are box structs."""
    row: dict[str, Any] = {}
    for f in FIELDS:
        value = getattr(chunk, f.attr)
        if f.kind == "boxes":
            value = [box_struct(b) for b in value]
        elif f.arrow == "json":
            value = compact_json(value) if value else None
        row[f.key] = value
    row["body"] = chunk.body
    return row


def chunk_from_row(row: Mapping[str, Any], where: str = "store row") -> Chunk:
    """Inverse of :func:`chunk_to_row`: a row read from the ingest Parquet or the LanceDB table
    (``pyarrow`` ``to_pylist()`` dicts, a pandas row); extra columns (embedding, source) are ignored.
    A malformed value raises :class:`SchemaError` naming ``where``, the chunk id and the field."""
    content = row.get("text")
    if not isinstance(content, str):
        raise SchemaError(f"{where} {str(row.get('chunk_id'))[:40]!r}: no 'text' column")
    meta = {k: _plain(v) for k, v in row.items() if k in FIELD_BY_KEY}
    try:
        return chunk_from_metadata(content, meta)
    except SchemaError as exc:
        raise SchemaError(f"{where} {row.get('chunk_id')}: {exc}") from exc


def _plain(value: Any) -> Any:
    """numpy arrays/scalars of a pandas row -> lists/scalars."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def read_stored_chunk(item: Any) -> Chunk:
    """The :class:`Chunk` of anything a chunk is stored as: a LlamaIndex node (or
    ``NodeWithScore``), a LangChain ``Document``, a store row (an ingest Parquet / LanceDB row dict,
    a search hit's row), a chunks-JSON chunk dict, or a :class:`~grounded.model.Chunk` (copied).
    Anything else raises :class:`SchemaError`."""
    if isinstance(item, Chunk):  # Chunk is the same class: a copy, as for every other input
        return item.replace()
    node = getattr(item, "node", None)
    if node is not None and hasattr(node, "metadata") and hasattr(item, "score"):
        item = node  # a LlamaIndex NodeWithScore
    if hasattr(item, "page_content") and hasattr(item, "metadata"):  # LangChain Document
        return chunk_from_metadata(item.page_content, item.metadata, item.metadata.get("chunk_id") or getattr(item, "id", None))
    if hasattr(item, "get_content") and hasattr(item, "metadata"):  # LlamaIndex node
        text = item.get_content(metadata_mode="none")
        meta = item.metadata
        return chunk_from_metadata(text, meta, meta.get("chunk_id") or item.node_id)
    if isinstance(item, Mapping):
        if "content" in item and "metadata" in item:
            return Chunk.from_dict(dict(item))
        return chunk_from_row(item)
    raise SchemaError(f"not a stored chunk: {type(item).__name__}")
