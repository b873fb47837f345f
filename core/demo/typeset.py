"""A small typesetter on PyMuPDF's ``TextWriter``: two-column flow, headings, lists, boxes, figures
and tables that continue over a page break with their header row repeated (used by the sample)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# -- page geometry (A4, points) -------------------------------------------------------------------
PAGE_W, PAGE_H = 595.0, 842.0
MARGIN_X = 54.0
TOP, BOTTOM = 70.0, PAGE_H - 62.0
GUTTER = 20.0
FULL_W = PAGE_W - 2 * MARGIN_X
COL_W = (FULL_W - GUTTER) / 2

BODY_SIZE, BODY_LEAD = 9.5, 12.6
BLACK = (0.0, 0.0, 0.0)
INK = (0.1, 0.2, 0.45)  # headings
GREY = (0.35, 0.35, 0.35)
BOX_FILL = (0.92, 0.95, 1.0)
BOX_LINE = (0.3, 0.45, 0.7)
HEAD_FILL = (0.85, 0.89, 0.96)

# fixed dates keep the output byte-identical between runs
_PDF_DATE = "D:20240101000000Z"


# == typesetting primitives ========================================================================
class _Fonts:
    """The four embedded Helvetica faces, keyed by style ("", "b", "i", "bi")."""

    def __init__(self) -> None:
        import pymupdf

        self.by_style = {s: pymupdf.Font(n) for s, n in (("", "helv"), ("b", "hebo"), ("i", "heit"), ("bi", "hebi"))}

    def width(self, text: str, style: str, size: float) -> float:
        return self.by_style[style].text_length(text, fontsize=size)


Run = tuple[str, str]  # (text, style)
Line = list[tuple[float, str, str]]  # [(x offset, text, style)]


def _runs(markup: str, base: str = "") -> list[Run]:
    """``**bold**`` and ``*italic*`` markup -> styled runs."""
    out: list[Run] = []
    for part in re.split(r"(\*\*[^*]+\*\*|\*[^*]+\*)", markup):
        if not part:
            continue
        if part.startswith("**"):
            out.append((part[2:-2], "".join(sorted(set(base + "b")))))
        elif part.startswith("*"):
            out.append((part[1:-1], "".join(sorted(set(base + "i")))))
        else:
            out.append((part, base))
    return out


def _wrap(fonts: _Fonts, runs: Sequence[Run], width: float, size: float) -> list[Line]:
    """Greedy ragged-right line breaking of styled runs at spaces."""
    words: list[tuple[str, str, bool]] = []  # (word, style, space_before)
    pending_space = False
    for text, style in runs:
        for token in re.split(r"(\s+)", text):
            if not token:
                continue
            if token.isspace():
                pending_space = True
                continue
            words.append((token, style, pending_space and bool(words)))
            pending_space = False
    lines: list[Line] = []
    line: Line = []
    x = 0.0
    for word, style, space_before in words:
        w = fonts.width(word, style, size)
        gap = fonts.width(" ", style, size) if space_before and line else 0.0
        if line and x + gap + w > width:
            lines.append(line)
            line, x, gap = [], 0.0, 0.0
        if gap:
            # the space belongs to the text so the text layer reads "word word"
            px, ptext, pstyle = line[-1]
            line[-1] = (px, ptext + " ", pstyle)
        line.append((x + gap, word, style))
        x += gap + w
    if line:
        lines.append(line)
    return lines


class _Canvas:
    """Pages of a new PDF plus per-page, per-colour text writers (text is drawn over shapes)."""

    def __init__(self, fonts: _Fonts) -> None:
        import pymupdf

        self.pymupdf = pymupdf
        self.fonts = fonts
        self.doc = pymupdf.open()
        self._writers: dict[int, list[tuple[tuple[float, ...], Any]]] = {}
        self.toc: list[list[Any]] = []

    @property
    def page_count(self) -> int:
        return self.doc.page_count

    def new_page(self) -> int:
        self.doc.new_page(width=PAGE_W, height=PAGE_H)
        return self.doc.page_count - 1

    def text(self, pno: int, x: float, baseline: float, text: str, style: str, size: float,
             color: tuple[float, ...] = BLACK) -> None:
        # consecutive text of one colour shares a writer, so the content stream keeps reading order
        writers = self._writers.setdefault(pno, [])
        if not writers or writers[-1][0] != color:
            writers.append((color, self.pymupdf.TextWriter(self.doc[pno].rect, color=color)))
        tw = writers[-1][1]
        tw.append((x, baseline), text, font=self.fonts.by_style[style], fontsize=size)

    def line_text(self, pno: int, x: float, top: float, line: Line, size: float,
                  color: tuple[float, ...] = BLACK) -> None:
        baseline = top + size * 0.93
        for dx, text, style in line:
            self.text(pno, x + dx, baseline, text, style, size, color)

    def rect(self, pno: int, rect: tuple[float, float, float, float], *, fill: tuple[float, ...] | None = None,
             stroke: tuple[float, ...] | None = None, width: float = 0.6) -> None:
        self.doc[pno].draw_rect(rect, color=stroke, fill=fill, width=width if stroke else 0)

    def hline(self, pno: int, x0: float, x1: float, y: float, color: tuple[float, ...] = GREY,
              width: float = 0.5) -> None:
        self.doc[pno].draw_line((x0, y), (x1, y), color=color, width=width)

    def image(self, pno: int, rect: tuple[float, float, float, float], png: bytes) -> None:
        self.doc[pno].insert_image(rect, stream=png)

    def finish(self, metadata: dict[str, str]) -> bytes:
        for pno, writers in self._writers.items():
            for _color, tw in writers:
                tw.write_text(self.doc[pno])
        self.doc.set_metadata({**metadata, "creationDate": _PDF_DATE, "modDate": _PDF_DATE})
        self.doc.set_toc(self.toc)
        self.doc.subset_fonts()
        return self.doc.tobytes(garbage=4, deflate=True, no_new_id=True)


# == layout units ==================================================================================
@dataclass
class _Unit:
    """An unbreakable vertical slice (a text line, a box, a figure, a table row)."""

    height: float
    draw: Callable[[_Canvas, int, float, float], None]  # (canvas, page index, x, top)
    gap_before: float = 0.0
    keep_with_next: bool = False
    toc: tuple[int, str] | None = None


@dataclass
class _Table:
    """A full-width table; when it breaks, ``continued`` + the header row open the next page."""

    caption: str
    header: list[str]
    rows: list[list[str]]
    col_fracs: list[float]
    note: str = ""


@dataclass
class _Columns:
    """Blocks flowing through two columns."""

    blocks: list[Any] = field(default_factory=list)


@dataclass
class _Heading:
    level: int
    text: str


@dataclass
class _Para:
    text: str


@dataclass
class _List:
    items: list[str]
    ordered: bool = False


@dataclass
class _Box:
    title: str
    text: str


@dataclass
class _Figure:
    caption: str
    height: float


_HEAD_SIZE = {1: 12.5, 2: 10.8, 3: 9.8}
_HEAD_GAP = {1: 11.0, 2: 8.0, 3: 6.0}


def _text_units(fonts: _Fonts, markup: str, width: float, *, size: float = BODY_SIZE, lead: float = BODY_LEAD,
                style: str = "", color: tuple[float, ...] = BLACK, indent: float = 0.0, gap: float = 0.0,
                keep: bool = False, marker: str = "") -> list[_Unit]:
    lines = _wrap(fonts, _runs(markup, style), width - indent, size)
    units = []
    for i, line in enumerate(lines):
        def draw(c: _Canvas, pno: int, x: float, top: float, line: Line = line, first: bool = i == 0) -> None:
            text_top = top + (lead - size) / 2
            if first and marker:
                c.text(pno, x + indent - 11.0, text_top + size * 0.93, marker, "", size, color)
            c.line_text(pno, x + indent, text_top, line, size, color)

        # keep the first two lines of a paragraph together (no orphan at a column bottom)
        units.append(_Unit(lead, draw, gap if i == 0 else 0.0, keep or (i == 0 and len(lines) > 1)))
    return units


def _block_units(fonts: _Fonts, block: Any, width: float, counters: list[int]) -> list[_Unit]:
    if isinstance(block, _Heading):
        counters[block.level - 1] += 1
        for j in range(block.level, len(counters)):
            counters[j] = 0
        number = ".".join(str(n) for n in counters[: block.level])
        title = f"{number}{'.' if block.level == 1 else ''} {block.text}"
        size = _HEAD_SIZE[block.level]
        units = _text_units(fonts, title, width, size=size, lead=size * 1.3, style="b", color=INK,
                            gap=_HEAD_GAP[block.level], keep=True)
        units[0].toc = (block.level, title)
        return units
    if isinstance(block, _Para):
        return _text_units(fonts, block.text, width, gap=4.5)
    if isinstance(block, _List):
        units = []
        for n, item in enumerate(block.items, 1):
            marker = f"{n}." if block.ordered else "\u2022"
            units += _text_units(fonts, item, width, indent=14.0, gap=4.5 if n == 1 else 1.8, marker=marker)
        return units
    if isinstance(block, _Box):
        return [_box_unit(fonts, block, width)]
    if isinstance(block, _Figure):
        return [_figure_unit(fonts, block, width)]
    raise TypeError(f"unknown block {block!r}")


def _box_unit(fonts: _Fonts, box: _Box, width: float) -> _Unit:
    pad = 6.0
    title = _wrap(fonts, _runs(box.title, "b"), width - 2 * pad, BODY_SIZE)
    body = _wrap(fonts, _runs(box.text), width - 2 * pad, BODY_SIZE)
    height = (len(title) + len(body)) * BODY_LEAD + 2 * pad + 2.0

    def draw(c: _Canvas, pno: int, x: float, top: float) -> None:
        c.rect(pno, (x, top, x + width, top + height), fill=BOX_FILL, stroke=BOX_LINE, width=0.8)
        y = top + pad
        for line in title:
            c.line_text(pno, x + pad, y, line, BODY_SIZE, INK)
            y += BODY_LEAD
        y += 2.0
        for line in body:
            c.line_text(pno, x + pad, y, line, BODY_SIZE)
            y += BODY_LEAD

    return _Unit(height, draw, gap_before=8.0)


def _flowchart_png(width: float, height: float) -> bytes:
    """A small treatment-pathway flowchart, drawn as vectors and rasterized (a picture, no text layer)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    steps = [
        "Triple assessment: examination, imaging, core biopsy",
        "Multidisciplinary team review and staging",
        "Surgery of the breast and axillary staging",
        "Adjuvant systemic therapy by tumour subtype",
        "Radiotherapy, then follow-up and survivorship care",
    ]
    gap = 8.0
    box_h = (height - gap * (len(steps) + 1)) / len(steps)
    y = gap
    for i, label in enumerate(steps):
        r = pymupdf.Rect(14, y, width - 14, y + box_h)
        page.draw_rect(r, color=BOX_LINE, fill=(0.95, 0.97, 1.0) if i % 2 else HEAD_FILL, width=0.9)
        inner = pymupdf.Rect(r.x0 + 4, r.y0 + (box_h - 7.5 * 1.25) / 2, r.x1 - 4, r.y1)
        if page.insert_textbox(inner, label, fontsize=7.5, fontname="helv", align=1, color=INK) < 0:
            raise ValueError(f"flowchart label does not fit its box: {label!r}")
        if i < len(steps) - 1:
            mid = width / 2
            page.draw_line((mid, y + box_h), (mid, y + box_h + gap), color=BOX_LINE, width=0.9)
            page.draw_polyline([(mid - 3, y + box_h + gap - 4), (mid, y + box_h + gap), (mid + 3, y + box_h + gap - 4)],
                               color=BOX_LINE, width=0.9)
        y += box_h + gap
    return page.get_pixmap(dpi=150).tobytes("png")


