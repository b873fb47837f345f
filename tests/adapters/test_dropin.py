"""Drop-in where users arrive (issue 31): the frameworks' own readers, loaders and splitters feed
grounded's node parser, text splitter, grounding wrappers and part fixers, and every chunk comes out
with boxes that show its words - or with one warning naming the input and the cause. A silent chunk
without boxes fails here, on every public adapter entry point."""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from grounded.evaluation.box_words import box_word_scores
from grounded.integrations.boxes import boxes_of
from grounded.metadata import GroundingWarning, boxes_from_metadata, text_hash
from tests.support.data import shared

PDF_PARTS = ("pdfs", "cermine_medical", "test2.pdf")


@pytest.fixture(scope="module")
def pdf(shared_parses: Any) -> Path:
    path = shared(*PDF_PARTS)
    shared_parses.tree(path)  # the default parse, once per run: every adapter below finds it in this cache
    return path


@pytest.fixture(scope="module")
def cache_dir(shared_parses: Any) -> str:
    return str(shared_parses.cache.directory)


def _boxes(metadata: dict[str, Any], text: str) -> list:
    return boxes_from_metadata(metadata, text=text)


def _assert_shows_words(pdf: Path, items: Sequence[tuple[str, list]], *, share: float = 0.95, floor: float = 0.95) -> None:
    """>= ``share`` of the items have boxes; their boxes show their words (mean recall and
    precision >= ``floor``; no single item below 0.8)."""
    boxed = [(t, b) for t, b in items if b]
    assert items and len(boxed) >= share * len(items), f"{len(boxed)} of {len(items)} chunks have boxes"
    scores = box_word_scores(pdf, boxed)
    recall = [s.recall for s in scores if s.recall is not None]
    precision = [s.precision for s in scores if s.precision is not None]
    assert statistics.mean(recall) >= floor and statistics.mean(precision) >= floor, (statistics.mean(recall), statistics.mean(precision))
    assert min(recall) >= 0.8 and min(precision) >= 0.8, (min(recall), min(precision))


# -- LlamaIndex readers -> GroundedNodeParser ------------------------------------------------------
def _sdr(pdf: Path) -> list:
    from llama_index.core import SimpleDirectoryReader

    return SimpleDirectoryReader(input_files=[str(pdf)]).load_data()


def _pymupdf_reader(pdf: Path) -> list:
    from llama_index.readers.file import PyMuPDFReader

    return PyMuPDFReader().load_data(str(pdf))


def _markdown_reader(pdf: Path) -> list:
    import pymupdf4llm

    return pymupdf4llm.LlamaMarkdownReader().load_data(str(pdf))


LLAMA_READERS: dict[str, Callable[[Path], list]] = {
    "SimpleDirectoryReader": _sdr,
    "PyMuPDFReader": _pymupdf_reader,
    "LlamaMarkdownReader": _markdown_reader,
}


@pytest.mark.parametrize("reader", sorted(LLAMA_READERS))
def test_llama_reader_documents_get_boxes_through_the_node_parser(reader: str, pdf: Path, cache_dir: str) -> None:
    from llama_index_grounded import GroundedNodeParser, node_boxes

    docs = LLAMA_READERS[reader](pdf)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        nodes = GroundedNodeParser(max_tokens=256, cache_dir=cache_dir).get_nodes_from_documents(docs)
    items = [(n.get_content(metadata_mode="none"), _boxes(n.metadata, n.get_content(metadata_mode="none"))) for n in nodes]
    _assert_shows_words(pdf, items)
    for node in nodes:
        meta = node.metadata
        boxes = _boxes(meta, node.text)
        assert node_boxes(node) == boxes == boxes_of(node)
        assert meta["page"] == min(b.page for b in boxes) and isinstance(meta["page"], int)  # 1-based, as pymupdf4llm
        assert meta["page_start"] <= meta["page"] <= meta["page_end"]
        doc = next(d for d in docs if d.doc_id == node.ref_doc_id)
        assert doc.text[node.start_char_idx : node.end_char_idx].strip() == node.text.strip()  # LlamaIndex's offsets
        assert "boxes" in node.excluded_embed_metadata_keys and "boxes" in node.excluded_llm_metadata_keys
        assert "boxes" not in node.get_content(metadata_mode="embed")


