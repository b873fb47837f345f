"""Unstructured.io backend (thesis §3.3.1): ``partition_pdf(strategy="hi_res")`` element JSON -> tree.

Native output is the element list in ``elements_to_json`` form: ``{type, element_id, text,
metadata}`` with ``metadata.coordinates = {points, system, layout_width, layout_height}``.
``points`` are the four corners of the element; ``PixelSpace`` has its origin top-left in pixels
of the page render (200 DPI for hi_res), ``PointSpace`` and ``RelativeCoordinateSystem`` have
their origin bottom-left (PDF points / unit square). Every system is converted to top-left page
fractions. Tables are rebuilt from ``metadata.text_as_html`` (or ``table_as_cells``).
Unstructured writes no Markdown of its own: the Markdown is rendered from the post-processed tree.
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from grounded.errors import InvalidBoxError, ParserError
from grounded.model.boxes import ParsingBoundingBox
from grounded.model.element_info import ElementTrace, HeadingInfo
from grounded.model.elements import HEADING_TYPES, ParsingResult, ParsingResultType
from grounded.model.options import Option
from grounded.runtime.optional import require

from ..base import BaseParser, map_label
from ..native import NodeFactory, TableCell, add_table_rows, grid_to_markdown, parse_html_table

__all__ = ["UnstructuredParser", "elements_to_tree", "unstructured_box"]

log = logging.getLogger(__name__)

T = ParsingResultType

#: unstructured element ``type`` -> ParsingResultType (``unstructured.documents.elements``)
LABEL_MAP: dict[str, ParsingResultType] = {
    "Title": T.SECTION_HEADER,  # unstructured calls every heading "Title"; category_depth gives the level
    "Headline": T.SECTION_HEADER,
    "Subheadline": T.SECTION_HEADER,
    "Section-header": T.SECTION_HEADER,
    "NarrativeText": T.PARAGRAPH,
    "Text": T.PARAGRAPH,
    "Paragraph": T.PARAGRAPH,
    "Abstract": T.PARAGRAPH,
    "Threading": T.PARAGRAPH,
    "CompositeElement": T.PARAGRAPH,
    "Address": T.PARAGRAPH,
    "EmailAddress": T.PARAGRAPH,
    "CodeSnippet": T.PARAGRAPH,
    "UncategorizedText": T.UNKNOWN,
    "ListItem": T.LIST_ITEM,
    "List-item": T.LIST_ITEM,
    "BulletedText": T.LIST_ITEM,
    "List": T.LIST,
    "Table": T.TABLE,
    "Image": T.FIGURE,
    "Picture": T.FIGURE,
    "Figure": T.FIGURE,
    "FigureCaption": T.CAPTION,
    "Caption": T.CAPTION,
    "Header": T.PAGE_HEADER,
    "Page-header": T.PAGE_HEADER,
    "Footer": T.PAGE_FOOTER,
    "Page-footer": T.PAGE_FOOTER,
    "PageNumber": T.PAGE_FOOTER,
    "Footnote": T.FOOTNOTE,
    "Formula": T.FORMULA,
    "FormKeysValues": T.KEY_VALUE_AREA,
    "Field-Name": T.KEY_VALUE,
    "Value": T.KEY_VALUE,
    "Form": T.FORM_AREA,
}

#: element types that carry no content or position (structure markers) and are skipped
SKIPPED_TYPES = frozenset({"PageBreak"})

_BOTTOM_LEFT_SYSTEMS = {"PointSpace": None, "RelativeCoordinateSystem": 1.0}


def unstructured_box(metadata: Mapping[str, Any], page: int) -> ParsingBoundingBox | None:
    """Page-fraction box of an element's ``metadata.coordinates`` (None when absent or unusable)."""
    coords = metadata.get("coordinates") or {}
    points = coords.get("points") or []
    if len(points) < 2:
        return None
    system = str(coords.get("system") or "PixelSpace")
    xs = [float(p[0]) for p in points]
    ys = [float(p[1]) for p in points]
    if system in _BOTTOM_LEFT_SYSTEMS:
        unit = _BOTTOM_LEFT_SYSTEMS[system]
        width = float(unit or coords.get("layout_width") or 0)
        height = float(unit or coords.get("layout_height") or 0)
        top, bottom = height - max(ys), height - min(ys)
    elif system in ("PixelSpace", "ScreenSpace"):
        width = float(coords.get("layout_width") or 0)
        height = float(coords.get("layout_height") or 0)
        top, bottom = min(ys), max(ys)
    else:
        log.warning("unstructured: unknown coordinate system %r; element box dropped", system)
        return None
    if width <= 0 or height <= 0:
        return None
    try:
        return ParsingBoundingBox(page, min(xs) / width, top / height, max(xs) / width, bottom / height)
    except InvalidBoxError as exc:
        log.warning("unstructured: element box on page %d dropped (%s)", page, exc)
        return None


