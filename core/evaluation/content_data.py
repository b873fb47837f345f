"""Content to compare: Markdown split into elements (OmniDocBench-style extraction) and reference
readers for DoclingDocument JSON and ICDAR-2013 cell structure (``*-str.xml``).

Extraction order (so one element type cannot swallow another): HTML tables, fenced code blocks,
display formulas (``$$..$$``, ``\\[..\\]``), Markdown pipe tables, images/HTML comments; what is
left is split into text blocks at blank lines, and every heading line and list item starts a block
of its own. Block order is the reading order of the document.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputNotFoundError, SchemaError
from .errors import EvaluationDataError
from .teds import (
    MD_TABLE_SEPARATOR,
    Cell,
    TableNode,
    table_from_cells,
    tables_from_html,
    tables_from_markdown,
)

__all__ = [
    "DocumentContent",
    "extract_markdown",
    "read_docling_content",
    "read_icdar_tables",
    "DOCLING_TEXT_LABELS",
]

_HTML_TABLE = re.compile(r"<table\b.*?</table\s*>", re.IGNORECASE | re.DOTALL)
_CODE_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_DISPLAY_MATH = re.compile(r"\$\$.+?\$\$|\\\[.+?\\\]", re.DOTALL)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<!--.*?-->", re.DOTALL)
_BLOCK_START = re.compile(r"[ \t]{0,3}(?:#{1,6}[ \t]|[-*+][ \t]|\d{1,3}[.)][ \t])")
_HEADING = re.compile(r"[ \t]{0,3}#{1,6}[ \t]")

#: DoclingDocument labels read as text blocks (page headers/footers, code and formulas are not)
DOCLING_TEXT_LABELS = frozenset(
    {"text", "paragraph", "title", "section_header", "list_item", "caption", "footnote", "reference"}
)


@dataclass
class DocumentContent:
    """Text blocks (reading order), tables, formulas and code blocks of one document."""

    text_blocks: list[str] = field(default_factory=list)
    tables: list[TableNode] = field(default_factory=list)
    formulas: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)


def _pipe_tables_removed(text: str) -> tuple[str, list[TableNode]]:
    lines = text.splitlines()
    keep: list[str] = []
    tables: list[TableNode] = []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and "|" in lines[i] and MD_TABLE_SEPARATOR.match(lines[i + 1]) and "-" in lines[i + 1]:
            j = i + 2
            while j < len(lines) and "|" in lines[j] and lines[j].strip():
                j += 1
            tables.extend(tables_from_markdown("\n".join(lines[i:j])))
            keep.append("")
            i = j
        else:
            keep.append(lines[i])
            i += 1
    return "\n".join(keep), tables


def extract_markdown(markdown: str) -> DocumentContent:
    """Split a Markdown/HTML document into text blocks, tables, formulas and code (module doc)."""
    out = DocumentContent()
    tables: list[tuple[int, TableNode]] = []

    def take_html(m: re.Match[str]) -> str:
        for t in tables_from_html(m.group(0)):
            tables.append((m.start(), t))
        return "\n\n"

    def collect(into: list[str]) -> Callable[[re.Match[str]], str]:
        def take(m: re.Match[str]) -> str:
            into.append(m.group(0))
            return "\n\n"

        return take

    text = _HTML_TABLE.sub(take_html, markdown)
    text = _CODE_FENCE.sub(collect(out.code), text)
    text = _DISPLAY_MATH.sub(collect(out.formulas), text)
    text, md_tables = _pipe_tables_removed(text)
    # HTML and pipe tables in document order: HTML positions refer to the original text; pipe tables
    # are rare next to HTML ones, keep HTML first then pipe tables in their order
    out.tables = [t for _, t in sorted(tables, key=lambda x: x[0])] + md_tables
    text = _IMAGE.sub(" ", text)
    block: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            if block:
                out.text_blocks.append("\n".join(block))
            block = []
            continue
        if block and _BLOCK_START.match(line):
            out.text_blocks.append("\n".join(block))
            block = []
        block.append(line)
        if _HEADING.match(line):
            out.text_blocks.append("\n".join(block))
            block = []
    if block:
        out.text_blocks.append("\n".join(block))
    return out


# -- DoclingDocument ------------------------------------------------------------------------------
def _walk_body(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Body items in reading order, following ``$ref`` or ``cref`` links; pictures are leaves
    (text inside a figure is not running text) and items nested in a table (cell texts) are skipped."""
    from .dla_data import docling_nested, docling_ref, docling_resolve

    nested = docling_nested(doc)
    seen: set[str] = set()
    stack = [doc["body"]]
    while stack:
        item = stack.pop()
        ref = str(item.get("self_ref", ""))
        if ref in seen or ref in nested:
            continue
        seen.add(ref)
        yield item
        if item.get("label") == "picture":  # text inside pictures is not running text
            continue
        kids = [docling_resolve(doc, docling_ref(c)) for c in item.get("children", ()) or ()]
        stack.extend(k for k in reversed(kids) if k is not None)