def test_llama_own_splitter_first_then_node_parser_and_part_fixers(pdf: Path, cache_dir: str) -> None:
    from llama_index.core.node_parser import SentenceSplitter

    from llama_index_grounded import GroundedNodeParser, GroundedParts, GroundingNodeParser, node_boxes

    docs = _sdr(pdf)
    parts = SentenceSplitter(chunk_size=200, chunk_overlap=20).get_nodes_from_documents(docs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        again = GroundedNodeParser(max_tokens=128, cache_dir=cache_dir).get_nodes_from_documents(parts)
        fixed = GroundedParts(cache_dir=cache_dir)(list(SentenceSplitter(chunk_size=200, chunk_overlap=20).get_nodes_from_documents(docs)))
        wrapped = GroundingNodeParser(SentenceSplitter(chunk_size=200, chunk_overlap=20), cache_dir=cache_dir).get_nodes_from_documents(docs)
        direct = [node_boxes(p, cache_dir=cache_dir) for p in parts]
    for nodes in (again, fixed, wrapped):
        _assert_shows_words(pdf, [(n.text, _boxes(n.metadata, n.text)) for n in nodes])
    _assert_shows_words(pdf, [(p.text, b) for p, b in zip(parts, direct, strict=True)])
    for p, f, w in zip(parts, fixed, wrapped, strict=True):  # one answer for a part, whichever call asks
        assert [b.page for b in _boxes(f.metadata, f.text)] == [b.page for b in boxes_of(p, cache=cache_dir)]
        assert boxes_of(w) == _boxes(w.metadata, w.text)


# -- LangChain loaders -> GroundedTextSplitter -----------------------------------------------------
def _pymupdf_loader(pdf: Path) -> list:
    from langchain_community.document_loaders import PyMuPDFLoader

    return PyMuPDFLoader(str(pdf)).load()


def _pypdf_loader(pdf: Path) -> list:
    from langchain_community.document_loaders import PyPDFLoader

    return PyPDFLoader(str(pdf)).load()


def _pymupdf4llm_loader(pdf: Path) -> list:
    from langchain_pymupdf4llm import PyMuPDF4LLMLoader

    return PyMuPDF4LLMLoader(str(pdf)).load()


LC_LOADERS: dict[str, Callable[[Path], list]] = {
    "PyMuPDFLoader": _pymupdf_loader,
    "PyPDFLoader": _pypdf_loader,
    "PyMuPDF4LLMLoader": _pymupdf4llm_loader,
}


@pytest.mark.parametrize("loader", sorted(LC_LOADERS))
def test_langchain_loader_documents_get_boxes_through_the_splitter(loader: str, pdf: Path, cache_dir: str) -> None:
    from langchain_grounded import GroundedTextSplitter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        docs = LC_LOADERS[loader](pdf)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        parts = GroundedTextSplitter(chunk_size=200, chunk_overlap=20, add_start_index=True, cache=cache_dir).split_documents(docs)
    _assert_shows_words(pdf, [(p.page_content, _boxes(p.metadata, p.page_content)) for p in parts])
    for part in parts:
        meta = part.metadata
        parent = next(d for d in docs if d.metadata.get("page") == meta.get("page") and part.page_content in d.page_content)
        start = meta["start_index"]  # LangChain's meaning: the offset in the parent's page_content
        assert parent.page_content[start : start + len(part.page_content)] == part.page_content
        assert meta["page"] == meta["page_start"] - 1  # LangChain's 0-based page beside grounded's 1-based pages
        assert boxes_of(part) == _boxes(meta, part.page_content)


def test_langchain_own_splitter_first_then_grounded_splitter_and_wrappers(pdf: Path, cache_dir: str) -> None:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from langchain_grounded import GroundedParts, GroundedPDFLoader, GroundedTextSplitter, GroundingSplitter

    docs = _pymupdf_loader(pdf)
    rc = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=40)
    parts = rc.split_documents(docs)
    elements = rc.split_documents(GroundedPDFLoader(pdf, mode="elements", cache=cache_dir).load())
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        outputs = {
            "GroundedTextSplitter": GroundedTextSplitter(chunk_size=128, cache=cache_dir).split_documents(parts),
            "GroundedTextSplitter over split elements": GroundedTextSplitter(chunk_size=128, cache=cache_dir).split_documents(elements),
            "GroundingSplitter": GroundingSplitter(rc, cache=cache_dir).split_documents(docs),
            "GroundedParts": list(GroundedParts(cache=cache_dir).transform_documents(parts)),
            "GroundedParts over split elements": list(GroundedParts(cache=cache_dir).transform_documents(elements)),
        }
    for name, out in outputs.items():
        assert out, name
        _assert_shows_words(pdf, [(d.page_content, _boxes(d.metadata, d.page_content)) for d in out])


