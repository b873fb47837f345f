"""The PDF text layer as character boxes, and element text rebuilt from it.

:class:`TextLayer` opens a PDF once and extracts each page's characters (PyMuPDF ``rawdict``)
once, into flat arrays in the coordinates of the page *as displayed* (crop box and /Rotate
applied) so they match element boxes, which are always fractions of the displayed page.

:func:`build_lines` turns the characters inside element boxes into visual lines (thesis §3.3
step 3: fragments of one line are merged when their vertical overlap exceeds a fraction of the
smaller height) and into the element text with, for each line, the character range it covers
and every character's horizontal extent -- the material exact chunk boxes are made of.

Line boxes are kept tight, so a highlighted line does not cover its neighbours:

* MuPDF's char boxes span the font's whole ascender-to-descender range, which for many fonts
  (base-14 Times/Helvetica substitutes, symbol fonts) is 1.3-2.5x the font size -- taller than
  the line pitch. :meth:`PageChars.from_page` caps each char box at one em (the font size) about
  its baseline, keeping the font's ascender/descender proportion (PyMuPDF's "small glyph
  heights" box, computed here without its process-wide switch; quad corrections are off anyway
  once ``pymupdf.layout`` is imported). Costs a few vectorized operations per page.
* A line's extent across the text is the median of its glyphs' extents (a superscript, a math
  symbol drawn off the baseline or one larger fragment does not stretch it), widened to cover
  every glyph's centre; consecutive lines of one box that still overlap are cut at the middle
  of their overlap (never past a glyph centre).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..model.boxes import ParsingBoundingBox
from ..runtime.bounded import BoundedCache
from .hyphenation import DROP, Lexicon, decide

__all__ = [
    "PageChars", "TextLayer", "TextLine", "BuiltText", "build_lines", "HYPHENS", "lines_to_spans",
    "hyphen_join", "JOIN_SPACE", "JOIN_DROP", "JOIN_KEEP", "RIGHT", "DOWN", "LEFT", "UP",
    "clip_to_page", "char_masks",
]

#: Hyphen characters that may be dropped when a word is broken across lines.
HYPHENS = frozenset("-\u2010\u00ad")
_SOFT_HYPHEN = "\u00ad"
# A char belongs to a box when its centre lies inside the box grown by this many points.
BOX_TOLERANCE_PT = 1.5
#: A char box is at most this many font sizes tall across the text (see the module docstring).
MAX_GLYPH_HEIGHT_EM = 1.0


def _text_flags() -> int:
    import pymupdf

    # ligatures expanded (no PRESERVE_LIGATURES), whitespace kept, nothing outside the media box
    return int(pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP)


def char_masks(chars: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per character string: ``str.isspace()`` and ``str.isalnum()``, vectorized."""
    n = len(chars)
    if not n:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)
    if "\x00" in "".join(chars):  # numpy's strings drop trailing NULs: ask str itself
        return (
            np.fromiter((c.isspace() for c in chars), dtype=bool, count=n),
            np.fromiter((c.isalnum() for c in chars), dtype=bool, count=n),
        )
    arr = np.asarray(chars, dtype=str)
    return np.strings.isspace(arr), np.strings.isalnum(arr)


