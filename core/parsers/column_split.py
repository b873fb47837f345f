"""Split a layout text box that spans a column gutter into one box per column (pure geometry).

On scanned pages Tesseract sometimes reads a line across the gutter of a multi-column page, and
the layout model then returns one text box over both columns (and a table above them), whose
text would be read line by line across the columns. :func:`split_columns` finds gutters inside
such a box from the glyphs it holds and cuts it into parts read column by column:

* glyphs are grouped into rows (by vertical centre); a gutter is a vertical band at least
  ``GUTTER_MIN_EM`` glyph heights wide, away from the box's sides, that (almost) no row has ink
  in -- checked over the rows, so it runs across most of the box's height;
* rows with a letter inside a gutter's core in a run of text (a title over both columns, a
  table cell) or with ``TABLE_GAPS`` more gutter-wide gaps (a table row) are full-width; the box
  is cut into horizontal segments, full-width segments stay whole (a table between column
  blocks is not split), column segments become one part per column; a lone row between
  full-width rows joins them, and a full-width run of fewer than ``FULL_MIN_ROWS`` rows inside
  the box joins the columns around it (one row OCR glued across a gutter does not cut them);
* the parts cover the box and are listed in reading order; a column part ends at its letters
  and digits, so the gutter stays visible to the reading order and a column rule or speck that
  OCR read as ``_`` or ``|`` neither crosses the gutter nor widens a column -- such a mark
  alone inside a gutter is in no part (logged).

A column part whose bottom rows are smaller print after a gap (footnotes the layout model boxed
with the column's body, :data:`SMALL_SHARE`) is cut above them, so the reading order sees them as
small print.

Only boxes of ``SPLIT_CLASSES`` are split (never tables or pictures). A box without such a
gutter is returned unchanged (the same object), so single-column boxes do not change. Works on
anything with ``x0, y0, x1, y1, boxclass`` (boxes) and ``chars, x0, y0, x1, y1`` (glyphs, e.g.
:class:`~grounded.parsers.textlayer.PageChars`), so it is testable on constructed data.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

from .reading_order import Box
from .textlayer import char_masks

__all__ = ["GlyphFacts", "Glyphs", "SPLIT_CLASSES", "find_gutters", "split_box", "split_columns"]

#: layout classes whose boxes may be split into columns
SPLIT_CLASSES = frozenset({"text", "list-item"})
#: narrowest gutter, in median glyph heights (wider than any word space)
GUTTER_MIN_EM = 0.8
#: a band is a gutter when rows holding at most this share of the rows' height have ink in it
GUTTER_COVER = 0.3
#: gutters are looked for away from the box's sides: not in this share of its width at either side
GUTTER_MARGIN = 0.15
#: every column is at least this share of the box's width wide
COLUMN_MIN_SHARE = 0.2
#: each column of a column segment has letters in at least this many of its rows (a table's
#: multi-line cell beside empty cells is no column)
COLUMN_MIN_ROWS = 3
#: a text run crossing a gutter is at least this many glyph heights long (a stray mark is not)
CROSS_MIN_EM = 1.0
#: a gutter's core: where ink crosses it at most this share of the rows' height more than at its emptiest
GUTTER_CORE = 0.05
#: ink this close to a gutter's edge (points) is a justified line's end, not a crossing
GUTTER_EDGE = 1.5
#: a row with this many gutter-wide gaps between text runs (besides the gutter) is a table row
TABLE_GAPS = 2
#: glyphs closer than this (glyph heights) form one run (a word space does not break a run)
RUN_GAP_EM = 0.6
#: a full-width segment inside the box has at least this many rows (a row or two that OCR glued
#: across a gutter do not cut the columns); at the box's top or bottom one row is enough
FULL_MIN_ROWS = 3
#: a column part is cut above a block of smaller print at its bottom (footnotes under a column):
#: the block's rows are at most SMALL_SHARE as tall (median glyph height) as the rows above it,
#: there are at least SMALL_MIN_ROWS of them, and a gap of at least SMALL_GAP_EM of their glyph
#: heights separates them
SMALL_SHARE = 0.85
SMALL_MIN_ROWS = 2
SMALL_GAP_EM = 0.8


class Glyphs(Protocol):
    """Characters and their boxes (points), e.g. a PageChars."""

    @property
    def chars(self) -> Sequence[str]: ...
    @property
    def x0(self) -> np.ndarray: ...
    @property
    def y0(self) -> np.ndarray: ...
    @property
    def x1(self) -> np.ndarray: ...
    @property
    def y1(self) -> np.ndarray: ...


B = TypeVar("B", bound=Box)

log = logging.getLogger(__name__)


@dataclass
class _Row:
    y0: float
    y1: float
    runs: list[tuple[float, float]]  # (x0, x1) of glyph runs, left to right
    letters: list[tuple[float, float]]  # (x0, x1) of its letters and digits
    em: float


def _rows(
    x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray, letter: np.ndarray, em: float
) -> list[_Row]:
    """Glyphs -> rows (a glyph joins the row whose vertical span holds its centre), top down;
    ``letter`` marks the letters and digits."""
    order = np.argsort((y0 + y1) / 2, kind="stable")
    rows: list[list[int]] = []
    bottom = -np.inf
    top_of, bottom_of = y0.tolist(), y1.tolist()  # Python floats: no numpy scalar per glyph
    for i in order.tolist():
        cy = (top_of[i] + bottom_of[i]) / 2
        if rows and cy <= bottom:
            rows[-1].append(i)
            bottom = max(bottom, min(bottom_of[i], cy + em / 2))
        else:
            rows.append([i])
            bottom = min(bottom_of[i], cy + em / 2)
    out: list[_Row] = []
    for members in rows:
        idx = np.array(members)
        idx = idx[np.argsort(x0[idx], kind="stable")]
        h = float(np.median(y1[idx] - y0[idx]))
        runs: list[tuple[float, float]] = []
        for a, b in zip(x0[idx].tolist(), x1[idx].tolist(), strict=True):
            if runs and a - runs[-1][1] < RUN_GAP_EM * h:
                runs[-1] = (runs[-1][0], max(runs[-1][1], b))
            else:
                runs.append((a, b))
        ink = [
            (a, b)
            for a, b, ok in zip(x0[idx].tolist(), x1[idx].tolist(), letter[idx].tolist(), strict=True)
            if ok
        ]
        out.append(_Row(float(y0[idx].min()), float(y1[idx].max()), runs, ink, h))
    return out


def _full_width(row: _Row, gutters: Sequence[tuple[float, float]]) -> bool:
    """Whether ``row`` runs across the columns: a run of text (not a stray mark) has ink inside a
    gutter's core (less ``GUTTER_EDGE``: justified lines end at it), or the row is a table row
    (at least ``TABLE_GAPS`` gaps as wide as a gutter between runs of text, besides the
    gutter's own)."""
    text = [(a, b) for a, b in row.runs if b - a >= CROSS_MIN_EM * row.em]
    # each gutter's core less GUTTER_EDGE at both sides
    cores = [
        (g0 + min(GUTTER_EDGE, (g1 - g0) / 4), g1 - min(GUTTER_EDGE, (g1 - g0) / 4)) for g0, g1 in gutters
    ]
    for lo, hi in cores:
        # a letter inside the core, in a run of text ('_' or '|' read from a column rule is no text)
        if any(a < hi and b > lo and any(ra <= a and b <= rb for ra, rb in text) for a, b in row.letters):
            return True
    width = GUTTER_MIN_EM * row.em
    # the gap at a gutter is the gutter's own, also when a justified line's end reaches into it
    gaps = [
        (b, a2)
        for (_, b), (a2, _) in zip(text, text[1:], strict=False)
        if a2 - b >= width and not any(b <= lo and a2 >= hi for lo, hi in cores)
    ]
    return len(gaps) >= TABLE_GAPS


def find_gutters(rows: Sequence[_Row], x0: float, x1: float, em: float) -> list[tuple[float, float]]:
    """Gutters (x0, x1) of a box spanning ``x0``-``x1`` from its glyph rows: bands at least
    ``GUTTER_MIN_EM`` wide that rows of at most ``GUTTER_COVER`` of the rows' height have ink in."""
    width = x1 - x0
    if width <= 0 or not rows:
        return []
    step = 0.5
    xs = np.arange(x0, x1, step)
    cover = np.zeros(len(xs))
    total = 0.0
    for row in rows:
        h = row.y1 - row.y0
        total += h
        ink = np.zeros(len(xs), dtype=bool)
        for a, b in row.runs:
            ink |= (xs + step > a) & (xs < b)
        cover += ink * h
    free = (
        (cover <= GUTTER_COVER * total)
        & (xs >= x0 + GUTTER_MARGIN * width)
        & (xs + step <= x1 - GUTTER_MARGIN * width)
    )
    gutters: list[tuple[float, float]] = []
    start: float | None = None
    for x, ok in zip(xs.tolist(), free.tolist(), strict=True):
        if ok and start is None:
            start = x
        elif not ok and start is not None:
            gutters.append((start, x))
            start = None
    if start is not None:
        gutters.append((start, float(xs[-1] + step)))
    gutters = [_core(g, xs, cover, step, total) for g in gutters if g[1] - g[0] >= GUTTER_MIN_EM * em]
    # every column wide enough: drop the narrower gutter of a pair that leaves a thin column
    while gutters:
        edges = [x0, *((a + b) / 2 for a, b in gutters), x1]
        thin = [k for k in range(len(edges) - 1) if edges[k + 1] - edges[k] < COLUMN_MIN_SHARE * width]
        if not thin:
            break
        k = thin[0]
        near = [g for g in (k - 1, k) if 0 <= g < len(gutters)]
        gutters.pop(min(near, key=lambda g: gutters[g][1] - gutters[g][0]))
    return gutters


def _core(
    gutter: tuple[float, float], xs: np.ndarray, cover: np.ndarray, step: float, total: float
) -> tuple[float, float]:
    """The emptiest part of ``gutter`` (ink of at most ``GUTTER_CORE`` of the rows' height more
    than its emptiest point): ragged or justified line ends reach into a gutter's sides."""
    inside = (xs >= gutter[0]) & (xs < gutter[1])
    low = cover[inside].min() + GUTTER_CORE * total
    keep = xs[inside & (cover <= low)]
    return float(keep.min()), float(keep.max() + step)


def _segments(rows: Sequence[_Row], gutters: Sequence[tuple[float, float]]) -> list[tuple[bool, list[_Row]]]:
    """Rows -> (full_width, rows) segments top down (short inner segments smoothed away)."""
    flags = [_full_width(r, gutters) for r in rows]
    segments: list[tuple[bool, list[_Row]]] = []
    for row, full in zip(rows, flags, strict=True):
        if segments and segments[-1][0] == full:
            segments[-1][1].append(row)
        else:
            segments.append((full, [row]))
    # a lone row between full-width rows reads the same either way: it joins them (a table row
    # with a gap at the gutter); then a short full-width run inside the columns joins them
    segments = _flip_short(segments, False, 2)
    return _flip_short(segments, True, FULL_MIN_ROWS)


def _flip_short(
    segments: list[tuple[bool, list[_Row]]], kind: bool, min_rows: int
) -> list[tuple[bool, list[_Row]]]:
    """Inner segments of ``kind`` with fewer than ``min_rows`` rows take the other kind; neighbours
    of one kind are merged."""
    merged: list[tuple[bool, list[_Row]]] = []
    for k, (full, members) in enumerate(segments):
        if full == kind and 0 < k < len(segments) - 1 and len(members) < min_rows:
            full = not kind
        if merged and merged[-1][0] == full:
            merged[-1][1].extend(members)
        else:
            merged.append((full, list(members)))
    return merged


class GlyphFacts:
    """What :func:`split_box` reads of every glyph, computed once per set of glyphs (a page's
    boxes are split against the same glyphs: the per-character loops ran once per box)."""

    __slots__ = ("solid", "letter", "cx", "cy")

    def __init__(self, glyphs: Glyphs) -> None:
        space, self.letter = char_masks(glyphs.chars)
        self.solid = ~space
        self.cx, self.cy = (glyphs.x0 + glyphs.x1) / 2, (glyphs.y0 + glyphs.y1) / 2


def split_box(box: B, glyphs: Glyphs, *, small_print: bool = True, facts: GlyphFacts | None = None) -> list[B]:
    """``box`` cut into parts read column by column (see the module docstring), or ``[box]``;
    ``small_print=False``: column parts are not cut above smaller print at their bottom.
    ``facts``: the glyphs' masks and centres when the caller splits several boxes over them."""
    facts = facts if facts is not None else GlyphFacts(glyphs)
    cx, cy = facts.cx, facts.cy
    inside = facts.solid & (cx >= box.x0) & (cx <= box.x1) & (cy >= box.y0) & (cy <= box.y1)
    if inside.sum() < 2 * COLUMN_MIN_ROWS:
        return [box]
    x0, y0, x1, y1 = glyphs.x0[inside], glyphs.y0[inside], glyphs.x1[inside], glyphs.y1[inside]
    em = float(np.median(y1 - y0))
    if em <= 0:
        return [box]
    letter = facts.letter[inside]
    rows = _rows(x0, y0, x1, y1, letter, em)
    gutters = find_gutters(rows, box.x0, box.x1, em)
    if not gutters:
        return [box]
    edges = [box.x0, *((a + b) / 2 for a, b in gutters), box.x1]
    # columns of text, not a table's multi-line cell: every column has rows of its own
    across = {id(r) for r in rows if _full_width(r, gutters)}
    segments = [
        (full or not _filled(members, edges, across), members) for full, members in _segments(rows, gutters)
    ]
    segments = _flip_short(segments, True, 0)  # merge neighbours of one kind
    if all(full for full, _ in segments):
        return [box]
    parts: list[B] = []
    for k, (full, members) in enumerate(segments):
        top = box.y0 if k == 0 else (segments[k - 1][1][-1].y1 + members[0].y0) / 2
        bottom = box.y1 if k == len(segments) - 1 else (members[-1].y1 + segments[k + 1][1][0].y0) / 2
        spans = [(box.x0, box.x1)] if full else _column_spans(members, edges)
        for left, right in spans:
            cuts = (
                _small_print_cut(x0, y0, x1, y1, letter, em, (left, top, right, bottom))
                if small_print and not full
                else []
            )
            for upper, lower in zip([top, *cuts], [*cuts, bottom], strict=True):
                part = copy.copy(box)
                part.x0, part.y0, part.x1, part.y1 = left, upper, right, lower
                parts.append(part)
    _log_left_out(box, parts, glyphs, cx, cy)
    return parts


def _small_print_cut(
    x0: np.ndarray,
    y0: np.ndarray,
    x1: np.ndarray,
    y1: np.ndarray,
    letter: np.ndarray,
    em: float,
    area: tuple[float, float, float, float],
) -> list[float]:
    """Where to cut a column part ``area`` (x0, y0, x1, y1) above the block of smaller print at
    its bottom (see :data:`SMALL_SHARE`): ``[y]`` or ``[]``. The layout model may box a column's
    body and its footnotes together; cut apart, the footnotes are small print to the reading order."""
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    mine = (cx >= area[0]) & (cx <= area[2]) & (cy >= area[1]) & (cy <= area[3])
    rows = _rows(x0[mine], y0[mine], x1[mine], y1[mine], letter[mine], em)
    heights = [r.em for r in rows]
    for k in range(COLUMN_MIN_ROWS, len(rows) - SMALL_MIN_ROWS + 1):
        above, below = float(np.median(heights[:k])), float(np.median(heights[k:]))
        if below <= SMALL_SHARE * above and rows[k].y0 - rows[k - 1].y1 >= SMALL_GAP_EM * below:
            return [(rows[k - 1].y1 + rows[k].y0) / 2]
    return []


def _log_left_out(box: Box, parts: Sequence[Box], glyphs: Glyphs, cx: np.ndarray, cy: np.ndarray) -> None:
    """Log the marks of ``box`` that no part holds (alone in a gutter); a loop over every
    character of the page, so only when debug logging is on."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    marks = [
        i
        for i, c in enumerate(glyphs.chars)
        if not c.isspace()
        and box.x0 <= cx[i] <= box.x1
        and box.y0 <= cy[i] <= box.y1
        and not any(p.x0 <= cx[i] <= p.x1 and p.y0 <= cy[i] <= p.y1 for p in parts)
    ]
    if marks:
        log.debug(
            "column split of box %s leaves %d mark(s) in gutters out: %r",
            (round(box.x0), round(box.y0), round(box.x1), round(box.y1)),
            len(marks),
            "".join(glyphs.chars[i] for i in marks[:20]),
        )


def _filled(rows: Sequence[_Row], edges: Sequence[float], across: set[int]) -> bool:
    """Whether every column (between ``edges``) has letters in ``COLUMN_MIN_ROWS`` of ``rows``
    that are not full-width (ids in ``across``)."""
    for left, right in zip(edges, edges[1:], strict=False):
        held = sum(
            1 for r in rows if id(r) not in across and any(left <= (a + b) / 2 < right for a, b in r.letters)
        )
        if held < COLUMN_MIN_ROWS:
            return False
    return True


def _column_spans(rows: Sequence[_Row], edges: Sequence[float]) -> list[tuple[float, float]]:
    """Each column's x extent in a segment: from the box's side (outer columns) or the letters and
    digits whose centre is in it (inner sides), so the gutter stays visible to the reading order."""
    spans: list[tuple[float, float]] = []
    last = len(edges) - 2
    for k, (left, right) in enumerate(zip(edges, edges[1:], strict=False)):
        runs = [(a, b) for r in rows for a, b in r.letters if left <= (a + b) / 2 < right]
        lo = left if k == 0 or not runs else max(left, min(a for a, _ in runs))
        hi = right if k == last or not runs else min(right, max(b for _, b in runs))
        spans.append((lo, hi))
    return spans


def split_columns(boxes: Sequence[B], glyphs: Glyphs) -> list[B]:
    """``boxes`` with every text box that spans a column gutter replaced by its parts (in reading
    order, at its place); other boxes are kept as they are."""
    out: list[B] = []
    facts: GlyphFacts | None = None
    for box in boxes:
        if box.boxclass in SPLIT_CLASSES:
            facts = facts if facts is not None else GlyphFacts(glyphs)
            out.extend(split_box(box, glyphs, facts=facts))
        else:
            out.append(box)
    return out
