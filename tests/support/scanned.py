"""Test helper: image-only ("scanned") copies of born-digital PDFs.

:func:`scanned_pdf` renders pages of a PDF to images and rebuilds a PDF whose pages have the same
displayed sizes but no text layer; pages listed in ``keep_text`` are copied unchanged (a mixed
PDF). :func:`born_digital_words` gives PyMuPDF's word boxes of the original pages (the ground
truth the OCR'd copy is compared with).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from pathlib import Path

import pymupdf


def scanned_pdf(
    src: str | Path,
    pages: Sequence[int] | None = None,
    *,
    dpi: int = 200,
    keep_text: Iterable[int] = (),
    rotate: int = 0,
) -> bytes:
    """PDF bytes with the 1-based ``pages`` of ``src`` (default: all) in that order, each as one
    image of the displayed page rendered at ``dpi`` (same displayed size, no text) -- except the
    pages in ``keep_text``, copied with their text layer. With ``rotate`` (90, 180, 270) the
    scanned pages are stored turned, with a ``/Rotate`` that displays them upright again (as a
    scanner that fed the sheet sideways writes them)."""
    keep = set(keep_text)
    with pymupdf.open(src) as doc, pymupdf.open() as out:
        numbers = list(pages) if pages is not None else list(range(1, doc.page_count + 1))
        for number in numbers:
            page = doc[number - 1]
            if number in keep:
                out.insert_pdf(doc, from_page=number - 1, to_page=number - 1)
                continue
            rect = page.rect  # displayed size (crop box, /Rotate applied)
            pix = page.get_pixmap(dpi=dpi, alpha=False)
            sideways = rotate % 180 == 90
            image = out.new_page(
                width=rect.height if sideways else rect.width, height=rect.width if sideways else rect.height
            )
            image.set_rotation(rotate)
            # insert_image takes the unrotated page's rect and turns the image with the page
            image.insert_image(image.rect * image.derotation_matrix, stream=pix.tobytes("png"), rotate=rotate)
        return bytes(out.tobytes(garbage=3, deflate=True))


def born_digital_words(src: str | Path, page: int) -> list[tuple[float, float, float, float, str]]:
    """PyMuPDF's words of the 1-based ``page`` of ``src``: (x0, y0, x1, y1, text) in displayed
    page coordinates, in MuPDF's order."""
    with pymupdf.open(src) as doc:
        return [(w[0], w[1], w[2], w[3], w[4]) for w in doc[page - 1].get_text("words", sort=False)]


def has_text_layer(data: bytes, page: int) -> bool:
    """Whether the 1-based ``page`` of the PDF ``data`` has any extractable text."""
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        return bool(doc[page - 1].get_text().strip())


#: the words of the constructed column text (common English, so OCR reads them as a scan of prose)
_PROSE = (
    "the patient should receive treatment within hours of admission and the dose is adjusted to "
    "renal function when clinical signs persist a second review follows after three days results "
    "of the trial showed fewer events in the group given early therapy than in the control group "
    "blood pressure was measured twice daily and recorded by the nursing staff on each ward"
)


def column_text(seed: int, words: int) -> str:
    """Deterministic prose of ``words`` words (sentences of 9-16 words) for constructed pages."""
    import random

    rng = random.Random(seed)
    words_of = _PROSE.split()
    out: list[str] = []
    while len(out) < words:
        sentence = [rng.choice(words_of) for _ in range(rng.randint(9, 16))]
        sentence[0] = sentence[0].capitalize()
        sentence[-1] += "."
        out.extend(sentence)
    return " ".join(out[:words]).rstrip(".") + "."


def two_column_pdf(
    *, gutter: float = 12.0, fontsize: float = 9.0, rule: bool = False
) -> tuple[bytes, str, list[str]]:
    """A born-digital letter page: a full-width title, then two justified columns of prose
    ``gutter`` points apart (a vertical rule in the gutter with ``rule``). Returns (PDF bytes,
    title, the text of each column paragraph in reading order: left column top down, then right)."""
    title = "Early treatment of hypertension in two columns"
    paragraphs = [column_text(seed, 110) for seed in range(4)]
    with pymupdf.open() as doc:
        page = doc.new_page(width=612, height=792)
        page.insert_textbox(pymupdf.Rect(54, 50, 558, 80), title, fontsize=16, fontname="hebo")
        width = (558 - 54 - gutter) / 2
        for col in range(2):
            x0 = 54 + col * (width + gutter)
            y = 100.0
            for text in paragraphs[2 * col : 2 * col + 2]:
                rect = pymupdf.Rect(x0, y, x0 + width, 740)
                left = page.insert_textbox(rect, text, fontsize=fontsize, fontname="tiro", align=3)
                assert left >= 0, "constructed column text does not fit"
                y = rect.y1 - left + fontsize  # a blank line between paragraphs
        if rule:
            mid = 54 + width + gutter / 2
            page.draw_line((mid, 100), (mid, 700), width=0.5)
        return bytes(doc.tobytes()), title, paragraphs


