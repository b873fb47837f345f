"""Chunk assembly: token group -> :class:`~grounded.model.Chunk` with text, offsets and boxes.

Box modes, recorded on every box (``box.mode``):

* ``exact`` - each token's character span inside its element is mapped to the per-character
  extents stored on the element's line spans (``char_x``) and unioned per line, so the highlight
  covers exactly the chunk's text, first and last words included, on every page it touches;
* ``line`` (thesis) - for partially included elements the line of each token is approximated
  assuming constant token density, widened by one line on each side;
* ``element`` - the element's own boxes when it has no line spans (or, for elements without any
  box such as table cells of VLM backends, the boxes of the nearest ancestor that has one).

``box_mode="auto"`` (default) uses exact where the element's text is aligned with the PDF text
layer and falls back to line, then element, per element.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ChunkingError
from ..model.boxes import BoxMode, ParsingBoundingBox, body_pages
from ..model.chunk import Chunk
from ..model.elements import HEADING_TYPES, ParsingResult
from .groups import TokenGroup
from .ids import chunk_id as _chunk_id
from .ids import text_key
from .stream import TokenStream

__all__ = ["ChunkAssembler", "BOX_MODES", "element_lines"]

BOX_MODES = ("auto", "exact", "line", "element")


def element_lines(node: ParsingResult) -> list[ParsingBoundingBox]:
    """The element's line spans in reading order (across its boxes and pages)."""
    return [span for box in node.geom for span in box.spans]


def _has_char_info(lines: Sequence[ParsingBoundingBox]) -> bool:
    return bool(lines) and all(ln.char_x is not None for ln in lines)


def _line(box: ParsingBoundingBox) -> ParsingBoundingBox:
    return ParsingBoundingBox.trusted(box.page, box.left, box.top, box.right, box.bottom)


def _group_by_page(
    lines: list[ParsingBoundingBox], mode: BoxMode, element_id: str, is_heading: bool
) -> list[ParsingBoundingBox]:
    """Consecutive lines on one page -> one box (enclosing) with the lines as spans."""
    out: list[ParsingBoundingBox] = []
    mode_value = mode.value
    i, n = 0, len(lines)
    while i < n:
        first = lines[i]
        page, left, top, right, bottom = first.page, first.left, first.top, first.right, first.bottom
        j = i + 1
        while j < n and lines[j].page == page:
            ln = lines[j]
            if ln.left < left:
                left = ln.left
            if ln.top < top:
                top = ln.top
            if ln.right > right:
                right = ln.right
            if ln.bottom > bottom:
                bottom = ln.bottom
            j += 1
        out.append(
            ParsingBoundingBox.trusted(
                page, left, top, right, bottom, lines[i:j], mode=mode_value, element_id=element_id, is_heading=is_heading
            )
        )
        i = j
    return out


@dataclass
class _Extent:
    """What a chunk covers of one element: characters ``[char_lo, char_hi)`` of its content and
    tokens ``[tok_lo, tok_hi)`` of its ``n_tokens``."""

    node: ParsingResult
    char_lo: int
    char_hi: int
    tok_lo: int
    tok_hi: int
    n_tokens: int

    @property
    def complete(self) -> bool:
        return self.tok_lo == 0 and self.tok_hi == self.n_tokens


