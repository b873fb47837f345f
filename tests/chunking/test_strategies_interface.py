"""The strategy-authoring interface (grounded.chunking.pieces): the example of docs/strategies.md run on
a shared PDF, the piece kinds, range validation, and the built-in strategies on the interface."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grounded.chunking import Chunker, document_text
from grounded.chunking.base import STRATEGIES, ChunkingStrategy, TokenGroup, load_strategies, strategy_class
from grounded.chunking.pieces import Document, Piece, PieceStrategy, Span, join
from grounded.errors import ChunkingError
from grounded.model import ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers import get_parser
from grounded.text.stream import TokenStream
from grounded.text.tokenizer import load_tokenizer
from tests.support.chunk_checks import check_invariants
from tests.support.data import REPO
from tests.support.trees import PAGE_COUNT, trees

TOKENIZER = load_tokenizer()


@pytest.fixture(scope="module")
def clinsci(clinsci_pdf: Path) -> ParsingResult:
    return get_parser("pymupdf").parse(clinsci_pdf)


@pytest.fixture
def docs_example() -> Iterator[type[PieceStrategy]]:
    """The example strategy of docs/strategies.md, executed from the document itself."""
    text = (REPO / "docs" / "strategies.md").read_text(encoding="utf-8")
    block = text.split("## Example: one chunk per section", 1)[1]
    code = re.search(r"```python\n(.*?)```", block, re.S)
    assert code is not None
    assert len(code.group(1).strip().splitlines()) <= 30  # a short example
    namespace: dict[str, Any] = {}
    exec(compile(code.group(1), "docs/strategies.md", "exec"), namespace)
    try:
        yield namespace["SectionStrategy"]
    finally:
        STRATEGIES.pop("sections", None)  # keep the registry as the built-ins left it


def test_docs_example_on_a_shared_pdf(docs_example: type[PieceStrategy], clinsci: ParsingResult) -> None:
    chunker = Chunker("sections", 256, tokenizer=TOKENIZER)
    assert isinstance(chunker.strategy, docs_example)
    result = chunker.chunk(clinsci)
    stream = chunker.stream(clinsci)
    check_invariants(clinsci, result, stream, 256, overlap=False, page_count=clinsci.metadata["page_count"])
    # every heading starts a chunk; a chunk never runs past the next heading
    doc = Document(stream, clinsci)
    heading_starts = {stream.char_span(p.start, p.end)[0] for p in doc.pieces("element") if p.is_heading}
    assert len(heading_starts) > 5
    starts = {c.metadata["start_char"] for c in result.chunks}
    assert heading_starts <= starts
    for c in result.chunks:
        inside = [h for h in heading_starts if c.metadata["start_char"] < h < c.metadata["end_char"]]
        assert not inside, (c.body[:60], inside)


# -- pieces -----------------------------------------------------------------------------------------
def _doc(root: ParsingResult) -> tuple[Document, TokenStream]:
    stream = Chunker("fixed", 64, tokenizer=TOKENIZER).stream(root)
    return Document(stream, root), stream


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(root=trees(), size=st.sampled_from([1, 7, 50]))
def test_piece_kinds(root: ParsingResult, size: int) -> None:
    doc, stream = _doc(root)
    n = len(doc)
    text = document_text(root).text
    for kind in ("sentence", "word", "split"):
        pieces = doc.pieces(kind, max_tokens=size)
        if n == 0:
            assert pieces == []
            continue
        # these kinds tile the document, in order, without empty pieces
        assert pieces[0].start == 0 and pieces[-1].end == n
        assert all(a.end == b.start for a, b in zip(pieces, pieces[1:]))
        assert all(p.tokens > 0 and p.index == i for i, p in enumerate(pieces))
        if kind == "split":
            assert all(p.tokens <= size or p.end - p.start == p.tokens for p in pieces)
    elements = doc.pieces("element")
    for p in elements:
        assert p.element is not None and (p.start, p.end) == doc.element_range(p.element)
        node = doc.element(p.element)
        assert p.text == node.content.strip() or p.text in node.content
        assert p.starts_element and p.element_type == node.type
        assert p.is_heading == (node.type in (T.SECTION_HEADER, T.TITLE))
        assert doc.element_index(node) == p.element
        lo, hi = stream.char_span(p.start, p.end)
        assert text[lo:hi] == p.text


def test_sentence_and_split_pieces_on_text(clinsci: ParsingResult) -> None:
    doc, stream = _doc(clinsci)
    sentences = doc.pieces("sentence")
    assert len(sentences) > 100
    assert sum(p.starts_element for p in sentences) >= len(doc.pieces("element")) - 5
    split = doc.pieces("split", max_tokens=50)
    assert max(p.tokens for p in split) <= 50 and sum(p.tokens for p in split) == len(doc)
    assert join(split[3:7]) == Span(split[3].start, split[6].end)
    with pytest.raises(ChunkingError, match="unknown piece kind"):
        doc.pieces("paragraphs")
    with pytest.raises(ChunkingError, match="max_tokens"):
        doc.pieces("split")
    with pytest.raises(ChunkingError):
        join([])


# -- validation -------------------------------------------------------------------------------------
class Returns(PieceStrategy):
    """A strategy returning whatever it is given."""

    name = "returns"
    piece_kind = None

    def __init__(self, ranges: list[Any]) -> None:
        super().__init__(64)
        self.ranges = ranges

    def split(self, pieces: Sequence[Piece], doc: Document) -> list[Any]:
        return self.ranges


@pytest.mark.parametrize(
    ("ranges", "match"),
    [
        ([(0, 10**9)], "outside"),
        ([(-1, 3)], "outside"),
        ([(5, 3)], "outside"),
        ([(0.0, 3)], "outside"),
        ([(10, 20), (0, 5)], "reading order"),
        ([Span(0, 5, (10**6,))], "headings"),
        (["0-5"], "expected a Span"),
        ([(0, 1, 2)], "expected a Span"),
    ],
)
def test_bad_ranges_are_typed_errors_naming_the_strategy(clinsci: ParsingResult, ranges: list[Any], match: str) -> None:
    with pytest.raises(ChunkingError, match=match) as err:
        Chunker(Returns(ranges), tokenizer=TOKENIZER).chunk(clinsci)
    assert "'returns'" in str(err.value)


def test_ranges_become_groups(clinsci: ParsingResult) -> None:
    stream = Chunker("fixed", 64, tokenizer=TOKENIZER).stream(clinsci)
    heading = next(p for p in Document(stream, clinsci).pieces("element") if p.is_heading)
    ranges = [(0, 10), (5, 5), Span(5, 20, (heading.element,)), (5, 30)]  # overlap is allowed, empty skipped
    groups = list(Returns(ranges).groups(stream, clinsci))
    assert groups == [TokenGroup(0, 10), TokenGroup(5, 20, (heading.element,)), TokenGroup(5, 30)]


# -- the built-ins -----------------------------------------------------------------------------------
def test_builtins_use_the_interface_and_declare_their_traits() -> None:
    for name in ("fixed", "recursive", "semantic", "hierarchical", "cluster", "kamradt_mod", "kamradt", "llm"):
        assert issubclass(strategy_class(name), PieceStrategy), name
    assert {n for n, cls in load_strategies().items() if cls.uses_embedder} >= {"semantic", "cluster", "kamradt_mod", "kamradt"}
    assert not strategy_class("llm").uses_embedder
    partitioning = ("cluster", "kamradt_mod", "kamradt", "llm")
    assert not any(strategy_class(n).supports_overlap for n in partitioning)
    assert strategy_class("fixed").supports_overlap and strategy_class("hierarchical").supports_overlap


def test_full_control_strategies_still_work(clinsci: ParsingResult) -> None:
    """``ChunkingStrategy.groups`` stays the interface for strategies that want the raw stream."""

    class Halves(ChunkingStrategy):
        name = "halves"

        def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
            yield TokenGroup(0, len(stream) // 2)
            yield TokenGroup(len(stream) // 2, len(stream))

    result = Chunker(Halves(4096), tokenizer=TOKENIZER).chunk(clinsci)
    stream = Chunker("fixed", 64, tokenizer=TOKENIZER).stream(clinsci)
    check_invariants(clinsci, result, stream, 4096, overlap=False, page_count=clinsci.metadata["page_count"])
    assert len(result.chunks) >= 2


def test_generated_trees_with_the_docs_example(docs_example: type[PieceStrategy]) -> None:
    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(root=trees(), max_tokens=st.sampled_from([8, 32, 128]))
    def run(root: ParsingResult, max_tokens: int) -> None:
        chunker = Chunker(docs_example(max_tokens), tokenizer=TOKENIZER)
        result = chunker.chunk(root)
        check_invariants(root, result, chunker.stream(root), max_tokens, overlap=False, page_count=PAGE_COUNT)

    run()