def _docling_table(item: dict[str, Any]) -> TableNode:
    cells = []
    for c in item.get("data", {}).get("table_cells", ()):
        r0, c0 = int(c["start_row_offset_idx"]), int(c["start_col_offset_idx"])
        cells.append(Cell(row=r0, col=c0, text=str(c.get("text", "")),
                          rowspan=int(c.get("end_row_offset_idx", r0 + 1)) - r0,
                          colspan=int(c.get("end_col_offset_idx", c0 + 1)) - c0))
    return table_from_cells(cells)


def read_docling_content(path: str | Path) -> DocumentContent:
    """Text blocks (body layer, labels in :data:`DOCLING_TEXT_LABELS`, body order) and tables (cell
    grid with spans) of a DoclingDocument JSON (``$ref`` or docling-eval's ``cref`` links). Table-cell
    texts are part of their table, not text blocks. An empty result raises :class:`EvaluationDataError`."""
    path = Path(path)
    if not path.is_file():
        raise InputNotFoundError(path, "file not found")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        out = DocumentContent()
        for item in _walk_body(doc):
            if item.get("content_layer", "body") != "body":
                continue
            label = item.get("label")
            if label == "table" or label == "document_index":
                out.tables.append(_docling_table(item))
            elif label in DOCLING_TEXT_LABELS and str(item.get("text", "")).strip():
                out.text_blocks.append(str(item["text"]))
            elif label == "formula":
                out.formulas.append(str(item.get("text", "")))
            elif label == "code":
                out.code.append(str(item.get("text", "")))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"{path}: not a DoclingDocument JSON ({type(exc).__name__}: {exc})") from exc
    if not (out.text_blocks or out.tables or out.formulas or out.code):
        raise EvaluationDataError(
            f"{path}: the content reference is empty (no text, table, formula or code reachable from the body; "
            "unreadable references?)")
    return out


# -- ICDAR 2013 structure -------------------------------------------------------------------------
def read_icdar_tables(path: str | Path) -> list[tuple[int, TableNode]]:
    """(page, table) for every table region of an ICDAR-2013 ``*-str.xml`` (cells with spans)."""
    path = Path(path)
    if not path.is_file():
        raise InputNotFoundError(path, "file not found")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise SchemaError(f"{path}: unreadable structure XML ({exc})") from exc
    out: list[tuple[int, TableNode]] = []
    try:
        for region in root.iter("region"):
            cells = []
            for cell in region.iter("cell"):
                r0, c0 = int(cell.get("start-row", "")), int(cell.get("start-col", ""))
                r1, c1 = int(cell.get("end-row", r0)), int(cell.get("end-col", c0))
                content = cell.find("content")
                text = "".join(content.itertext()) if content is not None else ""
                cells.append(Cell(row=r0, col=c0, text=text, rowspan=r1 - r0 + 1, colspan=c1 - c0 + 1))
            out.append((int(region.get("page", "1")), table_from_cells(cells)))
    except ValueError as exc:
        raise SchemaError(f"{path}: unreadable cell ({exc})") from exc
    if not out:
        raise EvaluationDataError(f"{path}: the table-structure reference is empty (no <region> element)")
    return out
