"""A fictional, born-digital, two-column clinical guideline PDF for demos and tests.

:func:`write_sample_pdf` typesets the sample with PyMuPDF only (no downloads, no shared data), so
the README's main job runs from a fresh clone. The document has a title block, numbered headings
on three levels, paragraphs, bulleted and numbered lists, recommendation boxes, a raster figure
with a caption, a full-width table that continues on the next page with its header row repeated,
and running page headers/footers with page numbers. All text is invented sample content.

Text is set with PyMuPDF's ``TextWriter`` and embedded Helvetica (no ligatures, so the text layer
reads back exactly as written). Output bytes are deterministic for a given PyMuPDF version.

Command line: ``python -m grounded.samples OUT.pdf``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .serialization import atomic_write_bytes

__all__ = ["write_sample_pdf", "sample_pdf_bytes", "SAMPLE_TITLE"]

SAMPLE_TITLE = "Clinical practice guideline: management of early-stage breast cancer"

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


def _title_units(fonts: _Fonts) -> list[_Unit]:
    units = _text_units(fonts, _DISCLAIMER, FULL_W, size=8.0, lead=10.0, style="b", color=(0.65, 0.1, 0.1))
    units += _text_units(fonts, SAMPLE_TITLE, FULL_W, size=19.0, lead=23.0, style="b", color=INK, gap=10.0)
    units[-1].toc = (1, SAMPLE_TITLE)
    units += _text_units(fonts, _AUTHORS, FULL_W, size=9.5, lead=12.0, style="i", color=GREY, gap=6.0)
    units += _text_units(fonts, _SUMMARY, FULL_W, size=9.5, lead=12.6, gap=10.0)

    def rule(c: _Canvas, pno: int, x: float, top: float) -> None:
        c.hline(pno, x, x + FULL_W, top + 6.0, INK, 0.8)

    units.append(_Unit(12.0, rule, gap_before=2.0))
    return units


def _running_heads(canvas: _Canvas) -> None:
    total = canvas.page_count
    for pno in range(total):
        canvas.text(pno, MARGIN_X, 40.0, "Northbridge Oncology Guideline Group (fictional)", "i", 8.0, GREY)
        right = "Early-stage breast cancer \u2014 SAMPLE v0.9"
        canvas.text(pno, PAGE_W - MARGIN_X - canvas.fonts.width(right, "", 8.0), 40.0, right, "", 8.0, GREY)
        canvas.hline(pno, MARGIN_X, PAGE_W - MARGIN_X, 45.0)
        canvas.hline(pno, MARGIN_X, PAGE_W - MARGIN_X, PAGE_H - 44.0)
        left = "Sample document for software testing \u2014 not for clinical use"
        canvas.text(pno, MARGIN_X, PAGE_H - 32.0, left, "", 7.5, GREY)
        number = f"Page {pno + 1} of {total}"
        canvas.text(pno, PAGE_W - MARGIN_X - canvas.fonts.width(number, "", 8.0), PAGE_H - 32.0, number, "", 8.0, GREY)


def sample_pdf_bytes() -> bytes:
    """The sample guideline as PDF bytes (deterministic for a given PyMuPDF version)."""
    fonts = _Fonts()
    canvas = _Canvas(fonts)
    flow = _Flow(canvas)
    flow.full(_title_units(fonts))
    counters = [0, 0, 0]
    for segment in _DOCUMENT:
        if isinstance(segment, _Table):
            units, repeat = _table_units(fonts, segment)
            flow.full(units, repeat)
            flow.y += 10.0
        else:
            units = [u for block in segment.blocks for u in _block_units(fonts, block, COL_W, counters)]
            flow.columns(units)
    _running_heads(canvas)
    return canvas.finish({
        "title": SAMPLE_TITLE + " (SAMPLE)",
        "author": "Northbridge Oncology Guideline Group (fictional)",
        "subject": "Fictional sample guideline for testing document parsing; not medical advice",
        "keywords": "sample, fictional, breast cancer, guideline, grounded",
        "creator": "grounded.samples",
        "producer": "PyMuPDF",
    })


def write_sample_pdf(path: str | Path) -> Path:
    """Write the sample guideline PDF to ``path`` atomically and return the path."""
    return atomic_write_bytes(path, sample_pdf_bytes())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grounded.samples", description=write_sample_pdf.__doc__)
    parser.add_argument("out", type=Path, help="where to write the sample PDF (e.g. sample_guideline.pdf)")
    args = parser.parse_args(argv)
    try:
        path = write_sample_pdf(args.out)
    except OSError as exc:
        sys.stderr.write(f"grounded.samples: error: cannot write {args.out}: {exc.strerror or exc}\n")
        return 1
    sys.stdout.write(f"{path}\n")
    return 0


# == content (fictional) ===========================================================================
_DISCLAIMER = (
    "SAMPLE DOCUMENT \u2014 fictional guideline generated for software testing. Organisations, panel, "
    "evidence summaries and recommendations are invented; not reviewed; not for patient care."
)
_AUTHORS = "Northbridge Oncology Guideline Group (fictional) \u00b7 Version 0.9 (sample) \u00b7 Guideline NOG-BC-01"
_SUMMARY = (
    "**Summary.** This sample guideline describes the assessment and treatment of adults with early-stage "
    "invasive breast cancer. It covers diagnosis and staging, surgery of the breast and axilla, adjuvant and "
    "neoadjuvant systemic therapy, radiotherapy and follow-up. Recommendations are graded by level of evidence "
    "(I\u2013IV) and strength (strong or conditional). The text is written to resemble a real guideline so that "
    "parsers, chunkers and highlighters can be tested on realistic structure: numbered sections, lists, boxes, "
    "a figure and a table that continues across a page break."
)

_DOCUMENT: list[_Columns | _Table] = [
    _Columns([
        _Heading(1, "Introduction"),
        _Heading(2, "Scope and purpose"),
        _Para(
            "Breast cancer is the most frequently diagnosed cancer in women in many regions, and most patients "
            "present with disease that is confined to the breast and regional lymph nodes. Outcomes for "
            "early-stage disease are generally favourable, but they depend on timely diagnosis, accurate staging "
            "and a treatment plan that matches the biology of the tumour."
        ),
        _Para(
            "This guideline gives recommendations for the care of adults with newly diagnosed, early-stage "
            "invasive breast cancer (stages I to IIIA). It is intended for surgeons, medical and radiation "
            "oncologists, radiologists, pathologists, specialist nurses and the multidisciplinary teams in which "
            "they work. It does not replace clinical judgement, and every recommendation should be discussed "
            "with the patient in the light of her or his preferences and circumstances."
        ),
        _Heading(2, "Target population"),
        _Para("The recommendations apply to the following groups of patients:"),
        _List([
            "adults (18 years and older) with histologically confirmed invasive carcinoma of the breast;",
            "patients with clinical stage I, II or IIIA disease, including those treated with neoadjuvant therapy;",
            "men with breast cancer, for whom the evidence is extrapolated from trials in women;",
            "patients with a germline pathogenic variant, where the treatment differs from the general pathway.",
        ]),
        _Para(
            "Ductal carcinoma in situ, metastatic disease, phyllodes tumours and breast lymphoma are outside the "
            "scope of this document and are covered by separate sample guidelines of the group."
        ),
        _Heading(2, "Methods and grading of recommendations"),
        _Para(
            "A fictional panel of twelve clinicians and two patient representatives drafted the recommendations "
            "after a structured review of randomised trials, meta-analyses and cohort studies. Each recommendation "
            "carries a level of evidence and a strength. The levels used in this sample are:"
        ),
        _List([
            "**Level I:** evidence from at least one large randomised trial of good quality or a meta-analysis "
            "of randomised trials without heterogeneity.",
            "**Level II:** small randomised trials, or large randomised trials with a suspicion of bias.",
            "**Level III:** prospective cohort studies and well-designed case-control studies.",
            "**Level IV:** retrospective studies, expert opinion and consensus of the panel.",
        ], ordered=True),
        _Para(
            "A *strong* recommendation means that the panel is confident that the benefits clearly outweigh the "
            "harms for most patients. A *conditional* recommendation means that the balance is closer and that "
            "the choice depends more on values, comorbidity and the resources available."
        ),
        _Heading(1, "Diagnosis and staging"),
        _Heading(2, "Clinical assessment"),
        _Para(
            "Every patient referred with a suspected breast cancer should undergo a triple assessment in a "
            "dedicated clinic: clinical examination, imaging and needle biopsy, ideally completed in a single "
            "visit. The history should record at least:"
        ),
        _List([
            "the duration of symptoms and any change in size of the lump;",
            "menopausal status, pregnancy and lactation;",
            "personal or family history of breast, ovarian, pancreatic or prostate cancer;",
            "previous chest irradiation and current medication, including hormone therapy;",
            "comorbidities and performance status that may influence treatment choices.",
        ]),
        _Heading(2, "Imaging"),
        _Heading(3, "Mammography and ultrasound"),
        _Para(
            "Bilateral mammography with tomosynthesis where available, together with ultrasound of the breast and "
            "the axilla, is the standard initial work-up. Ultrasound-guided core biopsy of the lesion and of any "
            "morphologically abnormal axillary lymph node should be performed before treatment is started."
        ),
        _Heading(3, "Magnetic resonance imaging"),
        _Para(
            "Breast MRI is not required for every patient. It is useful for invasive lobular carcinoma, for dense "
            "breasts when the extent of disease is uncertain, for discordant findings between examination and "
            "imaging, and before neoadjuvant therapy to document the baseline extent of the tumour."
        ),
        _Box(
            "Recommendation 1 (strong; level II)",
            "Offer breast MRI only when its result may change the surgical plan, for example lobular histology, "
            "suspected multicentric disease or a discrepancy between clinical and mammographic tumour size.",
        ),
        _Heading(2, "Pathology"),
        _Para(
            "The diagnostic core biopsy and the surgical specimen should be reported with a structured template. "
            "The report of the invasive tumour includes:"
        ),
        _List([
            "histological type and grade (Nottingham system);",
            "tumour size in millimetres and the distance to each margin;",
            "lymphovascular invasion and the number of involved lymph nodes;",
            "oestrogen receptor (ER) and progesterone receptor (PR) status with the percentage of positive cells;",
            "HER2 status by immunohistochemistry, confirmed by in situ hybridisation when the score is 2+;",
            "the Ki-67 proliferation index, where the laboratory has validated the assay.",
        ]),
        _Heading(2, "Staging investigations"),
        _Para(
            "Routine staging with computed tomography or bone scintigraphy is not recommended for stage I disease "
            "without symptoms, because the yield is low and false-positive findings are common. Systemic staging "
            "should be considered for clinical stage IIB or higher, for large node-positive tumours, and for "
            "patients with symptoms or laboratory results that suggest metastatic spread."
        ),
        _Heading(1, "Surgical management"),
        _Heading(2, "Breast-conserving surgery"),
        _Para(
            "Breast-conserving surgery followed by radiotherapy gives survival equivalent to mastectomy for most "
            "patients with unifocal tumours. The aim is complete excision with clear margins and a good cosmetic "
            "result. *No ink on tumour* is an adequate margin for invasive cancer, and re-excision for wider "
            "margins is not needed."
        ),
        _Para(
            "Oncoplastic techniques allow larger excisions without deformity and should be available in every "
            "breast unit. The tumour bed is marked with surgical clips to guide the radiotherapy boost."
        ),
        _Heading(2, "Mastectomy and reconstruction"),
        _Para(
            "Mastectomy is indicated when the tumour is large relative to the breast, when disease is multicentric, "
            "when radiotherapy is contraindicated, or when the patient prefers it after counselling. Immediate "
            "reconstruction should be discussed with every patient who needs a mastectomy."
        ),
        _Heading(2, "Axillary staging"),
        _Para(
            "Sentinel lymph node biopsy is the standard staging procedure for patients with a clinically and "
            "radiologically negative axilla. The recommended sequence is:"
        ),
        _List([
            "Dual mapping with a radioisotope and blue dye, or an equivalent tracer, at the time of surgery.",
            "Removal of all sentinel nodes and of any palpable suspicious node.",
            "Completion axillary dissection only when three or more sentinel nodes contain macrometastases.",
            "Axillary radiotherapy instead of dissection for one or two positive nodes when criteria are met.",
        ], ordered=True),
        _Figure(
            "**Figure 1.** Simplified treatment pathway for early-stage breast cancer (sample illustration). "
            "Each step is discussed by the multidisciplinary team before it starts.",
            168.0,
        ),
        _Box(
            "Recommendation 2 (strong; level I)",
            "Do not perform axillary lymph node dissection in patients with one or two positive sentinel nodes "
            "who undergo breast-conserving surgery and whole-breast radiotherapy.",
        ),
        _Heading(1, "Systemic therapy"),
        _Heading(2, "Principles"),
        _Para(
            "Adjuvant systemic therapy reduces the risk of recurrence and death. The choice of treatment is "
            "driven by the tumour subtype defined by ER, PR and HER2, by the anatomical stage and, for "
            "hormone receptor-positive disease, by genomic risk scores where they are available."
        ),
        _Heading(2, "Endocrine therapy"),
        _Para(
            "All patients with ER-positive invasive cancer should be offered endocrine therapy for at least five "
            "years. The choice of agent depends on menopausal status:"
        ),
        _List([
            "premenopausal patients: tamoxifen, or ovarian function suppression with an aromatase inhibitor "
            "when the risk of recurrence is high;",
            "postmenopausal patients: an aromatase inhibitor, with tamoxifen as an alternative;",
            "extended therapy to seven or ten years for node-positive disease after shared decision making.",
        ]),
        _Heading(2, "Chemotherapy and targeted therapy"),
        _Para(
            "Table 1 summarises the preferred adjuvant regimens by subtype and clinical situation. Doses and "
            "schedules are illustrative and must be checked against local protocols."
        ),
    ]),
    _Table(
        "**Table 1.** Preferred adjuvant systemic regimens by tumour subtype (illustrative sample values).",
        ["Subtype", "Clinical situation", "Preferred regimen", "Duration", "Evidence"],
        [
            ["HR+/HER2\u2212", "Node-negative, low genomic risk", "Endocrine therapy alone", "5 years", "I, strong"],
            ["HR+/HER2\u2212", "Node-negative, high genomic risk", "Chemotherapy (TC or AC-T) then endocrine therapy",
             "4\u20136 months + 5 years", "I, strong"],
            ["HR+/HER2\u2212", "1\u20133 positive nodes, postmenopausal", "Endocrine therapy; chemotherapy if high genomic risk",
             "5\u201310 years", "I, strong"],
            ["HR+/HER2\u2212", "1\u20133 positive nodes, premenopausal", "Chemotherapy, then ovarian suppression + AI",
             "5 years", "II, conditional"],
            ["HR+/HER2\u2212", "4 or more positive nodes", "Anthracycline and taxane, then endocrine therapy",
             "6 months + 5\u201310 years", "I, strong"],
            ["HR+/HER2\u2212", "High risk, germline BRCA variant", "Add adjuvant olaparib after chemotherapy",
             "1 year", "I, strong"],
            ["HR+/HER2\u2212", "Older patient, significant comorbidity", "Endocrine therapy; omit chemotherapy",
             "5 years", "III, conditional"],
            ["HR+/HER2\u2212", "Premenopausal, node-negative, low risk", "Tamoxifen alone", "5 years",
             "I, strong"],
            ["HER2+", "Older or frail patient", "Trastuzumab with endocrine therapy or a single taxane",
             "1 year", "III, conditional"],
            ["HER2+", "T1a\u2013b, node-negative", "Weekly paclitaxel + trastuzumab", "12 weeks + 1 year",
             "II, conditional"],
            ["HER2+", "T1c, node-negative", "Paclitaxel + trastuzumab, or TCH", "3 months + 1 year", "II, strong"],
            ["HER2+", "T2 or larger, or node-positive", "Neoadjuvant TCHP (see section 4.4)", "6 cycles + 1 year",
             "I, strong"],
            ["HER2+", "Residual disease after neoadjuvant therapy", "Switch to trastuzumab emtansine",
             "14 cycles", "I, strong"],
            ["HER2+", "Pathological complete response", "Complete trastuzumab \u00b1 pertuzumab", "1 year in total",
             "I, strong"],
            ["Triple-negative", "T1a\u2013b, node-negative", "Consider no chemotherapy", "\u2014", "III, conditional"],
            ["Triple-negative", "T1c, node-negative", "Anthracycline and taxane, or TC", "4\u20136 months",
             "I, strong"],
            ["Triple-negative", "T2 or larger, or node-positive", "Neoadjuvant chemotherapy + pembrolizumab",
             "6 months + 1 year", "I, strong"],
            ["Triple-negative", "Residual disease after neoadjuvant therapy", "Capecitabine, or olaparib if BRCA variant",
             "6 months / 1 year", "I, strong"],
            ["Any subtype", "Pregnancy (second or third trimester)", "Anthracycline-based chemotherapy; no trastuzumab",
             "Until delivery", "III, conditional"],
            ["Any subtype", "Male breast cancer, HR-positive", "Tamoxifen; AI only with testicular suppression",
             "5\u201310 years", "III, conditional"],
            ["Any subtype", "Premenopausal, wishes to preserve fertility", "GnRH analogue during chemotherapy",
             "During chemotherapy", "I, conditional"],
            ["Any subtype", "Postmenopausal, high risk of recurrence", "Add bisphosphonate (zoledronic acid)",
             "3\u20135 years", "I, conditional"],
        ],
        [0.15, 0.27, 0.31, 0.15, 0.12],
        note="AC-T, doxorubicin and cyclophosphamide followed by a taxane; AI, aromatase inhibitor; TC, docetaxel and "
        "cyclophosphamide; TCH(P), docetaxel, carboplatin, trastuzumab (and pertuzumab). Fictional sample table.",
    ),
    _Columns([
        _Para(
            "Chemotherapy should start within six weeks of surgery. Patients older than 70 years benefit from a "
            "geriatric assessment before chemotherapy is offered, because fitness rather than age predicts "
            "tolerance. Scalp cooling may be offered to reduce hair loss with taxane-based regimens."
        ),
        _Heading(2, "Neoadjuvant therapy"),
        _Para(
            "Neoadjuvant systemic therapy is preferred for HER2-positive and triple-negative tumours larger than "
            "two centimetres or with involved nodes. It allows downstaging of the breast and axilla and gives "
            "information on response that guides adjuvant treatment. A marker clip is placed in the tumour and in "
            "any biopsied node before treatment begins."
        ),
        _Box(
            "Recommendation 3 (strong; level I)",
            "Offer adjuvant trastuzumab emtansine to patients with HER2-positive disease who have residual invasive "
            "cancer in the breast or axilla after neoadjuvant therapy.",
        ),
        _Heading(1, "Radiotherapy"),
        _Heading(2, "Whole-breast irradiation"),
        _Para(
            "Whole-breast radiotherapy after breast-conserving surgery halves the risk of local recurrence. "
            "Moderately hypofractionated schedules (40 Gy in 15 fractions) or ultra-hypofractionated schedules "
            "(26 Gy in 5 fractions over one week) are the standard of care. A tumour bed boost is given to "
            "younger patients and to those with high-grade tumours."
        ),
        _Heading(2, "Partial-breast irradiation and omission"),
        _Para(
            "Partial-breast irradiation is an option for patients aged 50 years or older with small, node-negative, "
            "hormone receptor-positive tumours and clear margins. Omission of radiotherapy may be discussed with "
            "patients aged 70 years or older who will take endocrine therapy."
        ),
        _Heading(2, "Post-mastectomy radiotherapy"),
        _Para(
            "Chest wall and regional nodal irradiation is recommended after mastectomy for four or more involved "
            "nodes and for T3\u2013T4 tumours, and should be considered for one to three involved nodes when "
            "other risk factors are present."
        ),
        _Heading(1, "Follow-up and survivorship"),
        _Para("After primary treatment, patients should be followed according to the following schedule:"),
        _List([
            "clinical review every 3\u20136 months for the first three years, then every 6\u201312 months;",
            "annual bilateral mammography (or of the remaining breast after mastectomy);",
            "bone density measurement before and during aromatase inhibitor therapy;",
            "no routine tumour markers or imaging in the absence of symptoms.",
        ], ordered=True),
        _Para(
            "Survivorship care addresses fatigue, lymphoedema, sexual health, fertility and return to work. A "
            "written care plan summarising the treatment received and the follow-up arranged should be given to "
            "the patient and to the primary care physician."
        ),
    ]),
]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
