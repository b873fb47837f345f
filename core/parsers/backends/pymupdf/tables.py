"""Box-level rules of the PyMuPDF backend: small print, table notes, image strips and panels,
captions, table grids and rows continued over several lines."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grounded.model.boxes import ParsingBoundingBox
from grounded.parsers.hierarchy import HeadingStyle, all_caps
from grounded.parsers.reading_order import upright
from grounded.parsers.textlayer import PageChars, TextLayer, build_lines, clip_to_page

log = logging.getLogger(__name__)
#: a text box whose median font size is below this share of the page's text boxes' is small print
SMALL_PRINT = 0.85


def _small_print(boxes: Sequence[Any], pc: PageChars, w: float, h: float) -> list[bool]:
    """Per layout box: a "text" box set in small print (footnotes, affiliations the model did
    not label), for :func:`reading_order`."""
    sizes: dict[int, np.ndarray] = {}
    for i, box in enumerate(boxes):
        if box.boxclass == "text":
            sel = pc.select(*clip_to_page(box.x0, box.y0, box.x1, box.y1, w, h))
            if len(sel):
                sizes[i] = pc.size[sel]
    if len(sizes) < 2:
        return [False] * len(boxes)
    page = float(np.median(np.concatenate(list(sizes.values()))))
    return [i in sizes and float(np.median(sizes[i])) < SMALL_PRINT * page for i in range(len(boxes))]


#: a table's note starts right below it (or below another of its notes): at most this far (points) ...
TABLE_NOTE_GAP = 24.0
#: ... within the table's width widened by this share of it at either side, and is set in small
#: print or opens with a note marker (*, †, a superscript letter, "Note", "Source", ...)
TABLE_NOTE_SLACK = 0.05
_NOTE_MARKER = re.compile(
    r"^\s*(?:[*∗†‡§¶※#]|[a-z](?=[A-Z])|\(?[a-z]\)|\d{1,2}\)|(?i:notes?|sources?|abbreviations?|key|nb)\b)"
)


def _table_notes(boxes: Sequence[Any], seen: Sequence[Any], small: Sequence[bool], pc: PageChars) -> dict[int, int]:
    """Text/footnote boxes that are a table's notes (#13.5), mapped to the table's box index: right
    below the table (:data:`TABLE_NOTE_GAP`) or below another of its notes, within its width, in
    small print or opening with a note marker (a heading box only with a marker: "Notes.").
    ``seen``: the boxes as the reader sees the page (see :func:`.reading_order.upright`)."""
    out: dict[int, int] = {}
    candidates = sorted(
        (i for i, b in enumerate(seen) if b.boxclass in ("text", "footnote", "section-header")),
        key=lambda i: seen[i].y0,
    )
    for t, table in enumerate(seen):
        if table.boxclass != "table":
            continue
        slack = TABLE_NOTE_SLACK * (table.x1 - table.x0)
        bottom = table.y1
        for i in candidates:
            b = seen[i]
            if i in out or b.y0 < bottom - 2.0 or b.y0 - bottom > TABLE_NOTE_GAP:
                continue
            if b.x0 < table.x0 - slack or b.x1 > table.x1 + slack:
                continue
            d = boxes[i]
            sel = pc.select(*clip_to_page(d.x0, d.y0, d.x1, d.y1, pc.width, pc.height))
            text = "".join(pc.chars[k] for k in sel[:40])
            marked = bool(_NOTE_MARKER.match(text))
            if not (marked or (b.boxclass != "section-header" and (small[i] or b.boxclass == "footnote"))):
                continue  # a heading below a table is a note only as "Notes", "Source", ...
            out[i] = t
            bottom = max(bottom, b.y1)
    return out


def _split_table_notes(
    boxes: Sequence[Any], small: Sequence[bool], notes: dict[int, int], pc: PageChars
) -> tuple[list[Any], list[bool], dict[int, int]]:
    """A table-note box holding several notes, each opening a line with a note marker ("* ...",
    "a ...", "Source: ..."), becomes one box per note. Returns the boxes, their small-print flags
    and the notes (new indices)."""
    import copy

    out: list[Any] = []
    out_small: list[bool] = []
    origin: list[int] = []  # new index -> old index
    for i, b in enumerate(boxes):
        parts = [b]
        if i in notes:
            sel = pc.select(*clip_to_page(b.x0, b.y0, b.x1, b.y1, pc.width, pc.height))
            built = build_lines([pc], [sel])
            starts = [
                ln.y0 for k, ln in enumerate(built.lines)
                if k and _NOTE_MARKER.match(built.text[ln.start : ln.end])
            ]
            if starts:
                edges = [b.y0, *(y - 0.5 for y in starts), b.y1]
                parts = []
                for top, bottom in zip(edges, edges[1:], strict=False):
                    part = copy.copy(b)
                    part.y0, part.y1 = top, bottom
                    parts.append(part)
        for part in parts:
            out.append(part)
            out_small.append(small[i])
            origin.append(i)
    if len(out) == len(boxes):
        return list(boxes), list(small), notes
    new_index = {old: new for new, old in reversed(list(enumerate(origin)))}  # first part of each box
    new_notes = {new: new_index[notes[old]] for new, old in enumerate(origin) if old in notes}
    return out, out_small, new_notes


#: picture boxes are strips of one stored image when each is (within this IoU) the box of an image
#: placed on the page, and they touch (gap at most STRIP_GAP points) with the same left and right
STRIP_IOU = 0.9
STRIP_GAP = 2.0


def _merge_image_strips(boxes: Sequence[Any], layer: TextLayer, page: int) -> list[Any]:
    """A scan stored as horizontal image strips gives one picture box per strip: stacked picture
    boxes that are exactly touching image placements of the same width become one picture
    (``strips`` = how many). Separate panels (with a gap, or not image-exact) stay apart."""
    import copy

    import pymupdf

    pictures = [i for i, b in enumerate(boxes) if b.boxclass == "picture"]
    if len(pictures) < 2:
        return list(boxes)
    pdf_page = layer._doc.load_page(page - 1)
    m = pdf_page.rotation_matrix
    images = []
    for info in pdf_page.get_image_info():
        r = (pymupdf.Rect(info["bbox"]) * m).normalize()
        images.append((r.x0, r.y0, r.x1, r.y1))

    def placed(b: Any) -> bool:
        return any(_iou((b.x0, b.y0, b.x1, b.y1), img) >= STRIP_IOU for img in images)

    strips = sorted((i for i in pictures if placed(boxes[i])), key=lambda i: boxes[i].y0)
    head_of: dict[int, int] = {}
    for a, b in zip(strips, strips[1:], strict=False):
        head = head_of.get(a, a)
        top, low = boxes[head], boxes[b]
        if (
            abs(top.x0 - low.x0) <= STRIP_GAP
            and abs(top.x1 - low.x1) <= STRIP_GAP
            and -STRIP_GAP <= low.y0 - boxes[a].y1 <= STRIP_GAP
        ):
            head_of[b] = head
    if not head_of:
        return list(boxes)
    out: list[Any] = []
    merged: dict[int, Any] = {}
    for i, b in enumerate(boxes):
        if i in head_of:
            big = merged[head_of[i]]
            big.x0, big.y0, big.x1, big.y1 = min(big.x0, b.x0), min(big.y0, b.y0), max(big.x1, b.x1), max(big.y1, b.y1)
            big.strips += 1
            continue
        if i in head_of.values():
            b = copy.copy(b)
            b.strips = 1
            merged[i] = b
        out.append(b)
    return out


#: a picture box holds stacked panels when its graphics (paths, images) leave a horizontal band at
#: least PANEL_GAP points high free (sub-captions and axis labels may sit there) between parts at
#: least PANEL_MIN points high each
PANEL_GAP = 8.0
PANEL_MIN = 24.0


def _split_panels(boxes: Sequence[Any], layer: TextLayer, page: int) -> list[Any]:
    """A picture box the layout model drew around stacked sub-figure panels separated by white
    space (and their sub-captions) becomes one picture per panel (``panel`` = 1, 2, ...): the cut
    lies right above the next panel's graphics, so a panel keeps the labels and caption below it.
    Panels that touch, or one frame around all of them, keep the picture whole."""
    import copy

    import pymupdf

    tables = [b for b in boxes if b.boxclass == "table"]
    # a picture inside a table box (a column of symbols the model saw as one picture) is no figure
    # of stacked panels: cutting it would make one picture per symbol
    pictures = [i for i, b in enumerate(boxes) if b.boxclass == "picture" and not any(_inside(b, t) for t in tables)]
    if not pictures:
        return list(boxes)
    pdf_page = layer._doc.load_page(page - 1)
    m = pdf_page.rotation_matrix
    graphics = []
    for kind, rect in pdf_page.get_bboxlog():
        if kind in ("fill-path", "stroke-path", "fill-image", "fill-imgmask", "fill-shade"):
            r = (pymupdf.Rect(rect) * m).normalize()
            if r.is_valid and not r.is_empty:
                graphics.append((r.x0, r.y0, r.x1, r.y1))
    out: list[Any] = []
    for i, b in enumerate(boxes):
        cuts = _panel_cuts(b, graphics) if i in pictures else []
        if not cuts:
            out.append(b)
            continue
        edges = [b.y0, *cuts, b.y1]
        for k, (top, bottom) in enumerate(zip(edges, edges[1:], strict=False)):
            part = copy.copy(b)
            part.y0, part.y1, part.panel = top, bottom, k + 1
            out.append(part)
    return out


def _inside(box: Any, outer: Any) -> bool:
    """Whether ``box``'s centre lies inside ``outer`` (layout boxes)."""
    cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
    return bool(outer.x0 <= cx <= outer.x1 and outer.y0 <= cy <= outer.y1)


