"""Tables continued over a page break: one Table node with boxes on every page.

A parser sees the two halves of a table broken by a page break as two TABLE elements. The next
TABLE in reading order continues the previous one when it starts near the top of the following
page (top <= :data:`TOP`), the previous one ends near the bottom of its page (bottom >=
:data:`BOTTOM`), both have the same number of columns, and the second has no caption of its own
(a caption saying "continued" is allowed). Its rows are appended to the first table's Markdown,
without a repeated header row.
"""

from __future__ import annotations

from ..model.elements import ParsingResult
from ..model.elements import ParsingResultType as T

__all__ = ["continued_tables", "append_rows", "TOP", "BOTTOM"]

TOP = 0.35
BOTTOM = 0.6


def _columns(table: ParsingResult) -> int:
    rows = [c for c in table.children if c.type == T.TABLE_ROW]
    return len(rows[0].children) if rows else 0


def continued_tables(root: ParsingResult, captions: dict[str, ParsingResult]) -> dict[str, list[ParsingResult]]:
    """``{first table id: [its continuations in order]}``; ``captions`` maps table ids to their
    CAPTION elements."""
    tables = [n for n in root.walk() if n.type == T.TABLE and n.geom]
    out: dict[str, list[ParsingResult]] = {}
    head: ParsingResult | None = None
    for prev, cur in zip(tables, tables[1:], strict=False):
        last, first = max(prev.geom, key=lambda b: (b.page, b.bottom)), min(cur.geom, key=lambda b: (b.page, b.top))
        caption = captions.get(cur.id)
        continues = (
            first.page == last.page + 1 and last.bottom >= BOTTOM and first.top <= TOP
            and _columns(prev) == _columns(cur) > 0
            and (caption is None or "continued" in caption.content.lower())
        )
        if continues:
            head = head or prev
            out.setdefault(head.id, []).append(cur)
        else:
            head = None
    return out


def append_rows(markdown: str, more: str) -> str:
    """``markdown`` with the rows of the table ``more`` appended (its header row dropped when it
    repeats the first table's; otherwise kept as a row)."""
    lines, extra = markdown.splitlines(), more.splitlines()
    if len(extra) >= 2 and set(extra[1]) <= set("|-: ") and "-" in extra[1]:
        extra = extra[2:] if lines and extra[0] == lines[0] else [extra[0], *extra[2:]]
    return "\n".join([*lines, *extra])
