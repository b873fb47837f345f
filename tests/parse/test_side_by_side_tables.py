"""Issue #34 item 22: two tables side by side that the layout model boxes as one table are split
at the full-height blank gutter between them; a table's own column spacing is not a gutter; a
picture inside a table box (a column of symbols) is not cut into panels."""

from __future__ import annotations

import warnings

import pymupdf
import pytest
from pymupdf4llm.helpers.document_layout import LayoutBox

from grounded.model import ParsingResultType as T
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.backends.pymupdf.tables import _split_panels
from grounded.parsers.textlayer import TextLayer
from tests.support.pdf_builders import save_pdf, side_by_side_tables_pdf


@pytest.fixture(scope="module")
def parser() -> PyMuPDFParser:
    return PyMuPDFParser(ocr="never")


def _tables(parser, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = parser.parse(path)
    return [n for n in root.walk() if n.type == T.TABLE]


@pytest.mark.parametrize("rules", [False, True], ids=["unruled", "ruled"])
def test_two_tables_side_by_side_are_two_tables(parser, tmp_path, rules):
    tables = _tables(parser, side_by_side_tables_pdf(tmp_path / "two.pdf", rules=rules))
    assert len(tables) == 2
    left, right = sorted(tables, key=lambda t: t.geom[0].left)
    assert left.geom[0].right < right.geom[0].left  # no spill into the other table
    assert left.content.startswith("| Group | Sym | Level | Change |") and "Event" not in left.content
    assert right.content.startswith("| Event | Grade | Count | Share |") and "Group" not in right.content
    assert all(len(row.children) == 4 for t in tables for row in t.children)


def test_a_tables_own_column_spacing_is_no_gutter(parser, tmp_path):
    # one table of 6 evenly spaced columns (no gap wider than the others), and a two-column table
    # with a wide gap (one column each side: no table on either side)
    tables = _tables(parser, side_by_side_tables_pdf(tmp_path / "one.pdf", rules=False, columns=(6, 0), gutter=0))
    assert len(tables) == 1 and "| Group | Sym | Level | Change | Trough | Peak |" in tables[0].content


def test_a_picture_inside_a_table_box_is_not_cut_into_panels(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for k in range(3):  # three symbols stacked with white space between: panels, were it a figure
        page.draw_rect(pymupdf.Rect(100, 100 + 60 * k, 130, 130 + 60 * k), color=(0, 0, 0), fill=(0.3, 0.3, 0.3))
    page.insert_text((200, 120), "Legend row one", fontsize=9)
    path = save_pdf(doc, tmp_path / "symbols.pdf")
    picture = LayoutBox(95.0, 95.0, 135.0, 255.0, boxclass="picture")
    table = LayoutBox(90.0, 90.0, 400.0, 260.0, boxclass="table")
    with TextLayer(path) as layer:
        alone = _split_panels([picture], layer, 1)
        in_table = _split_panels([table, picture], layer, 1)
    assert len(alone) == 3  # a figure of stacked panels is still cut
    assert [b.boxclass for b in in_table] == ["table", "picture"] and not getattr(in_table[1], "panel", None)