#: A table box holds two tables side by side when a blank vertical gutter runs its full height (no
#: character, no drawing across it) at least this many glyph heights wide ...
TABLE_GUTTER_EM = 2.0
#: ... and at least this many times as wide as the widest gap between the columns of either side
#: (a table's own column spacing stays whole) ...
TABLE_GUTTER_RATIO = 1.5
#: ... each side holding at least this many columns (one column beside a gap is no table).
TABLE_GUTTER_MIN_COLUMNS = 2


def _split_table_gutters(boxes: Sequence[Any], pc: PageChars, layer: TextLayer) -> list[Any]:
    """Each table box that holds two tables side by side (see :data:`TABLE_GUTTER_EM`) becomes one
    table box per side (recursively), the layout's cell grid divided between them (a grid cell
    across the gutter keeps the box whole); other boxes are returned as they are."""
    if not any(b.boxclass == "table" for b in boxes):
        return list(boxes)
    graphics = _graphics(layer, pc.page)
    out: list[Any] = []
    for b in boxes:
        out.extend(_split_table(b, pc, graphics) if b.boxclass == "table" else [b])
    return out


def _graphics(layer: TextLayer, page: int) -> list[tuple[float, float, float, float]]:
    """The page's drawn paths and images (displayed page space)."""
    import pymupdf

    pdf_page = layer._doc.load_page(page - 1)
    m = pdf_page.rotation_matrix
    graphics = []
    for kind, rect in pdf_page.get_bboxlog():
        if kind in ("fill-path", "stroke-path", "fill-image", "fill-imgmask", "fill-shade"):
            r = (pymupdf.Rect(rect) * m).normalize()
            if r.is_valid and not r.is_empty:
                graphics.append((r.x0, r.y0, r.x1, r.y1))
    return graphics


