"""A side index of the page text that the parse tree does not hold (page furniture).

Parsers drop running headers and footers, per-page copyright lines, cover decoration and the like
from the tree, but other renderings of the PDF (pymupdf4llm's Markdown, docling) keep them inside
their text. That text has no offset in ``document_text(root)``, so grounding cannot give it a span;
it can still give it boxes: :class:`FurnitureIndex` reads the PDF's text layer
(:class:`~grounded.parsers.textlayer.PageChars`), keeps every MuPDF line whose characters' words lie
outside all of the tree's boxes, and matches the part of a query that the tree did not explain
against those lines (pages near the tree match first). A matched line's characters give one box per
line (displayed-page fractions, like every grounded box); the boxes carry no ``element_id``.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rapidfuzz.distance import Indel

from ..errors import InputError, escape_controls
from ..model.boxes import ParsingBoundingBox
from ..model.elements import ParsingResult
from .normalize import alnum_text

__all__ = ["FurnitureIndex", "FurnitureMatch", "source_pdf"]

log = logging.getLogger(__name__)

_MIN_BLOCK = 4  # a matching block shorter than this (letters) counts for nothing
_TOL = 1e-3  # page fractions: a word centre this close to a tree box is inside it


@dataclass(frozen=True)
class FurnitureMatch:
    """Query letters explained by page furniture (``covered``: mask over the query's letter stream)
    and the line boxes of the matched furniture characters."""

    covered: np.ndarray
    boxes: list[ParsingBoundingBox]


def source_pdf(root: ParsingResult) -> Path | None:
    """The PDF a tree was parsed from, when it is still there with the recorded sha256 and page
    count (a tree assembled from several PDFs, or a moved/changed file, has none)."""
    source = root.info.source
    if not isinstance(source, dict) or not isinstance(source.get("path"), str):
        return None
    path = Path(source["path"])
    if not path.is_file():
        log.info("page furniture index: %s is not there; grounding without it", escape_controls(str(path)))
        return None
    sha = source.get("sha256")
    if isinstance(sha, str) and sha:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != sha:
            log.info("page furniture index: %s changed since it was parsed; grounding without it", escape_controls(str(path)))
            return None
    return path


def _tree_rects(root: ParsingResult) -> dict[int, np.ndarray]:
    """Per page, the tree's text boxes (line spans, or the box itself) as an (n, 4) array."""
    rects: dict[int, list[tuple[float, float, float, float]]] = defaultdict(list)
    for node in root.walk():
        if node.children or not node.content.strip():
            continue
        for box in node.geom:
            for s in box.spans or [box]:
                rects[s.page].append((s.left, s.top, s.right, s.bottom))
    return {p: np.asarray(r, dtype=float) for p, r in rects.items()}


class FurnitureIndex:
    """Lines of the PDF text layer outside the parse tree, as one letter/digit stream.

    ``text``: the lines' letters/digits (folded like :func:`~.normalize.alnum_text`), page by page;
    per stream character its ``page``, global ``line`` id and box (``x0``..``y1``, page fractions);
    ``line_start``/``line_end``: each line's stream range; ``line_page``, ``line_cy``."""

    def __init__(self, text: str, page: np.ndarray, line: np.ndarray, boxes: np.ndarray) -> None:
        self.text = text
        self.page = page
        self.line = line
        self.boxes = boxes
        n_lines = int(line.max()) + 1 if len(line) else 0
        self.line_start = np.searchsorted(line, np.arange(n_lines), side="left")
        self.line_end = np.searchsorted(line, np.arange(n_lines), side="right")
        self.line_page = page[self.line_start] if n_lines else np.zeros(0, dtype=np.int64)
        self.line_cy = (
            np.array([(boxes[a:b, 1].min() + boxes[a:b, 3].max()) / 2 for a, b in zip(self.line_start, self.line_end, strict=True)])
            if n_lines
            else np.zeros(0)
        )

    def __len__(self) -> int:
        return len(self.line_start)

    @classmethod
    def from_pdf(cls, pdf: Path, root: ParsingResult, *, password: str | None = None) -> FurnitureIndex:
        """Read ``pdf``'s text layer and keep the lines outside the tree ``root`` of that PDF
        (``password`` for an encrypted PDF; :class:`~grounded.errors.InputError` when it cannot
        be read or is not the PDF of that tree)."""
        import pymupdf

        from ..parsers.textlayer import PageChars

        rects = _tree_rects(root)
        texts: list[str] = []
        pages: list[np.ndarray] = []
        lines: list[np.ndarray] = []
        boxes: list[np.ndarray] = []
        line_id = 0
        try:
            doc = pymupdf.open(pdf)
        except (RuntimeError, ValueError) as exc:  # pymupdf.FileDataError is a RuntimeError
            raise InputError(pdf, f"cannot read the text layer for the page furniture index: {exc}") from exc
        with doc:
            if doc.needs_pass and not (password and doc.authenticate(password)):
                raise InputError(pdf, "encrypted: the page furniture index needs its password (Grounder(..., password=...))")
            expected = root.info.page_count
            if isinstance(expected, int) and expected != doc.page_count:
                raise InputError(pdf, f"{doc.page_count} pages, but the parse tree has {expected}: not the PDF it was parsed from")
            for number in range(doc.page_count):
                page = doc[number]
                pc = PageChars.from_page(page, page.number + 1)
                if not len(pc):
                    continue
                w, h = pc.width or 1.0, pc.height or 1.0
                assert pc.word_cx is not None and pc.word_cy is not None
                cx, cy = pc.word_cx / w, pc.word_cy / h
                inside = np.zeros(len(pc), dtype=bool)
                r = rects.get(pc.page)
                if r is not None and len(r):
                    for x0, y0, x1, y1 in r:  # one vectorized test per tree box of the page
                        inside |= (x0 - _TOL <= cx) & (cx <= x1 + _TOL) & (y0 - _TOL <= cy) & (cy <= y1 + _TOL)
                outside_line = np.unique(pc.line[~inside])
                for ln in outside_line.tolist():
                    idx = np.flatnonzero((pc.line == ln) & ~inside)
                    raw = "".join(pc.chars[i] for i in idx.tolist())
                    folded = alnum_text(raw)
                    if len(folded) < 2:
                        continue
                    src = idx[folded.origin]
                    texts.append(folded.text)
                    pages.append(np.full(len(folded), pc.page, dtype=np.int64))
                    lines.append(np.full(len(folded), line_id, dtype=np.int64))
                    boxes.append(np.stack([pc.x0[src] / w, pc.y0[src] / h, pc.x1[src] / w, pc.y1[src] / h], axis=1))
                    line_id += 1
        if not texts:
            return cls("", np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((0, 4)))
        return cls("".join(texts), np.concatenate(pages), np.concatenate(lines), np.clip(np.concatenate(boxes), 0.0, 1.0))

    def match(
        self,
        query: str,
        covered: np.ndarray,
        pages: Callable[[int, int], tuple[int, int] | None] | tuple[int, int] | None,
    ) -> FurnitureMatch | None:
        """Explain the query letters not yet ``covered`` with furniture lines.

        ``pages``: the page range where the text is expected, or a function giving it for each
        uncovered run ``[a, b)`` of the query (the pages of the tree match around the run);
        ``None`` searches every page, with a stricter acceptance. Per uncovered run (>= 4
        letters), each candidate line is aligned with it (Indel matching blocks of >= 4 letters); a
        line is kept when its blocks cover at least half of the shorter of the two (80% without a
        page range), and each line is used once. Among equal lines (running headers repeat on
        every page) the one at the page boundary the run sits on wins: the bottom of the first page
        of its range or the top of the last, else the first page."""
        if not len(self):
            return None
        got = covered.copy()
        chosen: dict[int, list[int]] = {}  # line -> its matched stream positions
        for a, b in _runs(~covered):
            if b - a < _MIN_BLOCK:
                continue
            span = pages(a, b) if callable(pages) else pages
            if span is None:
                cand, need = np.arange(len(self)), 0.8
            else:
                cand = np.flatnonzero((self.line_page >= span[0]) & (self.line_page <= span[1]))
                need = 0.5
            seg = query[a:b]
            options: list[tuple[int, int, float, int, list[tuple[int, int, int]]]] = []
            for ln in cand.tolist():
                if ln in chosen:
                    continue
                s0, s1 = int(self.line_start[ln]), int(self.line_end[ln])
                blocks = [(blk.a, blk.b, blk.size) for blk in Indel.opcodes(seg, self.text[s0:s1]).as_matching_blocks() if blk.size >= _MIN_BLOCK]
                size = sum(n for _qa, _la, n in blocks)
                if size and size >= need * min(b - a, s1 - s0):
                    page, cy = int(self.line_page[ln]), float(self.line_cy[ln])
                    boundary = span is not None and ((page == span[0] and cy > 0.5) or (page == span[1] and cy < 0.5))
                    options.append((-size, 0 if boundary else 1, page, ln, blocks))
            options.sort(key=lambda o: o[:4])
            for _neg, _boundary, _page, ln, blocks in options:
                new = [(qa, la, n) for qa, la, n in blocks if not got[a + qa : a + qa + n].all()]
                gain = sum(int((~got[a + qa : a + qa + n]).sum()) for qa, _la, n in new)
                if gain < _MIN_BLOCK:
                    continue
                s0 = int(self.line_start[ln])
                for qa, la, n in new:
                    got[a + qa : a + qa + n] = True
                    chosen.setdefault(ln, []).extend(range(s0 + la, s0 + la + n))
        if not chosen:
            return None
        boxes = []
        for ln in sorted(chosen):
            cb = self.boxes[np.asarray(sorted(set(chosen[ln])), dtype=np.int64)]
            boxes.append(
                ParsingBoundingBox(
                    page=int(self.line_page[ln]),
                    left=float(cb[:, 0].min()),
                    top=float(cb[:, 1].min()),
                    right=float(cb[:, 2].max()),
                    bottom=float(cb[:, 3].max()),
                    mode="exact",
                )
            )
        return FurnitureMatch(got & ~covered, boxes)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs ``[a, b)`` of True in a boolean array."""
    if not len(mask):
        return []
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))
