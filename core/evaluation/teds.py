"""TEDS and structure-only S-TEDS of tables (Zhong et al. 2020; thesis eq. 3.9), via ``apted``.

A table is a tree ``table -> tr -> td`` (``th`` is read as ``td``; ``thead``/``tbody``/``tfoot``
wrappers are dropped so the score does not depend on whether a source marks header rows — Markdown
cannot). Costs: insert/delete 1; renaming nodes of different tags, or cells with different
``colspan``/``rowspan``, 1; two cells with equal spans cost the normalized edit distance of their
text (TEDS) or 0 (S-TEDS)::

    TEDS(a, b) = 1 - TreeEditDistance(a, b) / max(|a|, |b|)

Readers: HTML (:func:`tables_from_html`), Markdown pipe tables (:func:`tables_from_markdown`) and
cell grids with spans (:func:`table_from_cells`, used for ICDAR-2013 and DoclingDocument tables).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from ..errors import BackendUnavailableError
from .text_metrics import ned

__all__ = [
    "TableNode",
    "Cell",
    "teds",
    "s_teds",
    "tables_from_html",
    "tables_from_markdown",
    "table_from_cells",
    "table_from_rows",
    "table_to_html",
    "split_markdown_row",
    "markdown_cell_text",
    "MD_TABLE_SEPARATOR",
]

_WS = re.compile(r"\s+")
MD_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


@dataclass
class TableNode:
    tag: str
    colspan: int = 1
    rowspan: int = 1
    text: str = ""
    children: list[TableNode] = field(default_factory=list)

    def size(self) -> int:
        return 1 + sum(c.size() for c in self.children)

    @property
    def rows(self) -> list[TableNode]:
        return [c for c in self.children if c.tag == "tr"]


@dataclass(frozen=True)
class Cell:
    """A grid cell: ``row``/``col`` of its top-left corner, spans, text."""

    row: int
    col: int
    text: str
    rowspan: int = 1
    colspan: int = 1


def _clean(text: str) -> str:
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def table_from_rows(rows: Sequence[Sequence[str]]) -> TableNode:
    """A table of plain cells (no spans) from a list of rows of cell texts."""
    return TableNode("table", children=[TableNode("tr", children=[TableNode("td", text=_clean(c)) for c in r])
                                        for r in rows])


def table_from_cells(cells: Iterable[Cell], fill_empty: bool = True) -> TableNode:
    """A table from grid cells: each cell is placed in the row of its top-left corner, rows in
    order, cells left to right. With ``fill_empty`` grid positions no cell covers become empty
    cells (ICDAR-2013 does not annotate empty cells; HTML and Markdown tables have them)."""
    cells = list(cells)
    if fill_empty and cells:
        n_cols = max(c.col + max(1, c.colspan) for c in cells)
        covered = {(r, k) for c in cells for r in range(c.row, c.row + max(1, c.rowspan))
                   for k in range(c.col, c.col + max(1, c.colspan))}
        n_rows_all = max(c.row + max(1, c.rowspan) for c in cells)
        cells += [Cell(r, k, "") for r in range(n_rows_all) for k in range(n_cols) if (r, k) not in covered]
    n_rows = max((c.row + 1 for c in cells), default=0)
    by_row: list[list[Cell]] = [[] for _ in range(n_rows)]
    for c in cells:
        by_row[c.row].append(c)
    return TableNode("table", children=[
        TableNode("tr", children=[TableNode("td", colspan=max(1, c.colspan), rowspan=max(1, c.rowspan),
                                            text=_clean(c.text)) for c in sorted(row, key=lambda x: x.col)])
        for row in by_row
    ])


def table_to_html(table: TableNode) -> str:
    """Canonical HTML of a table tree (for reports and debugging)."""
    def cell(td: TableNode) -> str:
        attrs = (f' colspan="{td.colspan}"' if td.colspan > 1 else "") + (f' rowspan="{td.rowspan}"' if td.rowspan > 1 else "")
        return f"<td{attrs}>{td.text}</td>"

    return "<table>" + "".join("<tr>" + "".join(cell(td) for td in tr.children) + "</tr>" for tr in table.rows) + "</table>"


class _TableHTMLParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[TableNode] = []
        self._stack: list[TableNode] = []  # open tables
        self._row: TableNode | None = None
        self._cell: TableNode | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        tag = tag.lower()
        if tag == "table":
            if self._cell is not None:  # nested table: keep its text inside the outer cell
                return
            self._stack.append(TableNode("table"))
        elif not self._stack:
            return
        elif tag == "tr" and self._cell is None:
            self._close_row()
            self._row = TableNode("tr")
        elif tag in ("td", "th") and self._cell is None:
            if self._row is None:
                self._row = TableNode("tr")
            a = dict(attrs)
            self._cell = TableNode("td", colspan=_span(a.get("colspan")), rowspan=_span(a.get("rowspan")))
            self._text = []
        elif tag == "br" and self._cell is not None:
            self._text.append(" ")

    def handle_endtag(self, tag: str) -> None:
        tag = tag.lower()
        if tag in ("td", "th"):
            self._close_cell()
        elif tag == "tr":
            self._close_row()
        elif tag == "table" and self._stack and self._cell is None:
            self._close_row()
            self.tables.append(self._stack.pop())

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)

    def _close_cell(self) -> None:
        if self._cell is not None and self._row is not None:
            self._cell.text = _clean("".join(self._text))
            self._row.children.append(self._cell)
        self._cell = None

    def _close_row(self) -> None:
        self._close_cell()
        if self._row is not None and self._stack:
            self._stack[-1].children.append(self._row)
        self._row = None


def _span(value: str | None) -> int:
    try:
        return max(1, int(str(value).strip())) if value is not None else 1
    except ValueError:
        return 1


def tables_from_html(html: str) -> list[TableNode]:
    """Every top-level ``<table>`` of ``html`` as a tree (tolerates unclosed cells/rows)."""
    parser = _TableHTMLParser()
    parser.feed(html)
    parser.close()
    while parser._stack:  # unclosed tables at the end of the input
        parser._close_row()
        parser.tables.append(parser._stack.pop())
    return parser.tables


_MD_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
_MD_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_MD_STRONG = re.compile(r"(\*\*|__)(.+?)\1")
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")


def markdown_cell_text(cell: str) -> str:
    """Plain text of a Markdown table cell: ``<br>`` -> space, tags and bold markers dropped,
    backslash escapes resolved."""
    text = _MD_TAG.sub("", _MD_BR.sub(" ", cell))
    text = _MD_STRONG.sub(r"\2", text)
    return _MD_ESCAPE.sub(r"\1", text).strip()


def split_markdown_row(line: str) -> list[str]:
    """Cells of one Markdown pipe-table row (``\\|`` is a literal pipe), as plain text."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [markdown_cell_text(c) for c in re.split(r"(?<!\\)\|", s)]


