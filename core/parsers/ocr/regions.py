"""Column regions of a rendered page, found before OCR so Tesseract reads one column at a time.

Tesseract's automatic page segmentation sometimes reads a line of a dense multi-column page
across the gutter, or makes a line box two lines tall, so words land in the neighbour column.
:func:`page_regions` finds the page's columns in its image and returns the parts to OCR one by
one, in reading order; for a page without a gutter it returns none (the page is OCR'd whole).

The ink of the page image (binarized, reduced to about :data:`DETECT_DPI`) is cut into connected
blobs (letters or words) by :func:`ink_blobs`; the blobs are the "glyphs" of
:func:`.column_split.split_box` -- the same gutter rule that splits the layout model's text
boxes on the OCR'd page -- applied to the box around all the ink. Thin rules (column rules,
lines under headers) and specks (an i's dot, a comma, dust) are left out of the blobs, and the
blobs grow to about a character's height, so the column split's thresholds in glyph heights keep
their meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..column_split import split_box

__all__ = [
    "DETECT_DPI",
    "INK_LEVEL",
    "Blobs",
    "Region",
    "Leader",
    "ink_blobs",
    "page_regions",
    "dot_leaders",
    "dash_kind",
]

#: the page image is reduced to about this resolution to find its columns
DETECT_DPI = 75
#: a reduced pixel darker than this (0-255 gray, darkest pixel of its cell) is ink
INK_LEVEL = 160
#: blobs lower and narrower than this share of a character's height are specks (left out)
SPECK_SHARE = 0.4
#: a blob this many median heights tall and at most RULE_THIN of them wide is a vertical rule;
#: one this many wide and at most RULE_THIN tall a horizontal rule (both left out)
RULE_LONG = 4.0
RULE_THIN = 0.6
#: a word blob without ascenders or descenders is only an x-height tall: as a glyph every letter
#: blob is at least as tall as this percentile of their heights (about the font size, as a
#: character's box), so the column split's thresholds in glyph heights mean what they do for text
LETTER_PERCENTILE = 90.0
#: white margin (points) kept around a region when it is cut out of the page image
REGION_PAD = 4.0
#: a page whose ink as a whole has no gutter is cut into bands at blank strips at least this many
#: line heights (median blob height: the blobs are grown to a character's height) high, and the
#: columns are looked for band by band (a full-width figure over columns hides their gutter)
BAND_GAP_SHARE = 1.5

# Dot leaders ("Item ........ $85"): Tesseract reads a long run of dots as letters ("cecece"),
# so the dots are found in the image, erased before OCR and written back as "." characters.
#: a dot is a blob at most this share of a letter's height (the median height of the page's
#: other blobs) wide and tall
LEADER_DOT_SHARE = 0.4
#: ... and at most this many times as wide as tall or as tall as wide (round, not a dash)
LEADER_DOT_ASPECT = 2.0
#: neighbouring dots of a leader are at most this many letter heights apart
LEADER_GAP_SHARE = 1.2
#: neighbouring dots of a leader have their centres at most this share of a letter's height (plus
#: half a pixel) apart vertically
LEADER_ALIGN_SHARE = 0.15
#: a leader's dots are evenly spaced: their pitches differ by at most this share of the median
#: pitch, plus one pixel (tiny letters of a logo are not)
LEADER_PITCH_SPREAD = 0.25
#: a leader has at least this many dots (an ellipsis "..." is read right and left alone)
LEADER_MIN_DOTS = 5
#: ... and text (a non-dot blob) on its row at most this many letter heights before or after it
#: (a dotted rule on its own is not a leader)
LEADER_TEXT_SHARE = 3.0
#: a letter's height (as above) is about this share of the text's font size (x-height and capitals)
BLOB_EM_SHARE = 0.6

# Dashes: Tesseract reads an en dash ("305\u2013313") as a hyphen or an em dash. Its width tells
# them apart: measured against the tall letters of its line (ascenders, capitals, digits: about
# 0.7 em), the ink of a hyphen is 0.24-0.47 wide, an en dash's 0.62-0.88, an em dash's 1.3
# (Federal Register, Clinical Science, PeerJ scans at 200 dpi).
#: a dash narrower than this share of the tall letters' height is a hyphen ...
HYPHEN_MAX_SHARE = 0.55
#: ... narrower than this an en dash, else an em dash ...
EN_DASH_MAX_SHARE = 1.1
#: ... and one wider than this is a rule, not a dash (left as read)
DASH_MAX_SHARE = 2.0
#: the tall letters are measured this many line heights to each side of the dash
DASH_CONTEXT_LINES = 3.0
#: a dash is a blob at least this many times as wide as tall, at most this share of the line tall
DASH_ASPECT = 2.0
DASH_THIN_SHARE = 0.2
#: a dash and the letters it is measured against are the pixels darker than this (half-way: the
#: anti-aliased rim of a thin bar does not widen it)
DASH_INK_LEVEL = 128
#: blobs lower than this many pixels are no letters (specks, dots) when measuring the tall letters
MIN_LETTER_PX = 3


@dataclass
class Blobs:
    """Connected ink blobs (letters or words) as glyphs in points, each ``chars`` entry "x", so
    :func:`.column_split.split_box` can use them as it uses characters."""

    chars: list[str]
    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray

    def __len__(self) -> int:
        return len(self.chars)


@dataclass
class Leader:
    """A run of leader dots in a page image: each dot's pixel box (x0, y0, x1, y1, end-exclusive)
    and the font size (points) of the text around it."""

    dots: np.ndarray
    fontsize: float

    @property
    def baseline(self) -> int:
        """The pixel row the dots sit on (the bottom of the lowest dot)."""
        return int(self.dots[:, 3].max())


@dataclass
class Region:
    """A part of the page to OCR on its own (displayed-page points), e.g. one column."""

    x0: float
    y0: float
    x1: float
    y1: float
    boxclass: str = "text"


def _runs(ink: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Horizontal runs of ``ink`` (2-D bool): (row, first column, last column + 1) per run."""
    padded = np.zeros((ink.shape[0], ink.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = ink
    step = np.diff(padded, axis=1)
    rows, starts = np.nonzero(step == 1)
    _, ends = np.nonzero(step == -1)  # same row-major order as the starts
    return rows, starts, ends


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _components(ink: np.ndarray) -> np.ndarray:
    """Bounding boxes (x0, y0, x1, y1 in pixels, end-exclusive) of the 8-connected parts of ``ink``."""
    rows, starts, ends = _runs(ink)
    n = len(rows)
    if not n:
        return np.empty((0, 4), dtype=np.int64)
    parent = list(range(n))
    first = np.searchsorted(rows, np.arange(ink.shape[0] + 1))  # runs of row r: first[r]:first[r+1]
    for r in range(1, ink.shape[0]):
        a0, a1 = int(first[r - 1]), int(first[r])  # runs of the row above
        b0, b1 = int(first[r]), int(first[r + 1])
        if a0 == a1 or b0 == b1:
            continue
        k = a0
        for j in range(b0, b1):  # runs are sorted by start within a row: one sweep
            while k < a1 and ends[k] < starts[j]:  # ends before (diagonal contact allowed)
                k += 1
            m = k
            while m < a1 and starts[m] <= ends[j]:
                ra, rb = _find(parent, m), _find(parent, j)
                if ra != rb:
                    parent[rb] = ra
                m += 1
    roots = np.fromiter((_find(parent, i) for i in range(n)), dtype=np.int64, count=n)
    _, label = np.unique(roots, return_inverse=True)
    count = int(label.max()) + 1
    boxes = np.empty((count, 4), dtype=np.int64)
    boxes[:, 0] = np.full(count, np.iinfo(np.int64).max)
    boxes[:, 1] = np.full(count, np.iinfo(np.int64).max)
    boxes[:, 2] = -1
    boxes[:, 3] = -1
    np.minimum.at(boxes[:, 0], label, starts)
    np.minimum.at(boxes[:, 1], label, rows)
    np.maximum.at(boxes[:, 2], label, ends)
    np.maximum.at(boxes[:, 3], label, rows + 1)
    return boxes


def _reduce(gray: np.ndarray, factor: int) -> np.ndarray:
    """The darkest pixel of each ``factor`` x ``factor`` cell of ``gray`` (thin strokes survive)."""
    if factor <= 1:
        return gray
    h, w = (gray.shape[0] // factor) * factor, (gray.shape[1] // factor) * factor
    cells = gray[:h, :w].reshape(h // factor, factor, w // factor, factor)
    return cells.min(axis=(1, 3))


def ink_blobs(gray: np.ndarray, dpi: float) -> Blobs:
    """The ink blobs of a page image ``gray`` (2-D uint8, rendered at ``dpi``) in points, rules
    left out (see the module docstring)."""
    factor = max(1, int(round(dpi / DETECT_DPI)))
    ink = _reduce(gray, factor) < INK_LEVEL
    boxes = _components(ink).astype(np.float64) * (72.0 * factor / dpi)
    if not len(boxes):
        empty = np.empty(0)
        return Blobs([], empty, empty, empty, empty)
    w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    med = float(np.median(h))
    rule = ((h >= RULE_LONG * med) & (w <= RULE_THIN * med)) | (
        (w >= RULE_LONG * med) & (h <= RULE_THIN * med)
    )
    tall = float(np.percentile(h[~rule], LETTER_PERCENTILE)) if (~rule).any() else med
    # specks (an i's dot, a comma, dust) would make rows of their own above or below their line
    keep = ~rule & ((h >= SPECK_SHARE * tall) | (w >= SPECK_SHARE * tall))
    if not keep.any():
        empty = np.empty(0)
        return Blobs([], empty, empty, empty, empty)
    b, h = boxes[keep], h[keep]
    # letters grow about their centre to about a character's height (one row per line)
    grow = np.maximum(0.0, tall - h) / 2
    return Blobs(["x"] * len(b), b[:, 0].copy(), b[:, 1] - grow, b[:, 2].copy(), b[:, 3] + grow)


def page_regions(gray: np.ndarray, dpi: float) -> list[Region]:
    """The regions to OCR one by one (in reading order, displayed-page points) of a page image
    ``gray`` rendered at ``dpi``: one per column of each column segment, one per full-width
    segment; ``[]`` when the page has no gutter (OCR the whole page). When the ink as a whole has
    no gutter, the columns are looked for band by band (:func:`_banded`)."""
    blobs = ink_blobs(gray, dpi)
    if not len(blobs):
        return []
    width, height = gray.shape[1] * 72.0 / dpi, gray.shape[0] * 72.0 / dpi
    ink = Region(float(blobs.x0.min()), float(blobs.y0.min()), float(blobs.x1.max()), float(blobs.y1.max()))
    # whole columns: blob heights are evened out, so no small print is told apart here
    parts = split_box(ink, blobs, small_print=False)
    if len(parts) == 1:
        parts = _banded(ink, blobs)
        if len(parts) <= 1:
            return []
    return _padded(parts, width, height)


def _bands(ink: Region, blobs: Blobs) -> list[Region]:
    """``ink`` (the box around all ``blobs``) cut into horizontal bands at its blank strips (rows
    without ink at least :data:`BAND_GAP_SHARE` line heights high), top down; neighbours meet
    half-way across the strip between them."""
    line = float(np.median(blobs.y1 - blobs.y0))
    order = np.argsort(blobs.y0, kind="stable")
    cuts: list[float] = []
    bottom = float(blobs.y1[order[0]])
    for top, low in zip(blobs.y0[order].tolist(), blobs.y1[order].tolist(), strict=True):
        if top - bottom >= BAND_GAP_SHARE * line:
            cuts.append((bottom + top) / 2)
        bottom = max(bottom, low)
    edges = [ink.y0, *cuts, ink.y1]
    return [Region(ink.x0, a, ink.x1, b) for a, b in zip(edges, edges[1:], strict=False)]


def _banded(ink: Region, blobs: Blobs) -> list[Region]:
    """The parts of a page whose ink as a whole has no gutter (a full-width figure, table or
    title block over or under columns covers it): the page's bands (:func:`_bands`) with their
    columns (:func:`.column_split.split_box` per band), top down; a run of neighbouring column
    bands is split as one box when that finds its columns (a column's text goes on across a blank
    strip), and neighbouring bands without columns are one full-width part. ``[ink]`` when no
    band has columns."""
    bands = _bands(ink, blobs)
    split = [split_box(b, blobs, small_print=False) for b in bands]
    if all(len(s) == 1 for s in split):
        return [ink]
    parts: list[Region] = []
    k = 0
    while k < len(bands):
        columns = len(split[k]) > 1
        end = k + 1
        while end < len(bands) and (len(split[end]) > 1) == columns:
            end += 1
        run = Region(ink.x0, bands[k].y0, ink.x1, bands[end - 1].y1)
        if not columns:
            parts.append(run)
        else:
            whole = split_box(run, blobs, small_print=False) if end - k > 1 else split[k]
            parts.extend(whole if len(whole) > 1 else [p for s in split[k:end] for p in s])
        k = end
    return parts


def _padded(parts: Sequence[Region], width: float, height: float) -> list[Region]:
    """``parts`` with a white margin of :data:`REGION_PAD` at the sides, never past the middle of
    the gap to a neighbour part in the same segment (the gutter), and above / below the ink."""
    top, bottom = min(p.y0 for p in parts), max(p.y1 for p in parts)
    out: list[Region] = []
    for p in parts:
        left, right = max(0.0, p.x0 - REGION_PAD), min(width, p.x1 + REGION_PAD)
        for q in parts:
            if q is p or q.y0 >= p.y1 or q.y1 <= p.y0:
                continue
            if q.x1 <= p.x0:
                left = max(left, (q.x1 + p.x0) / 2)
            elif q.x0 >= p.x1:
                right = min(right, (p.x1 + q.x0) / 2)
        # segments meet half-way between their rows: only the outer top and bottom get a margin
        y0 = max(0.0, p.y0 - REGION_PAD) if p.y0 <= top else p.y0
        y1 = min(height, p.y1 + REGION_PAD) if p.y1 >= bottom else p.y1
        out.append(Region(left, y0, right, y1, p.boxclass))
    return out


def dot_leaders(gray: np.ndarray, dpi: float) -> list[Leader]:
    """The dot leaders of a page image ``gray`` (2-D uint8, rendered at ``dpi``): rows of at
    least :data:`LEADER_MIN_DOTS` small round blobs on one line, close and evenly spaced, with text
    on their row next to them (see the constants above)."""
    boxes = _components(gray < INK_LEVEL)
    if not len(boxes):
        return []
    w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    # a letter's height: the median of the blobs that are no dots (a page of leaders has more
    # dots than letters), judged against the tall letters
    tall = float(np.percentile(h, LETTER_PERCENTILE))
    letters = h[h > LEADER_DOT_SHARE * tall]
    med = float(np.median(letters)) if len(letters) else tall
    size = LEADER_DOT_SHARE * med
    dot = (w <= size) & (h <= size) & (w <= LEADER_DOT_ASPECT * h) & (h <= LEADER_DOT_ASPECT * w)
    cand = np.flatnonzero(dot)
    if len(cand) < LEADER_MIN_DOTS:
        return []
    cy2 = boxes[:, 1] + boxes[:, 3]  # twice the centre row
    cand = cand[np.argsort(boxes[cand, 0], kind="stable")]
    # chain dots left to right: a dot continues a run whose last dot ends just before it on its row
    tol = int(2 * LEADER_ALIGN_SHARE * med) + 1
    reach = LEADER_GAP_SHARE * med
    runs: list[list[int]] = []
    ends: dict[int, list[int]] = {}  # twice the centre row of a run's last dot -> run numbers
    for i in cand:
        x0, row = int(boxes[i, 0]), int(cy2[i])
        found = -1
        for key in range(row - tol, row + tol + 1):
            for k in ends.get(key, ()):
                gap = x0 - int(boxes[runs[k][-1], 2])
                if 0 < gap <= reach:
                    found = k
                    break
            if found >= 0:
                ends[key].remove(found)
                break
        if found < 0:
            found = len(runs)
            runs.append([])
        runs[found].append(int(i))
        ends.setdefault(row, []).append(found)
    text = np.flatnonzero(~dot & (h > size))
    fontsize = med * 72.0 / dpi / BLOB_EM_SHARE
    out = []
    for run in runs:
        if len(run) < LEADER_MIN_DOTS:
            continue
        b = boxes[run]
        b = b[np.argsort(b[:, 0])]
        pitch = np.diff(b[:, 0])
        if np.ptp(pitch) > LEADER_PITCH_SPREAD * float(np.median(pitch)) + 1:
            continue
        x0, x1, base = b[0, 0], b[-1, 2], int(b[:, 3].max())
        span = LEADER_TEXT_SHARE * med
        row = text[(boxes[text, 1] < base) & (boxes[text, 3] >= base - med)]
        near = ((boxes[row, 2] <= x0) & (boxes[row, 2] >= x0 - span)) | (
            (boxes[row, 0] >= x1) & (boxes[row, 0] <= x1 + span)
        )
        if near.any():
            out.append(Leader(b, fontsize))
    return out


def _bar_width(ink: np.ndarray, centre: float, reach: float) -> int:
    """Width (pixels) of the horizontal bar in ``ink`` (2-D bool, one line tall) at the column
    ``centre`` (the widest within ``reach`` of it, else the nearest): the run of columns whose ink lies in one thin band (at most
    :data:`DASH_THIN_SHARE` of the line tall), the same band column to column, and at most the
    bar's thickness on into a letter touching it; 0 when none. Columns, not connected blobs: an
    en dash touches the letters beside it in many fonts."""
    rows = np.arange(ink.shape[0])[:, None]
    count = ink.sum(axis=0)
    top = np.where(ink, rows, ink.shape[0]).min(axis=0)
    bottom = np.where(ink, rows, -1).max(axis=0)
    thin = (count > 0) & (bottom - top < max(2.0, DASH_THIN_SHARE * ink.shape[0]))
    # runs of thin columns whose ink overlaps the band of the run's first column (a bar that
    # meets another one a row lower, as a Times en dash meets the bar of a "4", ends there)
    runs: list[tuple[int, int]] = []
    run = -1
    for col in range(ink.shape[1]):
        if run >= 0 and (not thin[col] or top[col] > bottom[run] or bottom[col] < top[run]):
            runs.append((run, col))
            run = -1
        if run < 0 and thin[col]:
            run = col
    if run >= 0:
        runs.append((run, ink.shape[1]))
    runs = [(a, b) for a, b in runs if b - a >= 2]
    if not runs:
        return 0
    # the widest bar about the char (Tesseract's char boxes are only spread evenly over its
    # word), else the nearest
    near = [r for r in runs if r[1] > centre - reach and r[0] < centre + reach]
    a, b = (
        max(near, key=lambda r: r[1] - r[0])
        if near
        else min(runs, key=lambda r: abs((r[0] + r[1]) / 2 - centre))
    )
    # a letter touching the bar hides its ends: go on through at most the bar's thickness of
    # columns with ink in the rows of its first column
    band = ink[int(top[a]) : int(bottom[a]) + 1]
    thick = band.shape[0]
    left = a
    while left > 0 and a - left < thick and band[:, left - 1].any():
        left -= 1
    right = b
    while right < ink.shape[1] and right - b < thick and band[:, right].any():
        right += 1
    return right - left


def dash_kind(gray: np.ndarray, char: Sequence[float], line: Sequence[float]) -> str | None:
    """Which dash ("-", "\u2013" or "\u2014") the image ``gray`` shows where OCR read one in the
    pixel box ``char`` (x0, y0, x1, y1) of the line with pixel box ``line``: the bar nearest the
    char, measured against the tall letters of the line around it (see
    :data:`HYPHEN_MAX_SHARE`); None when there is no bar or it is a rule."""
    y0, y1 = max(0, int(line[1])), min(gray.shape[0], int(np.ceil(line[3])))
    height = y1 - y0
    if height <= 0:
        return None
    width = char[2] - char[0]
    x0, x1 = max(0, int(char[0] - width)), min(gray.shape[1], int(np.ceil(char[2] + width)))
    bar = _bar_width(gray[y0:y1, x0:x1] < DASH_INK_LEVEL, (char[0] + char[2]) / 2 - x0, width)
    if not bar:
        return None
    reach = DASH_CONTEXT_LINES * height
    c0, c1 = max(0, int(char[0] - reach)), min(gray.shape[1], int(np.ceil(char[2] + reach)))
    around = _components(gray[y0:y1, c0:c1] < DASH_INK_LEVEL)
    aw, ah = around[:, 2] - around[:, 0], around[:, 3] - around[:, 1]
    letters = ah[~((aw >= DASH_ASPECT * ah) & (ah <= DASH_THIN_SHARE * height)) & (ah >= MIN_LETTER_PX)]
    if not len(letters):
        return None
    share = bar / float(np.percentile(letters, LETTER_PERCENTILE))
    if share > DASH_MAX_SHARE:
        return None
    return "-" if share < HYPHEN_MAX_SHARE else "\u2013" if share < EN_DASH_MAX_SHARE else "\u2014"