@dataclass
class PageChars:
    """All characters of one page in reading-independent MuPDF order, displayed-page points."""

    page: int  # 1-based
    width: float
    height: float
    chars: list[str]
    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    line: np.ndarray  # MuPDF line id per char (page-unique)
    size: np.ndarray  # font size per char
    bold: np.ndarray  # bool per char
    line_dir: list[int] = field(default_factory=list)  # per MuPDF line id: RIGHT, DOWN, LEFT or UP
    word_cx: np.ndarray | None = None  # centre of the word each char belongs to
    word_cy: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.word_cx is None or self.word_cy is None:
            self.word_cx, self.word_cy = self._word_centres()

    def _word_centres(self) -> tuple[np.ndarray, np.ndarray]:
        """Centre of each char's word (a run of non-space chars of one MuPDF line)."""
        n = len(self.chars)
        if not n:
            return np.empty(0), np.empty(0)
        space = ~self.solid
        new = np.ones(n, dtype=bool)
        new[1:] = space[1:] | space[:-1] | (self.line[1:] != self.line[:-1])
        starts = np.flatnonzero(new)
        word = np.cumsum(new) - 1
        cx = (np.minimum.reduceat(self.x0, starts) + np.maximum.reduceat(self.x1, starts)) * 0.5
        cy = (np.minimum.reduceat(self.y0, starts) + np.maximum.reduceat(self.y1, starts)) * 0.5
        return cx[word], cy[word]

    @functools.cached_property
    def _masks(self) -> tuple[np.ndarray, np.ndarray]:
        space, letter = char_masks(self.chars)
        solid = ~space
        solid.setflags(write=False)
        letter.setflags(write=False)
        return solid, letter

    @property
    def solid(self) -> np.ndarray:
        """Per character: not whitespace (read-only; computed once per page)."""
        return self._masks[0]

    @property
    def letter(self) -> np.ndarray:
        """Per character: a letter or digit (read-only; computed once per page)."""
        return self._masks[1]

    @functools.cached_property
    def _columns(self) -> tuple[list[float], list[float], list[bool]]:
        """x0, x1 and whitespace per character as Python lists (the per-character loops of
        :func:`build_lines` read them without numpy scalars)."""
        return self.x0.tolist(), self.x1.tolist(), (~self.solid).tolist()

    @property
    def cx(self) -> np.ndarray:
        return (self.x0 + self.x1) * 0.5

    @property
    def cy(self) -> np.ndarray:
        return (self.y0 + self.y1) * 0.5

    def __len__(self) -> int:
        return len(self.chars)

    @classmethod
    def from_page(cls, page, number: int) -> PageChars:  # page: pymupdf.Page
        """Extract the characters of a PyMuPDF page (not modified)."""
        raw = page.get_text("rawdict", flags=_text_flags())
        m = page.rotation_matrix
        rect = page.rect
        chars: list[str] = []
        coords: list[tuple[float, float, float, float]] = []
        directions: list[int] = []
        # per span (one extend per span, not five appends per char): chars taken, MuPDF line id,
        # font size, bold, writing direction in unrotated space (-1: not axis-aligned), first
        # char's bbox and origin (flat: x0, y0, x1, y1, ox, oy)
        span_count: list[int] = []
        span_line: list[int] = []
        span_size: list[float] = []
        span_bold: list[bool] = []
        span_axis: list[int] = []
        span_ref: list[float] = []
        line_id = -1
        notdef: set[tuple[float, float]] | None = None  # origins of U+FFFD chars drawn with no glyph
        for block in raw["blocks"]:
            if block.get("type") != 0:
                continue
            for line in block["lines"]:
                line_id += 1
                dx, dy = line.get("dir", (1.0, 0.0))
                ddx, ddy = m.a * dx + m.c * dy, m.b * dx + m.d * dy  # direction as displayed
                directions.append(_direction(ddx, ddy))
                axis = _direction(dx, dy) if max(abs(dx), abs(dy)) > 0.999 else -1
                for span in line["spans"]:
                    span_chars = span["chars"]
                    taken = [ch for ch in span_chars if ch["c"]]
                    if not taken:
                        continue
                    texts = [ch["c"] for ch in taken]
                    if "\ufffd" in texts:  # a code the font maps to no character
                        notdef = notdef if notdef is not None else notdef_origins(page)
                        texts = [" " if c == "\ufffd" and _origin_key(ch["origin"]) in notdef else c
                                 for c, ch in zip(texts, taken, strict=True)]
                    chars.extend(texts)
                    coords.extend([ch["bbox"] for ch in taken])
                    first = span_chars[0]
                    span_count.append(len(taken))
                    span_line.append(line_id)
                    span_size.append(float(span.get("size", 0.0)))
                    span_bold.append(bool(span.get("flags", 0) & 16) or _bold_font_name(span.get("font", "")))
                    span_axis.append(axis)
                    span_ref.extend(first["bbox"])
                    span_ref.extend(first["origin"])
        counts = np.asarray(span_count, dtype=np.int64)
        line_ids = np.repeat(np.asarray(span_line, dtype=np.int64), counts)
        sizes = np.repeat(np.asarray(span_size, dtype=np.float32), counts)
        bolds = np.repeat(np.asarray(span_bold, dtype=bool), counts)
        n = len(chars)
        box = np.asarray(coords, dtype=np.float64).reshape(n, 4)
        size_arr = sizes
        if n:
            axis_arr = np.asarray(span_axis)
            base = _baseline_share(axis_arr, np.asarray(span_ref, dtype=np.float64).reshape(-1, 6))
            _cap_glyph_heights(box, size_arr, np.repeat(axis_arr, counts), np.repeat(base, counts))
        # unrotated page space -> displayed page space (exact for multiples of 90 degrees)
        xa = m.a * box[:, 0] + m.c * box[:, 1] + m.e
        ya = m.b * box[:, 0] + m.d * box[:, 1] + m.f
        xb = m.a * box[:, 2] + m.c * box[:, 3] + m.e
        yb = m.b * box[:, 2] + m.d * box[:, 3] + m.f
        w, h = float(rect.width), float(rect.height)
        x0 = np.clip(np.minimum(xa, xb), 0.0, w)
        x1 = np.clip(np.maximum(xa, xb), 0.0, w)
        y0 = np.clip(np.minimum(ya, yb), 0.0, h)
        y1 = np.clip(np.maximum(ya, yb), 0.0, h)
        return cls(
            page=number,
            width=w,
            height=h,
            chars=chars,
            x0=x0,
            y0=y0,
            x1=x1,
            y1=y1,
            line=line_ids,
            size=size_arr,
            bold=bolds,
            line_dir=directions,
        )

    def select(
        self, x0: float, y0: float, x1: float, y1: float, tol: float = BOX_TOLERANCE_PT, by_word: bool = True
    ) -> np.ndarray:
        """Indices (MuPDF order) of the characters in the box (points): those whose word's
        centre lies inside (a word is never split between boxes), or with ``by_word=False``
        those whose own centre does."""
        if not len(self.chars):
            return np.empty(0, dtype=np.int64)
        cx, cy = (self.word_cx, self.word_cy) if by_word else (self.cx, self.cy)
        assert cx is not None and cy is not None
        mask = (cx >= x0 - tol) & (cx <= x1 + tol) & (cy >= y0 - tol) & (cy <= y1 + tol)
        return np.flatnonzero(mask)

    def select_box(self, box: ParsingBoundingBox, tol: float = BOX_TOLERANCE_PT) -> np.ndarray:
        x0, y0, x1, y1 = box.to_points(self.width, self.height)
        return self.select(x0, y0, x1, y1, tol)


