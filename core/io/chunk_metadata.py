"""Chunk boxes and parse trees as vector-store metadata (used by both framework adapters).

Two forms of the same payload:

* **flat** (default): every list becomes a compact JSON string and every other value is a scalar,
  so any vector store keeps it (Chroma, ``filter_complex_metadata``, SQL-backed stores);
* **nested** (``flat=False``): ``boxes`` is a list of small dicts, lists stay lists - for
  in-memory stores and JSON document stores.

A box dict uses short keys: ``p`` page (1-based), ``b`` ``[left, top, right, bottom]`` fractions of
the page (origin top-left, rounded to 5 decimals ~ 0.01 pt), ``s`` its line boxes (omitted when the
box is a single line), ``m`` box mode, ``e`` element id, ``h`` 1 for a prepended heading.
:func:`boxes_from_metadata` reads either form (and full ``ParsingBoundingBox.to_dict`` dicts) back.

``text_hash`` (:data:`TEXT_HASH_KEY`) is a short hash of the exact text the boxes belong to (a
Document's ``page_content``, a node's text). A splitter that copies metadata onto parts of that
text (LangChain's ``RecursiveCharacterTextSplitter``, LlamaIndex's ``SentenceSplitter``) copies the
hash too, so ``boxes_from_metadata(metadata, text=part_text)`` sees the mismatch and returns no
boxes (one :class:`GroundingWarning`) instead of the whole parent's boxes.
"""

from __future__ import annotations

import base64
import json
import re
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SchemaError
from ..model.boxes import ParsingBoundingBox
from ..model.chunk import Chunk
from ..model.chunk_fields import FIELD_BY_KEY, FIELDS, STORED_KEYS, embed_hidden_keys, resplit_keys
from ..model.chunk_fields import LIST_KEYS as _FIELD_LIST_KEYS
from ..model.elements import ParsingResult, ParsingResultType
from ..model.record import ChunkRecord, text_hash
from .codec import dumps_parsing_result, loads_parsing_result

__all__ = [
    "BOXES_KEY",
    "FURNITURE_BOXES_KEY",
    "TEXT_HASH_KEY",
    "GroundingWarning",
    "text_hash",
    "ChunkRecord",
    "pdf_metadata",
    "document_info",
    "recorded_info",
    "SOURCE_INFO_KEY",
    "PDF_METADATA_KEYS",
    "LIST_KEYS",
    "PAYLOAD_KEYS",
    "CHUNK_GROUNDING_KEYS",
    "TREE_KEY",
    "boxes_to_metadata",
    "boxes_from_metadata",
    "chunk_metadata",
    "flatten_metadata",
    "unflatten_metadata",
    "with_list_pages",
    "encode_tree",
    "decode_tree",
    "text_tree",
    "source_info",
    "chunk_from_metadata",
    "record_from_metadata",
    "record_to_row",
    "record_from_row",
    "record_from_store",
    "chunk_from_store",
    "part_metadata",
    "part_fields",
    "box_struct",
]

BOXES_KEY = "boxes"
#: boxes that grounding found for a chunk outside the parse tree (page furniture)
FURNITURE_BOXES_KEY = "grounding_furniture_boxes"
#: short hash of the exact text the boxes were made for (see :func:`text_hash`)
TEXT_HASH_KEY = "text_hash"
#: a compressed parse tree kept on a source document so a splitter can chunk it with boxes
TREE_KEY = "grounded_tree"
#: keys whose flat-metadata value is a JSON string (from the field table)
LIST_KEYS = _FIELD_LIST_KEYS
#: keys of chunks whose text was grounded after it was written (the ``vision`` strategy's model
#: chunks), from the field table
CHUNK_GROUNDING_KEYS = tuple(k for k in STORED_KEYS if k == "grounded" or k.startswith(("grounding_", "vision_")))
#: machine payload: never useful to an embedder (the field table's ``embed`` column, plus the tree)
PAYLOAD_KEYS = (*embed_hidden_keys(), TREE_KEY)
_DECIMALS = 5
_TREE_PREFIX = "z2:"


