"""Lossy Markdown export of a parse tree (headings as ``#``, lists, tables as Markdown).

Backends usually produce Markdown from their native output (``_get_md``); this generic export is
the fallback and the rendering used for trees loaded from JSON.
"""

from __future__ import annotations

from ..model.elements import HEADING_TYPES, ParsingResult
from ..model.elements import ParsingResultType as T

__all__ = ["to_markdown", "table_to_markdown"]

_CONTAINERS = (T.ROOT, T.LIST, T.REFERENCE_LIST, T.TABLE_ROW, T.TABLE_CELL, T.KEY_VALUE_AREA, T.FORM_AREA)


def _cell_text(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def table_to_markdown(table: ParsingResult) -> str:
    """Pipe table from TABLE_ROW/TABLE_CELL children; falls back to the table's own content."""
    rows = [r for r in table.children if r.type == T.TABLE_ROW]
    if not rows:
        return table.content.strip()
    grid = [[_cell_text(c.content) for c in r.children if c.type == T.TABLE_CELL] for r in rows]
    width = max((len(r) for r in grid), default=0)
    if width == 0:
        return table.content.strip()
    grid = [r + [""] * (width - len(r)) for r in grid]
    lines = ["| " + " | ".join(grid[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(r) + " |" for r in grid[1:]]
    return "\n".join(lines)


def to_markdown(root: ParsingResult) -> str:
    blocks: list[str] = []
    stack = [(root, 0)]
    while stack:
        node, list_depth = stack.pop()
        descend = True
        t = node.type
        if t in HEADING_TYPES:
            level = node.level or (1 if t == T.TITLE else 2)
            blocks.append("#" * max(1, min(6, level)) + " " + " ".join(node.content.split()))
        elif t in (T.TABLE, T.DOC_INDEX):
            md = table_to_markdown(node)
            if md:
                blocks.append(md)
            descend = False
        elif t in (T.LIST_ITEM, T.REFERENCE_ITEM):
            text = " ".join(node.content.split())
            if text:
                prefix = "" if text[:1] in "-*•" or text[:2].rstrip(".").isdigit() else "- "
                blocks.append("  " * list_depth + prefix + text)
        elif t == T.FIGURE:
            alt = " ".join(node.content.split())
            blocks.append(f"![{alt}]({node.image})" if node.image else (f"*[Figure: {alt}]*" if alt else "*[Figure]*"))
        elif t == T.FORMULA:
            if node.content.strip():
                blocks.append("$$\n" + node.content.strip() + "\n$$")
        elif t not in _CONTAINERS and node.content.strip():
            blocks.append(node.content.strip())
        if descend:
            child_depth = list_depth + 1 if t in (T.LIST, T.REFERENCE_LIST) and node.parent is not None and node.parent.type in (T.LIST_ITEM, T.LIST) else list_depth
            stack.extend((c, child_depth) for c in reversed(node.children))
    # keep consecutive list items together, everything else separated by a blank line
    out: list[str] = []
    for block in blocks:
        if out and block.lstrip().startswith(("- ", "• ")) and out[-1].lstrip().startswith(("- ", "• ")):
            out[-1] += "\n" + block
        else:
            out.append(block)
    return "\n\n".join(out) + "\n"
