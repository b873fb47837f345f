"""The typed search result (:class:`Hit`) and the conversions row -> Hit -> Chunk.

A row is one record of the ingest table (:func:`grounded.ingest.rows.chunk_schema`): nested
``boxes`` of ``{page, left, top, right, bottom, mode, heading, element_id, spans: [{left, top,
right, bottom}]}`` (fractions of the page, origin top-left). Span dicts carry no page (they lie on
their box's page), which is why :func:`grounded.metadata.chunk_from_metadata` cannot read a row;
:func:`hit_chunk` is the one place that builds a :class:`~grounded.model.Chunk` from a row's
fields (for :mod:`grounded.attribution` render/highlight).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SchemaError
from ..model import Chunk, ParsingBoundingBox

__all__ = ["Hit", "HitBox", "Span", "hit_from_row", "hit_chunk", "ROW_COLUMNS"]

#: the table columns a hit is read from (the vector/embedding columns are never fetched)
ROW_COLUMNS = (
    "chunk_id", "text", "body", "pages", "boxes", "heading_path",
    "source_path", "source_sha256", "config_fingerprint",
)


@dataclass(frozen=True)
class Span:
    """One line of a box: fractions of the page, origin top-left."""

    left: float
    top: float
    right: float
    bottom: float

    def to_dict(self) -> dict[str, float]:
        return {"left": self.left, "top": self.top, "right": self.right, "bottom": self.bottom}


@dataclass(frozen=True)
class HitBox:
    """A chunk's box on one page (1-based ``page``, fractions, origin top-left) with its line
    ``spans``; ``heading`` marks the box of a prepended section heading, ``mode`` how the box was
    made (``exact``, ``line``, ``element``)."""

    page: int
    left: float
    top: float
    right: float
    bottom: float
    spans: tuple[Span, ...] = ()
    heading: bool = False
    mode: str | None = None
    element_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "page": self.page, "left": self.left, "top": self.top, "right": self.right, "bottom": self.bottom,
            "heading": self.heading, "mode": self.mode, "element_id": self.element_id,
            "spans": [s.to_dict() for s in self.spans],
        }


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk.

    ``score``: the fused reciprocal-rank score in hybrid mode, the BM25 score in text mode, the
    cosine similarity in vector mode (higher is better in every mode); ``rank`` is 1-based.
    ``text_rank`` / ``vector_rank`` are the chunk's ranks in the full-text and vector lists that
    were fused (None when it was not among a list's candidates, or the mode did not run that list).
    ``config`` is the ingest configuration fingerprint of the row; ``text`` the chunk text as
    embedded and indexed (prepended headings included), ``body_start`` where its body begins.
    """

    chunk_id: str
    rank: int
    score: float
    mode: str
    source_path: str
    source_sha256: str
    config: str
    pages: tuple[int, ...]
    boxes: tuple[HitBox, ...]
    heading_path: tuple[str, ...]
    text: str
    body_start: int = 0
    text_rank: int | None = None
    vector_rank: int | None = None

    @property
    def body(self) -> str:
        """The part of ``text`` that lies in the PDF (without prepended headings)."""
        return self.text[self.body_start :]

    def boxes_on(self, page: int) -> list[HitBox]:
        return [b for b in self.boxes if b.page == page]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``grounded search --json`` prints one per line)."""
        return {
            "rank": self.rank, "score": self.score, "mode": self.mode, "chunk_id": self.chunk_id,
            "source_path": self.source_path, "source_sha256": self.source_sha256, "config": self.config,
            "pages": list(self.pages), "heading_path": list(self.heading_path),
            "text_rank": self.text_rank, "vector_rank": self.vector_rank,
            "boxes": [b.to_dict() for b in self.boxes], "text": self.text, "body_start": self.body_start,
        }


def _fraction(d: Mapping[str, Any], key: str, where: str) -> float:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(f"{where}: {key!r} must be a number, got {value!r}")
    return float(value)


def _box(d: Any, where: str) -> HitBox:
    if not isinstance(d, Mapping):
        raise SchemaError(f"{where}: a box must be a struct, got {type(d).__name__}")
    page = d.get("page")
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise SchemaError(f"{where}: 'page' must be an integer >= 1, got {page!r}")
    spans = tuple(
        Span(*(_fraction(s, k, f"{where}.spans[{i}]") for k in ("left", "top", "right", "bottom")))
        for i, s in enumerate(d.get("spans") or ())
    )
    left, top, right, bottom = (_fraction(d, k, where) for k in ("left", "top", "right", "bottom"))
    return HitBox(page, left, top, right, bottom, spans, bool(d.get("heading")), d.get("mode"), d.get("element_id"))


def hit_from_row(
    row: Mapping[str, Any], *, rank: int, score: float, mode: str,
    text_rank: int | None = None, vector_rank: int | None = None, where: str = "row",
) -> Hit:
    """A :class:`Hit` from one table row (a dict of :data:`ROW_COLUMNS`); a malformed row raises
    :class:`~grounded.errors.SchemaError` naming ``where`` and the field."""
    missing = [c for c in ROW_COLUMNS if c not in row]
    if missing:
        raise SchemaError(f"{where}: missing columns {missing}")
    text, body = str(row["text"] or ""), str(row["body"] or "")
    boxes = tuple(_box(b, f"{where} {row['chunk_id']}: boxes[{i}]") for i, b in enumerate(row["boxes"] or ()))
    return Hit(
        chunk_id=str(row["chunk_id"]),
        rank=rank,
        score=float(score),
        mode=mode,
        source_path=str(row["source_path"]),
        source_sha256=str(row["source_sha256"]),
        config=str(row["config_fingerprint"]),
        pages=tuple(int(p) for p in row["pages"] or ()),
        boxes=boxes,
        heading_path=tuple(str(h) for h in row["heading_path"] or ()),
        text=text,
        body_start=len(text) - len(body) if body and text.endswith(body) else 0,
        text_rank=text_rank,
        vector_rank=vector_rank,
    )


def hit_chunk(hit: Hit, pages: Sequence[int] | None = None) -> Chunk:
    """The :class:`~grounded.model.Chunk` of a hit (id, text, pages, heading path and boxes with their
    line spans), for :func:`grounded.attribution.render` / :func:`~grounded.attribution.highlight`.
    ``pages``: keep only the boxes on these pages (one page of a multi-page chunk)."""
    keep = set(pages) if pages is not None else None
    geom = [
        ParsingBoundingBox(
            b.page, b.left, b.top, b.right, b.bottom,
            spans=[ParsingBoundingBox(b.page, s.left, s.top, s.right, s.bottom) for s in b.spans],
            mode=b.mode, element_id=b.element_id, is_heading=b.heading,
        )
        for b in hit.boxes
        if keep is None or b.page in keep
    ]
    metadata: dict[str, Any] = {
        "pages": [p for p in hit.pages if keep is None or p in keep],
        "heading_path": list(hit.heading_path),
        "body_start": hit.body_start,
    }
    return Chunk(id=hit.chunk_id, content=hit.text, metadata=metadata, geom=geom)