class GroundingWarning(UserWarning):
    """Boxes were withheld because they do not belong to the text at hand (it was re-split or
    edited after grounding); highlighting them would point at the wrong region. The message has its
    control characters escaped (a ``file_path`` with a newline or an ANSI escape reaches no terminal raw)."""

    def __init__(self, *args: object) -> None:
        from ..errors import escape_controls

        super().__init__(*(escape_controls(a) if isinstance(a, str) else a for a in args))


_STALE_MESSAGE = (
    "boxes withheld: the text differs from the text its boxes were made for (metadata 'text_hash'), "
    "so it was re-split or edited after grounding and the boxes would show another region. Split with "
    "GroundedTextSplitter / GroundedNodeParser to get the boxes of every part."
)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _ltrb(box: ParsingBoundingBox) -> list[float]:
    return [round(box.left, _DECIMALS), round(box.top, _DECIMALS), round(box.right, _DECIMALS), round(box.bottom, _DECIMALS)]


def _box_dict(box: ParsingBoundingBox, line_spans: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"p": box.page, "b": _ltrb(box)}
    if line_spans and box.spans:
        lines = [_ltrb(s) for s in box.spans]
        if len(lines) > 1 or lines[0] != d["b"]:
            d["s"] = lines
    if box.mode is not None:
        d["m"] = box.mode
    if box.element_id is not None:
        d["e"] = box.element_id
    if box.is_heading:
        d["h"] = 1
    return d


def boxes_to_metadata(
    geom: Iterable[ParsingBoundingBox], flat: bool = False, *, line_spans: bool = True
) -> list[dict[str, Any]] | str:
    """Chunk boxes -> compact dicts (nested) or one compact JSON string (``flat=True``).

    Character extents (``char_x``) are dropped: highlighting needs lines, not characters.
    ``line_spans=False`` keeps only one box per page run (smaller, coarser).
    """
    out = [_box_dict(b, line_spans) for b in geom]
    return _compact(out) if flat else out


def _ltrb_box(page: int, values: Sequence[Any], **kwargs: Any) -> ParsingBoundingBox:
    left, top, right, bottom = (float(v) for v in values)
    return ParsingBoundingBox(page, left, top, right, bottom, **kwargs)


def _box_from_compact(d: Mapping[str, Any]) -> ParsingBoundingBox:
    page = int(d["p"])
    spans = [_ltrb_box(page, s) for s in d.get("s", ())]
    return _ltrb_box(page, d["b"], spans=spans, mode=d.get("m"), element_id=d.get("e"), is_heading=bool(d.get("h", 0)))


def _box_from_any(d: Any, where: str = "box") -> ParsingBoundingBox:
    if isinstance(d, ParsingBoundingBox):
        return d
    if isinstance(d, Mapping):
        if "p" in d and "b" in d:
            return _box_from_compact(d)
        if "heading" in d and "left" in d:  # the Parquet / LanceDB box struct
            return _box_from_struct(d, where)
        if "page" in d:
            return ParsingBoundingBox.from_dict(dict(d))
    raise SchemaError(f"not a grounded box: {str(d)[:80]!r}")


def boxes_from_metadata(meta_or_value: Any, text: str | None = None) -> list[ParsingBoundingBox]:
    """Boxes from a metadata mapping (reads its ``boxes`` key) or from the value itself: a flat JSON
    string, a list of compact dicts, a list of ``ParsingBoundingBox.to_dict`` dicts or of boxes.

    With ``text`` (the Document's ``page_content`` / the node's text) and a mapping that records
    ``text_hash``, boxes made for another text (a part of a re-split chunk that copied its parent's
    metadata) are not returned: ``[]`` and one :class:`GroundingWarning`. Without ``text_hash`` (or
    without ``text``) the boxes are returned unchecked.

    A mapping without ``boxes`` gives ``[]``; anything unreadable raises :class:`SchemaError`.
    """
    value = meta_or_value
    if isinstance(value, Mapping) and not ("p" in value and "b" in value):
        if text is not None:
            recorded = value.get(TEXT_HASH_KEY)
            if recorded is not None and value.get(BOXES_KEY) and str(recorded) != text_hash(text):
                warnings.warn(_STALE_MESSAGE, GroundingWarning, stacklevel=2)
                return []
        value = value.get(BOXES_KEY)
        if value is None:
            return []
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"box metadata is not valid JSON ({exc})") from exc
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, Sequence):
        raise SchemaError(f"box metadata must be a list or a JSON string, got {type(value).__name__}")
    try:
        return [_box_from_any(d, f"boxes[{i}]") for i, d in enumerate(value)]
    except SchemaError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"box metadata is malformed ({type(exc).__name__}: {exc})") from exc


