"""Running headers/footers found by repetition across pages (core/parsers/backends/pymupdf/running_furniture.py, #11)."""

from __future__ import annotations

from pathlib import Path

from grounded.model import ParsingBoundingBox, ParsingResult, ParsingResultType
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.backends.pymupdf.running_furniture import (
    BAND_SHARE,
    MAX_LINES,
    POSITION_TOLERANCE,
    furniture_key,
    mark_running_furniture,
)
from grounded.parsers.base import DEFAULT_DROP_TYPES
from grounded.parsers.postprocess import filter_elements
from grounded.text.stream import document_text
from tests.support.data import shared
from tests.support.scanned import scanned_pdf

T = ParsingResultType

#: a journal's running header as OCR reads it on successive pages (noise, page numbers, spacing)
NOISY_HEADERS = [
    "Clinical Science (2014) 126, 305–313 (Printed in Great Britain) doi: 10.1042/CS20130403",
    "Clinical Science (2014) 126, 305-313 (Printed in Great Britain) doi: 10.1042/CS$20130403",
    "Clinical Sc1ence (2014) 126, 305-313 (Printed in Great Brita1n) do1: 10.1042/CS20130403",
    "Clinical Science (2014) 126,305-313 (Printed inGreat Britain) doi:10.1042/C520130403.",
]


def _node(
    page: int, type_: ParsingResultType, text: str, top: float, bottom: float, lines: int = 1
) -> ParsingResult:
    box = ParsingBoundingBox(page, 0.1, top, 0.9, bottom)
    step = (bottom - top) / lines
    box.spans = [
        ParsingBoundingBox(page, 0.1, top + i * step, 0.9, top + (i + 1) * step) for i in range(lines)
    ]
    return ParsingResult("", type_, content=text, geom=[box])


def _document() -> list[ParsingResult]:
    """Four pages: a noisy running header (labelled furniture only on page 1), page numbers at the
    foot (never labelled), body text that repeats mid-page and a repeated line just below the band."""
    nodes = []
    header_types = [T.PAGE_HEADER, T.SECTION_HEADER, T.PARAGRAPH, T.TITLE]
    for page, (header, type_) in enumerate(zip(NOISY_HEADERS, header_types, strict=True), 1):
        nodes.append(_node(page, type_, header, 0.030 + 0.002 * page, 0.045 + 0.002 * page))
        nodes.append(
            _node(
                page,
                T.PARAGRAPH,
                f"Figure {page} to paragraph (h)({page}) -- AFM revision: Runaway Stabilizer",
                BAND_SHARE + 0.005,
                BAND_SHARE + 0.02,
            )
        )
        nodes.append(_node(page, T.PARAGRAPH, "Results are shown in the table below.", 0.4, 0.42))
        nodes.append(_node(page, T.PARAGRAPH, str(304 + page), 0.963, 0.972))
    return nodes


def test_furniture_key_masks_numbers_case_and_punctuation() -> None:
    assert furniture_key("Page 12 of 40") == furniture_key("page 3 of 40.") == "page#of#"
    assert furniture_key("47699") == "#"


def test_noisy_running_header_and_page_numbers_become_furniture() -> None:
    nodes = _document()
    found = mark_running_furniture(nodes)
    headers = [n for n in nodes if n.content in NOISY_HEADERS]
    numbers = [n for n in nodes if n.content.isdigit()]
    assert all(n.type == T.PAGE_HEADER for n in headers)
    assert all(n.type == T.PAGE_FOOTER for n in numbers)
    # page 1's header was furniture already
    assert {id(n) for n in found} == {id(n) for n in headers[1:] + numbers}
    assert [n.metadata["relabeled_from"] for n in headers[1:]] == ["SECTION_HEADER", "PARAGRAPH", "TITLE"]
    assert all(n.metadata["running_furniture"] for n in found)


def test_only_the_given_pages_are_relabelled() -> None:
    """The parser passes its OCR'd pages: elsewhere the model's labels stand (all pages still count
    as evidence), so numbered headings at the top of born-digital pages are never dropped."""
    nodes = _document()
    found = mark_running_furniture(nodes, pages={2, 4})
    assert {n.geom[0].page for n in found} == {2, 4}
    assert [n.type for n in nodes if n.content in NOISY_HEADERS] == [T.PAGE_HEADER, T.PAGE_HEADER, T.PARAGRAPH, T.PAGE_HEADER]
    headings = [_node(p, T.SECTION_HEADER, f"Section {p}: dosing", 0.03, 0.05) for p in (1, 2, 3)]
    assert mark_running_furniture(headings, pages=set()) == []
    assert all(n.type == T.SECTION_HEADER for n in headings)


