"""Property tests (hypothesis) of the chunk invariants on generated parse trees."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grounded.chunking import Chunker
from grounded.chunking.base import strategy_class
from grounded.chunking.tokenizer import load_tokenizer
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.model import ParsingResultType as T

from .chunk_checks import check_invariants

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


@pytest.mark.parametrize("strategy", sorted(STRATEGY_OPTIONS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(root=trees(), max_tokens=st.sampled_from([16, 24, 48, 128]), with_overlap=st.booleans(), box_mode=st.sampled_from(["auto", "line", "element"]))
def test_invariants_hold_on_generated_trees(strategy: str, root: ParsingResult, max_tokens: int, with_overlap: bool, box_mode: str) -> None:
    overlap = max_tokens // 5 if with_overlap and strategy_class(strategy).supports_overlap else 0
    chunker = Chunker(strategy, max_tokens, overlap, tokenizer=TOKENIZER, box_mode=box_mode, **STRATEGY_OPTIONS[strategy])
    result = chunker.chunk(root)
    stream = chunker.stream(root)
    assert result.chunks, "a non-empty tree yields chunks"
    check_invariants(root, result, stream, max_tokens, overlap=overlap > 0, page_count=PAGE_COUNT)
    ids = [c.id for c in result.chunks]
    assert len(set(ids)) == len(ids)
    if box_mode == "auto":
        assert all(b.mode == "exact" for c in result.chunks for b in c.geom)


@settings(max_examples=30, deadline=None)
@given(root=trees(), max_tokens=st.sampled_from([16, 48]))
def test_exact_boxes_cover_exactly_the_chunk_characters(root: ParsingResult, max_tokens: int) -> None:
    """With linear synthetic char extents, an exact box's width is the chunk's char count on that line."""
    result = Chunker("fixed", max_tokens, tokenizer=TOKENIZER).chunk(root)
    by_id = {n.id: n for n in root.walk()}
    for chunk in result.chunks:
        for element_id, lo, hi in chunk.metadata["element_spans"]:
            lines = [s for b in by_id[element_id].geom for s in b.spans]
            expected = sum(max(0, min(hi, ln.char_end) - max(lo, ln.char_start)) for ln in lines)
            got = sum(
                round((s.right - s.left) / (0.8 / 40))
                for b in chunk.geom
                if b.element_id == element_id and not b.is_heading
                for s in b.spans
            )
            assert got == expected


def test_hierarchical_prepends_headings_under_budget() -> None:
    root = ParsingResult("root", T.ROOT)
    h1 = root.add_child(ParsingResult("h1", T.SECTION_HEADER, "Systemic therapy of early breast cancer", metadata={"level": 1}))
    h2 = h1.add_child(ParsingResult("h2", T.SECTION_HEADER, "Adjuvant chemotherapy in HER2 positive disease", metadata={"level": 2}))
    for i in range(6):
        h2.add_child(ParsingResult(f"p{i}", T.PARAGRAPH, " ".join(WORDS[i : i + 30])))
    chunker = Chunker("hierarchical", 48, tokenizer=TOKENIZER, heading_budget=12)
    result = chunker.chunk(root)
    assert len(result.chunks) > 1
    # H1 was dropped by the budget from every chunk: its text is kept as a body of its own
    assert result.chunks[0].body == "Systemic therapy of early breast cancer"
    assert "heading_ids" not in result.chunks[0].metadata
    for chunk in result.chunks[1:]:
        assert chunk.metadata["token_count"] <= 48
        heading_text = chunk.content[: chunk.metadata["body_start"]]
        # the budget (12) cannot hold both headings (6 + 9 tokens): the highest ancestor is dropped
        assert heading_text.strip() == "Adjuvant chemotherapy in HER2 positive disease"
        assert chunk.metadata["heading_ids"] == ["h2"]
    roomy = Chunker("hierarchical", 128, tokenizer=TOKENIZER, heading_budget=40).chunk(root)
    assert all(c.metadata["heading_ids"] == ["h1", "h2"] for c in roomy.chunks)


def test_small_subtrees_merge_into_one_chunk() -> None:
    root = ParsingResult("root", T.ROOT)
    sec = root.add_child(ParsingResult("s", T.SECTION_HEADER, "Dosing", metadata={"level": 1}))
    for i in range(3):
        sec.add_child(ParsingResult(f"p{i}", T.PARAGRAPH, f"Short paragraph number {i}."))
    result = Chunker("hierarchical", 256, tokenizer=TOKENIZER).chunk(root)
    assert len(result.chunks) == 1
    assert result.chunks[0].content.startswith("Dosing\n\nShort paragraph number 0.")


def test_rich_tokens_point_into_their_elements() -> None:
    root = ParsingResult("root", T.ROOT)
    sec = root.add_child(ParsingResult("s", T.SECTION_HEADER, "Dosing of trastuzumab", metadata={"level": 1}))
    sec.add_child(ParsingResult("p", T.PARAGRAPH, "Give 8 mg/kg, then 6 mg/kg every three weeks."))
    stream = Chunker("fixed", 16, tokenizer=TOKENIZER).stream(root)
    tokens = list(stream.rich_tokens(0, len(stream)))
    assert [t.element_id for t in tokens][:1] == ["s"] and tokens[-1].element_id == "p"
    by_id = {n.id: n for n in root.walk()}
    for t in tokens:
        assert t.element_id is not None
        assert by_id[t.element_id].content[t.char_start : t.char_end].lower() == t.text.lower()


def _nested(kind: str, depth: int) -> ParsingResult:
    """``depth`` levels: section headers each under the previous one, or lists nested in list items."""
    root = ParsingResult("root", T.ROOT)
    parent = root
    for i in range(depth):
        if kind == "sections":
            node = parent.add_child(ParsingResult(f"h{i}", T.SECTION_HEADER, f"Heading {i} of adjuvant therapy", metadata={"level": min(i + 1, 6)}))
        else:
            lst = parent.add_child(ParsingResult(f"l{i}", T.LIST))
            node = lst.add_child(ParsingResult(f"i{i}", T.LIST_ITEM, f"Item {i}: give trastuzumab."))
        parent = node
    return root


@pytest.mark.parametrize("kind", ["sections", "lists"])
@pytest.mark.parametrize(
    "strategy", ["hierarchical", *(pytest.param(s, marks=pytest.mark.slow) for s in sorted(STRATEGY_OPTIONS) if s != "hierarchical")]
)
def test_5000_nesting_levels(strategy: str, kind: str) -> None:
    """The hierarchical strategy recursed once per level (RecursionError near 1000, issue #14.3).
    (The other strategies always handled it; they are slow here only because the chunk assembly
    walks each chunk's ancestors.)"""
    root = _nested(kind, 5000)
    chunker = Chunker(strategy, 64, tokenizer=TOKENIZER, **STRATEGY_OPTIONS[strategy])
    result = chunker.chunk(root)
    assert result.chunks
    assert max(TOKENIZER.count_batch([c.content for c in result.chunks])) <= 64
    # every element's text is in a body or a prepended heading
    covered = {e for c in result.chunks for e in c.metadata["element_ids"]} | {h for c in result.chunks for h in c.metadata.get("heading_ids", ())}
    assert covered == {n.id for n in root.walk() if n.content}