def chunk_metadata(chunk: Chunk | ChunkRecord, flat: bool = True, *, line_spans: bool = True, text: str | None = None) -> dict[str, Any]:
    """The metadata an adapter attaches to a chunk's node/document: every stored field of the
    field table (:mod:`grounded.model.chunk_fields`) that has a value - ``chunk_id``, ``strategy``,
    ``strategy_params``, ``token_count``, ``start_char``/``end_char`` (body offsets in the document
    text), ``body_start`` (body offset inside the chunk content), ``pages``, ``page_start``/``page_end``
    (1-based ints, for range filters), ``section`` (heading path joined with " > "),
    ``heading_path``, ``element_ids``, ``element_spans``, ``heading_ids``, ``boxes``, the grounding and
    vision details, and ``text_hash`` of ``text`` (the text the adapter stores: default the chunk
    content). Absent values (None, empty lists) and fields another stored field gives back (the field table's ``implied_by``: ``heading_path``
    from ``section``) are left out; :func:`record_from_metadata` fills them in.

    ``flat=True`` (default) gives scalars only (lists as compact JSON strings): safe for every
    vector store; ``flat=False`` keeps lists.
    """
    record = chunk
    out: dict[str, Any] = {}
    for f in FIELDS:
        if f.kind == "text":
            continue
        value: Any = text_hash(text) if f.key == TEXT_HASH_KEY and text is not None else getattr(record, f.attr)
        if value is None or (isinstance(value, (list, dict)) and not value and f.key not in _KEPT_EMPTY):
            continue
        if f.implied_by and _IMPLIED[f.key](record):
            continue
        if f.kind == "boxes":
            out[f.key] = boxes_to_metadata(value, flat=flat, line_spans=line_spans)
        elif f.kind == "json" and flat:
            out[f.key] = _compact(value)
        else:
            out[f.key] = value
    return out


#: list keys written even when empty (readers and filters expect them on every chunk)
_KEPT_EMPTY = frozenset({"pages", "element_ids", BOXES_KEY})
#: when a field with ``implied_by`` (the field table) is given back exactly by that field
_IMPLIED: dict[str, Callable[[ChunkRecord], bool]] = {
    "heading_path": lambda r: all(h and " > " not in h for h in r.heading_path),
}


#: the fields a chunk's place in the document gives (offsets, pages, boxes, element ids): the field
#: table's ``recompute`` keys less the id, the token count and the text hash
_PLACE_KEYS = frozenset(resplit_keys("recompute")) - {"chunk_id", "token_count", TEXT_HASH_KEY}


def part_fields(record: ChunkRecord, flat: bool = True, *, line_spans: bool = True) -> dict[str, Any]:
    """The chunk fields an adapter writes on a part it made (a node/Document of a wrapped or
    re-split splitter), from the part's ``record``: :func:`chunk_metadata`, less what the part
    does not know. A part not located in the document text (``start_char`` None: grounding refused
    it, or it is page furniture only) gets no place fields (offsets, ``body_start``, pages,
    ``page_start``/``page_end``, boxes, element ids) rather than empty ones; a part with no heading
    path gets no ``section`` (it may keep its parent's). The caller adds its surface's own keys."""
    out = chunk_metadata(record, flat, line_spans=line_spans)
    if record.start_char is None:
        out = {k: v for k, v in out.items() if k not in _PLACE_KEYS}
    if not record.heading_path:
        out.pop("section", None)
    return out


