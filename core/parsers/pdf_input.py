"""Validate an input PDF before any backend sees it (spec §10).

:func:`inspect_pdf` turns every way a file can be unusable into a typed
:class:`~grounded.errors.InputError` naming the file and the cause, and returns the facts the
pipeline needs: sha256, page count, each page's displayed size and which pages carry a text layer.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import (
    CorruptPDFError,
    EmptyDocumentError,
    EncryptedPDFError,
    InputNotFoundError,
    NotAPDFError,
    NoTextLayerError,
    PageTooLargeError,
)

__all__ = ["PDFInfo", "inspect_pdf", "MAX_PAGE_POINTS", "NoTextLayerWarning", "format_pages"]

#: PDF 1.7 implementation limit for a page side (200 inches) in points.
MAX_PAGE_POINTS = 14400.0
# the header may be preceded by junk; readers look for it in the first KiB
_HEADER_WINDOW = 1024
# an intact file ends with %%EOF (possibly followed by a little whitespace / junk)
_TRAILER_WINDOW = 4096


class NoTextLayerWarning(UserWarning):
    """Some (not all) pages have no text layer; their content cannot be extracted without OCR."""


@dataclass
class PDFInfo:
    """Facts about a readable PDF. ``page_sizes`` are (width, height) in points of the page as
    displayed (rotation and crop box applied); ``text_pages`` are the 1-based pages with text."""

    path: Path
    sha256: str
    page_count: int
    page_sizes: list[tuple[float, float]] = field(default_factory=list)
    text_pages: list[int] = field(default_factory=list)

    @property
    def image_only_pages(self) -> list[int]:
        """1-based pages without any text layer."""
        have = set(self.text_pages)
        return [p for p in range(1, self.page_count + 1) if p not in have]


def format_pages(pages: list[int], limit: int = 12) -> str:
    """'1, 2, 5' or '1, 2, ... (+30 more)' for messages."""
    shown = ", ".join(str(p) for p in pages[:limit])
    return shown + (f", ... (+{len(pages) - limit} more)" if len(pages) > limit else "")


def _read_checked(path: Path) -> bytes:
    if not path.exists():
        raise InputNotFoundError(path, "no such file")
    if not path.is_file():
        raise InputNotFoundError(path, "not a regular file (is it a directory?)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputNotFoundError(path, f"cannot be read ({exc.strerror or exc})") from exc
    if not data:
        raise NotAPDFError(path, "empty file (0 bytes), not a PDF")
    if b"%PDF-" not in data[:_HEADER_WINDOW]:
        head = data[:16].decode("latin-1").encode("unicode_escape").decode("ascii")
        raise NotAPDFError(path, f"not a PDF (no %PDF- header; file starts with '{head}')")
    return data


def _open_document(path: Path, data: bytes):  # -> pymupdf.Document
    import pymupdf

    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # MuPDF raises FileDataError/RuntimeError with its own message
        raise CorruptPDFError(path, f"damaged PDF that MuPDF cannot open ({exc})") from exc
    truncated = b"%%EOF" not in data[-_TRAILER_WINDOW:]
    if doc.needs_pass:
        doc.close()
        raise EncryptedPDFError(path, "encrypted PDF: a password is needed to open it")
    if doc.is_repaired and truncated:
        pages = doc.page_count
        doc.close()
        raise CorruptPDFError(
            path, f"truncated PDF (no %%EOF at the end; MuPDF had to repair it and found {pages} page(s))"
        )
    if doc.page_count == 0:
        repaired = doc.is_repaired
        doc.close()
        if repaired:
            raise CorruptPDFError(path, "damaged PDF: the page tree cannot be read (0 readable pages)")
        raise EmptyDocumentError(path, "the PDF has 0 pages")
    return doc


def inspect_pdf(path: str | Path, require_text: bool) -> PDFInfo:
    """Check ``path`` is a readable, unencrypted, non-empty PDF with sane pages.

    With ``require_text`` a document whose pages all lack a text layer raises
    :class:`NoTextLayerError`; if only some pages lack one, a :class:`NoTextLayerWarning`
    lists them and parsing goes on. Raises :class:`PageTooLargeError` for pages beyond
    :data:`MAX_PAGE_POINTS` and :class:`CorruptPDFError` for pages MuPDF cannot load.
    """
    path = Path(path)
    data = _read_checked(path)
    sha256 = hashlib.sha256(data).hexdigest()
    doc = _open_document(path, data)
    try:
        sizes: list[tuple[float, float]] = []
        text_pages: list[int] = []
        for index in range(doc.page_count):
            number = index + 1
            try:
                page = doc.load_page(index)
                rect = page.rect  # displayed page: crop box with /Rotate applied
                has_text = bool(page.get_textpage(flags=0).extractText().strip())
            except Exception as exc:
                raise CorruptPDFError(path, f"page {number} cannot be read ({exc})") from exc
            width, height = float(rect.width), float(rect.height)
            if not (width > 0 and height > 0):
                raise CorruptPDFError(path, f"page {number} has an empty size ({width:g} x {height:g} pt)")
            if max(width, height) > MAX_PAGE_POINTS:
                raise PageTooLargeError(
                    path,
                    f"page {number} is {width:.0f} x {height:.0f} pt, beyond the PDF limit of "
                    f"{MAX_PAGE_POINTS:.0f} pt per side",
                )
            sizes.append((width, height))
            if has_text:
                text_pages.append(number)
        info = PDFInfo(path=path, sha256=sha256, page_count=doc.page_count, page_sizes=sizes, text_pages=text_pages)
    finally:
        doc.close()
    missing = info.image_only_pages
    if missing and require_text:
        if not text_pages:
            raise NoTextLayerError(
                path,
                f"none of the {info.page_count} page(s) has a text layer (scanned/image-only PDF); "
                "run OCR first or choose an OCR/VLM parser",
            )
        warnings.warn(
            f"{path}: {len(missing)} of {info.page_count} page(s) have no text layer and will yield no "
            f"text: pages {format_pages(missing)}",
            NoTextLayerWarning,
            stacklevel=2,
        )
    return info
