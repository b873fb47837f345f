"""Worker processes of the PyMuPDF backend: each loads the layout model once (one ONNX thread) and
lays out and builds page ranges; the parent merges them in page order."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grounded.model.elements import ParsingResult, ParsingResultType
from grounded.parsers.pdf_input import mupdf_quiet
from grounded.parsers.textlayer import TextLayer
from grounded.runtime.memory import release_memory
from grounded.runtime.processes import ParentInfo, die_with_parent

from .layout import _layout_pages, _load_layout
from .tree import Pending, _TreeBuilder

log = logging.getLogger(__name__)


def _worker_init(parent: ParentInfo | None = None) -> None:
    die_with_parent(parent)  # no orphaned workers after a kill -9 of the parent (#14.6)
    _load_layout(1)


#: what a worker returns for a batch of pages: (layouts, page number -> elements, paragraph font
#: sizes -> chars, page number -> the builder's scratch values of that page's elements:
#: ``_TreeBuilder.pending_of``, keyed by position so they survive pickling)
WorkerResult = tuple[list[Any], dict[int, list[ParsingResult]], dict[float, int], dict[int, dict[int, Pending]]]


def _worker_task(task: _PageTask) -> WorkerResult:
    """One pool task: :func:`_worker_pages`, then hand the worker's freed memory back (#14.7)."""
    try:
        return _worker_pages(task)
    finally:
        release_memory()


@dataclass
class _PageTask:
    path: str
    pages: list[int]  # 0-based
    image_dir: str | None
    image_dpi: int
    label_map: dict[str, ParsingResultType] = field(default_factory=dict)  # the parser's label_map
    ocr_pages: frozenset[int] = frozenset()  # 1-based pages whose text layer is OCR (_TreeBuilder.ocr_pages)


def _worker_pages(task: _PageTask) -> WorkerResult:
    """In a worker: layout pass + elements of ``task.pages`` from the text layer (with the scratch
    values ``_TreeBuilder.finish`` needs, which never ride in the elements' metadata)."""
    with mupdf_quiet():
        layouts = _layout_pages(task.path, task.pages)
    builder = _TreeBuilder(
        Path(task.path), Path(task.image_dir) if task.image_dir else None, task.image_dpi, ocr_pages=task.ocr_pages
    )
    builder.label_map = task.label_map or builder.label_map
    built: dict[int, list[ParsingResult]] = {}
    pending: dict[int, dict[int, Pending]] = {}
    with mupdf_quiet(), TextLayer(task.path, cache_pages=1) as layer:
        for page in layouts:
            start = len(builder.elements)
            builder.add_page(page, layer.page(page.page_number), layer)
            built[page.page_number] = builder.elements[start:]
            pending[page.page_number] = builder.pending_of(built[page.page_number])
    return layouts, built, dict(builder.body_sizes), pending


def _page_batches(page_count: int, batch: int) -> list[list[int]]:
    return [list(range(i, min(page_count, i + batch))) for i in range(0, page_count, batch)]


def _guided_batches(page_count: int, workers: int, largest: int) -> list[list[int]]:
    """Batches that shrink towards the end (guided scheduling): few tasks, yet the workers
    finish together (the last tasks are single pages)."""
    out: list[list[int]] = []
    start = 0
    while start < page_count:
        size = max(1, min(largest, math.ceil((page_count - start) / (4 * workers))))
        out.append(list(range(start, min(page_count, start + size))))
        start += size
    return out