def _split_table(box: Any, pc: PageChars, graphics: Sequence[tuple[float, float, float, float]]) -> list[Any]:
    import copy

    sel = pc.select(box.x0, box.y0, box.x1, box.y1)
    sel = sel[pc.solid[sel]]
    if len(sel) < 2:
        return [box]
    em = float(np.median(pc.y1[sel] - pc.y0[sel]))
    # the columns: x-extents of the characters merged where they touch (less than an em apart)
    spans = sorted(zip(pc.x0[sel].tolist(), pc.x1[sel].tolist(), strict=True))
    columns: list[list[float]] = []
    for a, b in spans:
        if columns and a < columns[-1][1] + em:
            columns[-1][1] = max(columns[-1][1], b)
        else:
            columns.append([a, b])
    if len(columns) < 2 * TABLE_GUTTER_MIN_COLUMNS:
        return [box]
    gaps = [columns[k + 1][0] - columns[k][1] for k in range(len(columns) - 1)]
    best = max(range(len(gaps)), key=gaps.__getitem__)
    left, right = columns[best][1], columns[best + 1][0]
    others = gaps[:best] + gaps[best + 1:]
    if (gaps[best] < TABLE_GUTTER_EM * em or (others and gaps[best] < TABLE_GUTTER_RATIO * max(others))
            or best + 1 < TABLE_GUTTER_MIN_COLUMNS or len(columns) - best - 1 < TABLE_GUTTER_MIN_COLUMNS):
        return [box]
    if any(g[0] < left and g[2] > right and g[3] > box.y0 and g[1] < box.y1 for g in graphics):
        return [box]  # a rule or frame runs across the gutter: one table
    info = box.table or {}
    grid = info.get("cells") or []
    if any(c is not None and c[0] < left and c[2] > right for row in grid for c in row):
        return [box]  # the layout's grid has a cell across the gutter
    parts = []
    for x0, x1 in ((box.x0, left), (right, box.x1)):
        part = copy.copy(box)
        part.x0, part.x1 = x0, x1
        cells = [[(max(c[0], x0), c[1], min(c[2], x1), c[3]) for c in row if c is not None and x0 <= (c[0] + c[2]) / 2 <= x1]
                 for row in grid]
        part.table = {**info, "cells": [row for row in cells if row]} if info else None
        part.gutter_split = True
        parts.extend(_split_table(part, pc, graphics))
    log.debug("page %d: a table box split at a blank gutter (x %.0f-%.0f) into %d tables", pc.page, left, right, len(parts))
    return parts


