"""Reading order of one page's layout boxes, from their geometry (#13.1, #13.2).

The layout model (pymupdf4llm) orders boxes in horizontal stripes, so on a two-column page the
top of column 2 can come before the end of column 1 and a footnote at the bottom of column 1 can
split a sentence that continues in column 2. :func:`reading_order` reorders the boxes of one page:

* page headers first and page footers last (in the model's order);
* columns are found from the body boxes' horizontal extents: a gutter is a vertical strip that
  (almost) no narrow box crosses; a box with nothing beside it (a title, a figure's text over the
  columns) does not close a strip that has text side by side across it;
* boxes crossing a gutter (titles, abstracts, figures and tables spanning the columns) split the
  page into bands; inside a band column 1 is read top to bottom, then column 2, and so on;
* footnotes come after the body of the page (in reading order among themselves), so a sentence
  interrupted by them reads on; so does the text of a margin column (a first or last column much
  narrower than the others: article history, editor, licence beside the body);
* a box with an earlier box nested at its top (the model's order is the order in which boxes
  take their text, so the earlier box took that part) is read from below the nested box.

A page without columns keeps the model's order (apart from footnotes and furniture). Works on
boxes only (anything with ``x0, y0, x1, y1`` and ``boxclass``), so it is testable on synthetic
boxes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Box", "Rect", "columns", "reading_order", "upright"]

#: a box narrower than this share of the body's width can sit in one column
NARROW_SHARE = 0.6
#: a strip is a gutter when narrow boxes of less than this share of their total height cross it
GUTTER_COVER = 0.05
#: gutters are looked for in the middle of the body, not this share of its width at either side
GUTTER_MARGIN = 0.15
#: narrowest gutter (points)
GUTTER_MIN = 4.0
#: boxes sharing more than this height (points) sit side by side (less: a line's slack)
BESIDE_MIN = 2.0
#: each column holds at least this share of the narrow boxes' total height
COLUMN_MIN_SHARE = 0.1
#: a horizontal strip without any box at least this high (share of the body's height, and
#: points) separates bands too: a full-width figure the layout model did not box
BAND_GAP_SHARE = 0.06
BAND_GAP_MIN = 36.0

#: an earlier box nested in a box (within NESTED_SLACK points) whose top is at most NESTED_TOP
#: points (less than a line of text) below the box's top took the box's text down to its bottom
NESTED_SLACK = 2.0
NESTED_TOP = 6.0
#: a first or last column narrower than this share of every other column is a margin column
MARGIN_SHARE = 0.5
#: classes of a margin column's boxes read after the body (notes beside it; not its headings or
#: figures)
MARGIN_NOTE_CLASSES = frozenset({"text", "list-item"})

HEADER_CLASSES = frozenset({"page-header"})
FOOTER_CLASSES = frozenset({"page-footer"})
FOOTNOTE_CLASSES = frozenset({"footnote"})


class Box(Protocol):
    x0: float
    y0: float
    x1: float
    y1: float
    boxclass: str


@dataclass
class Rect:
    """A box as the reader sees it (see :func:`upright`)."""

    x0: float
    y0: float
    x1: float
    y1: float
    boxclass: str


def upright(boxes: Sequence[Box], turn: int, width: float, height: float) -> list[Rect]:
    """``boxes`` on a displayed page of ``width`` x ``height`` as seen after turning the page
    ``turn`` degrees clockwise (the turn that makes its text read left to right): columns and
    bands are found in that frame."""
    out: list[Rect] = []
    for b in boxes:
        if turn % 360 == 90:
            r = (height - b.y1, b.x0, height - b.y0, b.x1)
        elif turn % 360 == 180:
            r = (width - b.x1, height - b.y1, width - b.x0, height - b.y0)
        elif turn % 360 == 270:
            r = (b.y0, width - b.x1, b.y1, width - b.x0)
        else:
            r = (b.x0, b.y0, b.x1, b.y1)
        out.append(Rect(*r, b.boxclass))
    return out


def columns(boxes: Sequence[Box]) -> list[float]:
    """The gutters of a page (x of each gutter's middle, left to right); ``[]`` for one column.

    Only narrow boxes vote; a gutter is a strip in the middle of the body crossed by narrow
    boxes of less than :data:`GUTTER_COVER` of their total height, with enough text (by height)
    on each side."""
    if len(boxes) < 2:
        return []
    left = min(b.x0 for b in boxes)
    right = max(b.x1 for b in boxes)
    width = right - left
    if width <= 0:
        return []
    narrow = [b for b in boxes if b.x1 - b.x0 < NARROW_SHARE * width and b.y1 > b.y0]
    total = sum(b.y1 - b.y0 for b in narrow)
    if len(narrow) < 2 or total <= 0:
        return []
    lo, hi = int(left + GUTTER_MARGIN * width), int(right - GUTTER_MARGIN * width)
    cover = [0.0] * max(hi - lo, 0)
    alone_cover = [0.0] * max(hi - lo, 0)  # by boxes with nothing beside them
    alone = [not any(_beside(a, b) for b in narrow) for a in narrow]
    for a, solo in zip(narrow, alone, strict=True):
        for x in range(max(int(a.x0), lo), min(int(a.x1) + 1, hi)):
            (alone_cover if solo else cover)[x - lo] += a.y1 - a.y0
    # a strip with text on both sides at the same height is a gutter even when boxes alone in
    # their band (a title, a figure's text over the columns) cross it: they are read as bands
    paired = [False] * len(cover)
    for a in narrow:
        for b in narrow:
            if _beside(a, b) and a.x1 < b.x0:
                for x in range(max(int(a.x1) + 1, lo), min(int(b.x0), hi)):
                    paired[x - lo] = True
    cover = [c if p else c + s for c, s, p in zip(cover, alone_cover, paired, strict=True)]
    gutters: list[float] = []
    start: int | None = None
    for i, c in enumerate([*cover, total]):  # sentinel closes a trailing strip
        if c < GUTTER_COVER * total:
            if start is None:
                start = i
        elif start is not None:
            if i - start >= GUTTER_MIN:
                gutters.append(lo + (start + i) / 2)
            start = None
    # every column must carry text: drop gutters with too little on either side
    kept: list[float] = []
    for g in gutters:
        edges = [left, *kept, g]
        prev = edges[-2]
        share_left = sum(b.y1 - b.y0 for b in narrow if prev <= (b.x0 + b.x1) / 2 < g)
        share_right = sum(b.y1 - b.y0 for b in narrow if (b.x0 + b.x1) / 2 >= g)
        if share_left >= COLUMN_MIN_SHARE * total and share_right >= COLUMN_MIN_SHARE * total:
            kept.append(g)
    return kept


def _beside(a: Box, b: Box) -> bool:
    """Whether boxes ``a`` and ``b`` sit side by side: apart horizontally, sharing more than
    :data:`BESIDE_MIN` points of height."""
    return (a.x1 < b.x0 or b.x1 < a.x0) and min(a.y1, b.y1) - max(a.y0, b.y0) > BESIDE_MIN


def _nested(a: Box, b: Box) -> bool:
    """Whether box ``a`` (not empty) lies inside box ``b``, up to :data:`NESTED_SLACK`."""
    s = NESTED_SLACK
    return a.y1 > a.y0 and a.x0 >= b.x0 - s and a.x1 <= b.x1 + s and a.y0 >= b.y0 - s and a.y1 <= b.y1 + s


def _own_parts(boxes: Sequence[Box]) -> list[Rect]:
    """``boxes`` with each box's top lowered below the earlier boxes nested at its top.

    Boxes take their text in the model's order, so a box holding an earlier box at its top has
    text only below it (a layout model's small box over the first lines of a column and a big
    box over the whole column): sorted by its own top it would come first and be read too early."""
    out = [Rect(b.x0, b.y0, b.x1, b.y1, b.boxclass) for b in boxes]
    for k, b in enumerate(boxes):
        inner = sorted((a for a in boxes[:k] if _nested(a, b)), key=lambda a: a.y0)
        top = b.y0
        for a in inner:  # a stack of nested boxes at the top: below the lowest of them
            if a.y0 <= top + NESTED_TOP:
                top = max(top, a.y1)
        out[k].y0 = min(top, b.y1)
    return out


def _column_of(b: Box, gutters: Sequence[float]) -> int | None:
    """Index of the column ``b`` sits in, or ``None`` when it crosses a gutter."""
    for g in gutters:
        if b.x0 < g - 1 and b.x1 > g + 1:
            return None
    mid = (b.x0 + b.x1) / 2
    return sum(1 for g in gutters if mid >= g)


def _gaps(body: Sequence[int], boxes: Sequence[Box]) -> list[float]:
    """Middles of the horizontal strips no body box touches, high enough to separate bands."""
    spans = sorted((boxes[i].y0, boxes[i].y1) for i in body)
    if not spans:
        return []
    top, bottom = spans[0][0], max(y1 for _, y1 in spans)
    least = max(BAND_GAP_MIN, BAND_GAP_SHARE * (bottom - top))
    out: list[float] = []
    reach = spans[0][1]
    for y0, y1 in spans[1:]:
        if y0 - reach >= least:
            out.append((reach + y0) / 2)
        reach = max(reach, y1)
    return out


def _bands(body: Sequence[int], boxes: Sequence[Box], gutters: Sequence[float]) -> list[int]:
    """Body boxes in band/column order."""
    if not gutters:
        return list(body)
    spanning = sorted((i for i in body if _column_of(boxes[i], gutters) is None), key=lambda i: boxes[i].y0)
    inside = [i for i in body if _column_of(boxes[i], gutters) is not None]
    cuts = sorted([*(((boxes[s].y0 + boxes[s].y1) / 2, s) for s in spanning), *((y, -1) for y in _gaps(body, boxes))])
    out: list[int] = []
    done: set[int] = set()

    def flush(limit: float) -> None:
        band = [i for i in inside if i not in done and (boxes[i].y0 + boxes[i].y1) / 2 < limit]
        band.sort(key=lambda i: (_column_of(boxes[i], gutters), boxes[i].y0, boxes[i].x0))
        out.extend(band)
        done.update(band)

    for y, s in cuts:
        flush(y)  # column boxes above the spanning box's middle (or above an empty strip)
        if s >= 0:
            out.append(s)
            done.add(s)
    flush(float("inf"))
    return out


def _bottom_notes(body: list[int], boxes: Sequence[Box], gutters: Sequence[float], small: Sequence[bool]) -> list[int]:
    """Small-print text boxes (``small``) closing a column in the lower half of the page's body:
    footnotes or affiliations the layout model called text. A box crossing the gutters closes
    every column it crosses (small print over the columns, with more of it in a column below)."""
    if not gutters or not body:
        return []
    top, bottom = min(boxes[i].y0 for i in body), max(boxes[i].y1 for i in body)
    notes: list[int] = []
    for i in body:
        b = boxes[i]
        if not small[i] or b.boxclass != "text" or b.y0 < (top + bottom) / 2:
            continue
        col = _column_of(b, gutters)
        below = [
            j
            for j in body
            if j != i
            and j not in notes
            and boxes[j].y0 >= b.y1 - 1
            and (
                _column_of(boxes[j], gutters) in (col, None)
                if col is not None
                else boxes[j].x0 < b.x1 and boxes[j].x1 > b.x0
            )
        ]
        if all(small[j] and boxes[j].boxclass == "text" for j in below):  # only more small print below
            notes.append(i)
    return notes


def _margin_notes(body: Sequence[int], boxes: Sequence[Box], gutters: Sequence[float]) -> list[int]:
    """Text boxes of a margin column: the first or last column when it is narrower than
    :data:`MARGIN_SHARE` of every other column (columns measured between the gutters and the
    body's sides). Notes beside the body (article history, editor, licence), read after it."""
    if not gutters or not body:
        return []
    edges = [min(boxes[i].x0 for i in body), *gutters, max(boxes[i].x1 for i in body)]
    widths = [b - a for a, b in zip(edges, edges[1:], strict=False)]
    margin = {
        c
        for c, others in ((0, widths[1:]), (len(widths) - 1, widths[:-1]))
        if widths[c] < MARGIN_SHARE * min(others)
    }
    return [i for i in body if boxes[i].boxclass in MARGIN_NOTE_CLASSES and _column_of(boxes[i], gutters) in margin]


def reading_order(
    boxes: Sequence[Box], small: Sequence[bool] | None = None, follows: Mapping[int, int] | None = None
) -> list[int]:
    """Indices of ``boxes`` (one page) in reading order; a permutation of ``range(len(boxes))``.

    ``small[i]`` (optional) says box ``i`` is set in small print (smaller than the page's body
    text): a small-print text box at the bottom of a column is read as a footnote.
    ``follows[i] = j`` (optional) reads box ``i`` right after box ``j`` (a table's notes after the
    table), boxes following the same box top to bottom."""
    boxes = _own_parts(boxes)
    given = dict(follows or {})
    # a box follows one that stays in the page order (no chains), both on the page
    follows = {i: j for i, j in given.items() if j not in given and 0 <= j < len(boxes) and 0 <= i < len(boxes)}
    headers = [i for i, b in enumerate(boxes) if b.boxclass in HEADER_CLASSES and i not in follows]
    footers = [i for i, b in enumerate(boxes) if b.boxclass in FOOTER_CLASSES and i not in follows]
    notes = [i for i, b in enumerate(boxes) if b.boxclass in FOOTNOTE_CLASSES and i not in follows]
    special = {*headers, *footers, *notes, *follows}
    body = [i for i in range(len(boxes)) if i not in special]
    gutters = columns([boxes[i] for i in body])
    extra = set(_margin_notes(body, boxes, gutters))
    if small is not None and len(small) == len(boxes):
        extra.update(_bottom_notes(body, boxes, gutters, small))
    if extra:
        body = [i for i in body if i not in extra]
        notes = sorted([*notes, *extra])
    ordered = _bands(body, boxes, gutters)
    if gutters and len(notes) > 1:  # footnotes: column by column too
        notes = _bands(notes, boxes, gutters)
    order = [*headers, *ordered, *notes, *footers]
    if not follows:
        return order
    out: list[int] = []
    for i in order:
        out.append(i)
        out.extend(sorted((k for k, j in follows.items() if j == i), key=lambda k: (boxes[k].y0, boxes[k].x0)))
    return out
