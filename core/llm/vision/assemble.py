"""Model chunks -> grounded :class:`~grounded.model.Chunk` s within the token bound.

Each model chunk is grounded in the document text (:class:`~grounded.grounding.Grounder`, searched
near the previous chunk's end):

* **grounded** (``exact``/``fuzzy``/``partial``): the chunk body is the document text of the matched
  span - ``document_text[start_char:end_char] == body`` - with the chunk assembly's exact boxes on
  every page it covers. When the text was found in several pieces (a table row with its header, text
  around a figure the model skipped) the last piece is the body and the earlier ones are context put
  before it, like the headings of the hierarchical strategy (their boxes come first, ``is_heading``).
  The model's own text is kept in ``vision_text`` when it differs from the body's letters.
* **not grounded** (the model wrote text the document does not have, e.g. a table summary): the
  chunk keeps the model's text, has no boxes and no pages, ``grounded: False`` and the reason; its
  ``start_char == end_char`` anchors it where it belongs in the reading order.

Every chunk's content starts with the model's 3-level heading path (``heading_path``). A chunk above
``max_tokens`` is split inside its body (paragraph, line, sentence, word boundaries; the token bound of
:mod:`grounded.text.bound`), each part keeping the heading line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from grounded.chunking.base import TokenGroup
from grounded.grounding.grounder import Grounder, Grounding
from grounded.grounding.normalize import alnum_text, strip_markup
from grounded.grounding.wrappers import grounding_fields
from grounded.io.box_codec import text_hash
from grounded.model.boxes import ParsingBoundingBox, body_pages
from grounded.model.chunk import Chunk
from grounded.text.assembly import ChunkAssembler
from grounded.text.bound import enforce_bound
from grounded.text.ids import chunk_id, text_only_id
from grounded.text.splitting import recursive_split

from .merge import table_header
from .response import ModelChunk

__all__ = ["ChunkBuilder"]


def _layout(spans: list[tuple[int, int]]) -> tuple[tuple[int, int], list[tuple[int, int]]]:
    """Body and context spans of a text found in several pieces: the whole range when the pieces
    lie close together (what lies between is at most as long as what matched, + 200 characters),
    else the longest piece is the body and the others are context."""
    matched = sum(e - s for s, e in spans)
    if spans[-1][1] - spans[0][0] <= 2 * matched + 200:
        return (spans[0][0], spans[-1][1]), []
    body = max(spans, key=lambda sp: sp[1] - sp[0])
    return body, [sp for sp in spans if sp != body]


def _as_context(box: ParsingBoundingBox) -> ParsingBoundingBox:
    return ParsingBoundingBox.trusted(
        box.page, box.left, box.top, box.right, box.bottom, box.spans, mode=box.mode, element_id=box.element_id, is_heading=True
    )


@dataclass
class ChunkBuilder:
    """Builds the chunks of one document (one instance per chunking run)."""

    grounder: Grounder
    assembler: ChunkAssembler
    max_tokens: int
    cursor: int = 0  # document-text offset after the last grounded chunk
    index: int = 0

    def __post_init__(self) -> None:
        tok = self.assembler.stream.tokenizer
        assert tok is not None
        self.tokenizer = tok
        self.text = self.assembler.stream.doc.text

    def build(self, mc: ModelChunk) -> Iterator[Chunk]:
        """The chunk(s) of one model chunk, in reading order."""
        head = " > ".join(mc.headings)
        header = table_header(mc.content)
        rows = "\n".join(mc.content.strip().splitlines()[2:]).strip() if header else ""
        g = self.grounder.ground(rows or mc.content, near=self.cursor)
        if not g.ok or not g.spans:
            yield from self._ungrounded(mc, g, head)
            return
        spans = sorted(g.spans)
        (body_s, body_e), context_spans = _layout(spans)
        if header and rows:  # a table row chunk: the row is the body, the table's header its context
            body_s, body_e = self._row_range(rows, (body_s, body_e))
            context_spans = self._header_before(header[0], body_s)
        self.cursor = body_e
        context = [self.text[a:b].strip() for a, b in context_spans]
        context_boxes = [_as_context(box) for a, b in context_spans for box in self.grounder.boxes_for_chars(a, b)]
        extra: dict[str, Any] = {"grounded": True, **grounding_fields(g)}
        extra["grounding_spans"] = [[a, b] for a, b in sorted([*context_spans, (body_s, body_e)])]  # what was used
        if alnum_text(strip_markup(mc.content)).text != alnum_text(" ".join([*context, self.text[body_s:body_e]])).text:
            extra["vision_text"] = mc.content
        prefix, with_context = self._prefix(head, [c for c in context if c])
        for a, b in self._fit_body(prefix, body_s, body_e):
            boxes = (context_boxes if with_context else []) + self.grounder.boxes_for_chars(a, b)
            yield self._chunk(mc, prefix, self.text[a:b], a, b, boxes, extra)

    def _header_before(self, header: str, row_start: int) -> list[tuple[int, int]]:
        """Spans of the table header that precedes ``row_start`` (the nearest occurrence before it)."""
        near = row_start
        for _ in range(3):
            g = self.grounder.ground(header, near=near)
            if not g.ok or not g.spans:
                return []
            if g.spans[-1][1] <= row_start:
                return list(g.spans)
            near = max(0, row_start - (g.spans[0][0] - row_start) - 1)  # an occurrence after: look before
        return []

    def _row_range(self, rows: str, fallback: tuple[int, int]) -> tuple[int, int]:
        """Document range of table rows, found cell by cell in reading order from the cursor (rows of
        one table repeat cell values, which a whole-row alignment may take from a neighbouring row): from
        the first cell found to the end of the last cell found after it;
        ``fallback`` when the cells are not found close together."""
        cursor, found = self.cursor, []
        for line in rows.splitlines():
            for cell in (c.strip() for c in line.strip().strip("|").split("|")):
                g = self.grounder.ground(cell, near=cursor) if cell else None
                if g is not None and g.ok and g.spans:
                    found.extend(g.spans)
                    cursor = g.spans[-1][1]
        if not found:
            return fallback
        lo = found[0][0]  # the row starts at its first cell found; a later cell found before it is another row's
        hi = max(e for s, e in found if s >= lo)
        return (lo, hi) if hi - lo <= 4 * len(rows) + 200 else fallback

    # -- grounded bodies within the bound ----------------------------------------------------------
    def _prefix(self, head: str, context: list[str]) -> tuple[str, bool]:
        """Heading line + context pieces + blank line, leaving at least a quarter of ``max_tokens`` to
        the body: the context is dropped first, then the heading line is shortened."""
        room = max(1, self.max_tokens // 4)
        for parts, with_context in (([head, *context], True), ([head], False)):
            parts = [p for p in parts if p]
            prefix = "\n".join(parts) + "\n\n" if parts else ""
            if not prefix or self.max_tokens - self.tokenizer.count(prefix) - 1 >= room:
                return prefix, with_context and bool(context)
        short = self._shorter(head)
        return (short + "\n\n" if short else ""), False

    def _fit_body(self, prefix: str, s: int, e: int) -> Iterator[tuple[int, int]]:
        """Parts ``(start, end)`` of body ``[s, e)`` that fit ``max_tokens`` after ``prefix``: the
        whole body when it fits, else pieces cut at paragraph, line, sentence or word boundaries."""
        if self.tokenizer.count(prefix + self.text[s:e]) <= self.max_tokens:
            yield s, e
            return
        budget = self.max_tokens - (self.tokenizer.count(prefix) + 1 if prefix else 0)
        stream = self.assembler.stream
        lo = int(stream.starts.searchsorted(s, side="left"))
        hi = int(stream.ends.searchsorted(e, side="right"))
        while True:
            groups = [TokenGroup(a, b) for a, b in recursive_split(stream, lo, hi, max(1, budget))]
            parts = [g.char_span(stream) for g in enforce_bound(groups, stream, max(1, budget))]
            counts = self.tokenizer.count_batch([prefix + self.text[a:b] for a, b in parts])
            if all(c <= self.max_tokens for c in counts) or budget <= 1:
                break
            budget -= max(1, budget // 10)
        for a, b in parts:
            if b > a:
                yield a, b

    def _shorter(self, line: str) -> str:
        """The heading line cut to a quarter of ``max_tokens`` tokens ("" when that is < 2)."""
        limit = self.max_tokens // 4 - 2
        if limit < 1:
            return ""
        _, offsets = self.tokenizer.encode(line)
        return line if len(offsets) <= limit else line[: int(offsets[limit - 1][1])].rstrip() + "…"

    # -- text the document does not have -----------------------------------------------------------
    def _ungrounded(self, mc: ModelChunk, g: Grounding, head: str) -> Iterator[Chunk]:
        extra: dict[str, Any] = {"grounded": False, **grounding_fields(g)}
        extra["grounding_reason"] = extra.get("grounding_reason") or "not found in the document"
        prefix, _ = self._prefix(head, [])
        budget = max(1, self.max_tokens - (self.tokenizer.count(prefix) + 1 if prefix else 0))
        for piece in self._text_pieces(mc.content, budget, prefix):
            yield self._chunk(mc, prefix, piece, self.cursor, self.cursor, [], extra)

    def _text_pieces(self, text: str, budget: int, prefix: str) -> list[str]:
        if self.tokenizer.count(prefix + text) <= self.max_tokens:
            return [text]
        _, offsets = self.tokenizer.encode(text)
        pieces, i = [], 0
        while i < len(offsets):
            j = min(len(offsets), i + budget)
            start, end = int(offsets[i][0]), int(offsets[j - 1][1])
            cut = text.rfind(" ", start, end) if j < len(offsets) else -1
            if cut > start + (end - start) // 2:
                end = cut
                while j > i + 1 and int(offsets[j - 1][0]) >= end:
                    j -= 1
            piece = text[start:end].strip()
            while piece and self.tokenizer.count(prefix + piece) > self.max_tokens and j > i + 1:
                j -= 1
                end = int(offsets[j - 1][1])
                piece = text[start:end].strip()
            if piece:
                pieces.append(piece)
            i = j
        return pieces

    # -- a list split over chunks, merged back (seed 001's step/list rule; :mod:`.lists`) ----------------
    def merge(self, parts: list[Chunk]) -> Chunk | None:
        """One chunk for the grounded ``parts`` (in reading order): the document text from the first
        part's start to the last part's end after the first part's heading line and context, or None
        when that exceeds ``max_tokens``. Keeps the first part's id scheme, headings and batch."""
        records = parts
        record = records[0]
        s = min(int(r.start_char or 0) for r in records)
        e = max(int(r.end_char or 0) for r in records)
        content = record.content[: record.body_start] + self.text[s:e]
        count = self.tokenizer.count(content)
        if count > self.max_tokens:
            return None
        boxes = [b for b in record.boxes if b.is_heading] + self.grounder.boxes_for_chars(s, e)
        issues = [r.vision_issues for r in records if r.vision_issues]
        spans = sorted({(a, b) for r in records for a, b in r.grounding_spans})
        return record.replace(
            id=chunk_id(self.assembler.doc_key, self.assembler.fingerprint or "vision", s, e),
            content=content,
            token_count=count, start_char=s, end_char=e,
            pages=body_pages(boxes),
            element_ids=list(dict.fromkeys(b.element_id for b in boxes if b.element_id and not b.is_heading)),
            boxes=boxes,
            grounding_spans=[[a, b] for a, b in spans] or [[s, e]],
            vision_pages=sorted({p for r in records for p in r.vision_pages}),
            vision_issues="; ".join(dict.fromkeys(issues)) if issues else record.vision_issues,
            vision_text=None,  # the model's own texts of the parts no longer match one body
            extra={**record.extra, "list_merged": len(parts)},
        )

    # -- one chunk ---------------------------------------------------------------------------------
    def _chunk(self, mc: ModelChunk, prefix: str, body: str, s: int, e: int, boxes: list[ParsingBoundingBox],
               grounding: dict[str, Any]) -> Chunk:
        """One model chunk; ``grounding``: its grounding fields (chunk field names)."""
        content = prefix + body
        pages = body_pages(boxes)
        issues = list(mc.issues)
        outside = sorted(set(pages) - set(mc.pages)) if mc.pages else []
        if outside:  # e.g. the model repeated LAST CHUNKS, which it was told not to
            issues.append(f"found on page(s) {outside}, not among the pages shown {list(mc.pages)}")
        index = self.index
        self.index += 1
        if e > s:
            cid = chunk_id(self.assembler.doc_key, self.assembler.fingerprint or "vision", s, e)
        else:
            cid = text_only_id(self.assembler.doc_key, self.assembler.fingerprint or 'vision', s, text_hash(content))
        return Chunk(
            id=cid,
            content=content,
            token_count=self.tokenizer.count(content),
            strategy="vision",
            start_char=s,
            end_char=e,
            body_start=len(prefix),
            pages=pages,
            element_ids=list(dict.fromkeys(b.element_id for b in boxes if b.element_id and not b.is_heading)),
            heading_path=list(mc.headings),
            boxes=boxes,
            **grounding,
            vision_continues=mc.continues,
            vision_batch=mc.batch,
            vision_pages=list(mc.pages),
            vision_merged=mc.parts if mc.parts > 1 else None,
            vision_issues="; ".join(issues) if issues else None,
            index=index,
        )
