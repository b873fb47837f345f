"""Text the layout pass loses is taken from the text layer; furniture never swallows body blocks;
printer's marks stay out; undecodable characters never break writing (issue #14, fuzz findings)."""

from __future__ import annotations

import pymupdf
import pytest

from grounded.chunking import document_text
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers import get_parser
from grounded.parsers.postprocess import FURNITURE_MAX_LINES, keep_body_furniture, replace_lone_surrogates
from tests.support.data import shared

PEERJ = ("long", "cermine_test6_peerjcs118.pdf")


def _solid(text: str) -> str:
    return "".join(text.split())


def _scaled(src: pymupdf.Document, pno: int, height: float, path) -> str:
    """Page ``pno`` of ``src`` drawn scaled onto a page ``height`` points high (letter aspect)."""
    doc = pymupdf.open()
    page = doc.new_page(width=height * 612 / 792, height=height)
    page.show_pdf_page(page.rect, src, pno)
    doc.save(path)
    return _solid(doc[0].get_text())


@pytest.fixture(scope="module")
def parser():
    return get_parser("pymupdf")


@pytest.mark.parametrize("height", [10.0, 300.0])
def test_sideways_table_page_at_odd_sizes_keeps_its_text(tmp_path, parser, height):
    # peerj p9: a table set sideways (no /Rotate). At 300 pt the layout model sees it as a picture
    # under a running header (the text was lost -> "no text left"); at 10 pt it called 9 lines of
    # the table header page furniture (30% of the text was dropped).
    with pymupdf.open(shared(*PEERJ)) as src:
        expected = _scaled(src, 8, height, tmp_path / "scaled.pdf")
    root = parser.parse(tmp_path / "scaled.pdf")
    text = _solid(document_text(root).text.replace("|", ""))
    kept = sum(1 for c in set(expected) if c in text)
    assert len(text) >= 0.9 * len(expected) and kept == len(set(expected))


def test_printer_marks_in_the_margin_are_not_body_text(tmp_path, parser):
    # federal register pp. 7-8: figure pages whose only text besides the running header and a
    # little body is the printer's slug ("VerDate ...") and side stamps, outside any layout box
    with pymupdf.open(shared("long", "federal-register-2020-17221.pdf")) as src:
        doc = pymupdf.open()
        doc.insert_pdf(src, from_page=6, to_page=7)
        doc.save(tmp_path / "p8.pdf")
    root = parser.parse(tmp_path / "p8.pdf")
    assert not any(n.metadata.get("layout_fallback") for n in root.walk())
    assert "VerDate" not in document_text(root).text


def _line_boxes(n: int, page: int = 1) -> list[ParsingBoundingBox]:
    box = ParsingBoundingBox(page, 0.1, 0.02, 0.9, 0.02 + 0.02 * n)
    box.spans = [ParsingBoundingBox(page, 0.1, 0.02 + 0.02 * i, 0.9, 0.04 + 0.02 * i) for i in range(n)]
    return [box]


def test_a_many_line_header_block_is_body_text_a_running_header_is_not():
    root = ParsingResult("root", T.ROOT)
    running = ParsingResult("", T.PAGE_HEADER, content="Journal of Things 2020", geom=_line_boxes(1))
    block = ParsingResult("", T.PAGE_HEADER, content="table header words " * 20, geom=_line_boxes(FURNITURE_MAX_LINES + 3))
    body = ParsingResult("", T.PARAGRAPH, content="body text " * 200, geom=_line_boxes(30))
    # a running header repeats: the same line heads page 2 (#21.5: a line on one page only is text)
    running2 = ParsingResult("", T.PAGE_HEADER, content="Journal of Things 2020", geom=_line_boxes(1, page=2))
    body2 = ParsingResult("", T.PARAGRAPH, content="more body text " * 100, geom=_line_boxes(30, page=2))
    for node in (running, block, body, running2, body2):
        root.add_child(node)
    with pytest.warns(UserWarning, match="page header/footer text kept"):
        kept = keep_body_furniture(root, [T.PAGE_HEADER, T.PAGE_FOOTER], "x.pdf")
    assert block.type == T.PARAGRAPH and block.metadata["relabeled_from"] == "PAGE_HEADER"
    assert running.type == T.PAGE_HEADER
    assert kept == {1: len(_solid(block.content))}


