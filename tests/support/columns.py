"""Two-column reading order measured on the layout model's boxes of real PDFs: how many pages read
a column-2 box before a column-1 box of its band, in the model's order and in
:func:`grounded.parsers.reading_order.reading_order`'s. Used by tests/parse/test_reading_order.py
(the two-column shared PDFs) and benchmarks/reading_order_columns.py (every shared PDF)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grounded.parsers.reading_order import reading_order

__all__ = ["ColumnCount", "column_violations", "count_column_order"]

_BODY_SKIP = frozenset({"page-header", "page-footer", "footnote"})


def column_violations(boxes: Sequence[Any], order: list[int], width: float) -> int:
    """Pairs (column-2 box, column-1 box) of the same band with the column-2 box read first.
    Defined from the boxes alone: column 1 ends left of the page's middle, column 2 starts right
    of it, a box crossing the middle starts a new band (by its top)."""
    mid = width / 2
    body = [i for i in order if boxes[i].boxclass not in _BODY_SKIP]
    spans = sorted(boxes[i].y0 for i in body if boxes[i].x0 < mid - 5 and boxes[i].x1 > mid + 5)

    def band(i: int) -> int:
        return sum(1 for y in spans if y <= boxes[i].y0)

    pos = {i: k for k, i in enumerate(body)}
    left = [i for i in body if boxes[i].x1 <= mid + 5]
    right = [i for i in body if boxes[i].x0 >= mid - 5]
    if len(left) < 2 or len(right) < 2:
        return 0  # not a two-column page
    return sum(1 for r in right for ll in left if band(r) == band(ll) and pos[r] < pos[ll])


@dataclass
class ColumnCount:
    """Pages, and pages with a column-2 box read before a column-1 box of its band (model order ->
    :func:`reading_order`), per PDF and in total; ``remaining``: the pages still out of order."""

    pages: int = 0
    before: int = 0
    after: int = 0
    remaining: list[str] = field(default_factory=list)
    per_pdf: dict[str, tuple[int, int, int]] = field(default_factory=dict)


def count_column_order(pdfs: Iterable[Path]) -> ColumnCount:
    """Run the layout model over every page of ``pdfs`` (one ONNX thread) and count."""
    import pymupdf

    from grounded.parsers.backends.pymupdf import layout as P

    P._load_layout(1)
    total = ColumnCount()
    for path in pdfs:
        with pymupdf.open(path) as doc:
            layouts = P._layout_pages(doc, list(range(doc.page_count)))
        pages = before = after = 0
        for page in layouts:
            boxes = page.boxes
            old = column_violations(boxes, list(range(len(boxes))), page.width)
            new = column_violations(boxes, reading_order(boxes), page.width)
            pages += 1
            before += old > 0
            after += new > 0
            if new:
                total.remaining.append(f"{path.name} p{page.page_number}")
        total.pages += pages
        total.before += before
        total.after += after
        total.per_pdf[str(path)] = (pages, before, after)
    return total
