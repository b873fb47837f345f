"""``ChunkAssembler.boxes_for_chars``: boxes for an arbitrary character span of the document text,
made like a chunk body's boxes (the primitive that grounding and re-split parts build on)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grounded.chunking import Chunker
from grounded.model import ParsingResult
from grounded.parsers import get_parser
from grounded.text.assembly import ChunkAssembler
from grounded.text.tokenizer import load_tokenizer
from tests.support.data import LONG_PDFS
from tests.support.shared_parses import SharedParses

TOKENIZER = load_tokenizer()

_TEXT = (
    "renal sodium excretion blood pressure increased markedly after the infusion of angiotensin while "
    "the control group showed no significant change in plasma volume or heart rate during the study"
)
_WORDS = _TEXT.split()


def _paragraph(seed: int, n: int) -> str:
    return " ".join(_WORDS[(seed * 7 + i * 3) % len(_WORDS)] for i in range(n)).capitalize() + "."


def _make_pdf(path: Path, pages: int = 3) -> Path:
    doc = pymupdf.open()
    seed = 0
    for p in range(pages):
        page = doc.new_page()
        y = 60.0
        page.insert_text((60, y), f"Section {p + 1} Results", fontsize=16)
        y += 30
        for _ in range(4):
            seed += 1
            rect = pymupdf.Rect(60, y, 540, y + 150)
            page.insert_textbox(rect, _paragraph(seed, 60), fontsize=10)
            y += 165
    doc.save(path)
    return path


def _body_boxes(chunk) -> list:
    return [b for b in chunk.geom if not b.is_heading]


def _check_chunks_equal(root: ParsingResult, strategy: str, max_tokens: int, box_mode: str) -> int:
    chunker = Chunker(strategy, max_tokens, tokenizer=TOKENIZER, box_mode=box_mode)
    assembler = ChunkAssembler(chunker.stream(root), root, strategy=strategy, box_mode=box_mode)
    n = 0
    for chunk in chunker.chunk(root).chunks:
        got = assembler.boxes_for_chars(chunk.metadata["start_char"], chunk.metadata["end_char"])
        assert got == _body_boxes(chunk), (strategy, max_tokens, box_mode, chunk.id)
        n += 1
    return n


@pytest.fixture(scope="module")
def constructed(tmp_path_factory: pytest.TempPathFactory) -> ParsingResult:
    pdf = _make_pdf(tmp_path_factory.mktemp("bfc") / "doc.pdf")
    return get_parser("pymupdf").parse(pdf)


@pytest.mark.parametrize("box_mode", ["auto", "line", "element"])
@pytest.mark.parametrize("strategy,max_tokens", [("recursive", 64), ("fixed", 50), ("hierarchical", 128)])
def test_chunk_spans_give_chunk_body_boxes(constructed: ParsingResult, strategy: str, max_tokens: int, box_mode: str) -> None:
    assert _check_chunks_equal(constructed, strategy, max_tokens, box_mode) > 3


def test_span_across_pages_and_edges(constructed: ParsingResult) -> None:
    chunker = Chunker("recursive", 64, tokenizer=TOKENIZER)
    stream = chunker.stream(constructed)
    asm = ChunkAssembler(stream, constructed, strategy="recursive")
    text = stream.text
    assert asm.boxes_for_chars(0, len(text)) != []
    assert {b.page for b in asm.boxes_for_chars(0, len(text))} == {1, 2, 3}
    assert asm.boxes_for_chars(-50, 10**9) == asm.boxes_for_chars(0, len(text))  # clipped
    assert asm.boxes_for_chars(10, 10) == [] and asm.boxes_for_chars(20, 10) == []
    doc = stream.doc
    sep_lo = doc.starts[0] + len(doc.nodes[0].content)
    assert asm.boxes_for_chars(sep_lo, doc.starts[1]) == []  # a delimiter alone selects nothing
    # every box is exact (the constructed PDF has per-character extents) and in reading order
    boxes = asm.boxes_for_chars(0, len(text))
    assert all(b.mode == "exact" for b in boxes)
    order = [doc.element_offsets[b.element_id] for b in boxes]
    assert order == sorted(order)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_sub_span_boxes_lie_inside_the_span_elements(constructed: ParsingResult, data: st.DataObject) -> None:
    chunker = Chunker("recursive", 64, tokenizer=TOKENIZER)
    stream = chunker.stream(constructed)
    asm = ChunkAssembler(stream, constructed, strategy="recursive")
    n = len(stream.text)
    a = data.draw(st.integers(0, n - 1))
    b = data.draw(st.integers(a + 1, min(n, a + 2000)))
    boxes = asm.boxes_for_chars(a, b)
    doc = stream.doc
    touched = {
        node.id
        for node, s in zip(doc.nodes, doc.starts, strict=True)
        if s < b and s + len(node.content) > a and node.content[max(0, a - s) : b - s].strip()
    }
    assert {bx.element_id for bx in boxes} == touched
    # an exact part of a line never extends beyond the full line's box
    whole = {(bx.element_id, bx.page): bx for bx in asm.boxes_for_chars(0, n)}
    for bx in boxes:
        full = whole[(bx.element_id, bx.page)]
        assert full.left - 1e-4 <= bx.left and bx.right <= full.right + 1e-4  # char_x is quantized


@pytest.mark.slow
def test_chunk_spans_on_shared_pdfs(shared_parses: SharedParses) -> None:
    trees = shared_parses.trees(LONG_PDFS, "../shared/data/long")
    for root in trees.values():
        for strategy in ("recursive", "hierarchical"):
            assert _check_chunks_equal(root, strategy, 256, "auto") > 5
    shared_parses.assert_unchanged(trees)
