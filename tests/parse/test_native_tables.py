"""Table grids shared by the HTML/Markdown-table backends: cells land at their HTML grid column."""

from __future__ import annotations

import json

from grounded.model import ParsingResult
from grounded.model import ParsingResultType as T
from grounded.parsers.backends._mineru_tree import html_table_rows
from grounded.parsers.native import NodeFactory, add_table_rows, parse_html_table, parse_markdown_table
from tests.support.data import shared


def _cells(html: str) -> list[tuple[str, int, int]]:
    table = ParsingResult("t", T.TABLE)
    add_table_rows(table, parse_html_table(html), NodeFactory())
    return [(c.content, c.metadata["row"], c.metadata["col"]) for row in table.children for c in row.children]


def test_row_spans_from_above_push_cells_right():
    html = (
        "<table><tr><th rowspan=2>Drug</th><th colspan=2>Dose</th></tr>"
        "<tr><th>mg</th><th>days</th></tr>"
        "<tr><td>A</td><td rowspan=2>10</td><td>5</td></tr>"
        "<tr><td>B</td><td>7</td></tr></table>"
    )
    assert _cells(html) == [
        ("Drug", 0, 0), ("Dose", 0, 1),
        ("mg", 1, 1), ("days", 1, 2),  # "Drug" still covers column 0 of row 1
        ("A", 2, 0), ("10", 2, 1), ("5", 2, 2),
        ("B", 3, 0), ("7", 3, 2),  # "10" covers column 1 of row 3
    ]  # fmt: skip


def test_markdown_tables_are_plain_grids():
    table = ParsingResult("t", T.TABLE)
    add_table_rows(table, parse_markdown_table("| a | b |\n|---|---|\n| 1 | 2 |"), NodeFactory())
    assert [[(c.content, c.metadata["col"]) for c in r.children] for r in table.children] == [
        [("a", 0), ("b", 1)],
        [("1", 0), ("2", 1)],
    ]


def test_real_unstructured_tables_get_the_same_columns_as_the_mineru_reader():
    """Every table HTML Unstructured recorded: add_table_rows and the MinerU reader agree on the grid."""
    htmls = [
        e["metadata"]["text_as_html"]
        for path in sorted(shared("native", "unstructured").glob("*.json"))
        for e in json.loads(path.read_text(encoding="utf-8"))
        if e.get("type") == "Table" and e.get("metadata", {}).get("text_as_html")
    ]
    assert htmls
    for html in htmls:
        ours = [(row, col) for _text, row, col in _cells(html)]
        mineru = [(c["row"], c["col"]) for r in html_table_rows(html) for c in r]
        assert ours == mineru
