"""PNG previews of where chunks came from: each touched page rendered with the line boxes drawn."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..focus import Focus
from ..io.atomic import atomic_write_bytes
from ..model.chunk import Chunk, ChunkingResult
from .focus_layer import FOCUS_COLOR, focus_chunks
from .geometry import (
    AttributionError,
    Color,
    PageRegions,
    as_chunks,
    displayed_rect,
    mupdf_errors,
    open_pdf,
    page_regions,
    parse_color,
)
from .highlight import DEFAULT_COLOR, HEADING_COLOR

__all__ = ["render", "render_pages", "render_to_files", "MAX_PIXELS"]

#: refuse renders beyond this many pixels per image (a 14400 pt page at 300 dpi would need ~3.6 GB)
MAX_PIXELS = 80_000_000


def render(
    pdf: str | Path | bytes,
    chunk: Chunk | ChunkingResult | Iterable[Any] | Any,
    dpi: int = 110,
    *,
    pad: float = 1.0,
    crop: bool = False,
    margin: float = 24.0,
    color: Color | str = DEFAULT_COLOR,
    heading_color: Color | str = HEADING_COLOR,
    fill_opacity: float = 0.3,
    password: str | None = None,
    query: str | None = None,
    focus: Focus | Sequence[Focus | None] | None = None,
    focus_color: Color | str = FOCUS_COLOR,
) -> list[bytes]:
    """One PNG per page the chunk touches (order of first appearance), its line boxes drawn as
    translucent fills with outlines (heading boxes in ``heading_color``). The pages are those of
    the chunks' bodies: a page that holds only a prepended heading gets no image (the heading is
    drawn where it shares a page with the body).

    ``pad`` grows every line box by that many points. ``crop=True`` clips each image to the
    chunk's region on that page plus ``margin`` points. Several chunks may be passed; they are
    drawn together and the pages are the union of theirs. The PDF itself is not modified. An
    encrypted PDF needs ``password``. ``query``/``focus``: the chunks' focus drawn over them in
    ``focus_color`` (as in :func:`~grounded.attribution.highlight`).
    """
    return [png for _page, png in render_pages(pdf, chunk, dpi, pad=pad, crop=crop, margin=margin, color=color,
                                               heading_color=heading_color, fill_opacity=fill_opacity,
                                               password=password, query=query, focus=focus, focus_color=focus_color)]


def render_pages(
    pdf: str | Path | bytes,
    chunk: Chunk | ChunkingResult | Iterable[Any] | Any,
    dpi: int = 110,
    *,
    pad: float = 1.0,
    crop: bool = False,
    margin: float = 24.0,
    color: Color | str = DEFAULT_COLOR,
    heading_color: Color | str = HEADING_COLOR,
    fill_opacity: float = 0.3,
    password: str | None = None,
    query: str | None = None,
    focus: Focus | Sequence[Focus | None] | None = None,
    focus_color: Color | str = FOCUS_COLOR,
) -> list[tuple[int, bytes]]:
    """Like :func:`render` but returns ``(page number, PNG bytes)`` pairs."""
    if not (isinstance(dpi, int) and 1 <= dpi <= 2400):
        raise ValueError(f"dpi must be an integer in 1..2400, got {dpi!r}")
    if not 0.0 <= fill_opacity <= 1.0:
        raise ValueError(f"fill_opacity must be in 0..1, got {fill_opacity!r}")
    import pymupdf

    body_rgb, heading_rgb, focus_rgb = parse_color(color), parse_color(heading_color), parse_color(focus_color)
    chunks = as_chunks(chunk)
    focused = [f for f in focus_chunks(pdf, chunks, query=query, focus=focus) if f is not None]
    doc, source = open_pdf(pdf, password)
    try:
        by_page: dict[int, list[PageRegions]] = {}
        focus_by_page: dict[int, list[PageRegions]] = {}
        for c in chunks:
            for pr in page_regions(c, doc.page_count, source):
                by_page.setdefault(pr.page, []).append(pr)
        for f in focused:
            for pr in page_regions(f, doc.page_count, source):
                focus_by_page.setdefault(pr.page, []).append(pr)
        if not by_page:
            ids = ", ".join(repr(c.id) for c in chunks) or "(no chunks given)"
            raise AttributionError(source, f"nothing to render: chunk {ids} has no boxes")
        # a page that holds only a chunk's prepended heading is not one of its pages (pages follow
        # the body: model.boxes.body_pages); its crop would show the heading alone
        body = {n for n, regions in by_page.items() if any(pr.regions(heading=False) for pr in regions)}
        images = []
        for number, regions in by_page.items():
            if body and number not in body:
                continue
            with mupdf_errors(source, f"rendering page {number}"):
                page = doc[number - 1]
                groups = [
                    ([displayed_rect(page, r, pad) for pr in regions for r in pr.regions(heading=is_heading)], rgb)
                    for is_heading, rgb in ((True, heading_rgb), (False, body_rgb))
                ]
                if focus_by_page.get(number):  # the focus last, over the chunk
                    groups.append(([displayed_rect(page, r, pad) for pr in focus_by_page[number]
                                    for r in pr.regions(heading=False)], focus_rgb))
                clip = None
                if crop:
                    drawn = [r for rects, _ in groups for r in rects]
                    clip = pymupdf.Rect(min(r.x0 for r in drawn) - margin, min(r.y0 for r in drawn) - margin,
                                        max(r.x1 for r in drawn) + margin, max(r.y1 for r in drawn) + margin) & page.rect
                images.append((number, _png(page, dpi, clip, groups, fill_opacity, source)))
    finally:
        doc.close()
    return images


def render_to_files(
    pdf: str | Path | bytes,
    chunk: Chunk | ChunkingResult | Iterable[Any] | Any,
    out: str | Path,
    dpi: int = 110,
    **kwargs: Any,
) -> list[Path]:
    """Render like :func:`render` and write ``OUT-p<page>.png`` per page (``out`` = ``OUT.png``), atomically."""
    out = Path(out)
    stem = out.name[: -len(out.suffix)] if out.suffix.lower() == ".png" else out.name
    return [
        atomic_write_bytes(out.with_name(f"{stem}-p{page}.png"), png)
        for page, png in render_pages(pdf, chunk, dpi, **kwargs)
    ]


def _png(page: Any, dpi: int, clip: Any, groups: list[tuple[list[Any], Color]], opacity: float, source: str) -> bytes:
    """Render the displayed page (or ``clip`` of it) and paint the rectangle groups onto the pixels.

    Painting happens on the image, not in the PDF: displayed-page rectangles map straight to
    pixels, whatever the page's rotation and crop box.
    """
    import numpy as np
    import pymupdf

    area = clip if clip is not None else page.rect
    pixels = (area.width * dpi / 72) * (area.height * dpi / 72)
    if pixels > MAX_PIXELS:
        raise AttributionError(
            source, f"page {page.number + 1} at {dpi} dpi needs {pixels / 1e6:.0f} Mpx (limit {MAX_PIXELS / 1e6:.0f}); "
            "lower the dpi or render with crop=True"
        )
    pix = page.get_pixmap(dpi=dpi, clip=clip, alpha=False)
    height, width = pix.height, pix.width
    img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(height, width, pix.n)[..., :3].astype(np.float32)
    sx, sy = width / area.width, height / area.height
    thickness = max(1, round(0.8 * dpi / 72))
    for rects, rgb in groups:
        fill = np.zeros((height, width), dtype=bool)
        edge = np.zeros((height, width), dtype=bool)
        for r in rects:
            x0, x1 = (max(0, min(width, round((v - area.x0) * sx))) for v in (r.x0, r.x1))
            y0, y1 = (max(0, min(height, round((v - area.y0) * sy))) for v in (r.y0, r.y1))
            if x1 <= x0 or y1 <= y0:
                continue
            fill[y0:y1, x0:x1] = True
            t = min(thickness, (x1 - x0 + 1) // 2, (y1 - y0 + 1) // 2) or 1
            edge[y0 : y0 + t, x0:x1] = edge[y1 - t : y1, x0:x1] = True
            edge[y0:y1, x0 : x0 + t] = edge[y0:y1, x1 - t : x1] = True
        color = np.array(rgb, dtype=np.float32) * 255
        img[fill] = img[fill] * (1 - opacity) + color * opacity
        img[edge] = img[edge] * 0.1 + color * 0.6 * 0.9  # outline: darker shade, 90 % opaque
    out = pymupdf.Pixmap(pymupdf.csRGB, width, height, np.ascontiguousarray(img.round().astype(np.uint8)).tobytes(), 0)
    out.set_dpi(dpi, dpi)
    return out.tobytes("png")
