"""The adapters take the options of the same declarations as the command line (issue 22): the
LangChain loader and splitter, the LlamaIndex reader and node parser accept ``chunk_size`` /
``chunk_overlap``, the strategies' declared options, tokenizer, box mode, OCR and password, and refuse
an option the strategy or parser does not declare with the typed error naming it."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from grounded.errors import ChunkingError, OptionError
from langchain_grounded import GroundedPDFLoader, GroundedTextSplitter
from llama_index_grounded import GroundedNodeParser, GroundedPDFReader
from tests.support.data import shared
from tests.support.pdf_builders import save_pdf

PDF = ("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")


@pytest.fixture(scope="module")
def pdf() -> Path:
    return shared(*PDF)


def test_loader_takes_chunk_size(pdf: Path, tmp_path: Path) -> None:
    docs = GroundedPDFLoader(pdf, chunk_size=128, cache=tmp_path).load()
    same = GroundedPDFLoader(pdf, max_tokens=128, cache=tmp_path).load()
    assert docs and [d.metadata["chunk_id"] for d in docs] == [d.metadata["chunk_id"] for d in same]
    assert max(d.metadata["token_count"] for d in docs) <= 128
    assert len(docs) > len(GroundedPDFLoader(pdf, cache=tmp_path).load())  # 256 by default: fewer chunks
    overlapping = GroundedPDFLoader(pdf, chunk_size=128, chunk_overlap=32, cache=tmp_path)
    assert overlapping.chunker is not None and overlapping.chunker.strategy.overlap == 32
    with pytest.raises(ChunkingError, match="max_tokens=64 and chunk_size=128 contradict"):
        GroundedPDFLoader(pdf, chunk_size=128, max_tokens=64)


def test_loader_takes_the_declared_options(pdf: Path, tmp_path: Path) -> None:
    loader = GroundedPDFLoader(pdf, strategy="hierarchical", chunk_size=128, heading_budget=20, tokenizer="cl100k_base",
                               box_mode="line", ocr="never", cache=tmp_path)
    assert loader.chunker is not None and loader.chunker.strategy.params()["heading_budget"] == 20
    assert loader.chunker.box_mode == "line" and loader.chunker.tokenizer.describe()["name"] == "cl100k_base"
    assert loader.parser.ocr == "never"
    docs = loader.load()
    assert docs and all(d.metadata["strategy"] == "hierarchical" for d in docs)
    with pytest.raises(OptionError, match="strategy 'recursive': option 'percentile' is not an option of it"):
        GroundedPDFLoader(pdf, percentile=0.8)
    with pytest.raises(OptionError, match="parser 'pymupdf': option 'ocr' must be one of auto, always, never"):
        GroundedPDFLoader(pdf, ocr="sometimes")  # type: ignore[arg-type]


def test_loader_password(pdf: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked.pdf"
    save_pdf(pymupdf.open(pdf), locked, user_pw="pw-1", owner_pw="owner")
    docs = GroundedPDFLoader(locked, password="pw-1", chunk_size=128, cache=False).load()
    assert docs and all("pw-1" not in repr(d.metadata) for d in docs)


def test_splitter_and_node_parser_take_the_declared_options() -> None:
    splitter = GroundedTextSplitter(chunk_size=128, strategy="hierarchical", heading_budget=30)
    assert splitter.chunker.strategy.params()["heading_budget"] == 30
    with pytest.raises(OptionError, match="'percentile' is not a keyword of GroundedTextSplitter.*strategy 'recursive'"):
        GroundedTextSplitter(chunk_size=128, percentile=0.8)
    with pytest.raises(OptionError, match="option 'heading_budget' must be an int"):
        GroundedTextSplitter(chunk_size=128, strategy="hierarchical", heading_budget="x")
    parser = GroundedNodeParser(strategy="hierarchical", chunk_size=128, heading_budget=30, tokenizer="cl100k_base")
    assert parser.strategy_options == {"heading_budget": 30} and parser.max_tokens == 128
    with pytest.raises(ChunkingError, match="unknown keyword.*percentile"):
        GroundedNodeParser(strategy="recursive", percentile=0.8)
    with pytest.raises(OptionError, match="strategy 'semantic': option 'percentile' must be a number in \\(0, 1\\)"):
        GroundedNodeParser(strategy="semantic", percentile=1.5)


def test_reader_checks_parser_options_by_the_declaration(pdf: Path, tmp_path: Path) -> None:
    reader = GroundedPDFReader(ocr="never", parser_options={"ocr_dpi": 150}, cache_dir=str(tmp_path))
    assert reader.get_parser().ocr == "never" and reader.get_parser().ocr_dpi == 150
    assert reader.load_data(pdf)
    with pytest.raises(OptionError, match="parser 'pymupdf': option 'chunk_size' is not an option of it"):
        GroundedPDFReader(parser_options={"chunk_size": 128})
    with pytest.raises(OptionError, match="option 'ocr_dpi' must be an int in \\[72, 600\\]"):
        GroundedPDFReader(parser_options={"ocr_dpi": 20})
