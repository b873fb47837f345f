"""The generated sample guideline: structure seen by PyMuPDF's text layer, table finder and layout model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest

from grounded.samples import SAMPLE_TITLE, sample_pdf_bytes, write_sample_pdf


@pytest.fixture(scope="module")
def sample_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sample_pdf(tmp_path_factory.mktemp("sample") / "guideline.pdf")


@pytest.fixture(scope="module")
def doc(sample_path: Path):
    with pymupdf.open(sample_path) as d:
        yield d


def _table_pages(doc) -> dict[int, list[list[str]]]:
    out = {}
    for page in doc:
        tables = page.find_tables().tables
        if tables:
            assert len(tables) == 1, f"page {page.number + 1}: {len(tables)} tables"
            out[page.number + 1] = tables[0].extract()
    return out


def test_page_count_size_and_metadata(doc):
    assert 4 <= doc.page_count <= 6
    assert all(abs(p.rect.width - 595) < 1 and abs(p.rect.height - 842) < 1 for p in doc)
    assert doc.metadata["title"].startswith(SAMPLE_TITLE)
    assert "fictional" in doc.metadata["author"].lower()


def test_text_layer_is_born_digital_and_reads_back_as_written(doc):
    text = "".join(p.get_text() for p in doc)
    flat = " ".join(text.split())
    assert SAMPLE_TITLE in flat
    assert "Sentinel lymph node biopsy is the standard staging procedure" in flat
    assert "not for clinical use" in text
    # no ligature glyphs: "fi"/"fl" stay two characters so chunk text matches the PDF text
    assert "fi" in text and not any(ch in text for ch in "\ufb00\ufb01\ufb02\ufb03\ufb04")
    assert all(p.get_text().strip() for p in doc), "every page has a text layer"


def test_two_columns_on_every_page(doc):
    for page in doc:
        mid = page.rect.width / 2
        blocks = [b for b in page.get_text("blocks") if b[6] == 0 and 60 < b[1] < 790]
        left = [b for b in blocks if b[2] < mid - 5]
        right = [b for b in blocks if b[0] > mid + 5]
        assert len(left) >= 3 and len(right) >= 3, f"page {page.number + 1}: {len(left)} left / {len(right)} right"


def test_page_headers_and_numbered_footers(doc):
    n = doc.page_count
    for page in doc:
        top = page.get_text(clip=pymupdf.Rect(0, 0, page.rect.width, 50))
        bottom = page.get_text(clip=pymupdf.Rect(0, page.rect.height - 50, page.rect.width, page.rect.height))
        assert "Northbridge Oncology Guideline Group" in top
        assert f"Page {page.number + 1} of {n}" in bottom


def test_table_continues_on_the_next_page_with_repeated_header(doc):
    pages = _table_pages(doc)
    assert len(pages) == 2, pages.keys()
    first, second = sorted(pages)
    assert second == first + 1
    head1, *rows1 = pages[first]
    head2, *rows2 = pages[second]
    assert head1 == head2 and head1[0] == "Subtype" and len(head1) == 5
    assert len(rows1) >= 5 and len(rows2) >= 3
    assert not set(map(tuple, rows1)) & set(map(tuple, rows2)), "rows are split, not duplicated"
    text = doc[second - 1].get_text()
    assert "Table 1 (continued)" in text
    assert "Add bisphosphonate (zoledronic acid)" in text  # the table's last row


def test_headings_on_three_levels(doc):
    toc = doc.get_toc()
    levels = {level for level, _title, _page in toc}
    assert levels == {1, 2, 3}
    titles = [t for _, t, _ in toc]
    for heading in ("1. Introduction", "2.2.1 Mammography and ultrasound", "4.3 Chemotherapy and targeted therapy"):
        assert heading in titles
    # headings are typeset in the bold face, bigger than body text
    spans = [s for p in doc for b in p.get_text("dict")["blocks"] for ln in b.get("lines", ()) for s in ln["spans"]]
    head = next(s for s in spans if s["text"].startswith("1. Introduction"))
    body = next(s for s in spans if s["text"].startswith("Breast cancer is"))
    assert "Bold" in head["font"] and head["size"] > body["size"]


def test_lists_figure_and_boxes(doc):
    text = "".join(p.get_text() for p in doc)
    assert text.count("\u2022") >= 10  # bulleted items
    assert "1.\n" in text or "1. " in text
    assert "Recommendation 1 (strong; level II)" in text and "Recommendation 3" in text
    images = [img for p in doc for img in p.get_images()]
    assert len(images) == 1 and "Figure 1." in text


def test_layout_model_sees_the_structure(doc):
    from pymupdf4llm.helpers.document_layout import parse_document

    parsed = parse_document(doc, use_ocr=False)
    classes: dict[int, set[str]] = {}
    for page in parsed.pages:
        classes[page.page_number] = {b.boxclass for b in page.boxes}
        mid = page.width / 2
        texts = [b for b in page.boxes if b.boxclass in ("text", "list-item", "section-header")]
        assert any(b.x1 < mid for b in texts) and any(b.x0 > mid for b in texts), page.page_number
    found = set().union(*classes.values())
    assert {"section-header", "text", "list-item", "table", "picture", "caption", "page-header", "page-footer"} <= found
    table_pages = sorted(p for p, c in classes.items() if "table" in c)
    assert table_pages == sorted(_table_pages(doc))


def test_output_is_deterministic(sample_path: Path):
    assert sample_pdf_bytes() == sample_path.read_bytes()


def test_write_is_atomic_and_creates_folders(tmp_path: Path):
    out = write_sample_pdf(tmp_path / "nested" / "dir" / "sample.pdf")
    assert out.is_file() and out.read_bytes().startswith(b"%PDF-")
    assert [p.name for p in out.parent.iterdir()] == ["sample.pdf"]


def test_module_entry_point(tmp_path: Path):
    out = tmp_path / "cli.pdf"
    proc = subprocess.run([sys.executable, "-m", "grounded.samples", str(out)], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and proc.stdout.strip() == str(out)
    with pymupdf.open(out) as d:
        assert d.page_count >= 4


def test_module_entry_point_reports_unwritable_output(tmp_path: Path, capsys):
    from grounded.samples import main

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main([str(blocker / "sample.pdf")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot write" in err and "sample.pdf" in err