def test_lone_surrogates_become_replacement_characters_everywhere(tmp_path):
    root = ParsingResult("root", T.ROOT, metadata={"pdf_warnings": ["bad \udcc7 glyph"], "title": {"t": "a\ud800"}})
    node = ParsingResult("", T.PARAGRAPH, content="ab\udcc7cd", metadata={"native_label": "x\udfff"})
    root.add_child(node)
    md = replace_lone_surrogates(root, "# ab\udcc7cd\n")
    assert node.content == "ab\ufffdcd" and len(node.content) == 5  # offsets unchanged
    assert md == "# ab\ufffdcd\n"
    assert root.metadata == {"pdf_warnings": ["bad \ufffd glyph"], "title": {"t": "a\ufffd"}}
    assert node.metadata["native_label"] == "x\ufffd"
    from grounded.serialization import load_parse_pair, save_parse_pair

    save_parse_pair(root, md, tmp_path / "x.json", tmp_path / "x.md")  # writable as UTF-8 now
    assert load_parse_pair(tmp_path / "x.json")[1] == md


_HEADER = "Journal of Margin Studies - Volume 7 (2026)"
_BAND_LINE = "This closing sentence of the body runs on into the bottom margin of the page."


def _margin_pdf(path) -> None:
    """Three letter pages: a running header and a page number in the margin band (6% of the page)
    of each; page 2 ends with a body line set inside the bottom band (tight margins)."""
    doc = pymupdf.open()
    for number in (1, 2, 3):
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 30), _HEADER, fontsize=9)
        page.insert_textbox(pymupdf.Rect(72, 72, 520, 125), f"Page {number} opens with a paragraph the layout boxed. " * 3, fontsize=11)
        page.insert_textbox(pymupdf.Rect(72, 200, 520, 600), f"Body text of page {number} that the layout model lost. " * 20, fontsize=11)
        if number == 2:
            page.insert_text((72, 757), _BAND_LINE, fontsize=11)
        page.insert_text((290, 784), f"Page {number}", fontsize=9)
    doc.save(path)


def test_fallback_keeps_body_text_in_the_margin_band_not_running_furniture(tmp_path):
    """The layout fallback (most of page 2 in no layout box) takes MuPDF's blocks; a block lying in
    the margin band is body text unless its text recurs in the band of a nearby page: the body
    line in the bottom band is kept, the running header and the page number stay out."""
    from pymupdf4llm.helpers.document_layout import LayoutBox, PageLayout

    from grounded.parsers.backends.pymupdf.tree import FALLBACK_MARGIN_SHARE, _TreeBuilder
    from grounded.parsers.textlayer import TextLayer

    path = tmp_path / "margins.pdf"
    _margin_pdf(path)
    with pymupdf.open(path) as doc:
        lines = [ln for b in doc[1].get_text("dict")["blocks"] for ln in b.get("lines", [])]
    band = 792 * (1 - FALLBACK_MARGIN_SHARE)
    assert any(ln["bbox"][1] >= band and "closing sentence" in "".join(s["text"] for s in ln["spans"]) for ln in lines)
    builder = _TreeBuilder(path)
    layout = PageLayout(2, 612.0, 792.0, [LayoutBox(72.0, 72.0, 520.0, 125.0, boxclass="text")])  # the rest is lost
    with TextLayer(path) as layer:
        builder.add_page(layout, layer.page(2), layer)
    fallback = [e for e in builder.elements if e.metadata.get("layout_fallback")]
    text = " ".join(e.content for e in builder.elements)
    assert fallback and "Body text of page 2" in text
    assert _BAND_LINE in " ".join(e.content for e in fallback)  # body text in the band: kept
    assert "Margin Studies" not in text  # the running header: out
    assert "Page 2" not in text.replace("Page 2 opens", "")  # the page number: out
