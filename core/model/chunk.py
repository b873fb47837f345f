"""The chunker's token record, the one chunk type and the chunking result (thesis Fig. 3.5)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import SchemaError
from ._checks import _array, _is_int, _kind, _metadata, _object, _text
from .boxes import ParsingBoundingBox, body_pages
from .chunk_fields import check_field_table, check_metadata


@dataclass(slots=True)
class RichToken:
    """One token of the chunker's stream, tied to its element (thesis Fig. 3.5).

    ``char_start``/``char_end`` locate the token inside the element's ``content``; delimiter
    tokens between elements have ``element_id`` None.
    """

    element_id: str | None
    token_idx: int
    token: int
    text: str
    char_start: int
    char_end: int


def text_hash(text: str) -> str:
    """16 hex digits of the sha256 of ``text`` (UTF-8): identifies the exact text boxes belong to."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(eq=True)
class _ChunkFields:
    """The typed fields of a chunk (see :class:`Chunk`)."""

    id: str
    content: str
    start_char: int | None = None
    end_char: int | None = None
    body_start: int = 0
    token_count: int = 0
    strategy: str = ""
    strategy_params: dict[str, Any] = field(default_factory=dict)
    index: int | None = None
    pages: list[int] = field(default_factory=list)
    boxes: list[ParsingBoundingBox] = field(default_factory=list)
    heading_path: list[str] = field(default_factory=list)
    heading_ids: list[str] = field(default_factory=list)
    element_ids: list[str] = field(default_factory=list)
    element_spans: list[list[Any]] = field(default_factory=list)
    grounded: bool | None = None
    grounding_status: str | None = None
    grounding_score: float | None = None
    grounding_reason: str | None = None
    grounding_spans: list[list[int]] = field(default_factory=list)
    grounding_furniture_boxes: list[list[float]] = field(default_factory=list)
    vision_continues: str | None = None
    vision_batch: int | None = None
    vision_pages: list[int] = field(default_factory=list)
    vision_merged: int | None = None
    vision_issues: str | None = None
    vision_text: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Chunk(_ChunkFields):
    """One retrieval passage with typed fields - the one chunk type of every layer.

    Offsets: ``document_text[start_char:end_char]`` is the body; ``content[body_start:]`` too
    (``body_start`` > 0 when headings were prepended). ``start_char``/``end_char`` are None for a
    chunk grounding refused (its text was not found in the document). ``pages`` are 1-based;
    ``boxes`` (alias ``geom``) the exact source boxes. ``grounding_furniture_boxes`` rows are
    ``[page, left, top, right, bottom]`` (page text outside the parse tree). ``vision_continues``
    is the vision model's flag, ``"True"``, ``"False"`` or ``"Partial"``. ``extra``: the caller's
    own keys (JSON values), kept and stored on every surface under the one key ``extra``.

    :attr:`metadata` is the derived, read-only mapping of the fields (the chunker's layout: the
    fields every chunk has first, then the set optional ones in field order, ``strategy_params``
    when there are any, then ``extra``'s keys); a change goes through the fields
    (``chunk.index = 3``, ``chunk.extra["reviewed_by"] = "dr. a"``, or :meth:`replace`).
    ``Chunk(id, content, metadata, geom)`` - the dict form - reads the fields from ``metadata``
    (unknown keys to ``extra``; a stored ``text_hash`` is derived, not kept) and the boxes from
    ``geom``. How each field is stored on every surface, who sees it and what a re-split part does
    with it is declared once, in :mod:`grounded.model.chunk_fields`.
    """

    def __init__(
        self, id: str, content: str, metadata: Mapping[str, Any] | None = None, geom: list[ParsingBoundingBox] | None = None,
        **fields: Any,
    ) -> None:
        if metadata is not None:
            fields = {**_fields_of(metadata, geom or fields.get("boxes") or []), **fields}
        if geom is not None:
            fields["boxes"] = list(geom)
        super().__init__(id, content, **fields)

    # -- derived -------------------------------------------------------------------------------
    @property
    def body(self) -> str:
        return self.content[self.body_start :]

    @property
    def geom(self) -> list[ParsingBoundingBox]:
        """The boxes (the name of the parse tree's geometry)."""
        return self.boxes

    @geom.setter
    def geom(self, value: list[ParsingBoundingBox]) -> None:
        self.boxes = list(value)

    @property
    def page_start(self) -> int:
        """First page (1-based); 0 when the chunk has no page."""
        return min(self.pages) if self.pages else 0

    @property
    def page_end(self) -> int:
        """Last page (1-based); 0 when the chunk has no page."""
        return max(self.pages) if self.pages else 0

    @property
    def section(self) -> str:
        return " > ".join(self.heading_path)

    @property
    def text_hash(self) -> str:
        """:func:`text_hash` of ``content``: names the exact text the boxes belong to."""
        return text_hash(self.content)

    @property
    def metadata(self) -> ChunkMetadata:
        """The fields as the chunker's metadata mapping (see the class docstring), read-only: a
        snapshot made on each access; set the fields to change it."""
        md: dict[str, Any] = {"token_count": self.token_count, "strategy": self.strategy}
        if self.start_char is not None:
            md["start_char"] = self.start_char
        if self.end_char is not None:
            md["end_char"] = self.end_char
        md["body_start"] = self.body_start
        md["pages"] = list(self.pages)
        md["element_ids"] = list(self.element_ids)
        md["heading_path"] = list(self.heading_path)
        for name in _OPTIONAL_FIELDS:
            value = getattr(self, name)
            if value is not None and value != []:
                md[name] = value
        if self.strategy_params:
            md["strategy_params"] = dict(self.strategy_params)
        md.update(self.extra)
        return ChunkMetadata(md)

    # -- copies ----------------------------------------------------------------------------------
    def replace(self, **changes: Any) -> Chunk:
        """A copy with ``changes``; list and mapping fields are copied, never shared."""
        values = {f.name: _copied(getattr(self, f.name)) for f in dataclasses.fields(_ChunkFields)}
        values.update(changes)
        return Chunk(**values)

    @classmethod
    def of_boxes(cls, id: str, content: str, boxes: list[ParsingBoundingBox], **fields: Any) -> Chunk:
        """A chunk whose ``boxes`` are given and whose ``pages`` (:func:`~.boxes.body_pages`) and
        ``element_ids`` (of the body boxes, headings left out, in order, once each) are theirs:
        the one rule for a chunk or part made from its boxes. ``fields``: any other field."""
        return cls(
            id, content, boxes=list(boxes), pages=body_pages(boxes),
            element_ids=list(dict.fromkeys(str(b.element_id) for b in boxes if b.element_id and not b.is_heading)),
            **fields,
        )

    # -- JSON ------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "metadata": dict(self.metadata),
            "geom": [b.to_dict() for b in self.boxes],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "chunk") -> Chunk:
        """Inverse of :meth:`to_dict`; a malformed dict raises :class:`~grounded.errors.SchemaError`."""
        _object(d, where)
        raw_id = d.get("id")
        if not isinstance(raw_id, str) and not _is_int(raw_id):
            raise SchemaError(f"{where}: " + ("missing 'id'" if "id" not in d else f"'id' must be a string, got {_kind(raw_id)}"))
        where = f"chunk {str(raw_id)!r}"
        content = _text(d, "content", where, required=True) or ""
        metadata = _metadata(d, where)
        check_metadata(metadata, len(content), where)
        geom = [ParsingBoundingBox.from_dict(b, f"{where}: geom[{i}]") for i, b in enumerate(_array(d, "geom", where))]
        return cls(str(raw_id), content, metadata, geom)


