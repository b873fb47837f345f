"""What an OCR'd page's text layer holds beyond the layout model's text boxes (#11).

Tesseract writes text for everything on a scanned page, the inside of raster figures included
(mostly garbage there: "S N-ter =~ VN ~<A GS"), and on scans the layout model's picture boxes
swallow real text (a caption set tight against its figure, a body column beside it). The tree
builder of the PyMuPDF parser asks this module, on OCR'd pages only:

* :func:`reads_as_text` / :func:`readable_unclaimed`: whether text no element took reads as
  text (a share of its characters in words ``wordfreq`` knows, or numbers) -- the layout
  fallback takes only that, and counts the rest (:data:`OCR_LEFT_OUT_KEY`);
* :func:`text_in_picture` / :func:`beside_taken`: which blocks inside a picture box are text
  (at the picture's top or bottom, or spanning most of its width) and become elements of their
  own (:data:`OCR_FROM_PICTURES_KEY`).
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path

import numpy as np

from grounded.errors import escape_controls
from grounded.parsers.hyphenation import zipf
from grounded.parsers.textlayer import PageChars, TextLayer, build_lines, clip_to_page

log = logging.getLogger(__name__)

__all__ = [
    "OCR_TEXT_MIN_WORD_SHARE",
    "OCR_TEXT_MIN_CHARS",
    "OCR_PICTURE_TEXT_MIN_CHARS",
    "OCR_SHORT_WORD_ZIPF",
    "OCR_WORD_ZIPF",
    "OCR_PICTURE_TEXT_MIN_WIDTH",
    "OCR_PICTURE_TEXT_GUTTER_EM",
    "OCR_PICTURE_SCRAP_CHARS",
    "OCR_FROM_PICTURES_KEY",
    "OCR_LEFT_OUT_KEY",
    "OCR_ELEMENT_MIN_CHARS",
    "OCR_ELEMENT_MAX_GARBAGE_SHARE",
    "is_word",
    "is_garbage_element",
    "word_share",
    "reads_as_text",
    "text_layer_rects",
    "readable_unclaimed",
    "text_in_picture",
    "beside_taken",
    "side_by_side",
    "level_with",
]


#: On an OCR'd page Tesseract also "reads" the inside of raster figures (molecules, plots, photos)
#: and writes mostly garbage there ("S N-ter =~ VN ~<A GS"); a born-digital raster figure holds no
#: text. There, text the layout put in no text or table box (pictures' included: on scans the model's
#: picture boxes also swallow captions and body columns) counts as lost, and is taken by the fallback,
#: only where it reads as text: at least this share of its non-space characters is in words
#: (:func:`word_share`) -- on the scanned long PDFs prose and reference lists score 0.65-1, figure
#: OCR 0-0.6; so do residue/atom tables and chemistry (0.4-0.6), which the rule leaves out too ...
OCR_TEXT_MIN_WORD_SHARE = 0.65
#: ... and it has at least this many non-space characters (shorter scraps are figure labels) ...
OCR_TEXT_MIN_CHARS = 8
#: ... or this many when most of it lies in the layout's picture boxes: a caption or a body column
#: the model's picture swallowed, not a legible label of a flowchart or plot ("Homology Searching").
OCR_PICTURE_TEXT_MIN_CHARS = 40
#: A token of one or two letters counts as a word at this Zipf frequency (of, in, to, an, by ...:
#: figure OCR is full of letter pairs like "ee", "oc", "Ph") ...
OCR_SHORT_WORD_ZIPF = 4.0
#: ... a longer one at this (rare technical words and names still count).
OCR_WORD_ZIPF = 1.0
#: On an OCR'd page the layout model's picture boxes also swallow real text: a caption set tight
#: against its figure, a body column beside it. A text-layer block in a picture box that reads as
#: text (:func:`reads_as_text`, as picture text) becomes its own element when it lies at the
#: picture's top or bottom (none of the picture's other OCR'd characters above, or below, it) or
#: spans at least this share of the picture's width (a caption line between two panels); a
#: legible label inside a diagram does neither, and Tesseract's reading of a figure stays in it.
OCR_PICTURE_TEXT_MIN_WIDTH = 0.6
#: ... a block's lines side by side with an empty gap of at least this many glyph heights
#: between them are two columns, judged apart (a heading beside a column's end; a caption's
#: "Figure 2" label sits closer to its text) ...
OCR_PICTURE_TEXT_GUTTER_EM = 1.5
#: ... and the picture's other OCR'd characters above (below) a block, but level with none of the
#: picture's text blocks, count as figure content only from this many on (fewer are scraps of
#: the text's own lines: a split-off word, specks).
OCR_PICTURE_SCRAP_CHARS = 10
#: An element the layout model made on an OCR'd page (a paragraph, heading, list item, a whole
#: table) is Tesseract's garbage, left out of the tree and counted, when its text has at least
#: this many non-space characters ... (issue #21.8: a page of noise images gave a TABLE of OCR
#: garbage) ...
OCR_ELEMENT_MIN_CHARS = 20
#: ... and at most this share of them in words (:func:`word_share`). Measured on the elements of 4
#: scanned pages of the shared long PDFs and 6 PubLayNet page images (334 elements): real text
#: elements score at least 0.37 (a garbled running header "TA dosh eral Mewreinoage: O¥nical2
#: (2013) 590-595"), real tables 0.46 as a whole; table cells go lower (misread anatomy terms:
#: 0.0) and are never judged one by one.
OCR_ELEMENT_MAX_GARBAGE_SHARE = 0.25
#: Page-entry key (``root.info.pages``) of the OCR'd text taken out of picture boxes as
#: elements of their own (see :data:`OCR_PICTURE_TEXT_MIN_WIDTH`): {"elements", "chars"}.
OCR_FROM_PICTURES_KEY = "ocr_text_from_pictures"
#: Page-entry key (``root.info.pages``) of what an OCR'd page's text layer holds that no
#: element took: {"chars", "in_pictures", "unreadable_blocks", "unreadable_chars"}; and the elements
#: left out as garbage (:func:`is_garbage_element`): {"garbage_elements", "garbage_chars"}.
OCR_LEFT_OUT_KEY = "ocr_text_left_out"


_TOKEN = re.compile(r"\S+")
_TOKEN_EDGE = re.compile(r"^\W+|\W+$")
_LETTER_WORD = re.compile(r"^[^\W\d_]+(?:[-'\u2019.][^\W\d_]+)*$")
_NUMBER = re.compile(r"^[-+]?\d+(?:[.,/:]\d+)*%?$")


def is_word(token: str) -> bool:
    """A number, or letters (inner hyphens, apostrophes, dots) that English uses often enough."""
    core = _TOKEN_EDGE.sub("", token)
    if _NUMBER.match(core):
        return True
    if not _LETTER_WORD.match(core):
        return False
    return zipf(core) >= (OCR_SHORT_WORD_ZIPF if len(core) <= 2 else OCR_WORD_ZIPF)


def word_share(text: str) -> float:
    """Share of ``text``'s non-space characters that are in words (:func:`is_word`)."""
    tokens = _TOKEN.findall(text)
    total = sum(len(t) for t in tokens)
    return sum(len(t) for t in tokens if is_word(t)) / total if total else 0.0