def flatten_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Copy of ``meta`` whose list/dict values are compact JSON strings (flat-store safe)."""
    return {k: _compact(v) if isinstance(v, (list, tuple, dict)) else v for k, v in meta.items()}


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


def _char_x_holders(data: Any) -> Iterator[dict[str, Any]]:
    """Dicts holding a ``char_x`` value, in one fixed order (iterative: deep trees do not recurse)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "char_x" in item:
                yield item
            stack.extend(reversed([v for v in item.values() if isinstance(v, (dict, list))]))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def encode_tree(root: ParsingResult) -> str:
    """A parse tree as one ASCII string: lossless JSON plus all character extents as one
    delta-coded binary stream, both zlib-compressed (3-4x smaller than the JSON)."""
    data = json.loads(dumps_parsing_result(root))
    blobs: list[bytes] = []
    for holder in _char_x_holders(data):
        raw = base64.b64decode(holder["char_x"])
        blobs.append(raw)
        holder["char_x"] = len(raw) // 2
    values = np.frombuffer(b"".join(blobs), dtype="<u2")
    deltas = np.diff(values, prepend=np.uint16(0)).astype("<u2")  # wraps mod 2**16, exactly invertible
    text = zlib.compress(_compact(data).encode("utf-8"), 9)
    chars = zlib.compress(deltas.tobytes(), 9)
    return f"{_TREE_PREFIX}{base64.b64encode(text).decode('ascii')}.{base64.b64encode(chars).decode('ascii')}"


def decode_tree(value: str, source: str = "<metadata>") -> ParsingResult:
    """Inverse of :func:`encode_tree`; also accepts the plain JSON of ``dumps_parsing_result``."""
    if not isinstance(value, str):
        raise SchemaError(f"{source}: a stored parse tree must be a string, got {type(value).__name__}")
    if not value.startswith(_TREE_PREFIX):
        return loads_parsing_result(value, source=source)
    try:
        text_part, chars_part = value[len(_TREE_PREFIX) :].split(".")
        data = json.loads(zlib.decompress(base64.b64decode(text_part, validate=True)))
        deltas = np.frombuffer(zlib.decompress(base64.b64decode(chars_part, validate=True)), dtype="<u2")
        values = np.cumsum(deltas, dtype=np.uint16).astype("<u2").tobytes()
        pos = 0
        for holder in _char_x_holders(data):
            n = 2 * int(holder["char_x"])
            if pos + n > len(values):
                raise ValueError("character extents are truncated")
            holder["char_x"] = base64.b64encode(values[pos : pos + n]).decode("ascii")
            pos += n
        if pos != len(values):
            raise ValueError("character extents do not match the tree")
    except (ValueError, TypeError, zlib.error) as exc:
        raise SchemaError(f"{source}: stored parse tree is corrupt ({exc})") from exc
    return loads_parsing_result(_compact(data), source=source)


def text_tree(text: str) -> ParsingResult:
    """A parse tree for plain text without a PDF behind it: ROOT -> one PARAGRAPH holding ``text``
    verbatim, so the chunker's offsets index ``text`` itself (chunks get no boxes)."""
    root = ParsingResult("root", ParsingResultType.ROOT)
    if text.strip():
        root.add_child(ParsingResult("text-0", ParsingResultType.PARAGRAPH, text))
    return root


def source_info(root: ParsingResult) -> dict[str, Any]:
    """What a parse tree's root says about its source: ``path``, ``name``, ``sha256``, ``parser``,
    ``parser_version``, ``page_count`` (empty strings / 0 when unknown)."""
    meta = root.metadata
    raw_source = meta.get("source")
    source: Mapping[str, Any] = raw_source if isinstance(raw_source, Mapping) else {}
    path = str(source.get("path", ""))
    return {
        "path": path,
        "name": str(source.get("name") or (path.replace("\\", "/").rsplit("/", 1)[-1] if path else "")),
        "sha256": str(source.get("sha256", "")),
        "parser": str(meta.get("parser", "")),
        "parser_version": str(meta.get("parser_version", "")),
        "page_count": int(meta.get("page_count", 0)),
    }