class ChunkMetadata(dict[str, Any]):
    """:attr:`Chunk.metadata`: the chunk's fields as a read-only mapping. Every write raises
    :class:`TypeError` (set the field instead); it stays a ``dict`` for readers, so ``json.dumps``,
    pickling and the frameworks' metadata validation take it as it is."""

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("Chunk.metadata is read-only: set the field (chunk.index = 3), chunk.extra[key] for a key of "
                        "your own, or chunk.replace(...)")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = __ior__ = _read_only

    def __reduce__(self) -> Any:  # pickles as the plain dict it shows
        return (dict, (dict(self),))


def _copied(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def _fields_of(md: Mapping[str, Any], boxes: list[ParsingBoundingBox]) -> dict[str, Any]:
    """The fields a metadata mapping of the dict form gives (see :class:`Chunk`)."""
    values: dict[str, Any] = {k: md[k] for k in _METADATA_FIELDS if k in md and md[k] is not None}
    pages = values.pop("pages", None)
    values["pages"] = sorted({int(p) for p in pages}) if pages else body_pages(boxes)
    values["strategy_params"] = dict(md.get("strategy_params") or {})
    values["extra"] = {k: v for k, v in md.items() if k not in FIELD_NAMES and k != "text_hash"}
    return values


#: every field name of :class:`Chunk`
FIELD_NAMES: frozenset[str] = frozenset(f.name for f in dataclasses.fields(_ChunkFields))
#: fields read from / written to ``Chunk.metadata`` under their own name
_METADATA_FIELDS = tuple(
    f.name for f in dataclasses.fields(_ChunkFields) if f.name not in {"id", "content", "boxes", "strategy_params", "extra"}
)
_ALWAYS = ("token_count", "strategy", "start_char", "end_char", "body_start", "pages", "element_ids", "heading_path")
_OPTIONAL_FIELDS = tuple(k for k in _METADATA_FIELDS if k not in _ALWAYS)
#: the key order of stored chunk metadata: ``metadata``'s, with ``text_hash`` after ``element_spans``
_STORED_ORDER = (
    *_ALWAYS,
    *(k for name in _OPTIONAL_FIELDS for k in ((name, "text_hash") if name == "element_spans" else (name,))),
    "strategy_params",
)


def stored_chunk_dict(chunk: Chunk) -> dict[str, Any]:
    """``chunk`` as chunks JSON version 2 stores it: ``{"id", "content", "metadata", "geom"}``
    with the metadata keys in the stored order (``text_hash`` of the content at its place) and
    every other key after them as it is - nothing added, nothing dropped, so reading the dict back
    gives ``chunk`` again."""
    md = chunk.metadata
    out: dict[str, Any] = {}
    for key in _STORED_ORDER:
        if key == "text_hash":
            out[key] = text_hash(chunk.content)
        elif key in md:
            out[key] = md[key]
    for key, value in md.items():
        if key not in out:
            out[key] = value
    return {"id": chunk.id, "content": chunk.content, "metadata": out, "geom": [b.to_dict() for b in chunk.boxes]}


@dataclass(eq=True)
class ChunkingResult:
    """All chunks of one document plus metadata: strategy + parameters, tokenizer, and the root
    metadata of the parse they came from (its ``document`` key)."""

    chunks: list[Chunk] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"metadata": self.metadata, "chunks": [c.to_dict() for c in self.chunks]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChunkingResult:
        """Inverse of :meth:`to_dict`; a malformed dict raises :class:`~grounded.errors.SchemaError`."""
        _object(d, "result")
        chunks = [Chunk.from_dict(c, f"chunks[{i}]") for i, c in enumerate(_array(d, "chunks", "result"))]
        return cls(chunks=chunks, metadata=_metadata(d, "result"))


check_field_table(_ChunkFields, Chunk)