# -- one answer for the boxes of anything -----------------------------------------------------------
def test_stale_parent_boxes_are_never_served(pdf: Path, cache_dir: str) -> None:
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core.node_parser import SentenceSplitter

    from grounded.metadata import chunk_of
    from langchain_grounded import GroundedPDFLoader
    from llama_index_grounded import GroundedNodeParser, GroundedPDFReader, node_boxes

    nodes = GroundedNodeParser(max_tokens=256, cache_dir=cache_dir).get_nodes_from_documents(
        GroundedPDFReader(cache_dir=cache_dir).load_data(pdf)
    )
    parts = SentenceSplitter(chunk_size=60, chunk_overlap=0).get_nodes_from_documents(nodes[:6])
    lc_parts = RecursiveCharacterTextSplitter(chunk_size=150, chunk_overlap=0).split_documents(
        GroundedPDFLoader(pdf, mode="chunks", cache=cache_dir).load()[:6]
    )
    assert len(parts) > 6 and len(lc_parts) > 6
    for part in [*parts, *lc_parts]:
        with warnings.catch_warnings():
            warnings.simplefilter("error", GroundingWarning)
            chunk = chunk_of(part)
            own = boxes_of(part)
        assert own and chunk.geom == own == chunk_of(part).geom, "chunk_of and boxes_of give the part's own boxes"
        if hasattr(part, "node_id"):
            assert node_boxes(part) == own
        text = part.text if hasattr(part, "node_id") else part.page_content
        if part.metadata["text_hash"] != text_hash(text):  # a real part: never its parent's boxes
            assert own != boxes_from_metadata(part.metadata["boxes"])


def test_highlight_and_render_take_framework_objects(pdf: Path, cache_dir: str, tmp_path: Path) -> None:
    from llama_index.core.node_parser import SentenceSplitter

    from grounded.attribution import highlight, render

    parts = SentenceSplitter(chunk_size=120, chunk_overlap=0).get_nodes_from_documents(_sdr(pdf))[:3]
    docs = _pymupdf_loader(pdf)[:1]
    out = highlight(pdf, [*parts, *docs], tmp_path / "h.pdf")
    import pymupdf

    with pymupdf.open(out) as doc:
        assert sum(1 for page in doc for _ in page.annots()) >= 4
    assert render(pdf, parts[0], dpi=40)


# -- inputs that cannot be grounded: one warning each, naming it and the cause ---------------------
def test_inputs_without_a_pdf_warn_once_each_naming_the_cause(tmp_path: Path, cache_dir: str) -> None:
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document

    from langchain_grounded import GroundedTextSplitter
    from llama_index_grounded import GroundedNodeParser

    text_file = tmp_path / "notes.pdf"
    text_file.write_text("not a pdf at all")
    cases = {
        "gone.pdf": {"file_path": str(tmp_path / "gone.pdf")},
        "notes.pdf": {"file_path": str(text_file)},
    }
    text = "Patients with heart failure were asked about their experience of rehabilitation programmes. " * 8
    for expected, meta in cases.items():
        with pytest.warns(GroundingWarning) as caught:
            nodes = GroundedNodeParser(max_tokens=64, cache_dir=cache_dir).get_nodes_from_documents([Document(text=text, metadata=meta)])
        messages = [str(w.message) for w in caught if issubclass(w.category, GroundingWarning)]
        assert len(messages) == 1 and expected in messages[0], messages
        assert nodes and not any(_boxes(n.metadata, n.text) for n in nodes)
        with pytest.warns(GroundingWarning) as caught:
            parts = GroundedTextSplitter(chunk_size=64, cache=cache_dir).split_documents([LCDocument(page_content=text, metadata=meta)])
        messages = [str(w.message) for w in caught if issubclass(w.category, GroundingWarning)]
        assert len(messages) == 1 and expected in messages[0], messages
        assert parts and not any(_boxes(p.metadata, p.page_content) for p in parts)
    # plain text that names no source at all: no boxes to give, nothing to warn about
    with warnings.catch_warnings():
        warnings.simplefilter("error", GroundingWarning)
        assert GroundedNodeParser(max_tokens=64).get_nodes_from_documents([Document(text=text, metadata={"author": "x"})])
        assert GroundedTextSplitter(chunk_size=64).split_documents([LCDocument(page_content=text)])


def test_text_not_in_the_pdf_is_refused_with_a_warning(pdf: Path, cache_dir: str) -> None:
    from llama_index.core import Document

    from llama_index_grounded import GroundedNodeParser

    foreign = Document(text="Quantum chromodynamics of gluon plasma in neutron star mergers. " * 6, metadata={"file_path": str(pdf)})
    with pytest.warns(GroundingWarning, match="could not be found in the PDF"):
        nodes = GroundedNodeParser(max_tokens=64, cache_dir=cache_dir).get_nodes_from_documents([foreign])
    assert nodes and all(n.metadata["grounding_status"] == "refused" and not _boxes(n.metadata, n.text) for n in nodes)