class ChunkAssembler:
    """Turns token groups of one stream into chunks (one instance per document)."""

    def __init__(self, stream: TokenStream, root: ParsingResult, *, strategy: str, box_mode: str = "auto", doc_key: str = "", fingerprint: str = ""):
        if box_mode not in BOX_MODES:
            raise ChunkingError(f"box_mode must be one of {BOX_MODES}, got {box_mode!r}")
        self.stream = stream
        self.root = root
        self.strategy = strategy
        self.box_mode = box_mode
        self.doc_key = doc_key  # the source key of grounded.text.ids (PDF sha256 + parser, or a text hash)
        self.fingerprint = fingerprint  # Chunker.fingerprint: the chunking configuration
        tok = stream.tokenizer
        self._sep_line = tok.count("\n") if tok is not None else 0
        self._sep_body = tok.count("\n\n") if tok is not None else 0
        self._lines: dict[int, list[ParsingBoundingBox]] = {}
        self._exact_ok: dict[int, bool] = {}
        self._heading_path: dict[int, list[str]] = {}
        self._heading_geom: dict[int, list[ParsingBoundingBox]] = {}

    # -- per element helpers ------------------------------------------------------------------
    def _lines_of(self, k: int) -> list[ParsingBoundingBox]:
        lines = self._lines.get(k)
        if lines is None:
            lines = element_lines(self.stream.doc.nodes[k])
            self._lines[k] = lines
        return lines

    def heading_path(self, k: int) -> list[str]:
        """Texts of the section headers above text node ``k`` (outermost first)."""
        path = self._heading_path.get(k)
        if path is None:
            node = self.stream.doc.nodes[k]
            path = [" ".join(a.content.split()) for a in reversed(node.ancestors()) if a.type in HEADING_TYPES]
            self._heading_path[k] = path
        return path

    def _extents(self, start: int, end: int) -> list[_Extent]:
        st = self.stream
        if end <= start:
            return []
        owners = st.node[start:end]
        valid = owners[owners >= 0]
        if not len(valid):
            return []
        out = []
        k_first, k_last = int(valid[0]), int(valid[-1])
        for k in range(k_first, k_last + 1):
            first, last = int(st.node_first[k]), int(st.node_last[k])
            if first < 0:
                continue
            lo, hi = max(start, first), min(end, last)
            if hi <= lo:
                continue
            node = st.doc.nodes[k]
            if k_first < k < k_last:  # inner elements lie wholly inside the body
                char_lo, char_hi = 0, len(node.content)
            else:
                base = st.doc.starts[k]
                char_lo, char_hi = st.token_start(lo) - base, st.token_end(hi - 1) - base
            out.append(_Extent(node, char_lo, char_hi, lo - first, hi - first, last - first))
        return out

    def boxes_for(self, ext: _Extent, k: int, is_heading: bool = False) -> list[ParsingBoundingBox]:
        node = ext.node
        lines = self._lines_of(k)
        mode = self.box_mode
        exact_ok = self._exact_ok.get(k)
        if exact_ok is None:
            exact_ok = self._exact_ok[k] = _has_char_info(lines)
        if mode in ("auto", "exact") and exact_ok:
            picked = []
            for ln in lines:
                assert ln.char_start is not None and ln.char_end is not None
                if ln.char_end <= ext.char_lo or ln.char_start >= ext.char_hi:
                    continue
                if ln.char_start >= ext.char_lo and ln.char_end <= ext.char_hi:
                    picked.append(_line(ln))
                else:
                    part = ln.char_box(ext.char_lo, ext.char_hi)
                    if part is not None:
                        picked.append(part)
            if picked:
                return _group_by_page(picked, BoxMode.EXACT, node.id, is_heading)
        if mode != "element" and lines:
            n_lines = len(lines)
            if ext.complete or ext.n_tokens == 0:
                a, b = 0, n_lines - 1
            else:
                a = 0 if ext.tok_lo == 0 else math.floor(ext.tok_lo / ext.n_tokens * n_lines) - 1
                b = n_lines - 1 if ext.tok_hi == ext.n_tokens else math.floor((ext.tok_hi - 1) / ext.n_tokens * n_lines) + 1
                a, b = max(0, a), min(n_lines - 1, b)
            return _group_by_page([_line(ln) for ln in lines[a : b + 1]], BoxMode.LINE, node.id, is_heading)
        holder: ParsingResult | None = node
        while holder is not None and not holder.geom:  # e.g. a table cell without a box: use its table
            holder = holder.parent
        if holder is None:
            return []
        return [
            ParsingBoundingBox.trusted(b.page, b.left, b.top, b.right, b.bottom, mode=BoxMode.ELEMENT.value, element_id=holder.id, is_heading=is_heading)
            for b in holder.geom
        ]

    def _heading_boxes(self, k: int) -> list[ParsingBoundingBox]:
        """Boxes of heading node ``k`` prepended to a chunk: built once, shared by every chunk under
        that heading (boxes are never mutated after assembly)."""
        boxes = self._heading_geom.get(k)
        if boxes is None:
            st = self.stream
            n = int(st.node_last[k] - st.node_first[k]) if st.node_first[k] >= 0 else 0
            node = st.doc.nodes[k]
            boxes = self._heading_geom[k] = self.boxes_for(_Extent(node, 0, len(node.content), 0, n, n), k, is_heading=True)
        return boxes

    # -- assembly ------------------------------------------------------------------------------
    def heading_tokens(self, headings: tuple[int, ...]) -> int:
        if not headings:
            return 0
        st = self.stream
        size = sum(int(st.node_last[k] - st.node_first[k]) for k in headings if st.node_first[k] >= 0)
        return size + self._sep_line * (len(headings) - 1) + self._sep_body

    def assemble(self, group: TokenGroup, index: int, params: dict[str, Any] | None = None) -> Chunk:
        st = self.stream
        doc = st.doc
        body_start, body_end = group.char_span(st)  # cut inside a token only by the token bound (bound.py)
        body = doc.text[body_start:body_end]
        heading_nodes = [doc.nodes[k] for k in group.headings]
        prefix = "\n".join(" ".join(h.content.split()) for h in heading_nodes)
        prefix = prefix + "\n\n" if prefix else ""
        extents = list(group.clip_extents(self._extents(group.start, group.end), st))

        geom: list[ParsingBoundingBox] = []
        for k in group.headings:
            geom.extend(self._heading_boxes(k))
        seen_element_boxes: set[tuple] = set()
        for ext in extents:
            node_k = st.node_index(ext.node.id)
            assert node_k is not None
            for box in self.boxes_for(ext, node_k):
                if box.mode == BoxMode.ELEMENT.value and box.element_id != ext.node.id:
                    key = (box.element_id, box.page, box.left, box.top, box.right, box.bottom)
                    if key in seen_element_boxes:
                        continue  # several cells of one box-less table share the table's box once
                    seen_element_boxes.add(key)
                geom.append(box)

        first_k: int | None = st.node_index(extents[0].node.id) if extents else None
        heading_path = (
            [" ".join(h.content.split()) for h in heading_nodes]
            if group.headings
            else (self.heading_path(first_k) if first_k is not None else [])
        )
        chunk_id = _chunk_id(self.doc_key or text_key(doc.text), self.fingerprint or self.strategy, body_start, body_end)
        return Chunk(
            id=chunk_id,
            content=prefix + body,
            token_count=len(group) + self.heading_tokens(group.headings),
            strategy=self.strategy,
            start_char=body_start,
            end_char=body_end,
            body_start=len(prefix),
            pages=body_pages(geom),
            element_ids=[e.node.id for e in extents],
            element_spans=[[e.node.id, e.char_lo, e.char_hi] for e in extents],
            heading_path=heading_path,
            heading_ids=[h.id for h in heading_nodes],
            strategy_params=dict(params or {}),
            index=index,
            boxes=geom,
        )

    # -- arbitrary character spans (grounding, re-split parts) ---------------------------------
    def boxes_for_chars(self, start: int, end: int) -> list[ParsingBoundingBox]:
        """Boxes for characters ``[start, end)`` of the document text (``document_text(root).text``).

        Made exactly as for a chunk body covering those characters: per element, exact boxes where
        the element has per-character extents, else the line / element fallbacks; any number of
        pages, in reading order; no heading boxes are prepended. An element is included when the
        span overlaps one of its tokens; at the span's ends the element part is cut at ``start`` /
        ``end`` and trimmed to its tokens (no whitespace-only edges). For a chunk,
        ``boxes_for_chars(start_char, end_char)`` equals its body boxes.
        """
        st = self.stream
        doc = st.doc
        nodes, starts = doc.nodes, doc.starts
        start, end = max(0, int(start)), min(int(end), len(doc.text))
        if end <= start or not nodes:
            return []
        k = max(0, bisect_right(starts, start) - 1)
        touched: list[tuple[int, int, int, int, int]] = []  # (k, char_lo, char_hi, tok_lo, tok_hi)
        while k < len(nodes) and starts[k] < end:
            base = starts[k]
            if base + len(nodes[k].content) > start and st.node_first[k] >= 0:
                off = st._seg_offsets(int(st._node_seg[k]))
                tok_lo = int(np.searchsorted(off[:, 1], start, side="right"))
                tok_hi = int(np.searchsorted(off[:, 0], end, side="left"))
                if tok_hi > tok_lo:
                    char_lo = max(start, int(off[tok_lo, 0])) - base
                    char_hi = min(end, int(off[tok_hi - 1, 1])) - base
                    touched.append((k, char_lo, char_hi, tok_lo, tok_hi))
            k += 1
        geom: list[ParsingBoundingBox] = []
        seen_element_boxes: set[tuple] = set()
        last = len(touched) - 1
        for i, (k, char_lo, char_hi, tok_lo, tok_hi) in enumerate(touched):
            node = nodes[k]
            n_tokens = int(st.node_last[k] - st.node_first[k])
            if 0 < i < last:  # inner elements lie wholly inside the span (as in chunk assembly)
                char_lo, char_hi, tok_lo, tok_hi = 0, len(node.content), 0, n_tokens
            for box in self.boxes_for(_Extent(node, char_lo, char_hi, tok_lo, tok_hi, n_tokens), k):
                if box.mode == BoxMode.ELEMENT.value and box.element_id != node.id:
                    key = (box.element_id, box.page, box.left, box.top, box.right, box.bottom)
                    if key in seen_element_boxes:
                        continue
                    seen_element_boxes.add(key)
                geom.append(box)
        return geom
