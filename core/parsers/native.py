"""Helpers the backends share to turn native outputs into tree pieces.

* :class:`NodeFactory` hands out provisional element ids (post-processing assigns the final ones),
* :func:`parse_html_table` / :func:`parse_markdown_table` read the table encodings tools emit,
* :func:`add_table_rows` builds TABLE -> TABLE_ROW -> TABLE_CELL from such a grid.

Lists of items are grouped by post-processing for every backend (:func:`.hierarchy.group_lists`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from ..model.boxes import ParsingBoundingBox
from ..model.element_info import TablePlace
from ..model.elements import ParsingResult, ParsingResultType

__all__ = [
    "NodeFactory",
    "TableCell",
    "parse_html_table",
    "parse_markdown_table",
    "add_table_rows",
    "grid_columns",
    "grid_to_markdown",
    "enclosing_per_page",
]

T = ParsingResultType


class NodeFactory:
    """Creates nodes with provisional ids ``<prefix><n>`` in creation order."""

    def __init__(self, prefix: str = "e") -> None:
        self._prefix = prefix
        self._counter = itertools.count()

    def node(
        self,
        type_: ParsingResultType,
        content: str = "",
        geom: list[ParsingBoundingBox] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ParsingResult:
        return ParsingResult(
            id=f"{self._prefix}{next(self._counter)}",
            type=type_,
            content=content,
            geom=list(geom or []),
            metadata=dict(metadata or {}),
        )


@dataclass
class TableCell:
    text: str
    row_span: int = 1
    col_span: int = 1
    header: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


_NESTED_BREAKS = frozenset({"table", "tr", "td", "th", "br"})


class _TableHTMLParser(HTMLParser):
    """Collects rows of cells; tolerant of missing ``<tr>`` (``<thead><th>..`` as unstructured emits)
    and of unclosed ``<td>``/``<tr>``. ``keep_empty_rows``: keep rows without cells (a ``<tr></tr>``
    whose cells are all covered by rowspans above still occupies a grid row)."""

    def __init__(self, keep_empty_rows: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self.keep_empty_rows = keep_empty_rows
        self.rows: list[list[TableCell]] = []
        self._row: list[TableCell] | None = None
        self._cell: TableCell | None = None
        self._text: list[str] = []
        self._in_head = False
        self._depth = 0  # nested tables are flattened into the enclosing cell's text

    def _close_cell(self) -> None:
        if self._cell is not None:
            self._cell.text = " ".join("".join(self._text).split())
            if self._row is None:
                self._row = []
            self._row.append(self._cell)
            self._cell, self._text = None, []

    def _close_row(self) -> None:
        self._close_cell()
        if self._row or (self.keep_empty_rows and self._row is not None):
            self.rows.append(self._row)
        self._row = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._depth += 1
        if self._depth > 1:  # inside a nested table: only its text counts, words kept apart
            if tag in _NESTED_BREAKS and self._cell is not None:
                self._text.append(" ")
            return
        if tag == "table":
            return
        if tag == "thead":
            self._in_head = True
        elif tag in ("tbody", "tfoot"):
            self._close_row()
            self._in_head = False
        elif tag == "tr":
            self._close_row()
            self._row = []
        elif tag in ("td", "th"):
            self._close_cell()
            a = dict(attrs)
            self._cell = TableCell("", _span(a.get("rowspan")), _span(a.get("colspan")), tag == "th" or self._in_head)
        elif tag == "br" and self._cell is not None:
            self._text.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if self._depth > 1 and tag in _NESTED_BREAKS and self._cell is not None:
            self._text.append(" ")
        if tag == "table":
            self._depth -= 1
            if self._depth == 0:
                self._close_row()
            return
        if self._depth > 1:
            return
        if tag in ("td", "th"):
            self._close_cell()
        elif tag == "tr":
            self._close_row()
        elif tag == "thead":
            self._close_row()
            self._in_head = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)


def _span(value: str | None) -> int:
    try:
        return max(1, int(str(value).strip()))
    except (TypeError, ValueError):
        return 1


def parse_html_table(html: str, *, keep_empty_rows: bool = False) -> list[list[TableCell]]:
    """Rows of cells of the first-level ``<table>`` in ``html`` (rowspan/colspan kept per cell).

    Cell text has entities decoded, ``<br>`` as a space, other tags dropped and whitespace
    collapsed; a table nested in a cell becomes part of that cell's text. ``<th>`` cells and cells
    inside ``<thead>`` are ``header``. Rows without cells are dropped unless ``keep_empty_rows``.
    """
    parser = _TableHTMLParser(keep_empty_rows)
    if "<table" not in html.lower():
        html = f"<table>{html}</table>"
    parser.feed(html)
    parser.close()
    parser._close_row()
    return parser.rows


_MD_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def _split_md_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells = re.split(r"(?<!\\)\|", body)
    return [" ".join(c.replace("\\|", "|").split()) for c in cells]


def parse_markdown_table(md: str) -> list[list[TableCell]]:
    """Rows of a pipe table; the row above a ``|---|`` separator is the header. Non-table lines are ignored."""
    rows: list[list[TableCell]] = []
    lines = [ln for ln in md.strip().splitlines() if ln.strip()]
    header_rows = 0
    for i, line in enumerate(lines):
        if _MD_SEPARATOR.match(line):
            header_rows = len(rows) if i > 0 else 0
            continue
        if "|" not in line:
            continue
        rows.append([TableCell(text) for text in _split_md_row(line)])
    for row in rows[:header_rows]:
        for cell in row:
            cell.header = True
    return rows


def grid_to_markdown(rows: list[list[str]]) -> str:
    """Pipe table (first row as header) from a grid of strings."""
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    if width == 0:
        return ""

    def fmt(row: list[str]) -> str:
        cells = [" ".join(str(c).replace("|", "\\|").split()) for c in row] + [""] * (width - len(row))
        return "| " + " | ".join(cells) + " |"

    return "\n".join([fmt(rows[0]), "|" + "---|" * width, *(fmt(r) for r in rows[1:])])


def grid_columns(rows: list[list[TableCell]]) -> list[list[int]]:
    """Column of every cell in the table grid, as HTML lays it out: a cell takes the first slot of
    its row not already covered by a row span from above or a col span from the left."""
    occupied: set[tuple[int, int]] = set()
    out: list[list[int]] = []
    for r, row in enumerate(rows):
        cols: list[int] = []
        col = 0
        for cell in row:
            while (r, col) in occupied:
                col += 1
            cols.append(col)
            for dr in range(cell.row_span):
                for dc in range(cell.col_span):
                    occupied.add((r + dr, col + dc))
            col += cell.col_span
        out.append(cols)
    return out


def add_table_rows(table: ParsingResult, rows: list[list[TableCell]], factory: NodeFactory) -> None:
    """Append TABLE_ROW / TABLE_CELL children (cells carry row/col grid position and spans in metadata)."""
    for r, (row, cols) in enumerate(zip(rows, grid_columns(rows))):
        row_node = table.add_child(factory.node(T.TABLE_ROW, metadata=TablePlace.new(row=r)))
        if row and all(c.header for c in row):
            row_node.table_place.header = True
        for cell, col in zip(row, cols):
            meta: dict[str, Any] = {**TablePlace.new(row=r, col=col), **cell.metadata}
            if cell.row_span > 1:
                meta["row_span"] = cell.row_span
            if cell.col_span > 1:
                meta["col_span"] = cell.col_span
            if cell.header:
                TablePlace(meta).header = True
            row_node.add_child(factory.node(T.TABLE_CELL, cell.text, metadata=meta))


def enclosing_per_page(boxes: list[ParsingBoundingBox]) -> list[ParsingBoundingBox]:
    """One enclosing box per page (in first-seen page order)."""
    by_page: dict[int, list[ParsingBoundingBox]] = {}
    for b in boxes:
        by_page.setdefault(b.page, []).append(b)
    return [ParsingBoundingBox.enclosing(bs) for bs in by_page.values()]
