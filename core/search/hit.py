"""The typed search result (:class:`Hit`) and the conversions row -> Hit -> Chunk.

A row is one record of the ingest table (:func:`grounded.ingest.rows.chunk_schema`); it is read
by io's one row reader (:func:`grounded.io.chunk_codec.chunk_from_row`, what
:func:`~grounded.io.chunk_codec.read_stored_chunk` calls for a row), which checks every
box struct and names the chunk and the field of a malformed one. :func:`hit_chunk` gives the
:class:`~grounded.model.Chunk` of a hit through the record (for :mod:`grounded.attribution`
render/highlight).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SchemaError
from ..io.chunk_codec import chunk_from_row
from ..model import Chunk, ParsingBoundingBox

__all__ = ["Hit", "HitBox", "Span", "hit_from_row", "hit_chunk", "hit_box", "parsing_boxes", "ROW_COLUMNS"]

#: the table columns a hit is read from (the vector/embedding columns are never fetched)
ROW_COLUMNS = (
    "chunk_id", "text", "body_start", "pages", "boxes", "heading_path",
    "source_path", "source_sha256", "config_fingerprint", "start_char", "end_char",
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

    ``score``: the fused score in hybrid mode (normalised scores, 0..1; or reciprocal rank), the
    BM25 score in text mode, the cosine similarity in vector mode (higher is better in every mode); ``rank`` is 1-based.
    ``text_rank`` / ``vector_rank`` are the chunk's ranks in the full-text and vector lists that
    were fused (None when it was not among a list's candidates, or the mode did not run that list).
    ``config`` is the ingest configuration fingerprint of the row; ``text`` the stored chunk text
    (prepended headings included when the strategy prepends them), ``body_start`` where its body
    begins. What BM25 and the embedder read is the row's ``search_text`` (the heading path, then the
    body: :func:`grounded.ingest.rows.search_text`), never returned here.
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
    #: where the body (``text[body_start:]``) lies in the document text of the parse tree (None: not a slice of it)
    start_char: int | None = None
    end_char: int | None = None
    #: the focus (:mod:`grounded.focus`): ``(start, end)`` offsets into ``text`` in reading order, the
    #: sentences, rows or items that answer the question; empty without a query or evidence
    focus: tuple[tuple[int, int], ...] = ()
    #: the focus's boxes, in the form of ``boxes``; empty when the parse tree is not at hand
    focus_boxes: tuple[HitBox, ...] = ()
    #: how the focus was chosen: ``semantic``, ``lexical``, ``single`` or ``none``
    focus_method: str = "none"

    @property
    def body(self) -> str:
        """The part of ``text`` that lies in the PDF (without prepended headings)."""
        return self.text[self.body_start :]

    @property
    def focus_text(self) -> list[str]:
        """The focused text of each focus span."""
        return [self.text[a:b] for a, b in self.focus]

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
            "start_char": self.start_char, "end_char": self.end_char,
            "focus": [list(span) for span in self.focus], "focus_text": self.focus_text,
            "focus_boxes": [b.to_dict() for b in self.focus_boxes], "focus_method": self.focus_method,
        }


def hit_box(b: ParsingBoundingBox) -> HitBox:
    spans = tuple(Span(s.left, s.top, s.right, s.bottom) for s in b.spans)
    return HitBox(b.page, b.left, b.top, b.right, b.bottom, spans, b.is_heading, b.mode, b.element_id)


def hit_from_row(
    row: Mapping[str, Any], *, rank: int, score: float, mode: str,
    text_rank: int | None = None, vector_rank: int | None = None, where: str = "row",
) -> Hit:
    """A :class:`Hit` from one table row (a dict of :data:`ROW_COLUMNS`); a malformed row raises
    :class:`~grounded.errors.SchemaError` naming ``where`` and the field."""
    missing = [c for c in ROW_COLUMNS if c not in row]
    if missing:
        raise SchemaError(f"{where}: missing columns {missing}")
    record = chunk_from_row(row, where)
    return Hit(
        chunk_id=record.id,
        rank=rank,
        score=float(score),
        mode=mode,
        source_path=str(row["source_path"]),
        source_sha256=str(row["source_sha256"]),
        config=str(row["config_fingerprint"]),
        pages=tuple(record.pages),
        boxes=tuple(hit_box(b) for b in record.boxes),
        heading_path=tuple(record.heading_path),
        text=record.content,
        body_start=record.body_start,
        text_rank=text_rank,
        vector_rank=vector_rank,
        start_char=record.start_char,
        end_char=record.end_char,
    )


def parsing_boxes(boxes: Iterable[HitBox]) -> list[ParsingBoundingBox]:
    """Hit boxes (``hit.boxes``, ``hit.focus_boxes``) as :class:`~grounded.model.ParsingBoundingBox`
    with their line spans, for ``highlight``/``render``."""
    return [
        ParsingBoundingBox(
            b.page, b.left, b.top, b.right, b.bottom,
            spans=[ParsingBoundingBox(b.page, s.left, s.top, s.right, s.bottom) for s in b.spans],
            mode=b.mode, element_id=b.element_id, is_heading=b.heading,
        )
        for b in boxes
    ]


def hit_chunk(hit: Hit, pages: Sequence[int] | None = None) -> Chunk:
    """The :class:`~grounded.model.Chunk` of a hit (id, text, pages, heading path and boxes with their
    line spans), for :func:`grounded.attribution.render` / :func:`~grounded.attribution.highlight`.
    ``pages``: keep only the boxes on these pages (one page of a multi-page chunk)."""
    keep = set(pages) if pages is not None else None
    geom = parsing_boxes(b for b in hit.boxes if keep is None or b.page in keep)
    return Chunk(
        id=hit.chunk_id,
        content=hit.text,
        body_start=hit.body_start,
        pages=[p for p in hit.pages if keep is None or p in keep],
        heading_path=list(hit.heading_path),
        boxes=geom,
    )
