"""Issue #34 item 13: a page whose glyphs map to no Unicode (a Type 3 font without ToUnicode and with
non-standard glyph names) is flagged like a damaged page: status, reason, count, one warning."""

from __future__ import annotations

import warnings

import pytest

from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.pdf_input import PDFDamageWarning, glyph_name_maps, inspect_pdf
from tests.support.pdf_builders import type3_font_pdf

BODY = "Patients received the adjusted dose once daily for twelve weeks."


@pytest.mark.parametrize(("name", "maps"), [
    ("A", True), ("Alpha", True), ("uni0041", True), ("u1F600", True), ("A.sc", True), ("f_i", True),
    ("g1", False), ("g3", False), ("a12", False), ("cid12", False), ("T3_1", False), (".notdef", False), ("", False),
])
def test_standard_glyph_names_map(name, maps):
    assert glyph_name_maps(name) is maps


def test_type3_glyphs_without_unicode_flag_the_page(tmp_path):
    path = type3_font_pdf(tmp_path / "t3.pdf", ["g1", "g2", "g3"], body=BODY, shown="ABCABC CBA")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        root = PyMuPDFParser(ocr="never").parse(path)
    (page,) = root.metadata["pages"]
    assert page["status"] == "damaged" and page["unmapped_glyphs"] == 9
    assert "map to no Unicode" in page["reason"] and "MuPDF could not read" not in page["reason"]
    assert any("9 of" in w and "Type 3" in w for w in page["warnings"])
    damage = [str(w.message) for w in caught if issubclass(w.category, PDFDamageWarning)]
    assert len(damage) == 1 and "no Unicode" in damage[0] and str(path) in damage[0]
    assert "Patients received" in "".join(n.content for n in root.walk())  # the rest of the text stays


@pytest.mark.parametrize("kind", ["standard names", "ToUnicode"])
def test_type3_glyphs_with_unicode_are_not_flagged(tmp_path, kind):
    names, to_unicode = (["A", "B", "C"], False) if kind == "standard names" else (["g1", "g2", "g3"], True)
    path = type3_font_pdf(tmp_path / "t3.pdf", names, body=BODY, shown="ABCABC CBA", to_unicode=to_unicode)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PDFDamageWarning)
        info = inspect_pdf(path, require_text=True)
    assert info.damaged_pages == [] and info.unmapped_glyphs == {} and info.page_warnings == {}


def test_a_type3_font_the_page_does_not_use_flags_nothing(tmp_path):
    path = type3_font_pdf(tmp_path / "t3.pdf", ["g1", "g2"], body=BODY, shown="")
    info = inspect_pdf(path, require_text=True)
    assert info.damaged_pages == [] and info.unmapped_glyphs == {}
