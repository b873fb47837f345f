"""The typed chunk record: every field a chunk has, as a typed attribute.

:class:`~grounded.model.Chunk` keeps its fields in one ``metadata`` dict (the chunkers, grounding
and vision write it); :class:`ChunkRecord` is the same chunk with each field typed, so code that
reads a chunk (the adapters, the store encoders, the highlighter) gets mypy-checked attributes
instead of string keys. ``ChunkRecord.from_chunk(c).to_chunk()`` gives ``c`` back (unknown metadata
keys are the strategy's parameters, kept in :attr:`ChunkRecord.strategy_params`).

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

__all__ = ["ChunkRecord", "RECORD_KEYS", "text_hash"]


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
    the parse tree). ``text_hash`` names the exact text the boxes were made for (set by the store
    encoders; None on a chunk fresh from the chunker)."""

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
    text_hash: str | None = None
    grounded: bool | None = None
    grounding_status: str | None = None
    grounding_score: float | None = None
    grounding_reason: str | None = None
    grounding_spans: list[list[int]] = field(default_factory=list)
    grounding_furniture_boxes: list[list[float]] = field(default_factory=list)
    vision_continues: bool | None = None
    vision_batch: int | None = None
    vision_pages: list[int] = field(default_factory=list)
    vision_merged: int | None = None
    vision_issues: str | None = None
    vision_text: str | None = None

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

    # -- Chunk <-> record ----------------------------------------------------------------------
    @classmethod
    def from_chunk(cls, chunk: Chunk) -> ChunkRecord:
        """The typed record of ``chunk``; metadata keys that are not record fields are the
        strategy's parameters (:attr:`strategy_params`)."""
        md = chunk.metadata
        values: dict[str, Any] = {k: md[k] for k in _METADATA_FIELDS if k in md and md[k] is not None}
        params = {k: v for k, v in md.items() if k not in RECORD_KEYS}
        params.update(md.get("strategy_params") or {})
        pages = values.pop("pages", None)
        return cls(
            id=str(chunk.id),
            content=chunk.content,
            boxes=list(chunk.geom),
            pages=sorted({int(p) for p in pages}) if pages else sorted({b.page for b in chunk.geom}),
            strategy_params=params,
            **values,
        )

    def to_chunk(self) -> Chunk:
        """The :class:`Chunk` of this record: the chunker's metadata layout (strategy parameters
        at the top level; empty optional fields left out)."""
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
        md.update(self.strategy_params)
        return Chunk(id=self.id, content=self.content, metadata=md, geom=list(self.boxes))

    def to_dict(self) -> dict[str, Any]:
        """The chunks-JSON (version 2) form: ``{"id", "content", "metadata", "geom"}`` with the
        strategy's parameters under ``metadata.strategy_params``."""
        chunk = self.to_chunk()
        md = {k: v for k, v in chunk.metadata.items() if k in RECORD_KEYS}
        if self.strategy_params:
            md["strategy_params"] = dict(self.strategy_params)
        return {"id": self.id, "content": self.content, "metadata": md, "geom": [b.to_dict() for b in self.boxes]}

    def replace(self, **changes: Any) -> ChunkRecord:
        return dataclasses.replace(self, **changes)


#: every field name of :class:`ChunkRecord`
RECORD_KEYS: frozenset[str] = frozenset(f.name for f in dataclasses.fields(ChunkRecord))
#: fields read from / written to ``Chunk.metadata`` under their own name
_METADATA_FIELDS = tuple(f.name for f in dataclasses.fields(ChunkRecord) if f.name not in {"id", "content", "boxes", "strategy_params"})
_ALWAYS = {"token_count", "strategy", "start_char", "end_char", "body_start", "pages", "element_ids", "heading_path"}
_OPTIONAL_FIELDS = tuple(k for k in _METADATA_FIELDS if k not in _ALWAYS)
