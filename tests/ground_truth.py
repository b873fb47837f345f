"""Ground-truth highlight regions computed from the PDF alone (independent of the chunker).

A chunk body is located in the PDF's own character stream (PyMuPDF rawdict, whitespace and
hyphens ignored so de-hyphenation does not matter), aligned character by character with
Levenshtein opcodes (so interleaved page headers/footers are skipped), and the matched characters'
boxes are unioned per text line. Areas are compared on a rasterized page grid.
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


@dataclass
class PDFChars:
    text: str  # kept characters of the whole document, in content-stream order
    page: np.ndarray  # 1-based page per char
    line: np.ndarray  # global line id per char
    boxes: np.ndarray  # (n, 4) fractions x0, y0, x1, y1 (displayed page)

    @classmethod
    def load(cls, pdf: str | Path) -> PDFChars:
        chars, pages, lines, boxes = [], [], [], []
        line_id = 0
        with pymupdf.open(pdf) as doc:
            for page in doc:
                w, h = page.rect.width, page.rect.height
                for block in page.get_text("rawdict", flags=pymupdf.TEXTFLAGS_RAWDICT & ~pymupdf.TEXT_PRESERVE_IMAGES)["blocks"]:
                    for ln in block.get("lines", ()):
                        line_id += 1
                        for span in ln["spans"]:
                            for c in span["chars"]:
                                if _keep(c["c"]):
                                    x0, y0, x1, y1 = c["bbox"]
                                    chars.append(c["c"])
                                    pages.append(page.number + 1)
                                    lines.append(line_id)
                                    boxes.append((x0 / w, y0 / h, x1 / w, y1 / h))
        return cls("".join(chars), np.asarray(pages), np.asarray(lines), np.clip(np.asarray(boxes, dtype=float), 0, 1))

    def regions(self, body: str, max_candidates: int = 5) -> list[dict[int, list[tuple[float, float, float, float]]]]:
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

    def _region_at(self, needle: str, tail: str, start: int) -> dict[int, list[tuple[float, float, float, float]]] | None:
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
        out: dict[int, list[tuple[float, float, float, float]]] = defaultdict(list)
        for members in per_line.values():
            b = self.boxes[members]
            out[int(self.page[members[0]])].append((b[:, 0].min(), b[:, 1].min(), b[:, 2].max(), b[:, 3].max()))
        return dict(out)


def _mask(rects: list[tuple[float, float, float, float]]) -> np.ndarray:
    m = np.zeros((GRID, GRID), dtype=bool)
    for x0, y0, x1, y1 in rects:
        m[int(y0 * GRID) : max(int(y0 * GRID) + 1, int(np.ceil(y1 * GRID))), int(x0 * GRID) : max(int(x0 * GRID) + 1, int(np.ceil(x1 * GRID)))] = True
    return m


def best_iou(truths: list[dict[int, list[tuple[float, float, float, float]]]], geom: list[ParsingBoundingBox]) -> float:
    """IoU against the best-matching occurrence of the text."""
    return max(area_iou(t, geom) for t in truths)


def area_iou(truth: dict[int, list[tuple[float, float, float, float]]], geom: list[ParsingBoundingBox]) -> float:
    """Area IoU over all pages between ground-truth line rects and a chunk's body line boxes."""
    pred: dict[int, list[tuple[float, float, float, float]]] = defaultdict(list)
    for box in geom:
        if box.is_heading:
            continue
        for s in box.spans or [box]:
            pred[s.page].append((s.left, s.top, s.right, s.bottom))
    inter = union = 0
    for page in set(truth) | set(pred):
        a, b = _mask(truth.get(page, [])), _mask(pred.get(page, []))
        inter += int(np.logical_and(a, b).sum())
        union += int(np.logical_or(a, b).sum())
    return inter / union if union else 0.0
