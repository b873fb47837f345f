"""Chroma chunk-retrieval evaluation: data loading, the text reader, LangChain-identical span
splitters, the on-disk embedding cache and an end-to-end run on a real subset."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from grounded.errors import InputNotFoundError, SchemaError
from grounded.evaluation.baseline_splitters import (
    CHROMA_SEPARATORS,
    Cl100k,
    RecursiveSpanSplitter,
    TokenSpanSplitter,
)
from grounded.evaluation.chroma_data import load_chroma_dataset
from grounded.evaluation.chunking_eval import (
    PUBLISHED_MINILM_N5,
    LangChainRecursive,
    LangChainTokenText,
    evaluate_chunker,
)
from grounded.evaluation.embeddings import CachedEmbedder, minilm_embedder
from grounded.evaluation.text_reader import read_text, read_text_file
from grounded.model import ParsingResultType as T
from tests.support.data import shared


@pytest.fixture(scope="module")
def dataset():
    return load_chroma_dataset(shared("chroma"))


@pytest.fixture(scope="module")
def cl100k():
    return Cl100k()


# -- data ---------------------------------------------------------------------------------------
def test_dataset_loads_and_references_match(dataset):
    assert len(dataset.questions) == 472
    assert sorted(dataset.corpora) == ["chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts"]
    counts = {c: sum(q.corpus_id == c for q in dataset.questions) for c in dataset.corpora}
    assert counts == {"chatlogs": 56, "finance": 97, "pubmed": 99, "state_of_the_union": 76, "wikitexts": 144}
    assert sum(len(q.references) for q in dataset.questions) == 790


def test_corpus_token_counts_match_the_paper(dataset, cl100k):
    # Chroma's corpus table (cl100k): pubmed 117,211, finance 166,177, chatlogs 7,727
    assert cl100k.count(dataset.corpora["pubmed"]) == 117_211
    assert cl100k.count(dataset.corpora["finance"]) == 166_177


def test_dataset_errors_name_the_file(tmp_path):
    with pytest.raises(InputNotFoundError, match="questions_df.csv"):
        load_chroma_dataset(tmp_path)
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "c.md").write_text("hello world", encoding="utf-8")
    (tmp_path / "questions_df.csv").write_text(
        'question,references,corpus_id\nq?,"[{""content"": ""hello"", ""start_index"": 1, ""end_index"": 6}]",c\n',
        encoding="utf-8")
    with pytest.raises(SchemaError, match="line 2.*does not match"):
        load_chroma_dataset(tmp_path)


# -- text reader --------------------------------------------------------------------------------
def test_text_reader_slices_and_hierarchy():
    text = "# Title\n\nIntro line one\nline two\n\n## Sub\n- item a\n  continued\n- item b\n\n = = Wiki = = \nlast\n"
    root = read_text(text)
    nodes = [n for n in root.walk() if n is not root]
    for n in nodes:
        if n.content:
            s = n.metadata["source_start"]
            assert text[s : s + len(n.content)] == n.content
        assert n.geom == []
    kinds = [(n.type, n.content) for n in nodes]
    assert kinds == [
        (T.SECTION_HEADER, "Title"),
        (T.PARAGRAPH, "Intro line one\nline two"),
        (T.SECTION_HEADER, "Sub"),
        (T.LIST, ""),
        (T.LIST_ITEM, "item a\n  continued"),
        (T.LIST_ITEM, "item b"),
        (T.SECTION_HEADER, "Wiki"),
        (T.PARAGRAPH, "last"),
    ]
    sub = nodes[2]
    assert sub.parent is nodes[0] and sub.metadata["level"] == 2
    assert nodes[6].parent is nodes[0] and nodes[6].metadata["level"] == 2  # "= = Wiki = =" is level 2
    assert nodes[7].parent is nodes[6]
    assert len({n.id for n in root.walk()}) == len(nodes) + 1


def test_text_reader_on_corpora_keeps_every_word(dataset):
    for cid, text in dataset.corpora.items():
        root = read_text_file(dataset.corpus_paths[cid], id_prefix=cid)
        kept: Counter[str] = Counter()
        for n in root.walk():
            if n.content:
                s = n.metadata["source_start"]
                assert text[s : s + len(n.content)] == n.content
                kept.update(w for w in n.content.split() if any(ch.isalnum() for ch in w))
        dropped = Counter(w for w in text.split() if any(ch.isalnum() for ch in w)) - kept
        # numbered-list markers ("15.", "2)") are the only words left out
        assert all(re.fullmatch(r"\d{1,3}[.)]", w) for w in dropped), (cid, dropped.most_common(3))
    wiki = read_text_file(dataset.corpus_paths["wikitexts"])
    assert sum(n.type == T.SECTION_HEADER for n in wiki.walk()) == 84


def test_text_reader_file_errors(tmp_path):
    with pytest.raises(InputNotFoundError):
        read_text_file(tmp_path / "missing.md")
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(Exception, match="bad.md"):
        read_text_file(bad)


# -- baseline splitters ------------------------------------------------------------------------
@pytest.mark.parametrize("corpus", ["state_of_the_union", "pubmed"])
@pytest.mark.parametrize(("size", "overlap"), [(250, 125), (200, 0)])
def test_span_splitters_reproduce_langchain(dataset, cl100k, corpus, size, overlap):
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from langchain_text_splitters.base import Tokenizer, split_text_on_tokens

    text = dataset.corpora[corpus]
    lc = RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=overlap, length_function=cl100k.count, separators=list(CHROMA_SEPARATORS)
    ).split_text(text)
    spans = RecursiveSpanSplitter(size, overlap, cl100k.count).split(text)
    assert [text[s:e] for s, e in spans] == lc
    lt = split_text_on_tokens(text=text, tokenizer=Tokenizer(chunk_overlap=overlap, tokens_per_chunk=size,
                                                             decode=cl100k.decode, encode=cl100k.encode))
    tspans = TokenSpanSplitter(size, overlap, cl100k).split(text)
    assert [text[s:e] for s, e in tspans] == lt
    assert all(cl100k.count(text[s:e]) <= size + 2 for s, e in tspans)


def test_token_windows():
    sp = TokenSpanSplitter.__new__(TokenSpanSplitter)
    sp.chunk_size, sp.chunk_overlap = 4, 2
    assert sp.windows(9) == [(0, 4), (2, 6), (4, 8), (6, 9)]
    assert sp.windows(4) == [(0, 4)]
    with pytest.raises(ValueError):
        TokenSpanSplitter(4, 4)


# -- embeddings cache ----------------------------------------------------------------------------
def test_cached_embedder_computes_each_text_once(tmp_path):
    calls: list[list[str]] = []

    def embed(texts):
        calls.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts])

    emb = CachedEmbedder(embed, "toy-model", cache_dir=tmp_path)
    v = emb.embed(["ab", "abcd", "ab"])
    assert calls == [["ab", "abcd"]]
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0) and np.allclose(v[0], v[2])
    again = CachedEmbedder(embed, "toy-model", cache_dir=tmp_path)  # a new process reads the packs
    assert np.allclose(again.embed(["abcd", "ab"]), v[[1, 0]])
    assert len(calls) == 1 and again.computed == 0
    assert list((tmp_path / "toy-model").glob("pack-*.npz"))
    off = CachedEmbedder(embed, "toy-model", cache_dir=tmp_path / "off", use_cache=False)
    off.embed(["x"])
    assert not (tmp_path / "off").exists()
    with pytest.raises(ValueError):
        CachedEmbedder(embed, "../escape", cache_dir=tmp_path)


# -- end to end on a real subset -------------------------------------------------------------------
@pytest.mark.slow
def test_chroma_pipeline_on_small_corpora(dataset, tmp_path):
    small = dataset.subset(["state_of_the_union"])
    emb = minilm_embedder(cache_dir=tmp_path)
    ev = evaluate_chunker(small, LangChainRecursive(200, 0), emb, n_values=("min", 5, 10))
    assert ev.n_chunks == 59
    all5, all10 = ev.summaries["5"]["all"], ev.summaries["10"]["all"]
    assert all5.n_questions == 76
    for s in (all5, all10):
        assert all(0.0 <= v <= 1.0 for v in s.mean.values())
    assert all10.mean["recall"] >= all5.mean["recall"]  # more chunks never lose relevant text
    assert all10.mean["precision"] < all5.mean["precision"]
    assert ev.summaries["min"]["all"].mean["precision_omega"] == all5.mean["precision_omega"]
    assert all5.mean["recall"] > 0.6  # MiniLM finds most excerpts of this clean speech
    rows = ev.per_question["min"]
    assert all(r["n"] >= 1 for r in rows)
    # a second run reuses every vector from disk
    emb2 = minilm_embedder(cache_dir=tmp_path)
    ev2 = evaluate_chunker(small, LangChainTokenText(200, 0), emb2, n_values=(5,))
    assert ev2.summaries["5"]["all"].n_questions == 76
    emb3 = minilm_embedder(cache_dir=tmp_path)
    evaluate_chunker(small, LangChainRecursive(200, 0), emb3, n_values=(5,))
    assert emb3.computed == 0


def test_published_reference_rows_are_the_papers():
    assert len(PUBLISHED_MINILM_N5) == 8  # Chroma's six LangChain rows + their two ClusterSemanticChunker rows
    assert PUBLISHED_MINILM_N5[("cluster", 250, 0)]["recall"] == (77.3, 38.6)
    assert PUBLISHED_MINILM_N5[("cluster", 200, 0)]["iou"] == (7.2, 6.0)
    assert PUBLISHED_MINILM_N5[("recursive", 200, 0)]["recall"] == (75.7, 40.7)
    assert PUBLISHED_MINILM_N5[("tokentext", 250, 125)]["iou"] == (3.5, 3.1)


# -- this library's strategies on the corpora ----------------------------------------------------------
@pytest.mark.parametrize("strategy", ["fixed", "recursive", "hierarchical"])
def test_grounded_chunks_map_back_to_exact_corpus_ranges(dataset, strategy):
    from grounded.evaluation.chunking_eval import GroundedCorpusChunker

    text = dataset.corpora["wikitexts"]
    pieces = GroundedCorpusChunker(strategy, 128, 26).chunk_corpus("wikitexts", text)
    assert len(pieces) > 100
    pos_total = 0
    for region, content in pieces:
        assert region.corpus_id == "wikitexts" and region.spans
        # every corpus range is text of the chunk, in order; the rest of the chunk is extra
        at = 0
        for s, e in region.spans:
            found = content.find(text[s:e], at)
            assert found >= 0
            at = found + (e - s)
        assert sum(e - s for s, e in region.spans) + region.extra_chars == len(content)
        pos_total += sum(e - s for s, e in region.spans)
    # the chunks cover the corpus text (overlap only adds)
    assert pos_total >= sum(len(n.content) for n in read_text(text).walk() if n.type != T.SECTION_HEADER)
    if strategy == "hierarchical":  # headings are prepended: extra characters beyond delimiters
        assert sum(r.extra_chars for r, _ in pieces) > 10 * len(pieces)


@pytest.mark.slow
def test_semantic_strategy_in_the_chroma_pipeline(dataset, tmp_path):
    from grounded.evaluation.chunking_eval import GroundedCorpusChunker

    small = dataset.subset(["chatlogs"])
    emb = minilm_embedder(cache_dir=tmp_path)
    chunker = GroundedCorpusChunker("semantic", 256, 0)
    chunker.sentence_embedder = emb.embed
    ev = evaluate_chunker(small, chunker, emb, n_values=(5,))
    assert ev.params["strategy"] == "semantic" and ev.n_chunks > 10
    assert 0.0 < ev.summaries["5"]["all"].mean["recall"] <= 1.0
    assert emb.computed > ev.n_chunks  # sentences and chunks both went through the cache


def test_grid_configurations():
    from grounded.evaluation.runs import grid_chunkers

    grid = grid_chunkers()
    configs = [(c.strategy, c.max_tokens, c.overlap, c.options.get("percentile")) for c in grid]
    # thesis §3.5.3: N in {128, 256, 512, 1024} x (O in {0, 0.2N} | Q in {0.7, 0.9}) x 4 strategies = 32 (its
    # "24 configurations" counts three sizes)
    assert len(configs) == 32 == len(set(configs))
    assert ("fixed", 128, 26, None) in configs and ("hierarchical", 512, 102, None) in configs
    assert ("recursive", 1024, 205, None) in configs and ("semantic", 1024, 0, 0.9) in configs
    assert ("semantic", 256, 0, 0.7) in configs and ("semantic", 256, 0, 0.9) in configs
    assert not any(s == "semantic" and o for s, _, o, _ in configs)


# -- extended suite: kamradt_mod, llm (skipped), third-party splitters grounded ------------------------
def _alnum(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


@pytest.mark.parametrize("corpus", [pytest.param("state_of_the_union", marks=pytest.mark.slow), "chatlogs"])
def test_wrapped_splitters_are_grounded_on_the_corpus(dataset, cl100k, corpus):
    """Grounding recovers the offsets: the wrapped LangChain splitter's regions equal the span
    re-statement's exactly, and every chunk of LlamaIndex / chonkie is placed with its own text."""
    from grounded.evaluation.chunking_eval import wrapped_splitters

    text = dataset.corpora[corpus]
    langchain, llama_index, chonkie = wrapped_splitters(250, 0, cl100k)
    assert langchain.chunk_corpus(corpus, text) == LangChainRecursive(250, 0, cl100k).chunk_corpus(corpus, text)
    for splitter in (llama_index, chonkie):
        pieces = splitter.chunk_corpus(corpus, text)
        assert len(pieces) > 10 and set(splitter.statuses) <= {"exact", "fuzzy"}, splitter.statuses
        for region, chunk_text in pieces:
            assert len(region.spans) == 1
            s, e = region.spans[0]
            assert _alnum(text[s:e]) == _alnum(chunk_text)
            assert region.extra_chars == max(0, len(chunk_text) - (e - s))


