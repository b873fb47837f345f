"""Annotated PDF: real highlight annotations over the lines of each chunk (spec §7)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, overload

from ..errors import CorruptPDFError, escape_controls
from ..focus import Focus
from ..io.atomic import atomic_write_bytes
from ..model.chunk import Chunk, ChunkingResult
from .focus_layer import CHUNK_UNDER_FOCUS_OPACITY, FOCUS_COLOR, focus_chunks
from .geometry import (
    Color,
    PageRegions,
    as_chunks,
    displayed_rect,
    mupdf_errors,
    open_pdf,
    page_regions,
    parse_color,
    to_page_quad,
    to_page_rect,
)
from .sanitize import strip_active_content

__all__ = ["highlight", "DEFAULT_COLOR", "HEADING_COLOR", "PDFRepairWarning"]

DEFAULT_COLOR: Color = (1.0, 0.82, 0.0)  # marker yellow
HEADING_COLOR: Color = (0.45, 0.75, 1.0)  # light blue for prepended section headings

_LABEL_SIZE = 7.0
_LABEL_EDGE = 6.0  # points between a label and the page edge
_PREVIEW_CHARS = 300

Label = bool | Callable[[Chunk, int], str]


class PDFRepairWarning(UserWarning):
    """The annotated copy of a damaged PDF had to be repaired (unused broken objects dropped)."""


@overload
def highlight(
    pdf: str | Path | bytes,
    chunks: Chunk | ChunkingResult | Iterable[Any],
    out: None = None,
    *,
    color: Color | str = ...,
    heading_color: Color | str = ...,
    label: Label = ...,
    password: str | None = ...,
    sanitize: bool = ...,
    query: str | None = ...,
    focus: Focus | Sequence[Focus | None] | None = ...,
    focus_color: Color | str = ...,
) -> bytes: ...


@overload
def highlight(
    pdf: str | Path | bytes,
    chunks: Chunk | ChunkingResult | Iterable[Any],
    out: str | Path,
    *,
    color: Color | str = ...,
    heading_color: Color | str = ...,
    label: Label = ...,
    password: str | None = ...,
    sanitize: bool = ...,
    query: str | None = ...,
    focus: Focus | Sequence[Focus | None] | None = ...,
    focus_color: Color | str = ...,
) -> Path: ...


def highlight(
    pdf: str | Path | bytes,
    chunks: Chunk | ChunkingResult | Iterable[Any],
    out: str | Path | None = None,
    *,
    color: Color | str = DEFAULT_COLOR,
    heading_color: Color | str = HEADING_COLOR,
    label: Label = True,
    password: str | None = None,
    sanitize: bool = True,
    query: str | None = None,
    focus: Focus | Sequence[Focus | None] | None = None,
    focus_color: Color | str = FOCUS_COLOR,
) -> Path | bytes:
    """Highlight every chunk in ``pdf``; write the annotated PDF atomically to ``out`` or return its bytes.

    Each chunk gets, on every page it touches, one highlight annotation whose quads are the line
    spans of its boxes (the box itself when it has no spans); boxes of prepended headings get a
    separate annotation in ``heading_color``. Annotation title = chunk id, content = pages, heading
    path and the start of the text. ``label`` adds a small tag in the page margin beside the chunk's
    first box on each page: ``True`` tags the n-th chunk ``[n]`` (1-based, the order of
    ``chunks``), a callable ``(chunk, n) -> str`` chooses the text, ``False`` adds none.

    All boxes are checked against the PDF before anything is drawn: a box on a page the PDF lacks
    raises :class:`~grounded.attribution.geometry.AttributionError`. An encrypted PDF needs
    ``password``; the annotated copy is encrypted again (AES-256) with that password. A PDF that
    MuPDF opens but cannot draw on or write raises :class:`~grounded.errors.CorruptPDFError`.

    ``sanitize`` (default True): the copy carries no active content of the source - JavaScript,
    launch and form actions, additional actions, embedded files are stripped
    (:func:`~grounded.attribution.sanitize.strip_active_content`); ``False`` keeps the source's
    objects as they are.

    ``query``: each chunk's focus for it (:func:`grounded.focus.focus_of`: the sentences, rows or items
    that answer it) is drawn as its own annotation (subject ``grounded focus``) in ``focus_color``
    over the chunk, whose highlight is then lighter; ``focus``: focus already computed (one per chunk).
    """
    body_rgb, heading_rgb, focus_rgb = parse_color(color), parse_color(heading_color), parse_color(focus_color)
    chunk_list = as_chunks(chunks)
    focused = focus_chunks(pdf, chunk_list, query=query, focus=focus)
    doc, source = open_pdf(pdf, password)
    try:
        plans = [(chunk, page_regions(chunk, doc.page_count, source)) for chunk in chunk_list]
        placed: dict[int, list[Any]] = {}  # page -> label rectangles already there (no stacking)
        focus_plans = {i: page_regions(f, doc.page_count, source) for i, f in enumerate(focused) if f is not None}
        for n, (chunk, regions) in enumerate(plans, 1):
            if not regions:
                warnings.warn(f"{escape_controls(str(source))}: chunk {chunk.id!r} has no boxes; nothing to highlight", stacklevel=2)
                continue
            tag = label(chunk, n) if callable(label) else (f"[{n}]" if label else "")
            for pr in regions:
                with mupdf_errors(source, f"drawing on page {pr.page}"):
                    page = doc[pr.page - 1]
                    _annotate(page, chunk, pr, heading=True, rgb=heading_rgb)
                    lighter = any(fp.page == pr.page for fp in focus_plans.get(n - 1, ()))
                    _annotate(page, chunk, pr, heading=False, rgb=body_rgb,
                              opacity=CHUNK_UNDER_FOCUS_OPACITY if lighter else None)
                    for fp in focus_plans.get(n - 1, ()):
                        if fp.page == pr.page:
                            _annotate(page, chunk, fp, heading=False, rgb=focus_rgb, subject="grounded focus")
                    if tag:
                        _add_label(page, chunk, pr, tag, body_rgb, placed.setdefault(pr.page, []))
        if sanitize:
            with mupdf_errors(source, "removing active content"):
                strip_active_content(doc)
        data = _to_bytes(doc, source, password)
    finally:
        doc.close()
    return data if out is None else atomic_write_bytes(out, data)


def _to_bytes(doc: Any, source: str, password: str | None) -> bytes:
    """The annotated document as bytes. MuPDF refuses to write a damaged object even when nothing
    uses it; then the copy is written again without unused objects (garbage collection) and a
    warning says so. A document that was opened with a password is encrypted again with it."""
    import pymupdf

    options: dict[str, Any] = {"deflate": True}
    if password is not None and (doc.metadata or {}).get("encryption"):  # opened with the password
        options.update(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw=password,  # type: ignore[attr-defined]
                       permissions=doc.permissions)
    first: CorruptPDFError | None = None
    for garbage in (0, 1, 3):
        try:
            with mupdf_errors(source, "writing the annotated copy"):
                data = bytes(doc.tobytes(garbage=garbage, **options))
        except CorruptPDFError as exc:
            first = first or exc
            continue
        if first is not None:
            cause = str(first.__cause__ or first.cause)
            warnings.warn(f"{escape_controls(str(source))}: damaged PDF: broken objects that no page uses were left out of the annotated "
                          f"copy (MuPDF: {' '.join(cause.split())})", PDFRepairWarning, stacklevel=3)
        return data
    assert first is not None
    raise first


def _annotate(page: Any, chunk: Chunk, pr: PageRegions, *, heading: bool, rgb: Color, opacity: float | None = None,
              subject: str | None = None) -> None:
    rects = [displayed_rect(page, r) for r in pr.regions(heading=heading)]
    rects = [r for r in rects if not r.is_empty]
    if not rects:
        return
    annot = page.add_highlight_annot(quads=[to_page_quad(page, r) for r in rects])
    annot.set_colors(stroke=rgb)
    if opacity is not None:
        annot.set_opacity(opacity)
    annot.set_info(
        title=chunk.id,
        subject=subject or ("grounded heading" if heading else "grounded chunk"),
        content=_describe(chunk),
    )
    annot.update()


def _describe(chunk: Chunk) -> str:
    pages = ", ".join(str(p) for p in chunk.pages)
    path = " / ".join(chunk.metadata.get("heading_path") or [])
    text = " ".join(chunk.body.split())
    if len(text) > _PREVIEW_CHARS:
        text = text[: _PREVIEW_CHARS - 1] + "\u2026"
    head = f"pages {pages}" + (f" \u2014 {path}" if path else "")
    return f"{head}\n{text}"


def _add_label(page: Any, chunk: Chunk, pr: PageRegions, tag: str, rgb: Color, taken: list[Any]) -> None:
    """A FreeText tag at the page edge (the margin) level with the chunk's first box on this page,
    moved down past tags already placed there."""
    import pymupdf

    anchor = displayed_rect(page, pr.boxes[0])
    width = pymupdf.get_text_length(tag, fontname="helv", fontsize=_LABEL_SIZE) + 4.0
    height = _LABEL_SIZE + 4.0
    page_w, page_h = page.rect.width, page.rect.height
    left_half = anchor.x0 + anchor.x1 < page_w
    x0 = _LABEL_EDGE if left_half else page_w - _LABEL_EDGE - width
    rect = pymupdf.Rect(x0, anchor.y0, x0 + width, anchor.y0 + height)
    while any(rect.intersects(t) for t in taken) and rect.y1 + height <= page_h:
        rect += (0, height + 1.0, 0, height + 1.0)
    if rect.y1 > page_h:
        rect += (0, page_h - rect.y1, 0, page_h - rect.y1)
    taken.append(rect)
    annot = page.add_freetext_annot(
        to_page_rect(page, rect), tag, fontsize=_LABEL_SIZE, fontname="helv", text_color=(0, 0, 0),
        fill_color=rgb, rotate=page.rotation,
    )
    annot.set_info(title=chunk.id, subject="grounded label")
    annot.update()