def reads_as_text(text: str, in_picture: bool = False) -> bool:
    """Whether OCR output reads as text, not as Tesseract's reading of a figure's inside (see
    :data:`OCR_TEXT_MIN_WORD_SHARE`); ``in_picture``: it lies in a picture box of the layout."""
    solid = sum(not c.isspace() for c in text)
    least = OCR_PICTURE_TEXT_MIN_CHARS if in_picture else OCR_TEXT_MIN_CHARS
    return solid >= least and word_share(text) >= OCR_TEXT_MIN_WORD_SHARE


def is_garbage_element(text: str) -> bool:
    """Whether the text of an element the layout model made on an OCR'd page is Tesseract's
    garbage, not text (see :data:`OCR_ELEMENT_MAX_GARBAGE_SHARE`)."""
    solid = sum(not c.isspace() for c in text)
    return solid >= OCR_ELEMENT_MIN_CHARS and word_share(text) <= OCR_ELEMENT_MAX_GARBAGE_SHARE


def text_layer_rects(pc: PageChars, layer: TextLayer) -> list[tuple[float, float, float, float]]:
    """MuPDF's text blocks of the page, on the displayed page and clipped to it (empty ones dropped)."""
    import pymupdf

    pdf_page = layer._doc.load_page(pc.page - 1)
    m = pdf_page.rotation_matrix
    rects = []
    for block in pdf_page.get_text("blocks", flags=0):
        if block[6] != 0:
            continue
        r = (pymupdf.Rect(block[:4]) * m).normalize()
        x0, y0, x1, y1 = clip_to_page(r.x0, r.y0, r.x1, r.y1, pc.width, pc.height)
        if x1 - x0 > 0 and y1 - y0 > 0:
            rects.append((x0, y0, x1, y1))
    return rects