#: Writing directions of a line on the displayed page (upright text is RIGHT).
RIGHT, DOWN, LEFT, UP = 0, 1, 2, 3


def _origin_key(origin: Sequence[float]) -> tuple[float, float]:
    return round(float(origin[0]), 1), round(float(origin[1]), 1)


def notdef_origins(page: Any) -> set[tuple[float, float]]:
    """Origins of the characters of ``page`` that MuPDF reads as U+FFFD *and* draws with glyph 0
    (``.notdef``: nothing, or an empty box), such as the tab of the Clinical Science PDF's vertical
    side banner ("Clinical Science <tab> www.clinsci.org", a code WinAnsiEncoding leaves undefined).
    Such a character is a gap, read as a space. A U+FFFD drawn with a real glyph (a symbol font
    without a Unicode map: the Σ of its footnotes) is a character whose value is unknown and stays U+FFFD."""
    return {_origin_key(c[2]) for trace in page.get_texttrace() for c in trace["chars"] if c[0] == 0xFFFD and c[1] == 0}


def _direction(dx: float, dy: float) -> int:
    if abs(dx) >= abs(dy):
        return RIGHT if dx >= 0 else LEFT
    return DOWN if dy > 0 else UP


# Glyph "up" is towards y0 for RIGHT, y1 for LEFT, x1 for DOWN and x0 for UP (y grows downwards):
# the glyph top is at the low coordinate for RIGHT and UP.


