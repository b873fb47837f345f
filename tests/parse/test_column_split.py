"""Column gutters inside one layout box (core/parsers/column_split.py) on constructed pages."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grounded.parsers.column_split import split_box, split_columns

GLYPH_W, GLYPH_H, LEADING = 5.0, 9.0, 12.0
LEFT, RIGHT = (50.0, 290.0), (310.0, 550.0)  # two columns, gutter 290-310


@dataclass
class Box:
    x0: float
    y0: float
    x1: float
    y1: float
    boxclass: str = "text"


@dataclass
class Glyphs:
    chars: list[str] = field(default_factory=list)
    boxes: list[tuple[float, float, float, float]] = field(default_factory=list)

    def word(self, x: float, y: float, text: str) -> float:
        """Glyphs of ``text`` from ``x`` on the line at ``y``; returns the x after it."""
        for c in text:
            self.chars.append(c)
            self.boxes.append((x, y, x + GLYPH_W, y + GLYPH_H))
            x += GLYPH_W
        return x

    def line(self, x0: float, x1: float, y: float, seed: int) -> None:
        """A justified line of words (3-8 letters, one space glyph between) filling x0-x1."""
        rng = np.random.default_rng(seed)
        x = x0
        while x1 - x >= 9 * GLYPH_W:
            x = self.word(x, y, "w" * int(rng.integers(3, 9)))
            x = self.word(x, y, " ")
        self.word(x, y, "e" * int((x1 - x) // GLYPH_W))  # the last word ends at the margin

    def columns(self, y0: float, rows: int) -> float:
        """``rows`` lines in each of the two columns from ``y0``; returns the y below them."""
        for r in range(rows):
            y = y0 + r * LEADING
            self.line(*LEFT, y, seed=2 * r)
            self.line(*RIGHT, y, seed=2 * r + 1)
        return y0 + rows * LEADING

    def table(self, y0: float, rows: int, cells: list[tuple[float, float]]) -> float:
        for r in range(rows):
            for x0, x1 in cells:
                self.word(x0, y0 + r * LEADING, "c" * int((x1 - x0) // GLYPH_W))
        return y0 + rows * LEADING

    def __getattr__(self, name: str) -> np.ndarray:
        k = ("x0", "y0", "x1", "y1").index(name)
        return np.array([b[k] for b in self.boxes])

    def inside(self, box: Box) -> set[int]:
        return {
            i
            for i, (c, (x0, y0, x1, y1)) in enumerate(zip(self.chars, self.boxes, strict=True))
            if c != " " and box.x0 <= (x0 + x1) / 2 <= box.x1 and box.y0 <= (y0 + y1) / 2 <= box.y1
        }


#: a table over the page's width with a cell across the gutter
CROSSING_CELLS = [(50.0, 120.0), (160.0, 230.0), (270.0, 330.0), (370.0, 440.0), (480.0, 540.0)]
#: a table whose cell gaps leave the page gutter empty
GAPPED_CELLS = [(50.0, 110.0), (140.0, 200.0), (230.0, 285.0), (315.0, 370.0), (400.0, 460.0), (490.0, 545.0)]


def _covers_once(parts: list[Box], glyphs: Glyphs, box: Box) -> None:
    """The parts tile the box: every glyph of the box is in exactly one part."""
    seen: list[int] = [i for p in parts for i in glyphs.inside(p)]
    assert sorted(seen) == sorted(glyphs.inside(box))


def test_box_over_table_and_two_columns_is_read_table_then_column_by_column() -> None:
    g = Glyphs()
    below_table = g.table(100, 5, CROSSING_CELLS)
    bottom = g.columns(below_table + 10, 20)
    box = Box(50, 100, 550, bottom)
    parts = split_box(box, g)
    assert len(parts) == 3
    table, left, right = parts
    assert (table.x0, table.x1) == (50, 550) and table.y1 < below_table + 10
    assert left.x0 == 50 and left.x1 <= LEFT[1] + 0.5 and right.x0 >= RIGHT[0] - 0.5 and right.x1 == 550
    assert left.y0 == right.y0 == table.y1 and left.y1 == right.y1 == bottom
    assert all(p.boxclass == "text" for p in parts)
    _covers_once(parts, g, box)


def test_full_width_table_between_column_blocks_is_not_split() -> None:
    g = Glyphs()
    mid = g.columns(100, 12)
    table_bottom = g.table(mid + 6, 4, GAPPED_CELLS)  # its gaps leave the gutter empty
    bottom = g.columns(table_bottom + 6, 12)
    box = Box(50, 100, 550, bottom)
    parts = split_box(box, g)
    shape = [(p.x0 < 100, p.x1 > 500) for p in parts]
    assert shape == [(True, False), (False, True), (True, True), (True, False), (False, True)]
    table = parts[2]
    assert mid <= table.y0 + 6 and table.y1 <= table_bottom + 6
    assert len(g.inside(table)) == 4 * sum(int((b - a) // GLYPH_W) for a, b in GAPPED_CELLS)
    _covers_once(parts, g, box)
    # a table box of its own is never split, whatever its gaps
    assert split_columns([Box(50, 100, 550, bottom, "table")], g)[0] == Box(50, 100, 550, bottom, "table")


def test_single_column_box_is_returned_unchanged() -> None:
    g = Glyphs()
    for r in range(15):
        g.line(50, 550, 100 + r * LEADING, seed=r)
    g.line(50, 200, 100 + 15 * LEADING, seed=99)  # a short last line leaves the right side empty
    box = Box(50, 100, 550, 100 + 16 * LEADING)
    assert split_box(box, g)[0] is box and len(split_box(box, g)) == 1
    other = Box(0, 0, 600, 90, "picture")
    assert split_columns([box, other], g) == [box, other]


def test_stray_mark_in_the_gutter_does_not_cut_the_columns() -> None:
    g = Glyphs()
    bottom = g.columns(100, 20)
    g.word(298, 100 + 10 * LEADING, "|")  # a speck the OCR read in the gutter
    box = Box(50, 100, 550, bottom)
    parts = split_box(box, g)
    assert len(parts) == 2 and parts[0].x1 < parts[1].x0
    assert parts[1].x0 - parts[0].x1 >= 15  # the gutter stays visible to the reading order
    speck = len(g.chars) - 1
    assert speck in g.inside(box) and not any(speck in g.inside(p) for p in parts)  # left out (logged)
    g.chars[speck] = " "
    _covers_once(parts, g, box)


def test_three_columns() -> None:
    g = Glyphs()
    cols = [(40.0, 200.0), (215.0, 375.0), (390.0, 550.0)]
    for r in range(25):
        for k, (a, b) in enumerate(cols):
            g.line(a, b, 100 + r * LEADING, seed=3 * r + k)
    box = Box(40, 100, 550, 100 + 25 * LEADING)
    parts = split_box(box, g)
    assert [round(p.x0) for p in parts] == [40, 215, 390]
    _covers_once(parts, g, box)


def test_two_narrow_blocks_of_a_few_lines_stay_whole() -> None:
    """Two short lines side by side (an address block, a signature) are not columns."""
    g = Glyphs()
    for r in range(2):
        g.line(*LEFT, 100 + r * LEADING, seed=r)
        g.line(*RIGHT, 100 + r * LEADING, seed=r + 5)
    box = Box(50, 100, 550, 100 + 2 * LEADING)
    assert split_box(box, g) == [box]


def test_table_labelled_text_with_a_multi_line_cell_is_not_split() -> None:
    """A table the layout model called text (PeerJ p10): a header row, then one cell of seven
    lines beside empty cells -- the empty bands are no gutters of columns."""
    g = Glyphs()
    cells = [(70.0, 140.0), (150.0, 220.0), (490.0, 540.0), (560.0, 660.0)]
    y = g.table(100, 2, cells)
    for r in range(7):
        g.word(490, y + r * LEADING, "p" * 10)
    box = Box(70, 100, 660, y + 7 * LEADING)
    assert split_box(box, g) == [box]


def _small_rows(g: Glyphs, top: float, rows: int, height: float = 6.0) -> float:
    """``rows`` lines of small print (glyphs ``height`` tall) in the right column from ``top``."""
    for r in range(rows):
        x = RIGHT[0]
        while RIGHT[1] - x >= 6 * GLYPH_W:
            for c in "f" * 5 + " ":
                g.chars.append(c)
                g.boxes.append((x, top + r * 8, x + 3.5, top + r * 8 + height))
                x += 3.5
    return top + rows * 8


def test_footnotes_under_a_column_are_cut_from_it() -> None:
    """One box over two columns whose right column ends in smaller print after a gap (footnotes
    the layout model boxed with the body, Federal Register p3 OCR'd): the right column is cut
    above them, so the reading order sees them as small print; the left column stays whole."""
    g = Glyphs()
    bottom = g.columns(100, 20)
    top = bottom + 6  # the last body row ends at bottom - 3: a gap of 9 > 0.8 x 6
    box = Box(50, 100, 550, _small_rows(g, top, 5))
    parts = split_box(box, g)
    assert len(parts) == 3, parts
    left, body, notes = parts
    assert left.x1 < body.x0 == notes.x0 and body.y1 == notes.y0
    assert bottom - LEADING < body.y1 < top and notes.y1 == box.y1
    assert {g.chars[i] for i in g.inside(notes)} == {"f"} and "f" not in {g.chars[i] for i in g.inside(body)}
    _covers_once(parts, g, box)


def test_small_print_without_a_gap_or_of_body_size_stays_in_its_column() -> None:
    g = Glyphs()
    bottom = g.columns(100, 20)
    end = _small_rows(g, bottom - 1, 5)  # right under the body: a gap of 2 < 0.8 x 6
    assert len(split_box(Box(50, 100, 550, end), g)) == 2
    g = Glyphs()
    bottom = g.columns(100, 20)
    end = _small_rows(g, bottom + 6, 5, height=GLYPH_H * 0.9)  # after a gap, but not smaller
    assert len(split_box(Box(50, 100, 550, end), g)) == 2