def readable_unclaimed(
    path: Path,
    pc: PageChars,
    claimed: np.ndarray,
    in_picture: np.ndarray,
    rects: list[tuple[float, float, float, float]],
) -> tuple[np.ndarray, list[bool]]:
    """OCR'd page: the unclaimed characters that read as text (:func:`reads_as_text`, judged per
    text block on the characters no element took; mostly in picture boxes: as such), and per block
    whether it reads as text (one with nothing left to take does). The rest is logged (debug): it is
    left out of the tree, and counted in the page's :data:`OCR_LEFT_OUT_KEY`."""
    readable = np.zeros(len(pc), dtype=bool)
    seen = claimed.copy()
    verdicts = []
    for rect in rects:
        sel = pc.select(*rect)
        sel = sel[~seen[sel]]
        seen[sel] = True
        text = "".join(pc.chars[i] for i in sel)
        pictured = 2 * int(in_picture[sel].sum()) > len(sel)
        ok = not text.strip() or reads_as_text(text, pictured)  # nothing left to take: no figure's
        readable[sel] = ok
        verdicts.append(ok)
        if not ok:
            log.debug("%s: page %d: OCR text left out (a figure's, not text): %r", escape_controls(str(path)), pc.page, text[:120])
    return readable, verdicts


def text_in_picture(
    pc: PageChars,
    claimed: np.ndarray,
    box: tuple[float, float, float, float],
    rects: list[tuple[float, float, float, float]],
) -> tuple[list[tuple[np.ndarray, bool]], tuple[float, float, float, float] | None]:
    """OCR'd page: the text-layer blocks (``rects``) of picture ``box`` that are text the picture
    swallowed (see :data:`OCR_PICTURE_TEXT_MIN_WIDTH`): per block the indices of its characters
    no element took and whether it is read before the picture (not at its bottom), and the
    picture box without them (trimmed at its top and bottom; None when nothing else is left)."""
    x0, y0, x1, y1 = box
    solid = pc.solid
    free = np.zeros(len(pc), dtype=bool)
    free[pc.select(x0, y0, x1, y1)] = True
    free &= ~claimed
    seen = ~free
    readable: list[np.ndarray] = []
    short: list[np.ndarray] = []  # the rest, by block and column
    for rect in rects:
        sel = pc.select(*rect)
        sel = sel[~seen[sel]]
        seen[sel] = True
        for part in side_by_side(pc, sel):
            if reads_as_text(build_lines([pc], [part]).text, in_picture=True):
                readable.append(part)
            else:
                short.append(part)
    if not readable:
        return [], box
    # whole lines: their words outside the picture that no element took come along ("Figure 3")
    outside = ~claimed & ~free
    for k, part in enumerate(readable):
        more = np.flatnonzero(outside & np.isin(pc.line, pc.line[part]))
        outside[more] = False
        readable[k] = np.union1d(part, more)
    rest = free & solid
    spans = []
    for sel in readable:
        rest[sel] = False
        ink = sel[solid[sel]]
        spans.append((pc.y0[ink].min(), pc.y1[ink].max()))
    rest_cy = pc.cy[rest]
    for span_top, span_bottom in spans:  # what is level with the text is on its rows, not figure content
        rest_cy = rest_cy[(rest_cy < span_top) | (rest_cy > span_bottom)]
    top, bottom = y0, y1
    found = []
    for sel in readable:
        ink = sel[solid[sel]]
        bx0, by0, bx1, by1 = pc.x0[ink].min(), pc.y0[ink].min(), pc.x1[ink].max(), pc.y1[ink].max()
        above = int((rest_cy < by1).sum()) < OCR_PICTURE_SCRAP_CHARS
        below = int((rest_cy > by0).sum()) < OCR_PICTURE_SCRAP_CHARS
        if above and below:  # nothing else (to speak of) OCR'd in the picture: the nearer edge
            above = by0 + by1 < y0 + y1
            below = not above
        wide = min(bx1, x1) - max(bx0, x0) >= OCR_PICTURE_TEXT_MIN_WIDTH * (x1 - x0)
        if not (above or below or wide):
            continue
        found.append((sel, not below))
        if above:
            top = max(top, float(by1))
        elif below:
            bottom = min(bottom, float(by0))
    found.extend(beside_taken(pc, short, found, top, bottom))
    if found and not rest.any():  # nothing but text OCR'd in it: a strip thinner than its lines is no figure
        ink = np.concatenate([sel for sel, _ in found])
        ink = ink[solid[ink]]
        if bottom - top < float(np.median(pc.y1[ink] - pc.y0[ink])):
            return found, None
    return found, ((x0, top, x1, bottom) if bottom > top else None)


