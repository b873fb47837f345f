"""Highlighted PDFs carry no active content of the source by default (issue 21.11): document
JavaScript, a JavaScript OpenAction, a Launch link, page additional actions and an embedded file are
stripped; highlights, a web link and the text stay. ``sanitize=False`` / ``--keep-active-content``
keeps the source's objects."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from grounded.attribution.highlight import highlight
from grounded.chunking.chunker import Chunker
from grounded.cli.main import build_parser, main
from grounded.parsers import get_parser
from grounded.serialization import write_chunks_jsonl
from tests.support.pdf_builders import paragraph_pages_pdf

PARAS = [
    "Stimulation of the receptor changes lipid uptake in cultured macrophages of the mouse.",
    "A second paragraph reports the measured concentrations over three weeks of treatment.",
]
ACTIVE = ("app.alert", "/S /JavaScript", "/S /Launch", "calc.exe", "evil-payload")


@pytest.fixture(scope="module")
def active_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("active")
    plain = paragraph_pages_pdf(folder / "plain.pdf", [[(PARAS[0], 100), (PARAS[1], 320)]])
    doc = pymupdf.open(plain)
    cat = doc.pdf_catalog()
    doc.xref_set_key(cat, "OpenAction", "<</S/JavaScript/JS(app.alert('open'))>>")
    js = doc.get_new_xref()
    doc.update_object(js, "<</S/JavaScript/JS(app.alert('named'))>>")
    doc.xref_set_key(cat, "Names", f"<</JavaScript<</Names[(a) {js} 0 R]>>>>")
    page = doc[0]
    page.insert_link({"kind": pymupdf.LINK_LAUNCH, "file": "calc.exe", "from": pymupdf.Rect(72, 600, 200, 620)})
    page.insert_link({"kind": pymupdf.LINK_URI, "uri": "https://example.org/guideline", "from": pymupdf.Rect(72, 640, 200, 660)})
    doc.xref_set_key(page.xref, "AA", "<</O<</S/JavaScript/JS(app.alert('page'))>>>>")
    doc.embfile_add("payload.txt", b"evil-payload")
    out = folder / "active.pdf"
    doc.save(out)
    doc.close()
    return out


def _objects(data: bytes) -> str:
    doc = pymupdf.open(stream=data, filetype="pdf")
    try:
        text = "\n".join(doc.xref_object(x) for x in range(1, doc.xref_length()))
        streams = b"".join(doc.xref_stream(x) or b"" for x in range(1, doc.xref_length()) if doc.xref_is_stream(x))
        return text + streams.decode("latin-1")
    finally:
        doc.close()


@pytest.fixture(scope="module")
def chunks(active_pdf: Path):
    return Chunker("recursive", 128).chunk(get_parser("pymupdf").parse(active_pdf))


def test_source_carries_the_active_content(active_pdf: Path) -> None:
    seen = _objects(active_pdf.read_bytes())
    assert all(word in seen for word in ACTIVE)


def test_highlighted_copy_is_sanitized_by_default(active_pdf: Path, chunks) -> None:
    data = highlight(active_pdf, chunks)
    seen = _objects(data)
    assert not [word for word in ACTIVE if word in seen]
    doc = pymupdf.open(stream=data, filetype="pdf")
    try:
        assert doc.embfile_count() == 0
        page = doc[0]
        assert [a for a in page.annots() if a.type[1] == "Highlight"]
        assert [lnk["uri"] for lnk in page.get_links() if lnk["kind"] == pymupdf.LINK_URI] == ["https://example.org/guideline"]
        assert not [lnk for lnk in page.get_links() if lnk["kind"] == pymupdf.LINK_LAUNCH]
        assert PARAS[0].split()[0] in page.get_text()
    finally:
        doc.close()


def test_keep_active_content_keeps_the_source_objects(active_pdf: Path, chunks) -> None:
    seen = _objects(highlight(active_pdf, chunks, sanitize=False))
    assert all(word in seen for word in ("app.alert", "Launch", "calc.exe"))


def test_cli_default_and_flag(active_pdf: Path, chunks, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chunk_file = write_chunks_jsonl(chunks, tmp_path / "c.jsonl")
    safe, kept = tmp_path / "safe.pdf", tmp_path / "kept.pdf"
    assert main(["highlight", str(active_pdf), str(chunk_file), "-o", str(safe)]) == 0
    assert main(["highlight", str(active_pdf), str(chunk_file), "-o", str(kept), "--keep-active-content"]) == 0
    assert "app.alert" not in _objects(safe.read_bytes()) and "app.alert" in _objects(kept.read_bytes())
    sub = build_parser()._subparsers._group_actions[0].choices["highlight"]  # type: ignore[union-attr]
    helptext = " ".join(sub.format_help().split())
    assert "sanitized by default" in helptext and "--keep-active-content" in helptext
