"""Ground-truth highlight regions computed from the PDF alone (independent of the chunker).

A chunk body is located in the PDF's own character stream (PyMuPDF rawdict, whitespace and
hyphens ignored so de-hyphenation does not matter), aligned character by character with
Levenshtein opcodes (so interleaved page headers/footers are skipped), and the matched characters'
boxes are unioned per text line. Boxes are fractions of the displayed page (a page's /Rotate
applied), the frame of grounded's boxes. Areas are compared on a rasterized page grid.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pymupdf
from rapidfuzz.distance import Levenshtein

from grounded.model import ParsingBoundingBox

GRID = 1000  # raster cells per page side


def _keep(ch: str) -> bool:
    return not ch.isspace() and ch not in "-\u00ad\u2010\u2011"


Rects = dict[int, list[tuple[float, float, float, float]]]  # page -> rectangles (page fractions)


def _displayed(page: pymupdf.Page, boxes: np.ndarray) -> np.ndarray:
    """Character boxes in MuPDF's unrotated page space -> fractions of the displayed page (the
    frame of grounded's boxes: a page with /Rotate is measured as a reader sees it)."""
    m = page.rotation_matrix
    xa, ya = m.a * boxes[:, 0] + m.c * boxes[:, 1] + m.e, m.b * boxes[:, 0] + m.d * boxes[:, 1] + m.f
    xb, yb = m.a * boxes[:, 2] + m.c * boxes[:, 3] + m.e, m.b * boxes[:, 2] + m.d * boxes[:, 3] + m.f
    w, h = page.rect.width, page.rect.height
    return np.stack([np.minimum(xa, xb) / w, np.minimum(ya, yb) / h, np.maximum(xa, xb) / w, np.maximum(ya, yb) / h], axis=1)


@dataclass
class PDFChars:
    text: str  # kept characters of the whole document, in content-stream order
    page: np.ndarray  # 1-based page per char
    line: np.ndarray  # global line id per char
    boxes: np.ndarray  # (n, 4) fractions x0, y0, x1, y1 (displayed page)

    @classmethod
    def load(cls, pdf: str | Path) -> PDFChars:
        chars: list[str] = []
        pages: list[int] = []
        lines: list[int] = []
        boxes: list[np.ndarray] = []
        line_id = 0
        with pymupdf.open(pdf) as doc:
            for page in doc:
                raw: list[tuple[float, float, float, float]] = []
                for block in page.get_text("rawdict", flags=pymupdf.TEXTFLAGS_RAWDICT & ~pymupdf.TEXT_PRESERVE_IMAGES)["blocks"]:
                    for ln in block.get("lines", ()):
                        line_id += 1
                        for span in ln["spans"]:
                            for c in span["chars"]:
                                if _keep(c["c"]):
                                    chars.append(c["c"])
                                    pages.append(page.number + 1)
                                    lines.append(line_id)
                                    raw.append(c["bbox"])
                boxes.append(_displayed(page, np.asarray(raw, dtype=float).reshape(-1, 4)))
        return cls("".join(chars), np.asarray(pages), np.asarray(lines), np.clip(np.concatenate(boxes or [np.zeros((0, 4))]), 0, 1))

    def regions(self, body: str, max_candidates: int = 5) -> list[Rects]:
        """Line rectangles (per page) of the body's characters, one dict per place the body's
        text occurs in the PDF (documents repeat sentences; each occurrence is a correct answer)."""
        needle = "".join(ch for ch in body if _keep(ch))
        if len(needle) < 8:
            return []
        head, tail = needle[:24], needle[-24:]
        out = []
        start = self.text.find(head)
        while start >= 0 and len(out) < max_candidates:
            region = self._region_at(needle, tail, start)
            if region is not None:
                out.append(region)
            start = self.text.find(head, start + 1)
        return out

    def _region_at(self, needle: str, tail: str, start: int) -> Rects | None:
        end = self.text.find(tail, start + max(0, len(needle) - 4 * len(tail) - 400))
        if end < 0:
            end = self.text.find(tail, start)
        if end < 0 or end - start > 3 * len(needle) + 2000:
            return None
        end += len(tail)
        window = self.text[start:end]
        matched = []
        for tag, _s1, _e1, s2, e2 in Levenshtein.opcodes(needle, window):
            if tag == "equal":
                matched.extend(range(start + s2, start + e2))
        if len(matched) < 0.9 * len(needle):
            return None
        per_line: dict[int, list[int]] = defaultdict(list)
        for i in matched:
            per_line[int(self.line[i])].append(i)
        out: Rects = defaultdict(list)
        for members in per_line.values():
            b = self.boxes[members]
            out[int(self.page[members[0]])].append((b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max()))
        return dict(out)


def line_rects(boxes: list[ParsingBoundingBox]) -> Rects:
    """The body line boxes of a box list per page (line spans; a box without spans as itself; headings left out)."""
    out: Rects = defaultdict(list)
    for box in boxes:
        if box.is_heading:
            continue
        for s in box.spans or [box]:
            out[s.page].append((s.left, s.top, s.right, s.bottom))
    return out


def _mask(rects: list[tuple[float, float, float, float]]) -> np.ndarray:
    m = np.zeros((GRID, GRID), dtype=bool)
    for x0, y0, x1, y1 in rects:
        m[int(y0 * GRID) : max(int(y0 * GRID) + 1, int(np.ceil(y1 * GRID))), int(x0 * GRID) : max(int(x0 * GRID) + 1, int(np.ceil(x1 * GRID)))] = True
    return m


def rects_iou(a: Rects, b: Rects, *, empty: float) -> float:
    """Area IoU over all pages of two sets of rectangles, rasterized on a GRID x GRID page;
    ``empty`` when neither covers anything."""
    inter = union = 0
    for page in set(a) | set(b):
        ma, mb = _mask(a.get(page, [])), _mask(b.get(page, []))
        inter += int(np.logical_and(ma, mb).sum())
        union += int(np.logical_or(ma, mb).sum())
    return inter / union if union else empty


def best_iou(truths: list[Rects], geom: list[ParsingBoundingBox]) -> float:
    """IoU against the best-matching occurrence of the text."""
    return max(area_iou(t, geom) for t in truths)


def area_iou(truth: Rects, geom: list[ParsingBoundingBox]) -> float:
    """Area IoU over all pages between ground-truth line rects and a chunk's body line boxes."""
    return rects_iou(truth, line_rects(geom), empty=0.0)