def _figure_unit(fonts: _Fonts, fig: _Figure, width: float) -> _Unit:
    caption = _wrap(fonts, _runs(fig.caption), width, 8.5)
    cap_lead = 10.8
    height = fig.height + 5.0 + len(caption) * cap_lead
    png = _flowchart_png(width, fig.height)

    def draw(c: _Canvas, pno: int, x: float, top: float) -> None:
        c.image(pno, (x, top, x + width, top + fig.height), png)
        y = top + fig.height + 5.0
        for line in caption:
            c.line_text(pno, x, y, line, 8.5, GREY)
            y += cap_lead

    return _Unit(height, draw, gap_before=10.0)


def _row_unit(fonts: _Fonts, cells: list[str], widths: list[float], *, header: bool) -> _Unit:
    pad, size, lead = 3.5, 8.3, 10.4
    wrapped = [_wrap(fonts, _runs(t, "b" if header else ""), w - 2 * pad, size) for t, w in zip(cells, widths, strict=True)]
    height = max(len(w) for w in wrapped) * lead + 2 * pad

    def draw(c: _Canvas, pno: int, x: float, top: float) -> None:
        cx = x
        for lines, w in zip(wrapped, widths, strict=True):
            c.rect(pno, (cx, top, cx + w, top + height), fill=HEAD_FILL if header else None, stroke=GREY, width=0.5)
            y = top + pad
            for line in lines:
                c.line_text(pno, cx + pad, y, line, size, INK if header else BLACK)
                y += lead
            cx += w

    return _Unit(height, draw)


