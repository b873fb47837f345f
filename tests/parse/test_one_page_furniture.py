"""Issue #34 item 20: on a one-page document no header or footer can repeat, so "keep the lines
that repeat nowhere" kept journal and patent headers as paragraphs. There the furniture band plus
the font size/weight signature decides: a band line set apart from the body stays furniture, a
band line set like the body is still kept."""

from __future__ import annotations

import warnings
from pathlib import Path

import pymupdf
import pytest

from grounded.chunking import document_text
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers import postprocess
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser

BODY = ("Patients with reduced creatinine clearance received the adjusted dose once daily for twelve weeks, "
        "and the serum levels were measured every second week by the central laboratory. ") * 4
JOURNAL = "Journal of Renal Medicine 12 (2014) 101-109"
PATENT = "Patent Application Publication   Sheet 1 of 1   US 2014/0101109 A1"


def _article(path: Path, pages: int = 1) -> Path:
    doc = pymupdf.open()
    for _ in range(pages):
        page = doc.new_page()  # A4
        page.insert_text((72, 36), JOURNAL, fontsize=8, fontname="helv")
        page.insert_text((72, 100), "Dose adjustment in chronic kidney disease", fontsize=16, fontname="hebo")
        for k in range(4):
            page.insert_textbox(pymupdf.Rect(72, 130 + 130 * k, 540, 250 + 130 * k), BODY, fontsize=11, fontname="tiro")
        page.insert_text((72, 770), PATENT, fontsize=8, fontname="helv")
    doc.save(path)
    return path


def test_one_page_journal_and_patent_furniture_is_dropped(tmp_path):
    path = _article(tmp_path / "one.pdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = PyMuPDFParser(ocr="never").parse(path)
    text = document_text(root).text
    assert "Journal of Renal" not in text and "Patent Application" not in text
    assert "Dose adjustment" in text and text.count("central laboratory") == 16


def _tree(header_top: float, page: int = 1) -> ParsingResult:
    root = ParsingResult("root", T.ROOT)
    header = ParsingBoundingBox(page, 0.1, header_top, 0.9, header_top + 0.02)
    header.spans = [ParsingBoundingBox(page, 0.1, header_top, 0.9, header_top + 0.02)]
    root.add_child(ParsingResult("", T.PAGE_HEADER, content="Received 12 May 2020; accepted 3 June", geom=[header]))
    root.add_child(ParsingResult("", T.PARAGRAPH, content=BODY, geom=[ParsingBoundingBox(page, 0.1, 0.2, 0.9, 0.6)]))
    return root


def _band_line_pdf(path: Path, size: float, bold: bool) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=800)
    page.insert_text((60, 36), "Received 12 May 2020; accepted 3 June", fontsize=size, fontname="tibo" if bold else "tiro")
    page.insert_textbox(pymupdf.Rect(60, 160, 540, 480), BODY, fontsize=11, fontname="tiro")
    doc.save(path)
    return path


@pytest.mark.parametrize(("size", "bold", "furniture"), [(8, False, True), (11, True, True), (11, False, False)],
                         ids=["smaller", "bold", "set-like-the-body"])
def test_one_page_band_line_is_furniture_when_set_apart(tmp_path, size, bold, furniture):
    path = _band_line_pdf(tmp_path / "band.pdf", size, bold)
    root = _tree(0.03)
    postprocess.keep_body_furniture(root, [T.PAGE_HEADER, T.PAGE_FOOTER], path, page_count=1)
    assert (root.children[0].type == T.PAGE_HEADER) is furniture


def test_outside_the_band_or_with_other_pages_the_old_rules_hold(tmp_path):
    path = _band_line_pdf(tmp_path / "band.pdf", 8, False)
    root = _tree(0.3)  # a line in the body's height is no running header, whatever its size
    postprocess.keep_body_furniture(root, [T.PAGE_HEADER, T.PAGE_FOOTER], path, page_count=1)
    assert root.children[0].type == T.PARAGRAPH
    root = _tree(0.03)  # a longer document: a line shown on one page only repeats nowhere, kept
    postprocess.keep_body_furniture(root, [T.PAGE_HEADER, T.PAGE_FOOTER], path, page_count=3)
    assert root.children[0].type == T.PARAGRAPH


@pytest.mark.parametrize(("gap", "furniture"), [(0.015, False), (0.05, True)], ids=["at-line-spacing", "set-apart"])
def test_one_page_ocr_band_line_is_furniture_when_a_blank_sets_it_apart(tmp_path, gap, furniture):
    """An OCR'd page has no font sizes to compare (Tesseract sets every line alike): a band line
    labelled a header stands apart by the blank below it (:data:`postprocess.ONE_PAGE_OCR_GAP_LINES`
    line heights). A scanned page's first line at the body's line spacing is body text (issue #34.20:
    test_ocr_noise's scanned lines), a running header 2.5 line heights off the body is furniture."""
    path = _band_line_pdf(tmp_path / "band.pdf", 8, False)
    root = _tree(0.03)  # header line 0.03-0.05: 0.02 high
    body = root.children[1]
    body.geom = [ParsingBoundingBox(1, 0.1, 0.05 + gap, 0.9, 0.6)]
    root.metadata["pages"] = [{"page": 1, "text_source": "ocr"}]
    postprocess.keep_body_furniture(root, [T.PAGE_HEADER, T.PAGE_FOOTER], path, page_count=1)
    assert (root.children[0].type == T.PAGE_HEADER) is furniture