def beside_taken(
    pc: PageChars, parts: list[np.ndarray], taken: list[tuple[np.ndarray, bool]], top: float, bottom: float
) -> list[tuple[np.ndarray, bool]]:
    """Of a picture's ``parts`` too short to read as picture text, those on the rows of the text
    ``taken`` out of it, outside what is left of the picture (between ``top`` and ``bottom``),
    that read as text by the page's rule (a heading beside a column's lines: "DISCUSSION"), each
    with whether it is read before the picture."""
    solid = pc.solid
    rows = []
    for sel, _ in taken:
        ink = sel[solid[sel]]
        rows.append((pc.y0[ink].min(), pc.y1[ink].max()))
    out = []
    for part in parts:
        cy = pc.cy[part[solid[part]]]
        if not len(cy) or not ((cy < top) | (cy > bottom)).all():
            continue
        if any(((cy >= a) & (cy <= b)).all() for a, b in rows) and reads_as_text(build_lines([pc], [part]).text):
            out.append((part, bool(cy.max() < top)))
    return out


def side_by_side(pc: PageChars, sel: np.ndarray) -> list[np.ndarray]:
    """``sel`` (a text-layer block's characters) split into groups of lines side by side with an
    empty gap of at least :data:`OCR_PICTURE_TEXT_GUTTER_EM` glyph heights between them."""
    ink = sel[pc.solid[sel]]
    if not len(ink):
        return []
    gap = OCR_PICTURE_TEXT_GUTTER_EM * float(np.median(pc.y1[ink] - pc.y0[ink]))
    spans = sorted(
        (float(pc.x0[ink][pc.line[ink] == k].min()), float(pc.x1[ink][pc.line[ink] == k].max()), int(k))
        for k in np.unique(pc.line[ink])
    )
    groups: list[list[int]] = []
    right = -math.inf
    for left, end, k in spans:
        if left - right >= gap:
            groups.append([])
        groups[-1].append(k)
        right = max(right, end)
    cy = {k: float(pc.cy[ink][pc.line[ink] == k].mean()) for k in np.unique(pc.line[ink])}
    merged: list[list[int]] = []
    for group in groups:  # lines all level with the next group's first line: its label ("Figure 2")
        if merged and all(level_with(pc, ink, k, min(group, key=cy.__getitem__)) for k in merged[-1]):
            merged[-1].extend(group)
        else:
            merged.append(group)
    return [sel[np.isin(pc.line[sel], group)] for group in merged]


def level_with(pc: PageChars, ink: np.ndarray, line: int, other: int) -> bool:
    """Whether MuPDF line ``line``'s centre lies within line ``other``'s height (``ink``: the
    characters to measure)."""
    a, b = ink[pc.line[ink] == line], ink[pc.line[ink] == other]
    centre = (pc.y0[a].min() + pc.y1[a].max()) / 2
    return bool(pc.y0[b].min() <= centre <= pc.y1[b].max())