def _baseline_share(axis: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Where the baseline lies across each span's char boxes, 0 at the glyph top and 1 at the
    glyph bottom (``ref``: x0, y0, x1, y1, origin x, origin y of the span's first char)."""
    horizontal = np.isin(axis, (RIGHT, LEFT))
    lo = np.where(horizontal, ref[:, 1], ref[:, 0])
    hi = np.where(horizontal, ref[:, 3], ref[:, 2])
    base = np.where(horizontal, ref[:, 5], ref[:, 4])
    height = hi - lo
    from_top = np.where(np.isin(axis, (RIGHT, UP)), base - lo, hi - base)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(height > 0, from_top / height, 0.0)
    return np.clip(share, 0.0, 1.0)


def _cap_glyph_heights(box: np.ndarray, size: np.ndarray, axis: np.ndarray, base: np.ndarray) -> None:
    """Shrink char boxes (unrotated page space, in place) taller than MAX_GLYPH_HEIGHT_EM font
    sizes across the text to that height, about the baseline (``base``: see _baseline_share).
    Chars of lines that are not axis-aligned (``axis`` -1) are left alone."""
    for horizontal, (lo_col, hi_col) in ((True, (1, 3)), (False, (0, 2))):
        rows = np.flatnonzero(np.isin(axis, (RIGHT, LEFT) if horizontal else (DOWN, UP)))
        if not len(rows):
            continue
        lo, hi = box[rows, lo_col], box[rows, hi_col]
        height = hi - lo
        cap = size[rows].astype(np.float64) * MAX_GLYPH_HEIGHT_EM
        tall = np.flatnonzero((height > cap) & (cap > 0))
        if not len(tall):
            continue
        rows, lo, hi, height, cap = rows[tall], lo[tall], hi[tall], height[tall], cap[tall]
        cut_top = base[rows] * (height - cap)  # the glyph top moves this far towards the baseline
        top_low = np.isin(axis[rows], (RIGHT, UP))
        new_lo = np.where(top_low, lo + cut_top, hi - cut_top - cap)
        box[rows, lo_col] = new_lo
        box[rows, hi_col] = new_lo + cap


def _frame(direction: int, x0: float, y0: float, x1: float, y1: float) -> tuple[float, float, float, float]:
    """Box in the line's reading frame: u runs along the text, v from one line to the next."""
    if direction == RIGHT:
        return x0, y0, x1, y1
    if direction == LEFT:  # upside down: read right to left, lines go upwards
        return -x1, -y1, -x0, -y0
    if direction == DOWN:  # rotated 90 degrees clockwise: lines go leftwards
        return y0, -x1, y1, -x0
    return -y1, x0, -y0, x1  # UP: rotated counter-clockwise, lines go rightwards


def _bold_font_name(font: str) -> bool:
    name = font.lower()
    return any(k in name for k in ("bold", "black", "heavy", "demi", "semibold"))


class TextLayer:
    """A PDF opened once; pages' characters extracted lazily and cached (``cache_pages`` newest).

    Use as a context manager or call :meth:`close`.
    """

    def __init__(self, pdf_path: str | Path, cache_pages: int = 4, document=None) -> None:
        import pymupdf

        self.path = Path(pdf_path)
        self._own = document is None
        self._doc = pymupdf.open(self.path) if document is None else document
        self._cache: BoundedCache[PageChars] = BoundedCache(max(1, cache_pages))

    @property
    def page_count(self) -> int:
        return int(self._doc.page_count)

    def page(self, number: int) -> PageChars:
        """Characters of 1-based page ``number``."""
        return self._cache.get_or_make(number, lambda: PageChars.from_page(self._doc.load_page(number - 1), number))

    def close(self) -> None:
        self._cache.clear()
        if self._own:
            self._doc.close()

    def __enter__(self) -> TextLayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# characters -> visual lines -> text
# ---------------------------------------------------------------------------------------------


@dataclass
class TextLine:
    """One visual line of an element: its box (points) and its characters' range in the text."""

    page: int
    box_index: int  # which of the element's geom boxes the line belongs to
    x0: float
    y0: float
    x1: float
    y1: float
    start: int
    end: int
    char_x: list[float] | None  # x0, x1 per text character in [start, end); None for vertical text


@dataclass
class BuiltText:
    """Text rebuilt from the text layer with its lines and, per text char, the source char
    (page char index, or -1 for an inserted space). ``droppable`` holds text positions of
    line-final hyphens that joined two lines without a space -- a broken word's hyphen or a
    compound's (only when ``keep_hyphens``); ``hyphens`` the line-break hyphens left for a
    document-level decision (only when ``defer_hyphens``)."""

    text: str
    lines: list[TextLine]
    source: list[int]
    line_of: list[int]
    droppable: set[int] = field(default_factory=set)
    #: with ``defer_hyphens``: (text position, token before, token after) of each line-break
    #: hyphen left in the text for a document-level decision (:mod:`.hyphenation`)
    hyphens: list[tuple[int, str, str]] = field(default_factory=list)


@dataclass
class _Fragment:
    """Chars of one MuPDF line inside a box; (u, v) is the box in the line's reading frame."""

    idx: list[int]
    x0: float
    y0: float
    x1: float
    y1: float
    direction: int
    u0: float = 0.0
    v0: float = 0.0
    u1: float = 0.0
    v1: float = 0.0

    def __post_init__(self) -> None:
        self.u0, self.v0, self.u1, self.v1 = _frame(self.direction, self.x0, self.y0, self.x1, self.y1)

    @property
    def height(self) -> float:
        return self.v1 - self.v0

    @property
    def horizontal(self) -> bool:
        return self.direction in (RIGHT, LEFT)


def _fragments(pc: PageChars, indices: np.ndarray) -> list[_Fragment]:
    """Split selected chars into per-MuPDF-line fragments (whitespace-only fragments dropped)."""
    out: list[_Fragment] = []
    if not len(indices):
        return out
    lines = pc.line[indices]
    cuts = np.flatnonzero(np.diff(lines)) + 1
    is_solid = pc.solid
    for part in np.split(indices, cuts):
        solid = part[is_solid[part]]
        if not len(solid):
            continue
        out.append(
            _Fragment(
                idx=part.tolist(),
                x0=float(pc.x0[solid].min()),
                y0=float(pc.y0[solid].min()),
                x1=float(pc.x1[solid].max()),
                y1=float(pc.y1[solid].max()),
                direction=pc.line_dir[int(pc.line[part[0]])],
            )
        )
    return out


def _merge_fragments(frags: list[_Fragment], merge_overlap: float) -> list[list[_Fragment]]:
    """Group fragments into visual lines, in reading order, each fragment list in text order.

    Works in each writing direction's reading frame (upright, upside down, rotated either way):
    a fragment joins a line when its overlap across the text direction with the line's seed
    fragment exceeds ``merge_overlap`` x the smaller extent, and it does not sit on top of a
    fragment of that line. Lines of the dominant direction come first.
    """
    by_direction: dict[int, list[_Fragment]] = {}
    for frag in frags:
        by_direction.setdefault(frag.direction, []).append(frag)
    ordered: list[list[_Fragment]] = []
    weight = {d: sum(len(f.idx) for f in fs) for d, fs in by_direction.items()}
    for direction in sorted(by_direction, key=lambda d: (-weight[d], d)):
        ordered.extend(_merge_same_direction(by_direction[direction], merge_overlap))
    return ordered


def _merge_same_direction(frags: list[_Fragment], merge_overlap: float) -> list[list[_Fragment]]:
    lines: list[list[_Fragment]] = []
    seeds: list[_Fragment] = []
    for frag in sorted(frags, key=lambda f: ((f.v0 + f.v1) * 0.5, f.u0)):
        target = -1
        for k in range(len(lines) - 1, max(-1, len(lines) - 4), -1):  # recent lines only
            seed = seeds[k]
            overlap = min(seed.v1, frag.v1) - max(seed.v0, frag.v0)
            if overlap <= merge_overlap * max(1e-6, min(seed.height, frag.height)):
                continue
            if any(min(o.u1, frag.u1) - max(o.u0, frag.u0) > 0.5 * min(o.u1 - o.u0, frag.u1 - frag.u0) for o in lines[k]):
                continue  # on top of each other along the text: two lines, not one
            target = k
            break
        if target < 0:
            lines.append([frag])
            seeds.append(frag)
        else:
            lines[target].append(frag)
    for line in lines:
        line.sort(key=lambda f: f.u0)
    lines.sort(key=lambda ln: min(f.v0 for f in ln))
    return lines


def _is_lower(c: str) -> bool:
    return c.isalpha() and c.islower()


#: How a line-final hyphen joins the next line (see :func:`hyphen_join`).
JOIN_SPACE, JOIN_DROP, JOIN_KEEP = "space", "drop", "keep"


def hyphen_join(token: str, first: str, lexicon: Lexicon | None = None) -> str:
    """How a line ending in ``token`` (its last run of non-space chars) joins a line starting
    with ``first`` (its first run of non-space chars, or at least its first char):
    ``JOIN_SPACE`` (with a space), ``JOIN_DROP`` (broken word: drop the final hyphen, no space)
    or ``JOIN_KEEP`` (hyphenated compound broken after its hyphen: keep the hyphen, no space).

    A soft hyphen is always dropped. A free-standing hyphen (a dash) or a next line starting
    with punctuation joins with a space. Otherwise :func:`.hyphenation.decide` judges from the
    words either side (the document's own spellings in ``lexicon`` when given, the form --
    digits, capitals, earlier hyphens -- and word frequencies): "treat-" + "ment" drops the
    hyphen, "N-domain-" + "selective", "FAA-" + "approved", "non-" + "Hodgkin",
    "angiotensin-" + "converting" keep it.
    """
    if _needs_space(token, first):
        return JOIN_SPACE
    if token[-1] == _SOFT_HYPHEN:
        return JOIN_DROP
    return JOIN_DROP if decide(token[:-1], first, lexicon) == DROP else JOIN_KEEP


def _needs_space(token: str, first: str) -> bool:
    """Lines ending in ``token`` and starting with ``first`` join with a space (no line-break
    hyphen between them)."""
    if not token or token[-1] not in HYPHENS or not first:
        return True
    if token[-1] == _SOFT_HYPHEN:
        return False
    return len(token) < 2 or not first[0].isalnum()


def _head_token(chars: Sequence[str], norm: Sequence[int]) -> str:
    """The first run of non-space chars of a line (``norm``: its char indices, -1 = space)."""
    out: list[str] = []
    for i in norm:
        if i < 0 or chars[i].isspace():
            break
        out.append(chars[i])
    return "".join(out)


def _tail_token(text: list[str], start: int) -> str:
    """The last run of non-space chars of ``text`` (not reaching before ``start``)."""
    k = len(text)
    while k > start and not text[k - 1].isspace():
        k -= 1
    return "".join(text[k:])


def _across_extent(pc: PageChars, solid: list[int], horizontal: bool) -> tuple[float, float, float, float]:
    """A line's extent across the text (y for horizontal lines, x for vertical ones): the median
    of its glyphs' extents, widened to cover every glyph centre; also the centres' range."""
    a0, a1 = (pc.y0, pc.y1) if horizontal else (pc.x0, pc.x1)
    a0, a1 = a0.take(solid), a1.take(solid)
    lo, hi = float(a0.min()), float(a1.max())
    if lo == a0.max() and hi == a1.min():  # all glyphs alike (the usual case)
        mid = (lo + hi) * 0.5
        return lo, hi, mid, mid
    mid_all = (a0 + a1) * 0.5
    c0, c1 = float(mid_all.min()), float(mid_all.max())
    k = len(solid) // 2
    lo, hi = float(np.partition(a0, k)[k]), float(np.partition(a1, k)[k])
    return min(lo, c0), max(hi, c1), c0, c1


def _separate_lines(lines: list[TextLine], across: list[tuple[int, float, float]]) -> None:
    """Cut consecutive lines of one box whose boxes overlap at the middle of their overlap
    across the text, never past a glyph centre (``across``: direction and glyph-centre range
    per line). Lines side by side (no overlap along the text, e.g. table header cells) are left
    alone: their boxes do not intersect."""
    for k in range(len(lines) - 1):
        (da, ca0, ca1), (db, cb0, cb1) = across[k], across[k + 1]
        if da != db:
            continue
        a, b = lines[k], lines[k + 1]
        along = (a.x0, a.x1, b.x0, b.x1) if da in (RIGHT, LEFT) else (a.y0, a.y1, b.y0, b.y1)
        if min(along[1], along[3]) <= max(along[0], along[2]):
            continue
        # extents in the reading frame: v grows from one line to the next
        if da == RIGHT:
            va1, vb0, ca, cb = a.y1, b.y0, ca1, cb0
        elif da == LEFT:
            va1, vb0, ca, cb = -a.y0, -b.y1, -ca0, -cb1
        elif da == DOWN:
            va1, vb0, ca, cb = -a.x0, -b.x1, -ca0, -cb1
        else:
            va1, vb0, ca, cb = a.x1, b.x0, ca1, cb0
        if va1 <= vb0 or ca > cb:
            continue  # apart already, or glyphs interleaved (not two stacked lines)
        cut = min(max((va1 + vb0) * 0.5, ca), cb)
        if da == RIGHT:
            a.y1, b.y0 = cut, cut
        elif da == LEFT:
            a.y0, b.y1 = -cut, -cut
        elif da == DOWN:
            a.x0, b.x1 = -cut, -cut
        else:
            a.x1, b.x0 = cut, cut


def build_lines(
    layer_pages: Sequence[PageChars],
    selections: Sequence[np.ndarray],
    merge_overlap: float = 0.5,
    *,
    keep_hyphens: bool = False,
    defer_hyphens: bool = False,
) -> BuiltText:
    """Rebuild an element's text from the chars selected in each of its boxes.

    ``layer_pages[i]``/``selections[i]`` are the page and char indices of geom box ``i``.
    Whitespace is normalized to single spaces; lines are joined with a space, or without one
    after a line-final hyphen that breaks a word or a hyphenated compound (:func:`hyphen_join`).
    A word-breaking hyphen is dropped unless ``keep_hyphens``; then its position is listed in
    ``droppable``, as is a kept compound hyphen at a line end (content from another backend may
    or may not have either). With ``defer_hyphens`` every line-break hyphen but a soft one stays
    in the text and is listed in ``hyphens`` with the words either side, for
    :func:`.hyphenation.resolve_document` to decide with the whole document as evidence. Line
    boxes are tight across the text (see the module docstring).
    """
    text: list[str] = []
    source: list[int] = []
    line_of: list[int] = []
    xs: list[tuple[float, float]] = []  # per text char (x0, x1), NaN for inserted chars
    lines: list[TextLine] = []
    droppable: set[int] = set()
    deferred: list[tuple[int, str, str]] = []
    for box_index, (pc, sel) in enumerate(zip(layer_pages, selections, strict=True)):
        chars = pc.chars
        x0s, x1s, space = pc._columns
        box_first = len(lines)
        across: list[tuple[int, float, float]] = []  # per line of this box: direction, glyph-centre range
        for group in _merge_fragments(_fragments(pc, sel), merge_overlap):
            # characters of the visual line with inserted spaces between fragments
            seq: list[int] = []
            for k, frag in enumerate(group):
                if k and seq and not space[seq[-1]] and not space[frag.idx[0]]:
                    seq.append(-1)
                seq.extend(frag.idx)
            # normalize whitespace inside the line, strip both ends
            norm: list[int] = []
            for i in seq:
                is_space = i < 0 or space[i]
                if is_space and (not norm or norm[-1] < 0 or space[norm[-1]]):
                    continue
                norm.append(i)
            while norm and (norm[-1] < 0 or space[norm[-1]]):
                norm.pop()
            if not norm:
                continue
            # join with the previous line (space, or de-hyphenation)
            if text:
                tail, head = _tail_token(text, lines[-1].start), _head_token(chars, norm)
                soft = tail[-1:] == _SOFT_HYPHEN
                if not (defer_hyphens or keep_hyphens):
                    join = hyphen_join(tail, head)
                else:  # only space or not matters here
                    join = JOIN_SPACE if _needs_space(tail, head) else JOIN_DROP if soft else JOIN_KEEP
                if join == JOIN_SPACE:
                    text.append(" ")
                    source.append(-1)
                    line_of.append(-1)
                    xs.append((math.nan, math.nan))
                elif keep_hyphens:
                    droppable.add(len(text) - 1)
                elif defer_hyphens and not soft:
                    deferred.append((len(text) - 1, tail[:-1], head))
                elif join == JOIN_DROP:
                    text.pop()
                    source.pop()
                    line_of.pop()
                    xs.pop()
                    lines[-1].end -= 1
                    if lines[-1].char_x is not None:
                        del lines[-1].char_x[-2:]
                # JOIN_KEEP: the hyphen stays, no space
            start = len(text)
            line_no = len(lines)
            solid: list[int] = []
            for i in norm:
                if i < 0:
                    text.append(" ")
                    source.append(-1)
                    xs.append((math.nan, math.nan))
                    line_of.append(line_no)
                    continue
                c = chars[i]
                if space[i]:
                    c = " "
                else:
                    solid.append(i)
                extent = (x0s[i], x1s[i])
                for cc in c:
                    text.append(cc)
                    source.append(i)
                    line_of.append(line_no)
                    xs.append(extent)
            horizontal = group[0].horizontal
            lo, hi, c0, c1 = _across_extent(pc, solid, horizontal)
            if horizontal:
                x0, x1, y0, y1 = min(f.x0 for f in group), max(f.x1 for f in group), lo, hi
            else:
                x0, x1, y0, y1 = lo, hi, min(f.y0 for f in group), max(f.y1 for f in group)
            across.append((group[0].direction, c0, c1))
            lines.append(
                TextLine(
                    page=pc.page,
                    box_index=box_index,
                    x0=x0,
                    y0=y0,
                    x1=x1,
                    y1=y1,
                    start=start,
                    end=len(text),
                    char_x=_fill_gaps(xs[start:]) if horizontal else None,
                )
            )
        _separate_lines(lines[box_first:], across)
    return BuiltText("".join(text), lines, source, line_of, droppable, deferred)



def _fill_gaps(xs: Sequence[tuple[float, float]]) -> list[float]:
    """Flatten (x0, x1) pairs; a char without a box spans the gap between its neighbours."""
    out: list[float] = []
    n = len(xs)
    for k, (a, b) in enumerate(xs):
        if not math.isnan(a):
            out += (a, b)
            continue
        left = next((xs[j][1] for j in range(k - 1, -1, -1) if not math.isnan(xs[j][1])), None)
        right = next((xs[j][0] for j in range(k + 1, n) if not math.isnan(xs[j][0])), None)
        if left is None and right is None:
            out += (0.0, 0.0)
        elif left is None or right is None:
            edge = left if left is not None else right
            assert edge is not None
            out += (edge, edge)
        else:
            out += (left, right) if right >= left else (left, left)
    return out


def lines_to_spans(
    lines: Iterable[TextLine],
    pages: dict[int, PageChars] | Sequence[PageChars],
    with_chars: bool = True,
) -> dict[int, list[ParsingBoundingBox]]:
    """Line spans as ParsingBoundingBoxes (page fractions) grouped by geom box index.

    ``pages`` maps a 1-based page number (dict) or a box index (sequence) to its PageChars.
    Without ``with_chars`` the spans carry no character information.
    """
    out: dict[int, list[ParsingBoundingBox]] = {}
    for ln in lines:
        pc = pages[ln.page] if isinstance(pages, dict) else pages[ln.box_index]
        w, h = pc.width, pc.height
        kwargs: dict[str, Any] = {}
        if with_chars:
            kwargs = {"char_start": ln.start, "char_end": ln.end}
            if ln.char_x is not None:
                kwargs["char_x"] = tuple(v / w for v in ln.char_x)
        out.setdefault(ln.box_index, []).append(
            ParsingBoundingBox(ln.page, ln.x0 / w, ln.y0 / h, ln.x1 / w, ln.y1 / h, **kwargs)
        )
    return out


def clip_to_page(x0: float, y0: float, x1: float, y1: float, w: float, h: float) -> tuple[float, float, float, float]:
    """The box clipped to a ``w`` x ``h`` page."""
    return (min(max(x0, 0.0), w), min(max(y0, 0.0), h), min(max(x1, 0.0), w), min(max(y1, 0.0), h))