def _table_rows(metadata: Mapping[str, Any]) -> list[list[TableCell]]:
    html = metadata.get("text_as_html")
    if html:
        rows = parse_html_table(str(html))
        if rows:
            return rows
    cells = metadata.get("table_as_cells") or []
    if not cells:
        return []
    grid: dict[int, dict[int, TableCell]] = {}
    for c in cells:
        row, col = int(c.get("y", 0)), int(c.get("x", 0))
        grid.setdefault(row, {})[col] = TableCell(
            " ".join(str(c.get("content", "")).split()), int(c.get("h", 1) or 1), int(c.get("w", 1) or 1)
        )
    return [[grid[r][c] for c in sorted(grid[r])] for r in sorted(grid)]


def _level(metadata: Mapping[str, Any]) -> int | None:
    depth = metadata.get("category_depth")
    if isinstance(depth, int) and not isinstance(depth, bool) and depth >= 0:
        return depth + 1
    return None


def elements_to_tree(
    elements: list[Mapping[str, Any]],
    image_dpi: float = 200.0,
    label_map: Mapping[str, ParsingResultType] = LABEL_MAP,
) -> ParsingResult:
    """ROOT tree from unstructured element dicts (reading order = list order), element ``type``
    mapped through ``label_map``."""
    factory = NodeFactory()
    root = factory.node(T.ROOT)
    pages: dict[int, dict[str, float]] = {}
    for element in elements:
        label = str(element.get("type", ""))
        if label in SKIPPED_TYPES:
            continue
        meta = element.get("metadata") or {}
        page = int(meta.get("page_number") or 1)
        type_, extra = map_label(label, label_map)
        box = unstructured_box(meta, page)
        metadata: dict[str, Any] = {**extra, **ElementTrace.new(native_id=element.get("element_id"))}
        if meta.get("parent_id"):
            ElementTrace(metadata).native_parent_id = meta["parent_id"]
        if meta.get("detection_class_prob") is not None:
            ElementTrace(metadata).score = meta["detection_class_prob"]
        level = _level(meta)
        if level is not None and type_ in HEADING_TYPES:
            HeadingInfo(metadata).native_level = level
        text = str(element.get("text") or "")
        node = factory.node(type_, text, [box] if box else [], metadata)
        if type_ == T.TABLE:
            rows = _table_rows(meta)
            add_table_rows(node, rows, factory)
            if rows:
                node.content = grid_to_markdown([[c.text for c in r] for r in rows])
        root.add_child(node)
        coords = meta.get("coordinates") or {}
        if page not in pages and coords.get("layout_width") and coords.get("layout_height"):
            system = str(coords.get("system") or "PixelSpace")
            if system in ("PixelSpace", "ScreenSpace"):
                scale = 72.0 / image_dpi
            elif system == "PointSpace":
                scale = 1.0
            else:
                continue
            pages[page] = {"page": page, "width": float(coords["layout_width"]) * scale,
                           "height": float(coords["layout_height"]) * scale}
    if pages:
        root.info.pages = [pages[p] for p in sorted(pages)]
    return root


class UnstructuredParser(BaseParser):
    """Unstructured.io ``partition_pdf`` (hi_res layout model + table structure).

    Needs the ``unstructured`` extra (``pip install 'grounded[unstructured]'``) unless a
    ``partition`` callable with ``partition_pdf``'s signature is injected (e.g. one that returns
    recorded element dicts).
    """

    name: ClassVar[str] = "unstructured"
    LABEL_MAP: ClassVar[Mapping[str, ParsingResultType]] = LABEL_MAP

    options = (
        Option("strategy", str, "hi_res", "unstructured's partition strategy", cli=False),
        Option("infer_table_structure", bool, True, "unstructured's table structure", cli=False),
        Option("image_dpi", float, 200.0, "resolution unstructured renders pages at", low=0.0, open_low=True, cli=False),
        Option("partition_kwargs", None, help="further keywords of partition_pdf"),
        Option("partition", None, help="the partition function (default: unstructured's partition_pdf)"),
    )

    def __init__(
        self,
        *,
        strategy: str = "hi_res",
        infer_table_structure: bool = True,
        image_dpi: float = 200.0,
        partition_kwargs: Mapping[str, Any] | None = None,
        partition: Callable[..., list[Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if partition is None:
            require("unstructured.partition.pdf", extra="unstructured", what="Unstructured parser", package="'unstructured[pdf]'")
        self.strategy = strategy
        self.infer_table_structure = infer_table_structure
        self.image_dpi = image_dpi
        self.partition_kwargs = dict(partition_kwargs or {})
        self._partition = partition

    def _parse(self, pdf_path: Path) -> list[dict[str, Any]]:
        partition = self._partition
        if partition is None:
            from unstructured.partition.pdf import partition_pdf

            partition = partition_pdf
        elements = partition(
            filename=str(pdf_path),
            strategy=self.strategy,
            infer_table_structure=self.infer_table_structure,
            **self.partition_kwargs,
        )
        out = [e if isinstance(e, dict) else e.to_dict() for e in elements]
        if not isinstance(out, list):
            raise ParserError(pdf_path, "unstructured returned no element list")
        return out

    def _transform(self, native: list[Mapping[str, Any]]) -> ParsingResult:
        return elements_to_tree(native, image_dpi=self.image_dpi, label_map=self.label_map)

    def version(self) -> str:
        try:
            return f"unstructured {importlib.metadata.version('unstructured')}"
        except importlib.metadata.PackageNotFoundError:
            return "unstructured (not installed; injected partition)" if self._partition else "unknown"