def _panel_cuts(box: Any, graphics: Sequence[tuple[float, float, float, float]]) -> list[float]:
    """Where to cut a picture box into stacked panels (see :func:`_split_panels`); [] for one."""
    inside = sorted(
        (g for g in graphics
         if box.x0 - 1 <= (g[0] + g[2]) / 2 <= box.x1 + 1 and box.y0 - 1 <= (g[1] + g[3]) / 2 <= box.y1 + 1),
        key=lambda g: g[1],
    )
    parts: list[list[float]] = []  # merged vertical extents [top, bottom]
    for g in inside:
        if parts and g[1] < parts[-1][1] + PANEL_GAP:
            parts[-1][1] = max(parts[-1][1], g[3])
        else:
            parts.append([g[1], g[3]])
    if len(parts) < 2 or any(p[1] - p[0] < PANEL_MIN for p in parts):
        return []
    return [p[0] - 1.0 for p in parts[1:]]


def _iou(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _running_text(text: str) -> str:
    """A page header's text as it repeats from page to page (page numbers and case ignored)."""
    return " ".join(re.sub(r"[\d\W_]+", " ", text.casefold()).split())


def _style_of(pc: PageChars, sel: np.ndarray, text: str) -> HeadingStyle:
    solid = [int(i) for i in sel if not pc.chars[i].isspace()]
    if not solid:
        return HeadingStyle(0.0, False, False)
    sizes = Counter(round(float(pc.size[i]) * 2) / 2 for i in solid)
    size = sizes.most_common(1)[0][0]
    bold = bool(np.mean(pc.bold[solid]) >= 0.5)
    return HeadingStyle(size, all_caps(text), bold)


def _grown_box(geom: ParsingBoundingBox, spans: Sequence[ParsingBoundingBox], how: str) -> ParsingBoundingBox:
    """``geom`` grown to its text lines as :data:`BOX_GROWTH` says (``how``)."""
    if how == "layout":
        return ParsingBoundingBox(geom.page, geom.left, geom.top, geom.right, geom.bottom)
    grown = ParsingBoundingBox.enclosing([geom, *spans])
    if how == "width":
        return ParsingBoundingBox(geom.page, grown.left, geom.top, grown.right, geom.bottom)
    return ParsingBoundingBox(geom.page, grown.left, grown.top, grown.right, grown.bottom)


Grid = list[list[tuple[float, float, float, float] | None]]
#: a table's caption: "Table 2", "TABLE IV", "Tab. 3:", "Table S1" at the start of the text
_CAPTION_START = re.compile(r"^\s*(?:Table|TABLE|Tab\.)\s*(?:[A-Z]?\d+|[IVXLC]+)\b")
#: a figure's (or table's, scheme's) caption: "Figure 2", "Fig. 3:", "FIGURE S1", "Scheme 1", "Table IV"
_FIGURE_CAPTION_START = re.compile(
    r"^\s*(?:Figure|FIGURE|Fig\.|FIG\.|Scheme|SCHEME|Table|TABLE|Tab\.)\s*(?:[A-Z]?\d+|[IVXLC]+)\b"
)
#: a grid row continues the row above when its text goes on at most this many times the table's
#: line pitch below the text of the row above (no extra space, as between the lines of one cell)
CONTINUATION_PITCH = 1.25


def _grid_line_tops(grid: Grid, pc: PageChars, claimed: np.ndarray, turn: int) -> list[list[list[float]]]:
    """Per grid cell, the tops of its text lines in reading order, measured on the page turned
    ``turn`` degrees (the frame in which the grid's rows run across); cells take words in grid
    order, as the cells built from the grid will."""
    taken = claimed.copy()
    tops: list[list[list[float]]] = []
    for row_boxes in grid:
        row: list[list[float]] = []
        for cell_box in row_boxes:
            lines: list[float] = []
            if cell_box is not None:
                x0, y0, x1, y1 = clip_to_page(*cell_box, pc.width, pc.height)
                sel = pc.select(x0, y0, x1, y1) if x1 > x0 and y1 > y0 else np.empty(0, dtype=np.int64)
                sel = sel[~taken[sel]]
                taken[sel] = True
                if len(sel):
                    found = build_lines([pc], [sel]).lines
                    turned = upright([_LineBox(ln.x0, ln.y0, ln.x1, ln.y1) for ln in found], turn, pc.width, pc.height)
                    lines = sorted(r.y0 for r in turned)
            row.append(lines)
        tops.append(row)
    return tops


@dataclass
class _LineBox:
    x0: float
    y0: float
    x1: float
    y1: float
    boxclass: str = "line"


def _join_continuation_rows(grid: Grid, tops: list[list[list[float]]]) -> tuple[Grid, int]:
    """Join grid rows that continue the row above: a layout grid may cut a row of multi-line
    cells into several (#13.4). A row continues the one above when its first (key) column is
    empty there but filled above, its filled cells are filled above too while another cell
    filled above is empty here (a spanned key cell with full sub-rows is not a continuation), and
    each of them goes on at the table's line pitch (multi-line cells show it) right below the
    text above it. Returns the new grid and the number of rows joined."""
    diffs = [b - a for row in tops for cell in row for a, b in zip(cell, cell[1:], strict=False) if b - a > 0]
    if not diffs or len(grid) < 2:
        return grid, 0
    pitch = float(np.median(diffs))
    filled_cols = [c for c in range(max(len(r) for r in tops)) if any(c < len(r) and r[c] for r in tops)]
    if not filled_cols:
        return grid, 0
    key = filled_cols[0]
    out_grid: Grid = [list(grid[0])]
    out_tops = [[list(cell) for cell in tops[0]]]
    joined = 0
    for row_boxes, row_tops in zip(grid[1:], tops[1:], strict=True):
        above = out_tops[-1]
        filled = {c for c, cell in enumerate(row_tops) if cell}
        filled_above = {c for c, cell in enumerate(above) if cell}
        continues = (
            key in filled_above
            and key not in filled
            and filled
            and filled < filled_above - {key}  # a cell filled above is empty here (not a spanned key)
            and all(row_tops[c][0] - above[c][-1] <= CONTINUATION_PITCH * pitch for c in filled)
        )
        if not continues:
            out_grid.append(list(row_boxes))
            out_tops.append([list(cell) for cell in row_tops])
            continue
        joined += 1
        merged = out_grid[-1]
        for c, cell_box in enumerate(row_boxes):
            if c >= len(merged):
                merged.append(cell_box)
            elif cell_box is not None:
                prev = merged[c]
                merged[c] = cell_box if prev is None else (
                    min(prev[0], cell_box[0]), min(prev[1], cell_box[1]),
                    max(prev[2], cell_box[2]), max(prev[3], cell_box[3]),
                )
        for c in filled:
            above[c].extend(row_tops[c])
    return out_grid, joined


def _find_tables_grid(
    layer: TextLayer, page: int, rect: tuple[float, float, float, float]
) -> list[list[tuple[float, float, float, float] | None]] | None:
    """Cell grid of the largest table PyMuPDF's ``find_tables`` sees inside ``rect`` (displayed pts)."""
    import pymupdf

    pdf_page = layer._doc.load_page(page - 1)
    if pdf_page.rotation:
        return None  # find_tables works in unrotated space; keep it simple for rotated pages
    try:
        found = pdf_page.find_tables(clip=pymupdf.Rect(rect))
    except Exception as exc:  # noqa: BLE001 - a failed fallback only loses cell boxes
        log.debug("find_tables failed on page %d: %s", page, exc)
        return None
    tables = list(found.tables)
    if not tables:
        return None
    best = max(tables, key=lambda t: (t.bbox[2] - t.bbox[0]) * (t.bbox[3] - t.bbox[1]))
    return [list(row.cells) for row in best.rows]

