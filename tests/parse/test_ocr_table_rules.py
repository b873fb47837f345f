"""Issue #34 item 21: Tesseract merged a shaded table header set tight between cell borders with the
borders ("[stipe | __[nialatuton" for "Subtype | Clinical situation", boxes half a line high). Ruling
lines are erased from the page image before OCR (:func:`grounded.parsers.ocr.engine.rule_mask`).
Real OCR (Tesseract inside PyMuPDF) on the scanned sample guideline."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from grounded.model import ParsingResultType as T
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.ocr.engine import ocr_available, rule_mask
from grounded.samples import write_sample_pdf
from tests.support.scanned import scanned_pdf

HEADER = ["Subtype", "Clinical situation", "Preferred regimen", "Duration", "Evidence"]


def test_rule_mask_takes_long_thin_lines_only():
    gray = np.full((400, 400), 255, dtype=np.uint8)
    gray[50, 20:380] = 40  # a horizontal rule, 1 px
    gray[20:380, 300:302] = 40  # a vertical rule, 2 px
    gray[200:260, 20:380] = 0  # a solid bar: no rule
    gray[100:130, 30:34] = 0  # a glyph stroke: too short
    mask = rule_mask(gray, dpi=200)
    assert mask[50, 20:380].all() and mask[20:200, 300:302].all()
    assert not mask[200:260, 20:290].any() and not mask[100:130, 30:34].any()


@pytest.mark.skipif(not ocr_available(), reason="needs Tesseract language data ([ocr] extra)")
def test_shaded_header_between_rules_is_read(tmp_path):
    src = write_sample_pdf(tmp_path / "sample.pdf")
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(scanned_pdf(src, pages=[4], dpi=200))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ocr = PyMuPDFParser(ocr="always").parse(scan)
        plain = PyMuPDFParser(ocr="never").parse(src)
    (table,) = [n for n in ocr.walk() if n.type == T.TABLE]
    header = table.children[0]
    assert [" ".join(c.content.split()) for c in header.children] == HEADER
    (truth,) = [n.children[0] for n in plain.walk() if n.type == T.TABLE and n.geom[0].page == 4]
    for got, want in zip(header.children, truth.children, strict=True):  # boxes on the words' line
        centre = lambda b: (b.spans[0].top + b.spans[0].bottom) / 2 * 842  # noqa: E731
        assert abs(centre(got.geom[0]) - centre(want.geom[0])) < 2.5
