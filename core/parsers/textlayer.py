"""The PDF text layer as character boxes, and element text rebuilt from it.

:class:`TextLayer` opens a PDF once and extracts each page's characters (PyMuPDF ``rawdict``)
once, into flat arrays in the coordinates of the page *as displayed* (crop box and /Rotate
applied) so they match element boxes, which are always fractions of the displayed page.

:func:`build_lines` turns the characters inside element boxes into visual lines (thesis §3.3
step 3: fragments of one line are merged when their vertical overlap exceeds a fraction of the
smaller height) and into the element text with, for each line, the character range it covers
and every character's horizontal extent -- the material exact chunk boxes are made of.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..model import ParsingBoundingBox

__all__ = [
    "PageChars", "TextLayer", "TextLine", "BuiltText", "build_lines", "HYPHENS", "lines_to_spans",
    "RIGHT", "DOWN", "LEFT", "UP",
]

#: Hyphen characters that may be dropped when a word is broken across lines.
HYPHENS = frozenset("-\u2010\u00ad")
_SOFT_HYPHEN = "\u00ad"
# A char belongs to a box when its centre lies inside the box grown by this many points.
BOX_TOLERANCE_PT = 1.5


def _text_flags() -> int:
    import pymupdf

    # ligatures expanded (no PRESERVE_LIGATURES), whitespace kept, nothing outside the media box
    return int(pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP)


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
        space = np.fromiter((c.isspace() for c in self.chars), dtype=bool, count=n)
        new = np.ones(n, dtype=bool)
        new[1:] = space[1:] | space[:-1] | (self.line[1:] != self.line[:-1])
        starts = np.flatnonzero(new)
        word = np.cumsum(new) - 1
        cx = (np.minimum.reduceat(self.x0, starts) + np.maximum.reduceat(self.x1, starts)) * 0.5
        cy = (np.minimum.reduceat(self.y0, starts) + np.maximum.reduceat(self.y1, starts)) * 0.5
        return cx[word], cy[word]

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
        line_ids: list[int] = []
        sizes: list[float] = []
        bolds: list[bool] = []
        directions: list[int] = []
        line_id = -1
        for block in raw["blocks"]:
            if block.get("type") != 0:
                continue
            for line in block["lines"]:
                line_id += 1
                dx, dy = line.get("dir", (1.0, 0.0))
                ddx, ddy = m.a * dx + m.c * dy, m.b * dx + m.d * dy  # direction as displayed
                directions.append(_direction(ddx, ddy))
                for span in line["spans"]:
                    size = float(span.get("size", 0.0))
                    bold = bool(span.get("flags", 0) & 16) or _bold_font_name(span.get("font", ""))
                    for ch in span["chars"]:
                        c = ch["c"]
                        if not c:
                            continue
                        chars.append(c)
                        coords.append(ch["bbox"])
                        line_ids.append(line_id)
                        sizes.append(size)
                        bolds.append(bold)
        n = len(chars)
        box = np.asarray(coords, dtype=np.float64).reshape(n, 4)
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
            line=np.asarray(line_ids, dtype=np.int64),
            size=np.asarray(sizes, dtype=np.float32),
            bold=np.asarray(bolds, dtype=bool),
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


def _direction(dx: float, dy: float) -> int:
    if abs(dx) >= abs(dy):
        return RIGHT if dx >= 0 else LEFT
    return DOWN if dy > 0 else UP


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
        self._cache: OrderedDict[int, PageChars] = OrderedDict()
        self._cache_pages = max(1, cache_pages)

    @property
    def page_count(self) -> int:
        return int(self._doc.page_count)

    def page(self, number: int) -> PageChars:
        """Characters of 1-based page ``number``."""
        hit = self._cache.get(number)
        if hit is not None:
            self._cache.move_to_end(number)
            return hit
        chars = PageChars.from_page(self._doc.load_page(number - 1), number)
        self._cache[number] = chars
        while len(self._cache) > self._cache_pages:
            self._cache.popitem(last=False)
        return chars

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
    line-final hyphens that joined a broken word (only when ``keep_hyphens``)."""

    text: str
    lines: list[TextLine]
    source: list[int]
    line_of: list[int]
    droppable: set[int] = field(default_factory=set)


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
    chars = pc.chars
    for part in np.split(indices, cuts):
        solid = [int(i) for i in part if not chars[i].isspace()]
        if not solid:
            continue
        out.append(
            _Fragment(
                idx=[int(i) for i in part],
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


def build_lines(
    layer_pages: Sequence[PageChars],
    selections: Sequence[np.ndarray],
    merge_overlap: float = 0.5,
    *,
    keep_hyphens: bool = False,
) -> BuiltText:
    """Rebuild an element's text from the chars selected in each of its boxes.

    ``layer_pages[i]``/``selections[i]`` are the page and char indices of geom box ``i``.
    Whitespace is normalized to single spaces; lines are joined with a space, or without one
    when a line-final hyphen between lowercase letters breaks a word (the hyphen is dropped
    unless ``keep_hyphens``; then its position is listed in ``droppable``).
    """
    text: list[str] = []
    source: list[int] = []
    line_of: list[int] = []
    xs: list[tuple[float, float]] = []  # per text char (x0, x1), NaN for inserted chars
    lines: list[TextLine] = []
    droppable: set[int] = set()
    for box_index, (pc, sel) in enumerate(zip(layer_pages, selections, strict=True)):
        chars = pc.chars
        for group in _merge_fragments(_fragments(pc, sel), merge_overlap):
            # characters of the visual line with inserted spaces between fragments
            seq: list[int] = []
            for k, frag in enumerate(group):
                if k and seq and not chars[seq[-1]].isspace() and not chars[frag.idx[0]].isspace():
                    seq.append(-1)
                seq.extend(frag.idx)
            # normalize whitespace inside the line, strip both ends
            norm: list[int] = []
            for i in seq:
                is_space = i < 0 or chars[i].isspace()
                if is_space and (not norm or norm[-1] < 0 or chars[norm[-1]].isspace()):
                    continue
                norm.append(i)
            while norm and (norm[-1] < 0 or chars[norm[-1]].isspace()):
                norm.pop()
            if not norm:
                continue
            first = chars[norm[0]]
            # join with the previous line (space, or de-hyphenation)
            if text:
                prev = text[-1]
                broken = prev in HYPHENS and (
                    prev == _SOFT_HYPHEN or (len(text) > 1 and _is_lower(text[-2]) and _is_lower(first[:1]))
                )
                if broken and not keep_hyphens:
                    text.pop()
                    source.pop()
                    line_of.pop()
                    xs.pop()
                    lines[-1].end -= 1
                    if lines[-1].char_x is not None:
                        del lines[-1].char_x[-2:]
                elif broken:
                    droppable.add(len(text) - 1)
                else:
                    text.append(" ")
                    source.append(-1)
                    line_of.append(-1)
                    xs.append((math.nan, math.nan))
            start = len(text)
            line_no = len(lines)
            for i in norm:
                if i < 0:
                    text.append(" ")
                    source.append(-1)
                    xs.append((math.nan, math.nan))
                    line_of.append(line_no)
                    continue
                c = chars[i]
                if c.isspace():
                    c = " "
                for cc in c:
                    text.append(cc)
                    source.append(i)
                    line_of.append(line_no)
                    xs.append((float(pc.x0[i]), float(pc.x1[i])))
            horizontal = group[0].horizontal
            lines.append(
                TextLine(
                    page=pc.page,
                    box_index=box_index,
                    x0=min(f.x0 for f in group),
                    y0=min(f.y0 for f in group),
                    x1=max(f.x1 for f in group),
                    y1=max(f.y1 for f in group),
                    start=start,
                    end=len(text),
                    char_x=_fill_gaps(xs[start:]) if horizontal else None,
                )
            )
    return BuiltText("".join(text), lines, source, line_of, droppable)


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