def tables_from_markdown(markdown: str) -> list[TableNode]:
    """Markdown pipe tables (a header row, a ``---`` separator row, body rows) as trees."""
    lines = markdown.splitlines()
    tables: list[TableNode] = []
    i = 0
    while i < len(lines) - 1:
        if "|" in lines[i] and MD_TABLE_SEPARATOR.match(lines[i + 1]) and "-" in lines[i + 1]:
            rows = [split_markdown_row(lines[i])]
            j = i + 2
            while j < len(lines) and "|" in lines[j] and lines[j].strip():
                rows.append(split_markdown_row(lines[j]))
                j += 1
            tables.append(table_from_rows(rows))
            i = j
        else:
            i += 1
    return tables


def _config(structure_only: bool) -> Any:
    try:
        from apted import Config
    except ImportError as exc:
        raise BackendUnavailableError("TEDS (apted tree edit distance)", "eval") from exc

    class _TableConfig(Config):
        valuecls = float

        def rename(self, a: TableNode, b: TableNode) -> float:
            if a.tag != b.tag or a.colspan != b.colspan or a.rowspan != b.rowspan:
                return 1.0
            if a.tag == "td" and not structure_only and (a.text or b.text):
                return ned(a.text, b.text)
            return 0.0

        def children(self, node: TableNode) -> list[TableNode]:
            return node.children

    return _TableConfig()


def _teds(a: TableNode, b: TableNode, structure_only: bool) -> float:
    from apted import APTED

    n = max(a.size(), b.size())
    if n == 0:
        return 1.0
    dist = APTED(a, b, _config(structure_only)).compute_edit_distance()
    return max(0.0, 1.0 - float(dist) / n)


def teds(a: TableNode, b: TableNode) -> float:
    """Tree-edit-distance similarity with cell text (1 = identical)."""
    return _teds(a, b, structure_only=False)


def s_teds(a: TableNode, b: TableNode) -> float:
    """Structure-only TEDS: cell text ignored, spans and tree shape kept."""
    return _teds(a, b, structure_only=True)
