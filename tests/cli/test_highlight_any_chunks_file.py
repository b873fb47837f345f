"""``grounded highlight PDF CHUNKS``: CHUNKS may be an ingest Parquet part, a folder of parts,
chunks.jsonl or chunks.json (issue 22); rows of other PDFs in a part are left out."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from grounded.cli.main import main
from grounded.io.chunks_file import load_chunks_file
from grounded.io.codec import save_chunking_result, write_chunks_jsonl
from grounded.metadata import chunk_of
from grounded.model import ChunkingResult
from tests.support.data import shared

PDF_A = shared("pdfs", "icdar2013_tables", "competition-dataset-eu", "eu-001.pdf")
PDF_B = shared("pdfs", "icdar2013_tables", "competition-dataset-eu", "eu-004.pdf")


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from grounded.ingest import ingest

    root = tmp_path_factory.mktemp("highlight-ingest")
    corpus = root / "in"
    corpus.mkdir()
    for pdf in (PDF_A, PDF_B):
        shutil.copy(pdf, corpus / pdf.name)
    out = root / "out"
    report = ingest(corpus, out, workers=1, progress=False)
    assert report.ok
    return out


def _parts(out: Path) -> list[Path]:
    return sorted((out / "chunks").rglob("*.parquet"))


def test_highlight_from_a_parquet_part_draws_the_rows_boxes(ingested: Path, tmp_path: Path) -> None:
    sha = hashlib.sha256(PDF_A.read_bytes()).hexdigest()
    part = next(p for p in _parts(ingested) if sha in {r["source_sha256"] for r in pq.read_table(p).to_pylist()})
    rows = [r for r in pq.read_table(part).to_pylist() if r["source_sha256"] == sha]
    first = chunk_of(rows[0])
    assert first.geom and first.metadata["pages"] and first.content == rows[0]["text"]
    assert [(b.page, b.left, b.top) for b in first.geom] == [(b["page"], b["left"], b["top"]) for b in rows[0]["boxes"]]
    out = tmp_path / "x.png"
    assert main(["highlight", str(PDF_A), str(part), "-o", str(out), "-c", first.id]) == 0
    pngs = sorted(tmp_path.glob("x*.png"))
    first_page, *further = first.metadata["pages"]
    assert sorted(p.name for p in pngs) == sorted(["x.png", *(f"x-p{p}.png" for p in further)])
    assert all(p.stat().st_size > 1000 for p in pngs)


def test_every_chunks_file_format_gives_the_same_chunks(ingested: Path, tmp_path: Path) -> None:
    sha = hashlib.sha256(PDF_A.read_bytes()).hexdigest()
    from_folder = load_chunks_file(ingested / "chunks", source_sha256=sha)
    assert from_folder.chunks and from_folder.metadata["document"]["source"]["sha256"] == sha
    jsonl = write_chunks_jsonl(ChunkingResult(chunks=from_folder.chunks), tmp_path / "chunks.jsonl")
    json_ = save_chunking_result(ChunkingResult(chunks=from_folder.chunks), tmp_path / "chunks.json")
    for path in (jsonl, json_):
        assert load_chunks_file(path).chunks == from_folder.chunks
    out = tmp_path / "all.pdf"
    assert main(["highlight", str(PDF_A), str(ingested / "chunks"), "-o", str(out)]) == 0
    assert out.stat().st_size > PDF_A.stat().st_size // 2


def test_a_part_without_rows_of_the_pdf_is_refused_in_one_line(ingested: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sha_b = hashlib.sha256(PDF_B.read_bytes()).hexdigest()
    part = next(p for p in _parts(ingested) if {r["source_sha256"] for r in pq.read_table(p).to_pylist()} == {sha_b})
    assert main(["highlight", str(PDF_A), str(part), "-o", str(tmp_path / "x.png")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds no chunks of" in err[0] and not list(tmp_path.glob("x*.png"))
