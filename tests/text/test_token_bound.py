"""The token bound on the chunk text as the embedder tokenizes it (issue #14.8).

For every chunk of every strategy: ``len(tokenizer.encode(chunk.content)) <= N`` (headings
included), except a chunk whose body is one character (a code point with its combining marks)
that alone encodes to more than N tokens; bodies are exact slices of the document text, never
empty, and every character of every token lands in a body (or in a prepended heading).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grounded.chunking import Chunker, document_text
from grounded.errors import ChunkingError
from grounded.model import ChunkingResult, ParsingResult
from grounded.model import ParsingResultType as T
from grounded.text.bound import char_units
from grounded.text.tokenizer import load_tokenizer
from tests.support.data import LONG_PDFS
from tests.support.shared_parses import SharedParses
from tests.support.trees import bag_of_words_embedder

MINILM = load_tokenizer()
SIZES = (1, 2, 8, 64)
STRATEGIES = ("fixed", "recursive", "semantic", "hierarchical")

# -- generated text: ordinary words mixed with every kind of unusual Unicode ------------------------
WORDS = ["adjuvant", "angiotensinconverting", "trastuzumab", "HER2-positive", "mg/m²", "eGFR", "5-FU,", "naïve", "Grade", "A)."]
odd_chars = st.characters(categories=["Cc", "Cf", "Mn", "Me", "Co", "So", "Sk", "Zs", "Zl", "Zp", "Lo", "Nd", "Pd", "Po"])
rtl = st.characters(min_codepoint=0x0590, max_codepoint=0x06FF)  # Hebrew, Arabic
hangul = st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3)  # 3 MiniLM tokens per syllable
emoji = st.sampled_from(["😀", "👩‍⚕️", "🇪🇺", "1️⃣", "❤︎", "\U000e0067"])
piece = st.one_of(
    st.sampled_from(WORDS),
    st.text(max_size=12),
    st.text(odd_chars, max_size=8),
    st.text(rtl, min_size=1, max_size=10),
    st.text(hangul, min_size=1, max_size=4),
    emoji,
    st.text(st.sampled_from("abcdefghij"), min_size=10, max_size=60),  # one long word
)


@st.composite
def texts(draw: st.DrawFn, max_pieces: int = 12) -> str:
    parts = draw(st.lists(piece, min_size=1, max_size=max_pieces))
    seps = draw(st.lists(st.sampled_from(["", " ", " ", "\n", ". ", "\u00a0", "\t"]), min_size=len(parts), max_size=len(parts)))
    text = "".join(p + s for p, s in zip(parts, seps))
    return text if text.strip() else "x"


@st.composite
def unicode_trees(draw: st.DrawFn) -> ParsingResult:
    root = ParsingResult("root", T.ROOT)
    counter = iter(range(1, 10_000))

    def node(t: T, content: str = "", **meta: object) -> ParsingResult:
        return ParsingResult(f"e{next(counter)}", t, content, metadata=dict(meta))

    for _ in range(draw(st.integers(1, 3))):
        section = root.add_child(node(T.SECTION_HEADER, draw(texts(4)), level=1))
        for _ in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["para", "para", "list", "table", "sub"]))
            if kind == "para":
                section.add_child(node(T.PARAGRAPH, draw(texts())))
            elif kind == "list":
                lst = section.add_child(node(T.LIST))
                for _ in range(draw(st.integers(1, 3))):
                    lst.add_child(node(T.LIST_ITEM, draw(texts(5))))
            elif kind == "table":
                table = section.add_child(node(T.TABLE, "| md |"))
                for _ in range(draw(st.integers(1, 2))):
                    row = table.add_child(node(T.TABLE_ROW))
                    for _ in range(draw(st.integers(1, 3))):
                        row.add_child(node(T.TABLE_CELL, draw(texts(3))))
            else:
                sub = section.add_child(node(T.SECTION_HEADER, draw(texts(3)), level=2))
                sub.add_child(node(T.PARAGRAPH, draw(texts())))
    return root


def options(strategy: str) -> dict[str, object]:
    return {"embedder": bag_of_words_embedder, "percentile": 0.7} if strategy == "semantic" else {}


def check_bound(root: ParsingResult, result: ChunkingResult, max_tokens: int, tokenizer=MINILM) -> None:
    """The documented bound + exact offsets + no lost character, on one chunking."""
    doc = document_text(root)
    counts = tokenizer.count_batch([c.content for c in result.chunks])
    covered: list[tuple[int, int]] = []
    for chunk, n in zip(result.chunks, counts):
        meta = chunk.metadata
        start, end = meta["start_char"], meta["end_char"]
        assert end > start, chunk.id  # never empty
        assert doc.text[start:end] == chunk.body
        assert chunk.content[meta["body_start"] :] == chunk.body
        if n > max_tokens:  # the one documented exception: a single character too long alone
            assert meta["body_start"] == 0, (chunk.content, n, max_tokens)
            assert char_units(chunk.body, 0, len(chunk.body)) == [0, len(chunk.body)], (chunk.content, n, max_tokens)
            assert tokenizer.count(chunk.body) > max_tokens
        covered.append((start, end))
    # every character of every element token lies in some body, or its element is a prepended heading
    heading_ids = {h for c in result.chunks for h in c.metadata.get("heading_ids", ())}
    stream = Chunker("fixed", max_tokens, tokenizer=tokenizer).stream(root)
    covered.sort()
    merged: list[list[int]] = []
    for s, e in covered:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    import bisect

    lefts = [m[0] for m in merged]
    for k in range(len(stream)):
        owner = int(stream.node[k])
        if owner < 0 or doc.nodes[owner].id in heading_ids:
            continue
        s, e = stream.token_start(k), stream.token_end(k)
        if e <= s:
            continue
        i = bisect.bisect_right(lefts, s) - 1
        assert i >= 0 and merged[i][1] >= e, f"characters {s}:{e} ({doc.text[s:e]!r}) of token {k} are in no chunk"


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(root=unicode_trees(), max_tokens=st.sampled_from(SIZES), with_overlap=st.booleans())
def test_bound_holds_on_arbitrary_unicode(strategy: str, root: ParsingResult, max_tokens: int, with_overlap: bool) -> None:
    overlap = max_tokens // 2 if with_overlap and strategy in ("fixed", "recursive") else 0
    result = Chunker(strategy, max_tokens, overlap, tokenizer=MINILM, **options(strategy)).chunk(root)
    # text the tokenizer maps to no token at all (a lone combining mark: MiniLM strips accents) gives
    # no chunk; any token does (check_bound: every token's characters are in some chunk)
    assert result.chunks or not MINILM.count(document_text(root).text)
    check_bound(root, result, max_tokens)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(root=unicode_trees(), max_tokens=st.sampled_from(SIZES), strategy=st.sampled_from(["fixed", "hierarchical"]))
def test_bound_holds_for_a_byte_level_bpe_tokenizer(root: ParsingResult, max_tokens: int, strategy: str) -> None:
    """cl100k_base (no prefix-stability shortcut: every chunk is re-encoded)."""
    tok = load_tokenizer("cl100k_base")
    result = Chunker(strategy, max_tokens, tokenizer=tok).chunk(root)
    check_bound(root, result, max_tokens, tokenizer=tok)


def _one_paragraph(text: str, heading: str | None = None) -> ParsingResult:
    root = ParsingResult("root", T.ROOT)
    parent = root.add_child(ParsingResult("h", T.SECTION_HEADER, heading, metadata={"level": 1})) if heading else root
    parent.add_child(ParsingResult("p", T.PARAGRAPH, text))
    return root


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_word_longer_than_n_is_split_inside_and_every_piece_fits(strategy: str) -> None:
    """``adjuvant`` = ad ##ju ##vant; at N=1 the piece ``vant`` (van ##t) is cut between characters."""
    root = _one_paragraph("adjuvant angiotensinconverting")
    result = Chunker(strategy, 1, tokenizer=MINILM, **options(strategy)).chunk(root)
    bodies = [c.body for c in result.chunks]
    assert all(MINILM.count(c.content) == 1 for c in result.chunks)
    assert "".join(bodies[:4]) == "adjuvant" and "van" in bodies and "t" in bodies
    check_bound(root, result, 1)
    # a chunk cut inside a token keeps exact offsets and element spans
    cut = next(c for c in result.chunks if c.body == "t")
    assert cut.metadata["element_spans"] == [["p", 7, 8]]