def test_born_digital_numbered_headings_at_the_top_of_each_page_stay(tmp_path: Path) -> None:
    """Born-digital pages keep the layout model's labels: a numbered heading set at the same place
    on every page ("Section 1: dosing", "Section 2: dosing") is content, not a running header."""
    import pymupdf

    doc = pymupdf.open()
    for k in range(1, 4):
        page = doc.new_page()
        page.insert_text((60, 40), f"Section {k}: dosing", fontsize=16, fontname="hebo")
        for i in range(12):
            page.insert_text((60, 80 + 14 * i), f"Body line {i} of section {k} about renal dosing intervals.", fontsize=10)
    path = tmp_path / "sections.pdf"
    doc.save(path)
    text = document_text(PyMuPDFParser(ocr="never").parse(path)).text
    assert all(f"Section {k}: dosing" in text for k in range(1, 4)), text[:300]


def test_repeated_body_lines_outside_the_band_stay() -> None:
    nodes = _document()
    mark_running_furniture(nodes)
    body = [n for n in nodes if n.content.startswith(("Figure", "Results"))]
    assert len(body) == 8
    assert all(n.type == T.PARAGRAPH and "relabeled_from" not in n.metadata for n in body)


def test_band_text_on_one_page_only_stays() -> None:
    nodes = [
        _node(1, T.TITLE, "A study of running headers in scanned journals", 0.03, 0.06),
        _node(2, T.PAGE_HEADER, "Journal of Layout 12 (2020)", 0.03, 0.045),
        _node(3, T.PAGE_HEADER, "Journal of Layout 12 (2020)", 0.03, 0.045),
    ]
    assert mark_running_furniture(nodes) == []
    assert nodes[0].type == T.TITLE


def test_same_text_at_another_height_or_band_stays() -> None:
    text = "Proceedings of the Workshop on Documents"
    off = 2 * POSITION_TOLERANCE
    nodes = [
        _node(1, T.PAGE_HEADER, text, 0.01, 0.02),
        _node(2, T.PARAGRAPH, text, 0.01 + off, 0.02 + off),  # same band, another height
        _node(3, T.PARAGRAPH, text, 0.97, 0.98),  # the bottom band
    ]
    assert mark_running_furniture(nodes) == []
    assert [n.type for n in nodes[1:]] == [T.PARAGRAPH, T.PARAGRAPH]


def test_short_texts_must_match_exactly_and_blocks_stay() -> None:
    block = "\n".join(["The same block of notes repeated at the foot of each page"] * (MAX_LINES + 1))
    nodes = [
        _node(1, T.SECTION_HEADER, "Part A", 0.03, 0.045),
        _node(2, T.SECTION_HEADER, "Part B", 0.03, 0.045),  # one letter apart: two headings
        _node(1, T.PARAGRAPH, block, 0.93, 0.99, lines=MAX_LINES + 1),
        _node(2, T.PARAGRAPH, block, 0.93, 0.99, lines=MAX_LINES + 1),
    ]
    assert mark_running_furniture(nodes) == []


def test_tables_figures_and_footnotes_are_never_relabelled() -> None:
    note = "Correspondence: Professor A. Author (email a.author@example.org)"
    nodes = [
        _node(1, T.TABLE, "| a | b |", 0.01, 0.05),
        _node(2, T.TABLE, "| a | b |", 0.01, 0.05),
        _node(1, T.FOOTNOTE, note, 0.95, 0.96),  # an article and its supplement repeat the note
        _node(2, T.FOOTNOTE, note, 0.95, 0.96),
    ]
    assert mark_running_furniture(nodes) == []
    assert [n.type for n in nodes] == [T.TABLE, T.TABLE, T.FOOTNOTE, T.FOOTNOTE]


def test_scanned_register_pages_lose_their_running_header(tmp_path: Path) -> None:
    """Pages 3 and 5 of the Federal Register, scanned: the layout model calls their running header
    and page number a section header or title (the OCR text layer has one font for all lines); the
    repetition across the two pages makes them furniture, dropped as the born-digital parse drops them."""
    scan = tmp_path / "register.pdf"
    scan.write_bytes(scanned_pdf(shared("long", "federal-register-2020-17221.pdf"), [3, 5], dpi=200))
    root = PyMuPDFParser(ocr="always", drop_types=()).parse(scan)
    relabelled = [n for n in root.walk() if n.metadata.get("running_furniture")]
    assert {n.geom[0].page for n in relabelled} == {1, 2}
    assert all(n.type == T.PAGE_HEADER for n in relabelled)
    filter_elements(root, DEFAULT_DROP_TYPES)  # what a default parse drops
    text = document_text(root).text
    assert "Vol. 85, No. 152" not in text and "Proposed Rules" not in text
    assert "47700" not in text and "47702" not in text
    assert "operational readiness" in text  # the body stays
