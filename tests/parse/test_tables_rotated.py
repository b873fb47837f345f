"""Tables on rotated pages with multi-line cells (#13.4): a cell's lines stay in their cell and a
table row reads as one row, also where the layout model's grid cuts a row of tall cells in two."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pymupdf
import pytest

from grounded.model import ParsingBoundingBox, ParsingResult, ParsingResultType
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.backends.pymupdf.tables import _join_continuation_rows
from grounded.parsers.backends.pymupdf.tree import _TreeBuilder
from grounded.parsers.textlayer import TextLayer
from tests.support.data import shared

T = ParsingResultType

# -- a constructed landscape table on a /Rotate 90 page ------------------------------------------

HEADER = ("Model", "Tree", "Type", "lnL", "Estimates", "Selection")
DATA = [
    ("alpha", "Sample_A", "Site", "-568.57", ["p0 = 0.35065", "p1 = 0.64935", "w0 = 0.08403", "w1 = 1.00000"], "No"),
    ("beta", "Sample_B", "Lineage", "-557.05", ["p0 = 0.33452", "p1 = 0.59186", "p2 = 0.02659"],
     ["Yes, at", "sites 24 25", "and 32"]),
    ("gamma", "Sample_C", "Site", "-568.52", ["p0 = 0.37699", "p1 = 0.62301"], "No"),
    ("delta", "Sample_D", "Branch", "-570.11", ["q = 0.11441", "p = 0.22135", "w = 1.11431", "r = 0.5"], "Not allowed"),
    ("epsilon", "Sample_E", "Site", "-566.01", "w = 0.61924", "No"),
]
XS = [72, 160, 250, 330, 410, 540]  # column starts (displayed points)
PITCH = 11.0  # baseline to baseline inside a cell
ROW_GAP = 4.0  # extra space between rows
RIGHT = 700.0


def _lines(cell: str | list[str]) -> list[str]:
    return [cell] if isinstance(cell, str) else cell


def _expected(row: tuple) -> list[str]:
    return [" ".join(_lines(c)) for c in row]


def build_rotated_table(path: Path) -> list[float]:
    """Write the table on a portrait page shown rotated by 90 degrees (text upright as displayed);
    returns each row's first baseline (displayed points)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.set_rotation(90)
    d = page.derotation_matrix  # displayed -> unrotated page space

    def put(x: float, y: float, text: str, size: float = 9) -> None:
        page.insert_text(pymupdf.Point(x, y) * d, text, fontsize=size, rotate=90)

    put(72, 60, "Table 1 Estimates of the models on five samples.", 10)
    page.draw_line(pymupdf.Point(72, 72) * d, pymupdf.Point(RIGHT, 72) * d)
    baselines = []
    y = 90.0
    for r, row in enumerate([HEADER, *DATA]):
        baselines.append(y)
        for x, cell in zip(XS, row, strict=True):
            for k, line in enumerate(_lines(cell)):
                put(x, y + PITCH * k, line)
        y += PITCH * max(len(_lines(c)) for c in row) + ROW_GAP
        if r == 0:
            page.draw_line(pymupdf.Point(72, y - 10) * d, pymupdf.Point(RIGHT, y - 10) * d)
    page.draw_line(pymupdf.Point(72, y - 6) * d, pymupdf.Point(RIGHT, y - 6) * d)
    put(72, y + 20, "The estimates are maximum likelihood values; w is the ratio of rates.")
    doc.save(path)
    doc.close()
    return baselines


def _rows(table: ParsingResult) -> list[list[str]]:
    return [[c.content for c in row.children] for row in table.children]


def _tables(root: ParsingResult, page: int | None = None) -> list[ParsingResult]:
    return [n for n in root.walk() if n.type == T.TABLE and (page is None or n.geom[0].page == page)]


@pytest.fixture(scope="module")
def rotated_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[float]]:
    path = tmp_path_factory.mktemp("rot") / "rotated_table.pdf"
    return path, build_rotated_table(path)