def test_hangul_syllable_is_the_documented_exception() -> None:
    root = _one_paragraph("한국 ab")
    result = Chunker("fixed", 2, tokenizer=MINILM).chunk(root)
    assert [c.body for c in result.chunks] == ["한", "국", "ab"]
    assert [MINILM.count(c.content) for c in result.chunks] == [3, 3, 1]
    check_bound(root, result, 2)
    assert [MINILM.count(c.content) for c in Chunker("fixed", 3, tokenizer=MINILM).chunk(root).chunks] == [3, 3, 1]


def test_mid_word_window_start_no_longer_exceeds_n() -> None:
    """The shared-PDF case: an overlapping window that starts inside a word longer than the window
    (``antiinflammatory`` at N=7 with 50% overlap gave a chunk of 8 tokens)."""
    text = "antiinflammatory " * 20 + "tic and anti-inflammatory effects of the angiotensinconverting enzyme " * 4
    root = _one_paragraph(text)
    for n in range(2, 20):
        result = Chunker("fixed", n, 0.5, tokenizer=MINILM).chunk(root)
        assert max(MINILM.count_batch([c.content for c in result.chunks])) <= n
        check_bound(root, result, n)


def test_headings_that_re_tokenize_longer_are_dropped_not_lost() -> None:
    """str.split() treats U+001C as whitespace, WordPiece drops it: the heading ``in\x1cto`` is one
    token in the stream and two (``in to``) in the prepended prefix."""
    heading = "in\x1cto can\x1cnot"
    assert MINILM.count(heading) < MINILM.count(" ".join(heading.split()))
    root = _one_paragraph("alpha beta gamma delta epsilon zeta eta theta", heading=heading)
    for n in (3, 5, 6, 8):
        result = Chunker("hierarchical", n, tokenizer=MINILM, heading_budget=n - 1).chunk(root)
        assert max(MINILM.count_batch([c.content for c in result.chunks])) <= n
        check_bound(root, result, n)