def test_extended_suite_rows_and_skips():
    from grounded.evaluation.chunking_eval import SKIPPED_STRATEGIES, GroundedSplitter
    from grounded.evaluation.cli import KAMRADT_BOUND, extended_chunkers

    rows, skipped = extended_chunkers()
    kamradt = [r for r in rows if r.params().get("splitter") == "kamradt_mod"]
    cl100k = {"tokenizer": "cl100k_base"}
    assert [(r.max_tokens, r.options) for r in kamradt] == [(250, cl100k), (200, cl100k)]
    original = [r for r in rows if r.params().get("splitter") == "kamradt"]
    assert [(r.max_tokens, r.options) for r in original] == [(KAMRADT_BOUND, {"tokenizer": "cl100k_base"})]
    wrapped = [r for r in rows if isinstance(r, GroundedSplitter)]
    assert [type(r.splitter).__name__ for r in wrapped] == ["RecursiveCharacterTextSplitter", "SentenceSplitter", "TokenChunker"]
    assert all(r.params()["offsets"] == "grounded" and r.params()["chunk_size"] == 250 for r in wrapped)
    assert skipped == {"llm": SKIPPED_STRATEGIES["llm"]} and "offline" in skipped["llm"]


def test_extended_suite_runs_only_the_selected_rows(capsys):
    from grounded.cli import main

    assert main(["eval", "chunking", "--suite", "extended", "--strategies", "nope", "--data", str(shared())]) == 1
    err = capsys.readouterr().err
    assert "selects no extended row" in err and "kamradt_mod, kamradt_mod, kamradt, recursive" in err


