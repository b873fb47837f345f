"""The typed chunk record: every field a chunk has, as a typed attribute.

:class:`~grounded.model.Chunk` keeps its fields in one ``metadata`` dict (the chunkers, grounding
and vision write it); :class:`ChunkRecord` is the same chunk with each field typed, so code that
reads a chunk (the adapters, the store encoders, the highlighter) gets mypy-checked attributes
instead of string keys. ``ChunkRecord.from_chunk(c).to_chunk()`` gives ``c`` back: metadata keys
that are not record fields are kept, as they are, in :attr:`ChunkRecord.extra` (never dropped);
the strategy's parameters are the one mapping ``metadata["strategy_params"]``.

How each field is stored on every surface (flat/nested metadata, Parquet, LanceDB, JSONL), whether
the embedder or the LLM sees it, and what a re-split part does with it is declared once, in
:mod:`grounded.io.chunk_fields`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any

from .boxes import ParsingBoundingBox
from .chunk import Chunk

__all__ = ["ChunkRecord", "RECORD_KEYS", "text_hash", "stored_chunk_dict"]


def text_hash(text: str) -> str:
    """16 hex digits of the sha256 of ``text`` (UTF-8): identifies the exact text boxes belong to."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(eq=True)
class ChunkRecord:
    """One chunk with typed fields (see the module docstring).

    Offsets: ``document_text[start_char:end_char]`` is the body; ``content[body_start:]`` too
    (``body_start`` > 0 when headings were prepended). ``start_char``/``end_char`` are None for a
    chunk grounding refused (its text was not found in the document). ``pages`` are 1-based.
    ``grounding_furniture_boxes`` rows are ``[page, left, top, right, bottom]`` (page text outside
    the parse tree). ``vision_continues`` is the vision model's flag, ``"True"``, ``"False"`` or
    ``"Partial"`` (a string: three values). ``extra``: metadata keys of the chunk that are not record fields (a caller's
    own keys, ``list_split`` of the vision strategy), kept and stored on every surface under the
    one key ``extra``; their values must be JSON values (a writer refuses others with
    :class:`~grounded.errors.SchemaError`). :attr:`text_hash` is derived from ``content``: the
    store encoders write it, readers check it against the text they got."""

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

    # -- derived -------------------------------------------------------------------------------
    @property
    def body(self) -> str:
        return self.content[self.body_start :]

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

    # -- Chunk <-> record ----------------------------------------------------------------------
    @classmethod
    def from_chunk(cls, chunk: Chunk) -> ChunkRecord:
        """The typed record of ``chunk``; metadata keys that are not record fields go to
        :attr:`extra` (a stored ``text_hash`` is not kept: it is derived from the content)."""
        md = chunk.metadata
        values: dict[str, Any] = {k: md[k] for k in _METADATA_FIELDS if k in md and md[k] is not None}
        extra = {k: v for k, v in md.items() if k not in RECORD_KEYS and k != "text_hash"}
        pages = values.pop("pages", None)
        return cls(
            id=str(chunk.id),
            content=chunk.content,
            boxes=list(chunk.geom),
            pages=sorted({int(p) for p in pages}) if pages else sorted({b.page for b in chunk.geom}),
            strategy_params=dict(md.get("strategy_params") or {}),
            extra=extra,
            **values,
        )

    @classmethod
    def of_boxes(cls, id: str, content: str, boxes: list[ParsingBoundingBox], **fields: Any) -> ChunkRecord:
        """A record whose ``boxes`` are given and whose ``pages`` (sorted, once each) and
        ``element_ids`` (of the body boxes, headings left out, in order, once each) are theirs:
        the one rule for a chunk or part made from its boxes. ``fields``: any other field."""
        return cls(
            id=id,
            content=content,
            boxes=list(boxes),
            pages=sorted({int(b.page) for b in boxes}),
            element_ids=list(dict.fromkeys(str(b.element_id) for b in boxes if b.element_id and not b.is_heading)),
            **fields,
        )

    def to_chunk(self) -> Chunk:
        """The :class:`Chunk` of this record - the one factory of chunks: the chunker's metadata
        layout (the fields every chunk has first, then the optional ones in field order when set,
        ``strategy_params`` when there are any, then :attr:`extra`'s keys)."""
        md: dict[str, Any] = {
            "token_count": self.token_count,
            "strategy": self.strategy,
        }
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
        return Chunk(id=self.id, content=self.content, metadata=md, geom=list(self.boxes))

    def to_dict(self) -> dict[str, Any]:
        """The chunks-JSON (version 2) form of this record (see :func:`stored_chunk_dict`)."""
        return stored_chunk_dict(self.to_chunk())

    def replace(self, **changes: Any) -> ChunkRecord:
        return dataclasses.replace(self, **changes)


#: every field name of :class:`ChunkRecord`
RECORD_KEYS: frozenset[str] = frozenset(f.name for f in dataclasses.fields(ChunkRecord))
#: fields read from / written to ``Chunk.metadata`` under their own name
_METADATA_FIELDS = tuple(
    f.name for f in dataclasses.fields(ChunkRecord) if f.name not in {"id", "content", "boxes", "strategy_params", "extra"}
)
_ALWAYS = ("token_count", "strategy", "start_char", "end_char", "body_start", "pages", "element_ids", "heading_path")
_OPTIONAL_FIELDS = tuple(k for k in _METADATA_FIELDS if k not in _ALWAYS)
#: the key order of stored chunk metadata: ``to_chunk``'s, with ``text_hash`` after ``element_spans``
_STORED_ORDER = (
    *_ALWAYS,
    *(k for name in _OPTIONAL_FIELDS for k in ((name, "text_hash") if name == "element_spans" else (name,))),
    "strategy_params",
)


def stored_chunk_dict(chunk: Chunk) -> dict[str, Any]:
    """``chunk`` as chunks JSON version 2 stores it: ``{"id", "content", "metadata", "geom"}``
    with the metadata keys in the record's order (``text_hash`` of the content at its place, a
    stale one replaced) and every other key after them as it is - nothing added, nothing dropped,
    so reading the dict back (and dropping ``text_hash``) gives ``chunk`` again."""
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
    return {"id": chunk.id, "content": chunk.content, "metadata": out, "geom": [b.to_dict() for b in chunk.geom]}