def test_constructed_rotated_table_rows_read_as_rows(rotated_table):
    path, _ = rotated_table
    with pymupdf.open(path) as doc:
        assert doc[0].rotation == 90 and doc[0].rect.width > doc[0].rect.height
    (table,) = _tables(PyMuPDFParser().parse(path))
    rows = _rows(table)
    for row in [HEADER, *DATA]:
        assert _expected(row) in rows, f"row {row[0]!r} is not one row of its cells: {rows}"
    assert len(rows) == 1 + len(DATA)


def _cut_grid(baselines: list[float]) -> list[list[tuple[float, float, float, float] | None]]:
    """The failure seen on PeerJ pages 8-10: a grid whose row boundaries cut rows of tall cells
    after their second line (every row of 3+ lines is split into two grid rows)."""
    edges = [*XS[1:], RIGHT]
    grid: list[list[tuple[float, float, float, float] | None]] = []
    for r, row in enumerate([HEADER, *DATA]):
        top = baselines[r] - 9
        height = max(len(_lines(c)) for c in row)
        bottom = baselines[r + 1] - 9 if r + 1 < len(baselines) else baselines[r] + PITCH * (height - 1) + 3
        cuts = [top, baselines[r] + PITCH + 3, bottom] if height >= 3 else [top, bottom]
        for a, b in zip(cuts, cuts[1:], strict=False):
            grid.append([(x - 2, a, e - 2, b) for x, e in zip(XS, edges, strict=True)])
    return grid


def test_cut_grid_rows_are_joined_again(rotated_table):
    path, baselines = rotated_table
    grid = _cut_grid(baselines)
    assert len(grid) == 1 + len(DATA) + 3  # alpha, beta and delta are cut in two
    with TextLayer(path) as layer:
        pc = layer.page(1)
        builder = _TreeBuilder(path)
        builder._turn, builder._table_leftover = 0, []
        box = SimpleNamespace(table={"cells": grid})
        geom = ParsingBoundingBox.from_points(1, 70, 75, RIGHT, baselines[-1] + 10, pc.width, pc.height)
        claimed = np.zeros(len(pc), dtype=bool)
        table = builder._table(box, pc, claimed, geom, {}, layer)
    assert table.metadata["continuation_rows_joined"] == 3
    assert _rows(table) == [_expected(r) for r in [HEADER, *DATA]]
    for row in table.children:  # every cell's lines lie inside its row's box
        for cell in row.children:
            for span in cell.geom[0].spans:
                assert row.geom[0].top - 1e-6 <= span.top and span.bottom <= row.geom[0].bottom + 1e-6


# -- the joining rule on line tops alone ---------------------------------------------------------

BOX = (0.0, 0.0, 1.0, 1.0)


def _grid(n_rows: int, n_cols: int) -> list[list[tuple[float, float, float, float] | None]]:
    return [[BOX] * n_cols for _ in range(n_rows)]


