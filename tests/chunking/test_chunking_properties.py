"""Property tests (hypothesis) of the chunk invariants on generated parse trees."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grounded.chunking import Chunker
from grounded.chunking.base import strategy_class
from grounded.model import ParsingResult
from grounded.model import ParsingResultType as T
from tests.support.chunk_checks import check_invariants
from tests.support.trees import (
    PAGE_COUNT,
    STRATEGY_OPTIONS,
    TOKENIZER,
    WORDS,
    trees,
)


@pytest.mark.parametrize("strategy", sorted(STRATEGY_OPTIONS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(root=trees(), max_tokens=st.sampled_from([16, 24, 48, 128]), with_overlap=st.booleans(),
       box_mode=st.sampled_from(["auto", "line", "element"]))
def test_invariants_hold_on_generated_trees(
    strategy: str, root: ParsingResult, max_tokens: int, with_overlap: bool, box_mode: str
) -> None:
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
    h2 = h1.add_child(
        ParsingResult("h2", T.SECTION_HEADER, "Adjuvant chemotherapy in HER2 positive disease", metadata={"level": 2})
    )
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
            level = {"level": min(i + 1, 6)}
            heading = ParsingResult(f"h{i}", T.SECTION_HEADER, f"Heading {i} of adjuvant therapy", metadata=level)
            node = parent.add_child(heading)
        else:
            lst = parent.add_child(ParsingResult(f"l{i}", T.LIST))
            node = lst.add_child(ParsingResult(f"i{i}", T.LIST_ITEM, f"Item {i}: give trastuzumab."))
        parent = node
    return root


@pytest.mark.parametrize("kind", ["sections", "lists"])
@pytest.mark.parametrize(
    "strategy",
    ["hierarchical", *(pytest.param(s, marks=pytest.mark.slow) for s in sorted(STRATEGY_OPTIONS) if s != "hierarchical")],
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
    covered = {e for c in result.chunks for e in c.metadata["element_ids"]}
    covered |= {h for c in result.chunks for h in c.metadata.get("heading_ids", ())}
    assert covered == {n.id for n in root.walk() if n.content}