def figure_over_columns_pdf(*, columns: int = 3, fontsize: float = 8.0) -> tuple[bytes, list[str]]:
    """A born-digital page like a Federal Register page with a figure: a full-width raster figure
    (boxed lines of text, an image) over the top half, then ``columns`` justified columns of
    prose. The figure's lines cross the gutters, so the ink of the page as a whole has none.
    Returns (PDF bytes, the text of each column paragraph in reading order)."""
    left, right, gutter, top, bottom = 54.0, 558.0, 12.0, 400.0, 740.0
    paragraphs = [column_text(seed, 70) for seed in range(10, 10 + 2 * columns)]
    with pymupdf.open() as fig:
        panel = fig.new_page(width=right - left, height=320)
        panel.draw_rect(pymupdf.Rect(6, 6, panel.rect.width - 6, 314), width=1.0)
        lines = [f"({k + 1}) {column_text(100 + k, 14)}" for k in range(10)]
        panel.insert_textbox(pymupdf.Rect(16, 16, panel.rect.width - 16, 308), "\n".join(lines), fontsize=11)
        image = panel.get_pixmap(dpi=150, alpha=False)
    with pymupdf.open() as doc:
        page = doc.new_page(width=612, height=792)
        page.insert_image(pymupdf.Rect(left, 50, right, 370), pixmap=image)
        width = (right - left - (columns - 1) * gutter) / columns
        for col in range(columns):
            x0 = left + col * (width + gutter)
            y = top
            for text in paragraphs[2 * col : 2 * col + 2]:
                rect = pymupdf.Rect(x0, y, x0 + width, bottom)
                rest = page.insert_textbox(rect, text, fontsize=fontsize, fontname="tiro", align=3)
                assert rest >= 0, "constructed column text does not fit"
                y = rect.y1 - rest + fontsize  # a blank line between paragraphs
        return bytes(doc.tobytes()), paragraphs


def draw_molecule_figure(
    page: pymupdf.Page,
    rect: pymupdf.Rect,
    rng: random.Random,
    *,
    bonds: int,
    labels: Sequence[str],
    label_count: int,
    label_size: float | None = None,
    label_bottom_margin: float = 0.0,
) -> None:
    """Draw a chemistry-like figure into ``rect`` of ``page``: 60 hexagon rings, ``bonds`` random
    bond lines and ``label_count`` atom labels drawn from ``labels`` (size ``label_size``, or
    random 6-11 pt). Scanned, Tesseract writes garbage for it -- what the figure-OCR tests need."""
    for _ in range(60):
        cx, cy = rng.uniform(rect.x0 + 20, rect.x1 - 20), rng.uniform(rect.y0 + 20, rect.y1 - 20)
        r = rng.uniform(6, 16)
        ring = [pymupdf.Point(cx + r * math.cos(a * math.pi / 3 + 0.3), cy + r * math.sin(a * math.pi / 3 + 0.3))
                for a in range(7)]
        page.draw_polyline(ring, color=(0, 0, 0), width=rng.uniform(0.6, 1.6))
    for _ in range(bonds):
        x, y = rng.uniform(rect.x0, rect.x1), rng.uniform(rect.y0, rect.y1)
        page.draw_line((x, y), (x + rng.uniform(-18, 18), y + rng.uniform(-18, 18)), width=rng.uniform(0.5, 2))
    for _ in range(label_count):
        x, y = rng.uniform(rect.x0, rect.x1 - 10), rng.uniform(rect.y0 + 8, rect.y1 - label_bottom_margin)
        label = rng.choice(list(labels))
        page.insert_text((x, y), label, fontsize=label_size if label_size is not None else rng.uniform(6, 11))
