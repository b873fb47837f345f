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
import hashlib
import json
import re
import warnings
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SchemaError
from ..model.boxes import ParsingBoundingBox
from ..model.chunk import Chunk
from ..model.elements import ParsingResult, ParsingResultType
from .codec import dumps_parsing_result, loads_parsing_result

__all__ = [
    "BOXES_KEY",
    "FURNITURE_BOXES_KEY",
    "TEXT_HASH_KEY",
    "GroundingWarning",
    "text_hash",
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
    "encode_tree",
    "decode_tree",
    "text_tree",
    "source_info",
    "chunk_from_metadata",
]

BOXES_KEY = "boxes"
#: boxes that grounding found for a chunk outside the parse tree (page furniture)
FURNITURE_BOXES_KEY = "grounding_furniture_boxes"
#: short hash of the exact text the boxes were made for (see :func:`text_hash`)
TEXT_HASH_KEY = "text_hash"
#: a compressed parse tree kept on a source document so a splitter can chunk it with boxes
TREE_KEY = "grounded_tree"
#: list-valued keys of :func:`chunk_metadata` (JSON strings in flat mode)
LIST_KEYS = ("pages", "heading_path", "element_ids", "heading_ids", BOXES_KEY)
#: keys of chunks whose text was grounded after it was written (the ``vision`` strategy's model
#: chunks): :func:`chunk_metadata` passes them on as they are
CHUNK_GROUNDING_KEYS = (
    "grounded", "grounding_status", "grounding_score", "grounding_reason", "grounding_spans",
    "vision_continues", "vision_batch", "vision_pages", "vision_merged", "vision_issues", "vision_text",
)
#: machine payload of :func:`chunk_metadata`: never useful to an embedder or an LLM
PAYLOAD_KEYS = (
    BOXES_KEY,
    "chunk_id",
    "strategy",
    "token_count",
    "start_char",
    "end_char",
    "body_start",
    "page_start",
    "page_end",
    "heading_path",
    "element_ids",
    "heading_ids",
    TEXT_HASH_KEY,
    TREE_KEY,
    *CHUNK_GROUNDING_KEYS,
)
_DECIMALS = 5
_TREE_PREFIX = "z2:"


class GroundingWarning(UserWarning):
    """Boxes were withheld because they do not belong to the text at hand (it was re-split or
    edited after grounding); highlighting them would point at the wrong region."""


def text_hash(text: str) -> str:
    """16 hex digits of the sha256 of ``text`` (UTF-8): identifies the exact text boxes belong to."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


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


def _box_from_any(d: Any) -> ParsingBoundingBox:
    if isinstance(d, ParsingBoundingBox):
        return d
    if isinstance(d, Mapping):
        if "p" in d and "b" in d:
            return _box_from_compact(d)
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
        return [_box_from_any(d) for d in value]
    except (KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"box metadata is malformed ({type(exc).__name__}: {exc})") from exc


def chunk_metadata(chunk: Chunk, flat: bool = True, *, line_spans: bool = True, text: str | None = None) -> dict[str, Any]:
    """The metadata an adapter attaches to a chunk's node/document.

    Keys: ``chunk_id``, ``strategy``, ``token_count``, ``start_char``/``end_char`` (body offsets in
    the document text), ``body_start`` (body offset inside the chunk content), ``pages``,
    ``page_start``/``page_end`` (1-based), ``section`` (heading path joined with " > "),
    ``heading_path``, ``element_ids``, ``heading_ids`` (when headings were prepended), ``boxes`` and
    ``text_hash`` of ``text`` (the text the adapter stores: default the chunk content).

    ``flat=True`` (default) gives scalars only (lists as compact JSON strings): safe for every
    vector store; ``flat=False`` keeps lists.
    """
    md = chunk.metadata
    pages = sorted({int(p) for p in md.get("pages") or chunk.pages})
    heading_path = [str(h) for h in md.get("heading_path", ())]
    out: dict[str, Any] = {
        "chunk_id": chunk.id,
        "strategy": md.get("strategy", ""),
        "token_count": int(md.get("token_count", 0)),
        "start_char": int(md["start_char"]),
        "end_char": int(md["end_char"]),
        "body_start": int(md.get("body_start", 0)),
        "pages": pages,
        "page_start": pages[0] if pages else 0,
        "page_end": pages[-1] if pages else 0,
        "section": " > ".join(heading_path),
        "heading_path": heading_path,
        "element_ids": [str(e) for e in md.get("element_ids", ())],
        BOXES_KEY: boxes_to_metadata(chunk.geom, line_spans=line_spans),
        TEXT_HASH_KEY: text_hash(chunk.content if text is None else text),
    }
    if md.get("heading_ids"):
        out["heading_ids"] = [str(h) for h in md["heading_ids"]]
    out.update({k: md[k] for k in CHUNK_GROUNDING_KEYS if k in md})
    return flatten_metadata(out) if flat else out


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


def chunk_from_metadata(content: str, meta: Mapping[str, Any], chunk_id: str | None = None) -> Chunk:
    """A :class:`~grounded.model.Chunk` back from a retrieved node/document (text + metadata in
    nested or flat form), ready for ``grounded.attribution.render``/``highlight``. Boxes recorded
    for another text (see :func:`boxes_from_metadata`) are dropped with a :class:`GroundingWarning`."""
    plain = unflatten_metadata(meta)
    geom = boxes_from_metadata(plain, text=content)
    keep = ("strategy", "token_count", "start_char", "end_char", "body_start", "pages", "heading_path", "element_ids", "heading_ids")
    metadata = {k: plain[k] for k in keep if k in plain}
    return Chunk(id=str(chunk_id or plain.get("chunk_id", "")), content=content, metadata=metadata, geom=geom)


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