@pytest.mark.parametrize("bad", [True, False, 2.0, "8", None, 0, -3])
def test_max_tokens_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(ChunkingError, match="max_tokens"):
        Chunker("fixed", bad)  # type: ignore[arg-type]


def test_numpy_integer_max_tokens_is_accepted() -> None:
    import numpy as np

    assert Chunker("fixed", np.int64(16)).max_tokens == 16  # type: ignore[arg-type]


@pytest.mark.slow
def test_shared_pdfs_at_16_tokens_with_half_overlap(shared_parses: SharedParses) -> None:
    """1 of 66,332 chunks exceeded N=16 (an overlapping window starting inside a word)."""
    trees = shared_parses.trees(LONG_PDFS, "../shared/data/long")
    for name, root in trees.items():
        for strategy in ("fixed", "recursive"):
            result = Chunker(strategy, 16, 0.5, tokenizer=MINILM).chunk(root)
            counts = MINILM.count_batch([c.content for c in result.chunks])
            assert max(counts) <= 16, (name, strategy, max(counts))
            check_bound(root, result, 16)
    shared_parses.assert_unchanged(trees)


@pytest.mark.parametrize("overlap", [True, False, "2", None, -1.5])
def test_overlap_must_be_a_count_or_a_fraction(overlap):
    with pytest.raises(ChunkingError, match="overlap"):
        Chunker("fixed", 8, overlap)


@pytest.mark.parametrize("name", ["gpt2", "p50k_base", "r50k_base"])
def test_encodings_that_would_be_downloaded_are_refused(name):
    with pytest.raises(ChunkingError, match="not available offline"):
        load_tokenizer(name)


def test_text_without_any_token_gives_no_chunk():
    # hypothesis found it: a lone combining mark is no MiniLM token (accents are stripped)
    root = ParsingResult("root", T.ROOT)
    root.add_child(ParsingResult("e1", T.SECTION_HEADER, content="\u0300", metadata={"level": 1}))
    assert MINILM.count("\u0300") == 0
    for strategy in ("fixed", "recursive", "hierarchical"):
        assert Chunker(strategy, 1, tokenizer=MINILM).chunk(root).chunks == []
