"""PNG previews of where chunks came from: each touched page rendered with the line boxes drawn."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..model import Chunk, ChunkingResult
from ..serialization import atomic_write_bytes
from .geometry import (
    AttributionError,
    Color,
    PageRegions,
    as_chunks,
    displayed_rect,
    open_pdf,
    page_regions,
    parse_color,
    to_page_rect,
)
from .highlight import DEFAULT_COLOR, HEADING_COLOR

__all__ = ["render", "render_pages", "render_to_files", "MAX_PIXELS"]

#: refuse renders beyond this many pixels per image (a 14400 pt page at 300 dpi would need ~3.6 GB)
MAX_PIXELS = 80_000_000


def render(
    pdf: str | Path | bytes,
    chunk: Chunk | ChunkingResult | Iterable[Chunk],
    dpi: int = 110,
    *,
    pad: float = 1.0,
    crop: bool = False,
    margin: float = 24.0,
    color: Color | str = DEFAULT_COLOR,
    heading_color: Color | str = HEADING_COLOR,
    fill_opacity: float = 0.3,
) -> list[bytes]:
    """One PNG per page the chunk touches (order of first appearance), its line boxes drawn as
    translucent fills with outlines (heading boxes in ``heading_color``).

    ``pad`` grows every line box by that many points. ``crop=True`` clips each image to the
    chunk's region on that page plus ``margin`` points. Several chunks may be passed; they are
    drawn together and the pages are the union of theirs. The PDF itself is not modified.
    """
    return [png for _page, png in render_pages(pdf, chunk, dpi, pad=pad, crop=crop, margin=margin, color=color,
                                               heading_color=heading_color, fill_opacity=fill_opacity)]


def render_pages(
    pdf: str | Path | bytes,
    chunk: Chunk | ChunkingResult | Iterable[Chunk],
    dpi: int = 110,
    *,
    pad: float = 1.0,
    crop: bool = False,
    margin: float = 24.0,
    color: Color | str = DEFAULT_COLOR,
    heading_color: Color | str = HEADING_COLOR,
    fill_opacity: float = 0.3,
) -> list[tuple[int, bytes]]:
    """Like :func:`render` but returns ``(page number, PNG bytes)`` pairs."""
    if not (isinstance(dpi, int) and 1 <= dpi <= 2400):
        raise ValueError(f"dpi must be an integer in 1..2400, got {dpi!r}")
    if not 0.0 <= fill_opacity <= 1.0:
        raise ValueError(f"fill_opacity must be in 0..1, got {fill_opacity!r}")
    body_rgb, heading_rgb = parse_color(color), parse_color(heading_color)
    chunks = as_chunks(chunk)
    doc, source = open_pdf(pdf)
    try:
        by_page: dict[int, list[PageRegions]] = {}
        for c in chunks:
            for pr in page_regions(c, doc.page_count, source):
                by_page.setdefault(pr.page, []).append(pr)
        if not by_page:
            ids = ", ".join(repr(c.id) for c in chunks) or "(no chunks given)"
            raise AttributionError(source, f"nothing to render: chunk {ids} has no boxes")
        images = []
        for number, regions in by_page.items():
            page = doc[number - 1]
            drawn = _draw(page, regions, pad, body_rgb, heading_rgb, fill_opacity)
            clip = None
            if crop:
                clip = drawn[0]
                for r in drawn[1:]:
                    clip |= r
                clip = (clip + (-margin, -margin, margin, margin)) & page.rect
            images.append((number, _png(page, dpi, clip, source)))
    finally:
        doc.close()
    return images


def render_to_files(
    pdf: str | Path | bytes,
    chunk: Chunk | ChunkingResult | Iterable[Chunk],
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


def _draw(page: Any, regions: list[PageRegions], pad: float, body: Color, heading: Color, opacity: float) -> list[Any]:
    """Draw the regions on ``page`` (unrotated coordinates); return their displayed rectangles."""
    shape = page.new_shape()
    drawn = []
    for is_heading, rgb in ((True, heading), (False, body)):
        rects = [displayed_rect(page, r, pad) for pr in regions for r in pr.regions(heading=is_heading)]
        rects = [r for r in rects if not r.is_empty]
        for r in rects:
            shape.draw_rect(to_page_rect(page, r))
        if rects:
            outline = tuple(0.6 * v for v in rgb)
            shape.finish(color=outline, fill=rgb, fill_opacity=opacity, stroke_opacity=0.9, width=0.8)
        drawn += rects
    shape.commit(overlay=True)
    if not drawn:  # only degenerate boxes: fall back to the enclosing boxes so crop has a region
        drawn = [displayed_rect(page, b, pad) for pr in regions for b in pr.boxes]
    return drawn


def _png(page: Any, dpi: int, clip: Any, source: str) -> bytes:
    area = clip if clip is not None else page.rect
    pixels = (area.width * dpi / 72) * (area.height * dpi / 72)
    if pixels > MAX_PIXELS:
        raise AttributionError(
            source, f"page {page.number + 1} at {dpi} dpi needs {pixels / 1e6:.0f} Mpx (limit {MAX_PIXELS / 1e6:.0f}); "
            "lower the dpi or render with crop=True"
        )
    return page.get_pixmap(dpi=dpi, clip=clip).tobytes("png")