def test_continuation_needs_empty_key_cell_and_line_pitch():
    # row 1 continues row 0's multi-line cell (col 1) at the pitch, col 2 ended above: joined
    tops = [[[0.0], [0.0, 10.0], [0.0]], [[], [20.0], []]]
    grid, joined = _join_continuation_rows(_grid(2, 3), tops)
    assert joined == 1 and len(grid) == 1
    # the same row after a wider gap (a new row whose key cell is empty): kept
    tops = [[[0.0], [0.0, 10.0], [0.0]], [[], [40.0], []]]
    assert _join_continuation_rows(_grid(2, 3), tops)[1] == 0
    # two columns: a continuation looks like a spanned key's sub-row; kept (no evidence either way)
    tops = [[[0.0], [0.0, 10.0]], [[], [20.0]]]
    assert _join_continuation_rows(_grid(2, 2), tops)[1] == 0
    # a row with every other cell filled (a spanned key cell), even at the pitch: kept
    tops = [[[0.0], [0.0, 10.0], [0.0]], [[], [20.0], [20.0]]]
    assert _join_continuation_rows(_grid(2, 3), tops)[1] == 0
    # ... also in a tight table whose sub-rows are set at the line pitch (ICDAR us-031a)
    tops = [[[0.0], [0.0], [0.0]], [[], [10.0], [10.0]], [[], [20.0, 30.0], [20.0]]]
    assert _join_continuation_rows(_grid(3, 3), tops)[1] == 0
    # the key cell filled: a new row
    tops = [[[0.0], [0.0, 10.0], [0.0]], [[20.0], [20.0], []]]
    assert _join_continuation_rows(_grid(2, 3), tops)[1] == 0
    # no multi-line cell anywhere: no pitch to go by, nothing joined
    tops = [[[0.0], [0.0], [0.0]], [[], [10.0], []]]
    assert _join_continuation_rows(_grid(2, 3), tops)[1] == 0


# -- the shared PDF: PeerJ table 2 on /Rotate 90 pages -------------------------------------------


@pytest.fixture(scope="module")
def peerj_table_pages(tmp_path_factory: pytest.TempPathFactory) -> ParsingResult:
    """Pages 8-9 of the PeerJ article (its table pages, shown rotated), parsed on their own."""
    src = shared("long", "cermine_test6_peerjcs118.pdf")
    out = tmp_path_factory.mktemp("peerj") / "peerj_p8_9.pdf"
    with pymupdf.open(src) as doc, pymupdf.open() as part:
        part.insert_pdf(doc, from_page=7, to_page=8)
        assert [p.rotation for p in part] == [90, 90]
        part.save(out)
    return PyMuPDFParser().parse(out)


def _row_of(table: ParsingResult, *keys: str) -> list[str]:
    found = [r for r in _rows(table) if all(any(k == c for c in r) for k in keys)]
    assert len(found) == 1, f"{keys}: {len(found)} rows in {_rows(table)}"
    return found[0]


def test_peerj_multiline_cells_stay_in_their_row(peerj_table_pages):
    (p8,) = _tables(peerj_table_pages, 1)
    (p9,) = _tables(peerj_table_pages, 2)
    row = _row_of(p8, "m3Discrtk2", "Sample_MSA", "Yes")
    assert "p0 = 0.37699 p1 = 0.62301 w0 = 0.10174 w1 = 1.11245" in row
    assert any(c.startswith("Alignment (28 NEB sites)") and c.endswith("41 43 44") for c in row)
    chimp = _row_of(p9, "modelA", "Sample_MSA_Chimp")
    assert "p0 = 0.33452 p1 = 0.59186 p2 = 0.02659 p3 = 0.04704 w0 = 0.1099 w1 = 1.00000 w2 = 999.000" in chimp
    assert "Alignment (3 BEB sites): 24 25 32" in chimp
    human = _row_of(p9, "modelA", "Sample_MSA_Human")
    assert any(c.endswith("w0 = 0.08403 w1 = 1.0000 w2 = 1.00000") for c in human)
    # the caption the layout model boxed with the table is a CAPTION right before it, not a row
    flat = [n for n in peerj_table_pages.walk() if n.type in (T.CAPTION, T.TABLE)]
    for table, caption in ((p8, "Table 2 Sample of a summary output"), (p9, "Table 2 (continued)")):
        before = flat[flat.index(table) - 1]
        assert before.type == T.CAPTION and before.content.startswith(caption)
        assert not any(caption in c for r in _rows(table) for c in r)
        assert before.geom[0].bottom <= table.geom[0].top + 1e-6
    for table in (p8, p9):  # no row is a stray continuation (empty key cell, a few cells filled)
        for cells in _rows(table)[2:]:
            assert cells[0], f"continuation row left in table: {cells}"