def record_from_metadata(content: str, meta: Mapping[str, Any], chunk_id: str | None = None) -> ChunkRecord:
    """The :class:`~grounded.model.record.ChunkRecord` of a retrieved node/document (text +
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
        values[f.attr] = _typed(f.attr, f.key, plain[f.key])
    values["id"] = str(chunk_id if chunk_id is not None else plain.get("chunk_id", ""))
    if "heading_path" not in plain and plain.get("section"):
        values["heading_path"] = str(plain["section"]).split(" > ")
    if "element_ids" not in plain and values.get("element_spans"):
        values["element_ids"] = [str(s[0]) for s in values["element_spans"]]
    if not values.get("pages") and plain.get("page_start"):
        values["pages"] = list(range(int(plain["page_start"]), int(plain.get("page_end") or plain["page_start"]) + 1))
    return ChunkRecord(content=content, **values)


_INT_FIELDS = frozenset({"start_char", "end_char", "body_start", "token_count", "index", "vision_batch", "vision_merged"})


def _typed(attr: str, key: str, value: Any) -> Any:
    """A stored value with the record field's type (Arrow gives numpy/list types, JSON gives
    floats for ints written by other tools)."""
    try:
        if attr in _INT_FIELDS:
            return int(value)
        if attr == "grounding_score":
            return float(value)
        if attr == "grounded":
            return bool(value)
        if attr in ("pages", "vision_pages"):
            return [int(p) for p in value]
        if attr in ("heading_path", "heading_ids", "element_ids"):
            return [str(v) for v in value]
        if attr in ("element_spans", "grounding_spans", "grounding_furniture_boxes"):
            return [list(v) for v in value]
        if attr in ("strategy_params", "extra"):
            return dict(value)
        return str(value)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"chunk metadata {key!r} is malformed ({type(exc).__name__}: {exc})") from exc


def chunk_from_metadata(content: str, meta: Mapping[str, Any], chunk_id: str | None = None) -> Chunk:
    """A :class:`~grounded.model.Chunk` back from a retrieved node/document (text + metadata in
    nested or flat form), ready for ``grounded.attribution.render``/``highlight``; see
    :func:`record_from_metadata`."""
    return record_from_metadata(content, meta, chunk_id).to_chunk()


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
    own = chunk_metadata(ChunkRecord.of_boxes("", text, list(boxes or ()), **values), flat=flat, text=text)
    known = {"text_hash", *(["token_count"] if token_count is not None else []),
             *(["start_char", "end_char", "body_start"] if span is not None else []),
             *([BOXES_KEY, "pages", "page_start", "page_end", "element_ids"] if boxes is not None else [])}
    out.update({k: v for k, v in own.items() if k in known})
    return out


# -- store rows (ingest Parquet / LanceDB) ----------------------------------------------------------
def box_struct(b: ParsingBoundingBox) -> dict[str, Any]:
    """One box as the Parquet/LanceDB box struct (``grounded.ingest.rows.box_type``)."""
    return {
        "page": int(b.page),
        "left": float(b.left),
        "top": float(b.top),
        "right": float(b.right),
        "bottom": float(b.bottom),
        "mode": b.mode,
        "heading": bool(b.is_heading),
        "element_id": b.element_id,
        "spans": [{"left": float(s.left), "top": float(s.top), "right": float(s.right), "bottom": float(s.bottom)} for s in b.spans],
    }


def _fraction(d: Mapping[str, Any], key: str, where: str) -> float:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SchemaError(f"{where}: {key!r} must be a number, got {value!r}")
    return float(value)


def _box_from_struct(d: Mapping[str, Any], where: str = "box") -> ParsingBoundingBox:
    """A Parquet/LanceDB box struct (:func:`box_struct`) back; a malformed one raises
    :class:`SchemaError` naming ``where`` and the field."""
    page = d.get("page")
    if isinstance(page, bool) or not isinstance(page, (int, np.integer)) or page < 1:
        raise SchemaError(f"{where}: 'page' must be an integer >= 1, got {page!r}")
    page = int(page)
    sides = ("left", "top", "right", "bottom")
    spans = [_ltrb_box(page, [_fraction(s, k, f"{where}.spans[{i}]") for k in sides]) for i, s in enumerate(d.get("spans") or ())]
    left, top, right, bottom = (_fraction(d, k, where) for k in sides)
    return ParsingBoundingBox(
        page, left, top, right, bottom,
        spans=spans, mode=d.get("mode"), element_id=d.get("element_id"), is_heading=bool(d.get("heading") or d.get("is_heading")),
    )


def record_to_row(record: ChunkRecord | Chunk) -> dict[str, Any]:
    """One chunk as a store row: a value per field-table key (Parquet/LanceDB column), plus
    ``body``. ``json`` columns hold compact JSON (None when empty); boxes are box structs."""
    rec = record
    row: dict[str, Any] = {}
    for f in FIELDS:
        value = getattr(rec, f.attr)
        if f.kind == "boxes":
            value = [box_struct(b) for b in value]
        elif f.arrow == "json":
            value = _compact(value) if value else None
        row[f.key] = value
    row["body"] = rec.body
    return row


def record_from_row(row: Mapping[str, Any], where: str = "store row") -> ChunkRecord:
    """Inverse of :func:`record_to_row`: a row read from the ingest Parquet or the LanceDB table
    (``pyarrow`` ``to_pylist()`` dicts, a pandas row); extra columns (embedding, source) are ignored.
    A malformed value raises :class:`SchemaError` naming ``where``, the chunk id and the field."""
    content = row.get("text")
    if not isinstance(content, str):
        raise SchemaError(f"{where} {str(row.get('chunk_id'))[:40]!r}: no 'text' column")
    meta = {k: _plain(v) for k, v in row.items() if k in FIELD_BY_KEY}
    try:
        return record_from_metadata(content, meta)
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


def record_from_store(item: Any) -> ChunkRecord:
    """The :class:`ChunkRecord` of anything a chunk is stored as: a LlamaIndex node (or
    ``NodeWithScore``), a LangChain ``Document``, a store row (an ingest Parquet / LanceDB row dict,
    a search hit's row), a chunks-JSON chunk dict, a :class:`~grounded.model.Chunk` or a record.
    Anything else raises :class:`SchemaError`."""
    if isinstance(item, Chunk):  # ChunkRecord is the same class: a copy, as for every other input
        return item.replace()
    node = getattr(item, "node", None)
    if node is not None and hasattr(node, "metadata") and hasattr(item, "score"):
        item = node  # a LlamaIndex NodeWithScore
    if hasattr(item, "page_content") and hasattr(item, "metadata"):  # LangChain Document
        return record_from_metadata(item.page_content, item.metadata, item.metadata.get("chunk_id") or getattr(item, "id", None))
    if hasattr(item, "get_content") and hasattr(item, "metadata"):  # LlamaIndex node
        text = item.get_content(metadata_mode="none")
        meta = item.metadata
        return record_from_metadata(text, meta, meta.get("chunk_id") or item.node_id)
    if isinstance(item, Mapping):
        if "content" in item and "metadata" in item:
            return Chunk.from_dict(dict(item))
        return record_from_row(item)
    raise SchemaError(f"not a stored chunk: {type(item).__name__}")


def chunk_from_store(item: Any) -> Chunk:
    """The :class:`~grounded.model.Chunk` of a store row, node or document (see
    :func:`record_from_store`): one call from a search hit to ``grounded.attribution.highlight``."""
    return record_from_store(item).to_chunk()


#: PDF document metadata keys, named as LangChain's ``PyMuPDFLoader`` names them
PDF_METADATA_KEYS = ("title", "author", "subject", "keywords", "creator", "producer", "creationdate", "moddate")


_PDF_DATE = re.compile(
    r"^D:(?P<y>\d{4})(?P<mo>\d{2})?(?P<d>\d{2})?(?P<h>\d{2})?(?P<mi>\d{2})?(?P<s>\d{2})?"
    r"(?:(?P<z>[Zz])|(?P<sign>[+-])(?P<th>\d{2})'?(?P<tm>\d{2})?'?)?"
)


def _pdf_date(value: str) -> str:
    """``D:20230115093000+01'00'`` -> ``2023-01-15T09:30:00+01:00`` (ISO 8601, as ``PyMuPDFLoader``
    writes what it can parse; also ``Z``, ``Z00'00'`` and dates without seconds or zone); other
    values are returned stripped."""
    raw = value.strip()
    match = _PDF_DATE.match(raw)
    if not match:
        return raw
    g = match.groupdict()
    try:
        tz: timezone | None = None
        if g["z"]:
            tz = timezone.utc
        elif g["sign"]:
            offset = timedelta(hours=int(g["th"]), minutes=int(g["tm"] or 0))
            tz = timezone(offset if g["sign"] == "+" else -offset)
        moment = datetime(
            int(g["y"]), int(g["mo"] or 1), int(g["d"] or 1), int(g["h"] or 0), int(g["mi"] or 0), int(g["s"] or 0), tzinfo=tz
        )
    except ValueError:
        return raw
    return moment.isoformat("T")


#: key of a parse tree's ``metadata["source"]`` under which the parse records the PDF's document
#: information as read while it had the PDF open (PyMuPDF's ``Document.metadata``, raw)
SOURCE_INFO_KEY = "info"
_PYMUPDF_NAMES = {"creationdate": "creationDate", "moddate": "modDate"}


def document_info(raw: Mapping[str, Any]) -> dict[str, str]:
    """:data:`PDF_METADATA_KEYS` of PyMuPDF's ``Document.metadata`` (empty strings when absent);
    dates ISO 8601 like LangChain's ``PyMuPDFLoader``."""
    out: dict[str, str] = {}
    for key in PDF_METADATA_KEYS:
        value = raw.get(_PYMUPDF_NAMES.get(key, key)) or ""
        out[key] = _pdf_date(str(value)) if key in _PYMUPDF_NAMES else str(value).strip()
    return out


def recorded_info(root: ParsingResult) -> dict[str, str] | None:
    """The document information the parse of ``root`` recorded (:data:`SOURCE_INFO_KEY`), or None
    when it recorded none (another parser, or a tree made before it was recorded)."""
    source = root.metadata.get("source")
    raw = source.get(SOURCE_INFO_KEY) if isinstance(source, Mapping) else None
    return document_info(raw) if isinstance(raw, Mapping) else None


def pdf_metadata(
    pdf: str | Path | bytes | None, password: str | None = None, *, root: ParsingResult | None = None
) -> dict[str, str]:
    """The PDF's document information (:data:`PDF_METADATA_KEYS`; empty strings when absent).

    ``root``: the PDF's parse tree; when its parse recorded the information (:func:`recorded_info`)
    that is returned and the PDF is not opened again. Otherwise it is read with PyMuPDF from ``pdf``
    (a path or the PDF bytes; None: empty values). A PDF that cannot be opened gives empty values
    (parsing reports the cause)."""
    recorded = recorded_info(root) if root is not None else None
    if recorded is not None:
        return recorded
    if pdf is None:
        return dict.fromkeys(PDF_METADATA_KEYS, "")
    import pymupdf

    try:
        doc = pymupdf.open(stream=pdf, filetype="pdf") if isinstance(pdf, (bytes, bytearray)) else pymupdf.open(str(pdf))
    except Exception:  # noqa: BLE001 - MuPDF's own errors; the parser raises the typed error
        return dict.fromkeys(PDF_METADATA_KEYS, "")
    try:
        if doc.needs_pass and not (password and doc.authenticate(password)):
            return dict.fromkeys(PDF_METADATA_KEYS, "")
        info = doc.metadata or {}
    finally:
        doc.close()
    return document_info(info)
