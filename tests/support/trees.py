"""Shared by tests: helpers formerly at the top of test_chunking_properties.py."""

from __future__ import annotations

import hashlib

import numpy as np
from hypothesis import strategies as st

from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.model import ParsingResultType as T
from grounded.text.tokenizer import load_tokenizer

WORDS = [
    "tumour", "chemotherapy", "patients", "should", "receive", "adjuvant", "therapy", "within", "weeks",
    "of", "surgery", "HER2-positive", "disease", "trastuzumab", "(grade", "A)", "recommendation:", "5-FU,",
    "dose", "mg/m²", "is", "reduced", "by", "25%", "when", "eGFR", "<", "30", "ml/min.", "Evidence", "level",
    "Ib;", "see", "Table", "3.", "The", "panel", "agreed!", "Why?", "non-inferiority", "was", "shown", "¶",
]
PAGE_COUNT = 4
TOKENIZER = load_tokenizer()


def _text(draw: st.DrawFn, min_words: int, max_words: int) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=min_words, max_size=max_words))
    text = " ".join(words)
    if draw(st.booleans()) and len(words) > 6:  # sentence and line breaks inside an element
        cut = len(text) // 2
        text = text[:cut].rstrip() + ". " + text[cut:].lstrip()
    return text or "text"


def _geom(content: str, page: int, top: float, draw: st.DrawFn) -> list[ParsingBoundingBox]:
    """Lines of ~40 chars with linear character extents; long elements continue on the next page."""
    lines = []
    pos = 0
    line_no = 0
    while pos < len(content):
        end = min(len(content), pos + 40)
        n = end - pos
        xs = []
        for i in range(n):
            xs += [0.1 + 0.8 * i / 40, 0.1 + 0.8 * (i + 1) / 40]
        y = top + 0.02 * line_no
        if y > 0.9 and page < PAGE_COUNT:  # page break inside the element
            page, top, line_no, y = page + 1, 0.05, 0, 0.05
        lines.append(ParsingBoundingBox(page, 0.1, min(y, 0.97), 0.1 + 0.8 * n / 40, min(y + 0.015, 0.99), char_start=pos, char_end=end, char_x=xs))
        pos = end
        line_no += 1
    boxes = []
    for p in sorted({ln.page for ln in lines}):
        on_page = [ln for ln in lines if ln.page == p]
        boxes.append(ParsingBoundingBox.enclosing(on_page, spans=on_page))
    return boxes


@st.composite
def trees(draw: st.DrawFn) -> ParsingResult:
    root = ParsingResult("root", T.ROOT, metadata={"pages": [{"page": p, "width": 595, "height": 842} for p in range(1, PAGE_COUNT + 1)]})
    counter = iter(range(1, 10_000))
    page, top = 1, 0.05

    def place(content: str) -> list[ParsingBoundingBox]:
        nonlocal page, top
        geom = _geom(content, page, top, draw)
        last = geom[-1]
        page, top = last.page, last.bottom + 0.01
        if top > 0.9 and page < PAGE_COUNT:
            page, top = page + 1, 0.05
        return geom

    def node(t: T, content: str, **meta: object) -> ParsingResult:
        return ParsingResult(f"e{next(counter)}", t, content, place(content), metadata=dict(meta))

    for _ in range(draw(st.integers(1, 4))):
        section = root.add_child(node(T.SECTION_HEADER, _text(draw, 1, 6), level=1))
        for _ in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["para", "para", "list", "table", "sub"]))
            if kind == "para":
                section.add_child(node(T.PARAGRAPH, _text(draw, 1, 120)))
            elif kind == "list":
                lst = section.add_child(ParsingResult(f"e{next(counter)}", T.LIST))
                for _ in range(draw(st.integers(1, 4))):
                    lst.add_child(node(T.LIST_ITEM, _text(draw, 1, 30)))
            elif kind == "table":
                table = section.add_child(ParsingResult(f"e{next(counter)}", T.TABLE, "| md |"))
                for _ in range(draw(st.integers(1, 3))):
                    row = table.add_child(ParsingResult(f"e{next(counter)}", T.TABLE_ROW))
                    for _ in range(draw(st.integers(1, 3))):
                        row.add_child(node(T.TABLE_CELL, _text(draw, 1, 5)))
            else:
                sub = section.add_child(node(T.SECTION_HEADER, _text(draw, 1, 4), level=2))
                sub.add_child(node(T.PARAGRAPH, _text(draw, 1, 80)))
    return root


def bag_of_words_embedder(texts: list[str]) -> np.ndarray:
    """Cheap deterministic sentence vectors for property runs (real MiniLM runs in the PDF tests)."""
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1, norms)


STRATEGY_OPTIONS = {
    "fixed": {},
    "recursive": {},
    "semantic": {"embedder": bag_of_words_embedder, "percentile": 0.7},
    "hierarchical": {},
}