# == page flow =====================================================================================
class _Flow:
    """Places full-width segments and balanced two-column segments onto pages."""

    def __init__(self, canvas: _Canvas) -> None:
        self.c = canvas
        self.pno = canvas.new_page()
        self.y = TOP

    def _new_page(self) -> None:
        self.pno = self.c.new_page()
        self.y = TOP

    def _place(self, unit: _Unit, x: float, top: float) -> None:
        unit.draw(self.c, self.pno, x, top)
        if unit.toc:
            level, title = unit.toc
            self.c.toc.append([level, title, self.pno + 1, {"kind": 1, "to": (x, top), "zoom": 0}])

    # full width ------------------------------------------------------------------------------------
    def full(self, units: list[_Unit], repeat: Callable[[], list[_Unit]] | None = None) -> None:
        """Stack units across the full width; on a page break, ``repeat()`` units open the new page."""
        for i, unit in enumerate(units):
            gap = unit.gap_before if self.y > TOP else 0.0
            need = gap + unit.height
            if unit.keep_with_next and i + 1 < len(units):
                need += units[i + 1].height
            if self.y + need > BOTTOM:
                self._new_page()
                if repeat is not None and i > 0:
                    for r in repeat():
                        self._place(r, MARGIN_X, self.y)
                        self.y += r.height
                gap = 0.0
            self._place(unit, MARGIN_X, self.y + gap)
            self.y += gap + unit.height

    # two columns -----------------------------------------------------------------------------------
    @staticmethod
    def _fill(units: list[_Unit], start: int, height: float) -> int:
        """Index after the last unit that fits in a column of ``height`` starting at ``start``."""
        y, j = 0.0, start
        while j < len(units):
            step = units[j].height + (units[j].gap_before if j > start else 0.0)
            if y + step > height + 1e-6:
                break
            y += step
            j += 1
        greedy = j
        while start < j < len(units) and units[j - 1].keep_with_next:
            j -= 1
        return j if j > start else greedy

    def _column(self, units: list[_Unit], x: float) -> None:
        y = self.y
        for k, unit in enumerate(units):
            if k:
                y += unit.gap_before
            self._place(unit, x, y)
            y += unit.height

    def columns(self, units: list[_Unit]) -> None:
        left_x, right_x = MARGIN_X, MARGIN_X + COL_W + GUTTER
        i, n = 0, len(units)
        while i < n:
            avail = BOTTOM - self.y
            k = self._fill(units, i, avail)
            if k == i:  # not even one unit fits below the cursor
                if self.y == TOP:
                    raise ValueError("a sample layout unit is taller than a column")
                self._new_page()
                continue
            if self._fill(units, k, avail) == n:  # the rest fits on this page: balance the columns
                lo, hi = max(u.height for u in units[i:]), avail
                for _ in range(40):
                    mid = (lo + hi) / 2
                    if self._fill(units, self._fill(units, i, mid), mid) == n:
                        hi = mid
                    else:
                        lo = mid
                k = self._fill(units, i, hi)
                self._column(units[i:k], left_x)
                self._column(units[k:n], right_x)
                self.y += hi + 14.0
                return
            k2 = self._fill(units, k, avail)
            self._column(units[i:k], left_x)
            self._column(units[k:k2], right_x)
            i = k2
            self._new_page()


def _table_units(fonts: _Fonts, table: _Table) -> tuple[list[_Unit], Callable[[], list[_Unit]]]:
    widths = [f * FULL_W for f in table.col_fracs]

    def caption(text: str) -> _Unit:
        lines = _wrap(fonts, _runs(text), FULL_W, 9.0)

        def draw(c: _Canvas, pno: int, x: float, top: float) -> None:
            for k, line in enumerate(lines):
                c.line_text(pno, x, top + k * 11.5, line, 9.0, INK)

        return _Unit(len(lines) * 11.5 + 3.0, draw, gap_before=4.0, keep_with_next=True)

    header = _row_unit(fonts, table.header, widths, header=True)
    header.keep_with_next = True
    units = [caption(table.caption), header]
    units += [_row_unit(fonts, row, widths, header=False) for row in table.rows]
    if table.note:
        units += _text_units(fonts, table.note, FULL_W, size=8.0, lead=10.0, color=GREY, gap=3.0)
    label = table.caption.split(".")[0]

    def repeat() -> list[_Unit]:
        head = _row_unit(fonts, table.header, widths, header=True)
        return [caption(f"**{label.strip('*')} (continued)**"), head]

    return units, repeat


