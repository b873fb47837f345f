"""Test helper: image-only ("scanned") copies of born-digital PDFs.

:func:`scanned_pdf` renders pages of a PDF to images and rebuilds a PDF whose pages have the same
displayed sizes but no text layer; pages listed in ``keep_text`` are copied unchanged (a mixed
PDF). :func:`born_digital_words` gives PyMuPDF's word boxes of the original pages (the ground
truth the OCR'd copy is compared with).
"""

from __future__ import annotations

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