def test_grid_with_only_skipped_strategies_is_a_usage_error(capsys):
    from grounded.cli.main import main

    assert main(["eval", "chunking", "--suite", "grid", "--strategies", "llm", "--data", str(shared())]) == 1
    assert "nothing to evaluate: llm skipped" in capsys.readouterr().err


def test_embedding_strategies_get_the_runs_embedder(dataset):
    """``uses_embedder`` (a strategy class attribute) decides which strategies get the run's cached embedder."""
    from grounded.evaluation.chunking_eval import GroundedCorpusChunker

    calls = []

    def embed(texts):
        calls.append(len(texts))
        rng = np.random.default_rng(len(texts))
        v = rng.normal(size=(len(texts), 8))
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    text = dataset.corpora["chatlogs"][:6000]
    for strategy, embeds in (("kamradt_mod", True), ("kamradt", True), ("cluster", True), ("recursive", False)):
        calls.clear()
        chunker = GroundedCorpusChunker(strategy, 128, 0)
        chunker.sentence_embedder = embed
        assert chunker.chunk_corpus("chatlogs", text)
        assert bool(calls) == embeds, strategy


def test_stored_results_are_plotted_again_without_a_run(tmp_path):
    """The published grid (rows of two runs merged into one JSON) reads back into evaluations equal to the
    stored ones, and its plot is drawn from the file with every row: a 32-row plot is wider than the plot of
    its first 24 rows (the figure width grows with the rows)."""
    import json

    from grounded.evaluation.chunking_eval import ChunkingEvaluation
    from grounded.evaluation.report import plot_stored_chunking
    from tests.support.data import REPO

    stored = json.loads((REPO / "docs" / "results" / "chunking_grid.json").read_text(encoding="utf-8"))
    assert len(stored["results"]) == 32
    for item in stored["results"]:
        assert ChunkingEvaluation.from_dict(item).to_dict() == item
    (tmp_path / "all.json").write_text(json.dumps(stored))
    (tmp_path / "first.json").write_text(json.dumps({**stored, "results": stored["results"][:24]}))

    def width(png: Path) -> int:
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        return int.from_bytes(data[16:20], "big")  # IHDR width

    assert plot_stored_chunking(tmp_path / "all.json") == tmp_path / "all.png"
    plot_stored_chunking(tmp_path / "first.json", tmp_path / "first.png")
    assert width(tmp_path / "all.png") > width(tmp_path / "first.png") + 300
