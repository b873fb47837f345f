"""Issue #21 item 8: OCR bombs are bounded.

A page that would be more than ``OCR_MAX_PIXELS`` pixels at the OCR resolution is rendered at a
lower resolution, logged and recorded in the page's warnings, and its text lines are still read.
The constructed scan is small (a 1200 x 1200 bilevel image) and the test lowers the limit, so the
downscale path runs in seconds; the default limit is checked on the resolution it gives a huge page.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

from grounded.model import TEXT_TYPES
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.ocr import engine
from grounded.parsers.pdf_input import MAX_PAGE_POINTS
from tests.support.pdf_builders import bitmap_page_pdf

LINES = ["Bomb page line one of text", "A second readable line here"]


def test_default_limit_bounds_the_largest_page() -> None:
    dpi = engine.ocr_dpi(MAX_PAGE_POINTS, MAX_PAGE_POINTS, engine.DEFAULT_OCR_DPI)
    assert dpi < engine.DEFAULT_OCR_DPI
    assert (MAX_PAGE_POINTS * dpi / 72) ** 2 <= engine.OCR_MAX_PIXELS
    assert (MAX_PAGE_POINTS * (dpi + 1) / 72) ** 2 > engine.OCR_MAX_PIXELS * 0.98  # as high as allowed
    assert engine.ocr_dpi(612, 792, engine.DEFAULT_OCR_DPI) == engine.DEFAULT_OCR_DPI  # a letter page: as asked


def test_a_page_beyond_the_pixel_limit_is_ocrd_downscaled_and_says_so(tmp_path: Path, monkeypatch) -> None:
    path = bitmap_page_pdf(tmp_path / "bomb.pdf", 1200, LINES)
    limit = 1_000_000  # the 612 pt page is 2.9 million pixels at 200 dpi
    monkeypatch.setattr(engine, "OCR_MAX_PIXELS", limit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = PyMuPDFParser(ocr="auto").parse(path)
    page = root.metadata["pages"][0]
    expected_dpi = math.floor(200 * math.sqrt(limit / (612 * 200 / 72) ** 2))
    assert page["text_source"] == "ocr" and page["status"] == "ok"
    assert any(f"OCR at {expected_dpi} dpi instead of 200" in w and "OCR_MAX_PIXELS" in w for w in page["warnings"])
    text = " ".join(n.content for n in root.walk() if n.content and (n.type in TEXT_TYPES or not n.children))
    assert all(line in text for line in LINES), text
