"""Visual source attribution (spec §7): highlight chunks in the PDF or render them as PNGs.

PyMuPDF is imported only when a function runs; nothing here imports torch or a framework.
"""

from __future__ import annotations

from .geometry import AttributionError, ChunkNotFoundError, ChunkPageError
from .highlight import DEFAULT_COLOR, HEADING_COLOR, highlight
from .render import render, render_pages, render_to_files

__all__ = [
    "highlight",
    "render",
    "render_pages",
    "render_to_files",
    "AttributionError",
    "ChunkPageError",
    "ChunkNotFoundError",
    "DEFAULT_COLOR",
    "HEADING_COLOR",
]
