"""The source PDF of a parse tree, rendered to PNG page images in batches of ``b`` pages."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grounded.errors import ChunkingError, CorruptPDFError, InputNotFoundError
from grounded.model.elements import ParsingResult
from grounded.parsers.cache import file_sha256

__all__ = ["PageBatch", "source_pdf", "batch_ranges", "render_batches"]

PDFInput = str | os.PathLike[str] | bytes | bytearray


@dataclass(frozen=True)
class PageBatch:
    """One batch: its 1-based page numbers and one PNG per page."""

    index: int
    pages: tuple[int, ...]
    images: tuple[bytes, ...]


def _source(root: ParsingResult) -> dict[str, Any]:
    source = root.info.source
    return source if isinstance(source, dict) else {}


def source_pdf(root: ParsingResult, pdf: PDFInput | None = None) -> tuple[str, bytes | str]:
    """``(name, bytes or path)`` of the PDF the tree was parsed from: ``pdf`` when given (bytes or a
    path; needed for trees parsed from bytes), else the path recorded in the root metadata. The file's
    sha256 must equal the one the parse recorded, so the pages shown to the model are the parsed ones."""
    source = _source(root)
    expected = source.get("sha256")
    name = str(source.get("name") or source.get("path") or "document")
    if pdf is None:
        path = source.get("path")
        if not path or source.get("from_bytes"):
            raise ChunkingError(
                f"{name}: the tree was parsed from bytes (or records no source path); pass the PDF: "
                "Chunker('vision', ..., pdf=<path or bytes>)"
            )
        if not Path(path).is_file():
            raise InputNotFoundError(path, "the PDF this tree was parsed from is no longer there (pass pdf=...)")
        data: bytes | str = str(path)
        digest = file_sha256(path)
        name = str(path)
    elif isinstance(pdf, (bytes, bytearray)):
        data = bytes(pdf)
        digest = hashlib.sha256(data).hexdigest()
    else:
        path = Path(pdf)
        if not path.is_file():
            raise InputNotFoundError(path, "no such file")
        data, name = str(path), str(path)
        digest = file_sha256(path)
    if expected and digest != expected:
        raise ChunkingError(f"{name}: this PDF (sha256 {digest[:12]}…) is not the one the tree was parsed from ({str(expected)[:12]}…)")
    return name, data


def batch_ranges(page_count: int, size: int) -> list[tuple[int, ...]]:
    """Seed eq. (4): batch i holds pages (i-1)·b+1 … min(i·b, n) (1-based)."""
    if size < 1:
        raise ChunkingError(f"batch_size must be >= 1, got {size!r}")
    return [tuple(range(s, min(s + size, page_count + 1))) for s in range(1, page_count + 1, size)]


def render_batches(
    name: str, pdf: bytes | str, size: int, dpi: int, *, password: str | None = None
) -> Iterator[PageBatch]:
    """Render the PDF's pages at ``dpi`` and yield them in batches of ``size`` (rendered lazily,
    one batch at a time)."""
    import pymupdf

    try:
        doc = pymupdf.open(stream=pdf, filetype="pdf") if isinstance(pdf, bytes) else pymupdf.open(pdf)
    except (RuntimeError, ValueError) as exc:  # pymupdf.FileDataError is a RuntimeError
        raise CorruptPDFError(name, f"cannot be opened for rendering ({exc})") from None
    with doc:
        if doc.needs_pass and not doc.authenticate(password or ""):
            raise ChunkingError(f"{name}: the PDF needs a password to render its pages (pass password=...)")
        for index, pages in enumerate(batch_ranges(doc.page_count, size)):
            images = tuple(doc[p - 1].get_pixmap(dpi=dpi, alpha=False).tobytes("png") for p in pages)
            yield PageBatch(index, pages, images)
