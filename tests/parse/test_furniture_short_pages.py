"""Issue #21 item 5: text is never thrown away as page furniture it is not, and a broken font is a
damaged page.

Page furniture repeats from page to page. Constructed PDFs: tiny pages and a one-word page on a
huge page (the page's only text), generated pages whose first line is "Heading N" (a layout model
calls some of them page headers), a multi-page document with a header line shown on one page only,
and a page whose embedded font stream has bytes flipped (MuPDF: ``zlib error``, ``FT_Load_Glyph
... broken file``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pymupdf
import pytest

from grounded.model import TEXT_TYPES, ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers import postprocess
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.pdf_input import PDFDamageWarning
from tests.support.pdf_builders import broken_font_pdf, heading_pages_pdf, short_text_pdf


@pytest.fixture(scope="module")
def parser() -> PyMuPDFParser:
    return PyMuPDFParser()


def _text(root: ParsingResult) -> str:
    return " ".join(n.content for n in root.walk() if n.content and (n.type in TEXT_TYPES or not n.children))


@pytest.mark.parametrize(
    ("size", "text", "fontsize", "at"),
    [
        ((20, 20), "Hi you", 4, (1, 12)),
        ((5, 5), "ab", 1.25, (0.5, 3)),
        ((14400, 14400), "Lonely", 12, (7000, 7000)),
        ((612, 792), "Only", 11, (300, 400)),
    ],
    ids=["20pt-page", "5pt-page", "one-word-huge-page", "one-word-letter-page"],
)
def test_a_pages_only_text_is_kept(parser, tmp_path: Path, size, text, fontsize, at) -> None:
    path = short_text_pdf(tmp_path / "short.pdf", *size, text, fontsize, at)
    with pymupdf.open(path) as doc:
        assert doc[0].get_text().split() == text.split()  # MuPDF reads it: the result must have it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = parser.parse(path)
    assert _text(root).split() == text.split()
    assert root.metadata["pages"][0]["status"] == "ok"


def test_first_line_heading_kept_on_every_generated_page(parser, tmp_path: Path) -> None:
    path = heading_pages_pdf(tmp_path / "headings.pdf", pages=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = parser.parse(path)
    firsts = {}
    for node in root.walk():
        if node.content.startswith("Heading") and node.geom:
            firsts[node.geom[0].page] = node
    assert sorted(firsts) == [1, 2, 3, 4, 5]
    assert {n.content for n in firsts.values()} == {f"Heading {k}" for k in range(1, 6)}
    assert all(n.type == T.SECTION_HEADER for n in firsts.values())


def _node(type_: T, text: str, page: int, top: float) -> ParsingResult:
    from grounded.model.boxes import ParsingBoundingBox

    box = ParsingBoundingBox(page=page, left=0.1, top=top, right=0.9, bottom=top + 0.02)
    return ParsingResult("", type_, content=text, geom=[box])


def test_furniture_rule_keeps_lines_that_repeat_on_no_other_page() -> None:
    body = "Body text of the page. " * 5
    root = ParsingResult("root", T.ROOT)
    for page in (1, 2, 3):
        root.add_child(_node(T.PAGE_HEADER, f"Journal of Tests, vol. 3, p. {page}", page, 0.02))  # running
        root.add_child(_node(T.PARAGRAPH, body, page, 0.2))
        root.add_child(_node(T.PAGE_FOOTER, str(page), page, 0.95))  # a bare page number
    root.add_child(_node(T.PAGE_HEADER, "Received 12 May 2020; accepted 3 June", 1, 0.05))  # page 1 only
    root.add_child(_node(T.PAGE_FOOTER, "- xiv -", 2, 0.95))  # a Roman page number is a number
    with warnings.catch_warnings():
        # an ordinary one-off line (a title page's dates) is kept without a warning: nothing to act on;
        # the kept characters are counted (pages[i]["furniture_kept_chars"] in a parse)
        warnings.simplefilter("error")
        kept = postprocess.keep_body_furniture(root, [T.PAGE_HEADER, T.PAGE_FOOTER])
    types = {n.content: n.type for n in root.children}
    assert types["Received 12 May 2020; accepted 3 June"] == T.PARAGRAPH
    assert kept == {1: len("Received12May2020;accepted3June")}
    assert all(types[f"Journal of Tests, vol. 3, p. {p}"] == T.PAGE_HEADER for p in (1, 2, 3))
    assert all(types[str(p)] == T.PAGE_FOOTER for p in (1, 2, 3))
    assert types["- xiv -"] == T.PAGE_FOOTER


@pytest.mark.parametrize(
    ("text", "words"), [("iii", False), ("- XLII -", False), ("xi 12", False), ("mix", True), ("Did", True), ("Page iv", True)]
)
def test_roman_page_numbers_are_numbers_not_words(text: str, words: bool) -> None:
    from grounded.parsers.furniture import furniture_key, has_words

    assert has_words(furniture_key(text)) is words


def test_furniture_rule_gives_a_heading_twin_its_heading_type() -> None:
    root = ParsingResult("root", T.ROOT)
    for page in (1, 2, 3, 4):
        root.add_child(_node(T.PAGE_HEADER if page == 2 else T.SECTION_HEADER, f"Heading {page}", page, 0.04))
        root.add_child(_node(T.PARAGRAPH, "Body text. " * 20, page, 0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a line rule: no warning
        postprocess.keep_body_furniture(root, [T.PAGE_HEADER, T.PAGE_FOOTER])
    heading = next(n for n in root.children if n.content == "Heading 2")
    assert heading.type == T.SECTION_HEADER and heading.metadata["relabeled_from"] == "PAGE_HEADER"


def test_a_broken_embedded_font_marks_the_page_damaged(parser, tmp_path: Path) -> None:
    path = broken_font_pdf(tmp_path / "font.pdf")
    with pytest.warns(PDFDamageWarning, match="may be incomplete"):
        root = parser.parse(path)
    page = root.metadata["pages"][0]
    assert page["status"] == "damaged"
    assert any("zlib error" in m or "broken file" in m for m in page["warnings"])
    assert "Row 19 of the damaged font table" in _text(root)  # the text read is kept
