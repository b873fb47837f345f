"""The semantic strategy partitions the document: ``overlap`` > 0 is refused with the same typed
error on every surface (core Chunker, both CLIs, LlamaIndex, LangChain, ingest), as for the other
strategies without overlap - never silently ignored."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from grounded.chunking import Chunker
from grounded.chunking.base import strategy_class
from grounded.cli.main import main
from grounded.errors import ChunkingError
from grounded.ingest import ingest
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from langchain_grounded import GroundedPDFLoader, GroundedTextSplitter
from llama_index_grounded import GroundedNodeParser

MESSAGE = "the semantic strategy partitions the document: overlap must be 0"


def test_semantic_declares_no_overlap_like_the_other_partitions() -> None:
    assert not strategy_class("semantic").supports_overlap
    assert [s for s in ("semantic", "cluster", "kamradt_mod", "kamradt") if strategy_class(s).supports_overlap] == []
    assert Chunker("semantic", 64, 0).strategy.overlap == 0


@pytest.mark.parametrize(
    "build",
    [
        lambda: Chunker("semantic", 64, 10),
        lambda: Chunker("semantic", 64, 0.2),  # a fraction of max_tokens
        lambda: GroundedNodeParser(strategy="semantic", max_tokens=64, overlap=10),
        lambda: GroundedNodeParser(strategy="semantic", chunk_size=64, chunk_overlap=10),
        lambda: GroundedTextSplitter(strategy="semantic", chunk_size=64, chunk_overlap=10),
        lambda: GroundedPDFLoader([], strategy="semantic", max_tokens=64, overlap=10),
    ],
    ids=["chunker", "chunker-fraction", "llama-node-parser", "llama-chunk-overlap", "langchain-splitter", "langchain-loader"],
)
def test_overlap_is_refused_by_the_api_and_the_adapters(build) -> None:
    with pytest.raises(ChunkingError) as err:
        build()
    assert str(err.value) == MESSAGE


def _pdf(path: Path) -> Path:
    doc = pymupdf.open()
    text = "Dosing for renal impairment is adjusted by creatinine clearance and reviewed weekly. " * 6
    doc.new_page().insert_textbox(pymupdf.Rect(72, 200, 523, 400), text, fontsize=11)
    doc.save(path)
    doc.close()
    return path


def test_overlap_is_refused_by_both_clis_and_ingest_before_any_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pdf = _pdf(tmp_path / "renal.pdf")
    out = tmp_path / "chunks.json"
    parsed: list[Path] = []
    real = PyMuPDFParser.parse
    monkeypatch.setattr(PyMuPDFParser, "parse", lambda self, path, **kw: parsed.append(path) or real(self, path, **kw))
    assert main(["chunk", str(pdf), "-s", "semantic", "--overlap", "10", "-o", str(out)]) == 1
    assert f"grounded chunk: error: {MESSAGE}" in capsys.readouterr().err and not out.exists()
    assert parsed == []  # refused before the PDF is parsed
    assert main(["ingest", str(pdf), "-o", str(tmp_path / "ingest"), "-s", "semantic", "--overlap", "0.2"]) == 1
    assert f"grounded ingest: error: {MESSAGE}" in capsys.readouterr().err
    with pytest.raises(ChunkingError, match=MESSAGE):
        ingest(pdf, tmp_path / "ingest", strategy="semantic", overlap=10, progress=False)
    assert not (tmp_path / "ingest").exists()
