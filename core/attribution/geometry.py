"""Shared plumbing of highlighting and rendering: open the PDF, check chunk boxes against it, turn
box fractions into page points.

Chunk boxes are fractions of the *displayed* page (rotation and crop box applied, origin top-left,
1-based page). PyMuPDF annotates in *unrotated* page coordinates, so a displayed rectangle goes
through ``page.derotation_matrix`` before it becomes an annotation; ``get_pixmap(clip=...)`` on the
other hand takes displayed coordinates, and renders are painted on the pixels (PyMuPDF 2.0's
``page.draw_rect`` misplaces shapes on pages that are both rotated and cropped).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import (
    CorruptPDFError,
    EncryptedPDFError,
    GroundedError,
    InputError,
    InputNotFoundError,
    NotAPDFError,
    SchemaError,
)
from ..integrations.boxes import chunk_of, item_text_and_metadata
from ..io.box_codec import FURNITURE_BOXES_KEY
from ..model.boxes import ParsingBoundingBox
from ..model.chunk import Chunk, ChunkingResult

__all__ = ["AttributionError", "ChunkNotFoundError", "ChunkPageError", "FURNITURE_BOXES_KEY", "PageRegions", "chunk_boxes", "open_pdf", "as_chunks", "page_regions",
           "displayed_rect", "to_page_quad", "to_page_rect", "Color", "parse_color", "mupdf_errors"]

Color = tuple[float, float, float]


class AttributionError(InputError):
    """Chunks and PDF do not fit together (e.g. a box on a page the PDF does not have)."""


class ChunkNotFoundError(AttributionError):
    """A requested chunk id is not in the chunks file."""


class ChunkPageError(AttributionError):
    """A chunk has a box on a page the PDF does not have (chunks of another PDF, or a damaged
    chunks file). ``path`` is the PDF; a caller that read the chunks from a file re-raises it
    naming that file (:meth:`naming`)."""

    def __init__(self, path: str | Path, cause: str, *, chunk_id: str = "", page: int = 0, page_count: int = 0):
        super().__init__(path, cause)
        self.chunk_id, self.page, self.page_count = chunk_id, page, page_count

    def naming(self, chunks_file: str | Path, pdf: str | Path) -> ChunkPageError:
        """The same error naming ``chunks_file`` (where the bad box is) and ``pdf``."""
        return ChunkPageError(
            chunks_file,
            f"chunk {self.chunk_id!r} has a box on page {self.page} but {pdf} has {self.page_count} page(s) "
            "(were the chunks made from another PDF, or is the chunks file damaged?)",
            chunk_id=self.chunk_id, page=self.page, page_count=self.page_count,
        )


def open_pdf(pdf: str | Path | bytes, password: str | None = None) -> tuple[Any, str]:
    """Open ``pdf`` (a path or PDF bytes) with PyMuPDF; typed errors name the file and the cause.

    An encrypted PDF needs ``password`` (user or owner password). Returns ``(document, name)``;
    the caller closes the document.
    """
    import pymupdf

    if isinstance(pdf, (bytes, bytearray, memoryview)):
        name, data = "<pdf bytes>", bytes(pdf)
    else:
        path = Path(pdf)
        name = str(path)
        if not path.is_file():
            raise InputNotFoundError(path, "no such file" if not path.exists() else "not a regular file")
        data = path.read_bytes()
    if b"%PDF-" not in data[:1024]:
        raise NotAPDFError(name, "not a PDF (no %PDF- header)")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # MuPDF's own error types/messages vary by version
        raise CorruptPDFError(name, f"damaged PDF that MuPDF cannot open ({_one_line(exc)})") from exc
    if doc.needs_pass:
        if password is None:
            doc.close()
            raise EncryptedPDFError(name, "encrypted PDF: a password is needed to open it (password= / --password)")
        if not doc.authenticate(password):
            doc.close()
            raise EncryptedPDFError(name, "encrypted PDF: the password given does not open it")
    if doc.page_count == 0:
        doc.close()
        raise CorruptPDFError(name, "the PDF has no readable pages")
    return doc, name


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _mupdf_error_types() -> tuple[type[BaseException], ...]:
    import pymupdf

    base = getattr(getattr(pymupdf, "mupdf", None), "FzErrorBase", None)
    return (RuntimeError,) + ((base,) if isinstance(base, type) else ())


@contextmanager
def mupdf_errors(source: str, action: str) -> Iterator[None]:
    """Turn MuPDF's own exceptions (damaged objects found while drawing, rendering or writing)
    into :class:`~grounded.errors.CorruptPDFError` naming ``source``."""
    try:
        yield
    except GroundedError:
        raise
    except _mupdf_error_types() as exc:
        if isinstance(exc, (RecursionError, NotImplementedError)):
            raise
        raise CorruptPDFError(source, f"damaged PDF: MuPDF failed while {action} ({_one_line(exc)})") from exc


def as_chunks(chunks: Any) -> list[Chunk]:
    """Accept one chunk, a :class:`ChunkingResult`, or any iterable of chunks and stored chunks: a
    LlamaIndex node or ``NodeWithScore``, a LangChain Document, an ingest/LanceDB row, a chunks-JSON
    dict - each read with the boxes of its own text (:func:`grounded.integrations.boxes.chunk_of`)."""
    if isinstance(chunks, ChunkingResult):
        return list(chunks.chunks)
    if isinstance(chunks, Chunk) or item_text_and_metadata(chunks) is not None:
        chunks = [chunks]
    out: list[Chunk] = []
    for item in chunks:
        if isinstance(item, Chunk):
            out.append(item)
            continue
        try:
            out.append(chunk_of(item))
        except SchemaError as exc:
            raise TypeError(f"expected grounded chunks (Chunk, node, Document or stored row), got {type(item).__name__}: {exc}") from exc
    return out


@dataclass
class PageRegions:
    """What of one chunk lies on one page: the chunk boxes there and their highlight regions."""

    page: int  # 1-based
    boxes: list[ParsingBoundingBox]

    def regions(self, *, heading: bool) -> list[ParsingBoundingBox]:
        """Line spans of the (heading or body) boxes; a box without spans stands for itself."""
        out: list[ParsingBoundingBox] = []
        for box in self.boxes:
            if box.is_heading == heading:
                out.extend(box.spans or [box])
        return out


#: chunk metadata key of the page text a grounded chunk holds outside the parse tree (running
#: headers/footers: :mod:`grounded.grounding.furniture`), rows ``[page, left, top, right, bottom]``


def chunk_boxes(chunk: Chunk, source: str | Path) -> list[ParsingBoundingBox]:
    """What to highlight for ``chunk``: its boxes (``geom``), then the boxes of page furniture
    that grounding found for it outside the parse tree (:data:`FURNITURE_BOXES_KEY`). Malformed
    furniture rows raise :class:`AttributionError` naming ``source`` and the chunk."""
    rows = chunk.metadata.get(FURNITURE_BOXES_KEY) if isinstance(chunk.metadata, dict) else None
    if not rows:
        return list(chunk.geom)
    extra: list[ParsingBoundingBox] = []
    bad = f"chunk {chunk.id!r}: {FURNITURE_BOXES_KEY} must be a list of [page, left, top, right, bottom] rows"
    if not isinstance(rows, list):
        raise AttributionError(source, bad)
    for row in rows:
        if not (
            isinstance(row, list) and len(row) == 5
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row)
            and float(row[0]).is_integer() and row[0] >= 1
        ):
            raise AttributionError(source, f"{bad} (got {row!r:.80})")
        try:
            extra.append(ParsingBoundingBox(page=int(row[0]), left=row[1], top=row[2], right=row[3], bottom=row[4]))
        except (ValueError, TypeError) as exc:
            raise AttributionError(source, f"{bad} ({exc})") from exc
    return [*chunk.geom, *extra]


def page_regions(chunk: Chunk, page_count: int, source: str) -> list[PageRegions]:
    """Group the chunk's boxes (:func:`chunk_boxes`) by page in order of first appearance; refuse
    pages the PDF lacks."""
    by_page: dict[int, PageRegions] = {}
    for box in chunk_boxes(chunk, source):
        for b in (box, *box.spans):
            if b.page > page_count:
                raise ChunkPageError(
                    source, f"chunk {chunk.id!r} has a box on page {b.page} but the PDF has {page_count} page(s) "
                    "(were the chunks made from another PDF?)",
                    chunk_id=chunk.id, page=b.page, page_count=page_count,
                )
        by_page.setdefault(box.page, PageRegions(box.page, [])).boxes.append(box)
    return list(by_page.values())


def displayed_rect(page: Any, box: ParsingBoundingBox, pad: float = 0.0) -> Any:
    """``box`` in displayed-page points (``page.rect`` space), grown by ``pad`` points, kept on the page."""
    import pymupdf

    w, h = page.rect.width, page.rect.height
    rect = pymupdf.Rect(box.left * w - pad, box.top * h - pad, box.right * w + pad, box.bottom * h + pad)
    return rect & page.rect


def to_page_rect(page: Any, displayed: Any) -> Any:
    """Displayed-page rectangle -> unrotated page rectangle (what drawing and annotations use)."""
    return displayed * page.derotation_matrix


def to_page_quad(page: Any, displayed: Any) -> Any:
    """Displayed-page rectangle -> quad in unrotated page space for a text-markup annotation.

    A quad's corner order tells viewers the text direction (ul -> ur along the line). On a rotated
    page the text may run along either axis, so the quad is oriented along the rectangle's longer
    side (a line span is longer along its text than across it); ties keep the displayed direction.
    """
    unrotated = displayed * page.derotation_matrix
    if displayed.width >= displayed.height or unrotated.width < unrotated.height:
        return displayed.quad * page.derotation_matrix
    return unrotated.quad


def parse_color(value: str | Color) -> Color:
    """``(r, g, b)`` in 0..1, or a ``#rrggbb`` string."""
    if isinstance(value, str):
        text = value.strip().lstrip("#")
        if len(text) != 6:
            raise ValueError(f"colour {value!r} is not #rrggbb")
        try:
            return tuple(int(text[i : i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]
        except ValueError:
            raise ValueError(f"colour {value!r} is not #rrggbb") from None
    rgb = tuple(float(v) for v in value)
    if len(rgb) != 3 or not all(0.0 <= v <= 1.0 for v in rgb):
        raise ValueError(f"colour {value!r} must be three numbers in 0..1")
    return rgb

