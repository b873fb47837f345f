"""Issue #34 item 21: on a scanned page Tesseract merged a shaded table header set tight between its
cell borders with the borders: garbage ("[stipe | __[nialatuton" for "Subtype | Clinical
situation") placed half a line too high. The TABLE regions the layout model finds on an OCR'd page
are read again from an image of the region alone, rules erased and shading whitened
(:func:`grounded.parsers.ocr.tables.reocr_tables`); nothing outside table regions is touched (a
picture's frame erased as a grid lost figure captions: tests/parse/test_ocr_pictures.py).

A constructed page (a paragraph, then a ruled table whose header row is shaded, set as the sample
guideline sets it) rendered to an image-only PDF, parsed with real Tesseract."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from grounded.model import ParsingResultType as T
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.ocr import tables as ocr_tables
from grounded.parsers.ocr.engine import ocr_available
from grounded.parsers.ocr.tables import table_rule_mask
from tests.support.scanned import scanned_pdf

HEADER = ["Subtype", "Clinical situation", "Preferred regimen", "Duration", "Evidence"]
ROWS = [
    ["Luminal A", "Node negative, small tumour", "Endocrine therapy alone", "5 years", "High"],
    ["Luminal B", "Node positive or high grade", "Chemotherapy then endocrine", "5 to 10 years", "High"],
    ["HER2 positive", "Tumour over 2 cm", "Trastuzumab with taxane", "1 year", "Moderate"],
    ["Triple negative", "Any stage above T1a", "Anthracycline and taxane", "6 months", "Moderate"],
]
WIDTHS = [80.0, 120.0, 125.0, 70.0, 60.0]
FILL = (0.85, 0.89, 0.96)  # the sample guideline's header shading
RULE = (0.35, 0.35, 0.35)
PAD, SIZE, LEAD = 3.5, 8.3, 10.4
INTRO = (
    "Adjuvant treatment is chosen by the tumour's subtype and stage. The table below gives the preferred "
    "regimen for each subtype, its usual duration and the strength of the evidence behind it."
)


def _table_page(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(60, 80, 535, 140), INTRO, fontsize=10, fontname="tiro")
    top = 160.0
    for r, cells in enumerate([HEADER, *ROWS]):
        height = LEAD + 2 * PAD
        x = 60.0
        for text, width in zip(cells, WIDTHS, strict=True):
            rect = pymupdf.Rect(x, top, x + width, top + height)
            page.draw_rect(rect, color=RULE, fill=FILL if r == 0 else None, width=0.5)
            page.insert_text((x + PAD, top + PAD + SIZE), text, fontsize=SIZE, fontname="hebo" if r == 0 else "helv",
                             color=(0.1, 0.2, 0.45) if r == 0 else (0, 0, 0))
            x += width
        top += height
    doc.save(path)
    return path


def _header(path: Path, ocr: str) -> list[tuple[str, float]]:
    """(text, vertical centre of its first line in points) per header cell of the page's table."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = PyMuPDFParser(ocr=ocr).parse(path)  # type: ignore[arg-type]
    (table,) = [n for n in root.walk() if n.type == T.TABLE]
    return [(" ".join(c.content.split()), (c.geom[0].spans[0].top + c.geom[0].spans[0].bottom) / 2 * 842)
            for c in table.children[0].children]


def test_table_rule_mask_takes_long_thin_lines_only():
    gray = np.full((400, 400), 255, dtype=np.uint8)
    gray[50, 20:380] = 40  # a horizontal rule, 1 px
    gray[20:380, 300:302] = 40  # a vertical rule, 2 px
    gray[200:260, 20:290] = 0  # a solid bar: no rule
    gray[100:130, 30:34] = 0  # a glyph stroke: too short
    mask = table_rule_mask(gray, dpi=200)
    assert mask[50, 20:380].all() and mask[20:200, 300:302].all()
    assert not mask[200:260, 20:290].any() and not mask[100:130, 30:34].any()


@pytest.mark.skipif(not ocr_available(), reason="needs Tesseract language data ([ocr] extra)")
@pytest.mark.slow
def test_shaded_header_between_rules_is_read_on_its_line(tmp_path, monkeypatch):
    src = _table_page(tmp_path / "table.pdf")
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(scanned_pdf(src, dpi=200))
    truth = _header(src, "never")
    assert [text for text, _ in truth] == HEADER
    header = _header(scan, "always")
    assert [text for text, _ in header] == HEADER
    for (text, got), (_, want) in zip(header, truth, strict=True):  # the boxes sit on the words' line
        assert abs(got - want) < 2.5, (text, got, want)
    monkeypatch.setattr(ocr_tables, "TABLE_REREAD", False)  # the page as Tesseract reads it whole: garbage
    assert [text for text, _ in _header(scan, "always")] != HEADER
