"""``DoclingDocument`` -> :class:`~grounded.model.ParsingResult` tree.

Shared by the ``docling`` (standard pipeline) and ``granite_docling`` (DocTags) backends. Works on
docling-core ``DoclingDocument`` objects; docling-core is imported when a conversion starts, never
at module level.

Conversion rules
----------------
* Reading order = docling's body tree order. Groups that carry no meaning for retrieval
  (``unspecified``, ``chapter``, ``section``, ``sheet``, ``slide``, ``comment_section``,
  ``picture_area``) are transparent: their children are attached to the enclosing node.
* List groups become LIST -> LIST_ITEM (nested lists stay nested under their item); ``inline``
  groups become one PARAGRAPH whose content joins the parts with spaces.
* Tables become TABLE -> TABLE_ROW -> TABLE_CELL from ``data.table_cells`` (each spanning cell
  once, in the row where it starts; cell boxes when docling gives them). The TABLE's own content
  is its Markdown rendering. Captions are emitted right before their table/picture (as docling's
  Markdown export does), footnotes right after.
* Boxes: every ``prov`` gives one box; docling boxes (BOTTOMLEFT or TOPLEFT, points or any unit of
  the page size) are turned into top-left fractions of ``doc.pages[page_no].size``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from grounded.model.boxes import ParsingBoundingBox
from grounded.model.element_info import HeadingInfo
from grounded.model.elements import ParsingResult, ParsingResultType

from ..base import map_label

__all__ = ["DOCLING_LABEL_MAP", "TRANSPARENT_GROUPS", "docling_to_tree", "docling_box"]

log = logging.getLogger(__name__)

T = ParsingResultType

#: docling ``DocItemLabel`` / ``GroupLabel`` value -> ParsingResultType. Labels not listed here
#: become MISSING with ``relabel.native_label`` kept.
DOCLING_LABEL_MAP: dict[str, ParsingResultType] = {
    "title": T.TITLE,
    "section_header": T.SECTION_HEADER,
    "text": T.PARAGRAPH,
    "paragraph": T.PARAGRAPH,
    "handwritten_text": T.PARAGRAPH,
    "code": T.PARAGRAPH,
    "caption": T.CAPTION,
    "footnote": T.FOOTNOTE,
    "formula": T.FORMULA,
    "list_item": T.LIST_ITEM,
    "reference": T.REFERENCE_ITEM,
    "page_header": T.PAGE_HEADER,
    "page_footer": T.PAGE_FOOTER,
    "picture": T.FIGURE,
    "chart": T.FIGURE,
    "table": T.TABLE,
    "document_index": T.DOC_INDEX,
    "key_value_region": T.KEY_VALUE_AREA,
    "form": T.FORM_AREA,
    # groups
    "list": T.LIST,
    "ordered_list": T.LIST,
    "inline": T.PARAGRAPH,
    "form_area": T.FORM_AREA,
    "key_value_area": T.KEY_VALUE_AREA,
}

#: group labels whose children are attached to the enclosing node (no node of their own)
TRANSPARENT_GROUPS = frozenset(
    {"unspecified", "chapter", "section", "sheet", "slide", "comment_section", "picture_area"}
)

_LIST_GROUPS = frozenset({"list", "ordered_list"})
_CONTAINER_GROUPS = frozenset({"form_area", "key_value_area"})


def _value(label: Any) -> str:
    """Enum member or plain string -> its string value."""
    return str(getattr(label, "value", label))


def docling_box(bbox: Any, page_no: int, width: float, height: float) -> ParsingBoundingBox | None:
    """A docling ``BoundingBox`` (either origin) -> top-left fractions, clipped to the page.

    Returns None for boxes that lie entirely outside the page or have no extent.
    """
    left, right = float(bbox.l), float(bbox.r)
    if _value(bbox.coord_origin).upper() == "BOTTOMLEFT":
        t, b = height - float(bbox.t), height - float(bbox.b)
    else:
        t, b = float(bbox.t), float(bbox.b)
    x0, x1 = sorted((left, right))
    y0, y1 = sorted((t, b))
    x0, x1 = max(0.0, x0), min(width, x1)
    y0, y1 = max(0.0, y0), min(height, y1)
    if x1 < x0 or y1 < y0:
        return None
    return ParsingBoundingBox(page_no, x0 / width, y0 / height, x1 / width, y1 / height)


class _TreeBuilder:
    def __init__(
        self,
        doc: Any,
        label_map: Mapping[str, ParsingResultType],
        content_layers: Iterable[str] | None,
        picture_text: bool,
        id_prefix: str,
    ) -> None:
        import docling_core.types.doc as kinds  # present whenever a DoclingDocument exists

        self.kinds = kinds
        self.doc = doc
        self.label_map = label_map
        self.content_layers = None if content_layers is None else {str(c) for c in content_layers}
        self.picture_text = picture_text
        self.id_prefix = id_prefix
        self.counter = 0
        self.seen: set[str] = set()
        self.page_sizes: dict[int, tuple[float, float]] = {}
        for key, page in (getattr(doc, "pages", None) or {}).items():
            size = getattr(page, "size", None)
            if size is not None and size.width > 0 and size.height > 0:
                self.page_sizes[int(key)] = (float(size.width), float(size.height))

    # -- helpers ----------------------------------------------------------------------------------
    def _new(self, type_: ParsingResultType, content: str = "", **metadata: Any) -> ParsingResult:
        self.counter += 1
        meta = {k: v for k, v in metadata.items() if v is not None}
        return ParsingResult(id=f"{self.id_prefix}{self.counter}", type=type_, content=content, metadata=meta)

    def _node_for(self, label: str, content: str = "", **metadata: Any) -> ParsingResult:
        type_, meta = map_label(label, self.label_map)
        return self._new(type_, content, **meta, **metadata)

    def _box(self, page_no: int, bbox: Any) -> ParsingBoundingBox | None:
        size = self.page_sizes.get(int(page_no))
        if size is None:
            log.warning("docling item on page %s without a page size: box dropped", page_no)
            return None
        return docling_box(bbox, int(page_no), *size)

    def _geom(self, item: Any) -> list[ParsingBoundingBox]:
        boxes = []
        for prov in getattr(item, "prov", None) or ():
            box = self._box(prov.page_no, prov.bbox)
            if box is not None:
                boxes.append(box)
        return boxes

    def _resolve(self, ref: Any) -> Any:
        return ref.resolve(self.doc)

    def _wanted(self, item: Any) -> bool:
        layer = getattr(item, "content_layer", None)
        return self.content_layers is None or layer is None or _value(layer) in self.content_layers

    # -- traversal --------------------------------------------------------------------------------
    def build(self) -> ParsingResult:
        root = ParsingResult(id=f"{self.id_prefix}0", type=T.ROOT)
        if self.page_sizes:
            root.info.pages = [
                {"page": n, "width": w, "height": h} for n, (w, h) in sorted(self.page_sizes.items())
            ]
        self._children(self.doc.body, root)
        return root

    def _children(self, node: Any, parent: ParsingResult, skip: set[str] | None = None) -> None:
        for ref in getattr(node, "children", None) or ():
            if skip and ref.cref in skip:
                continue
            self._item(self._resolve(ref), parent)

    def _item(self, item: Any, parent: ParsingResult) -> None:
        ref = str(getattr(item, "self_ref", ""))
        if ref in self.seen or not self._wanted(item):
            return
        self.seen.add(ref)
        label = _value(item.label)
        if isinstance(item, self.kinds.GroupItem):  # ListGroup, InlineGroup, OrderedList, ...
            self._group(item, label, parent)
        elif isinstance(item, self.kinds.TableItem):  # table, document_index
            self._floating(item, parent, self._table)
        elif isinstance(item, self.kinds.PictureItem):  # picture, chart
            self._floating(item, parent, self._picture)
        elif isinstance(item, (self.kinds.KeyValueItem, self.kinds.FormItem)):
            self._graph(item, label, parent)
        else:
            self._text(item, label, parent)

    def _group(self, item: Any, label: str, parent: ParsingResult) -> None:
        if label in _LIST_GROUPS:
            node = parent.add_child(self._node_for(label, native_id=item.self_ref))
            self._children(item, node)
        elif label == "inline":
            self._inline(item, parent)
        elif label in _CONTAINER_GROUPS:
            node = parent.add_child(self._node_for(label, native_id=item.self_ref))
            self._children(item, node)
        else:  # transparent (unspecified, chapter, section, ...) and unknown groups
            if label not in TRANSPARENT_GROUPS:
                log.debug("docling group %r treated as transparent", label)
            self._children(item, parent)

    def _inline(self, item: Any, parent: ParsingResult) -> None:
        texts: list[str] = []
        boxes: dict[int, list[ParsingBoundingBox]] = {}
        for ref in item.children:
            child = self._resolve(ref)
            self.seen.add(child.self_ref)
            text = getattr(child, "text", "")
            if text:
                texts.append(text)
            for box in self._geom(child):
                boxes.setdefault(box.page, []).append(box)
        node = self._node_for("inline", " ".join(texts), native_id=item.self_ref)
        node.geom = [ParsingBoundingBox.enclosing(b) for _, b in sorted(boxes.items())]
        parent.add_child(node)

    def _text(self, item: Any, label: str, parent: ParsingResult) -> None:
        extra: dict[str, Any] = {}
        if label == "section_header":
            HeadingInfo(extra).native_level = int(getattr(item, "level", 1) or 1)
        if label == "list_item":
            extra["marker"] = getattr(item, "marker", None) or None
            extra["enumerated"] = bool(getattr(item, "enumerated", False))
        if label == "code":
            lang = getattr(item, "code_language", None)
            extra["code_language"] = _value(lang) if lang is not None else None
        text = getattr(item, "text", "") or ""
        node = self._node_for(label, text, native_id=item.self_ref, **extra)
        node.geom = self._geom(item)
        parent.add_child(node)
        self._children(item, node)  # e.g. a nested list under its list item

    def _floating(
        self, item: Any, parent: ParsingResult, build: Callable[[Any, ParsingResult], None]
    ) -> None:
        """Captions before, the element itself, footnotes after (as siblings)."""
        attached: set[str] = set()
        for ref in getattr(item, "captions", None) or ():
            attached.add(ref.cref)
            self._item(self._resolve(ref), parent)
        build(item, parent)
        for ref in getattr(item, "footnotes", None) or ():
            attached.add(ref.cref)
            self._item(self._resolve(ref), parent)
        for ref in getattr(item, "references", None) or ():
            attached.add(ref.cref)

    def _picture(self, item: Any, parent: ParsingResult) -> None:
        node = self._node_for(_value(item.label), "", native_id=item.self_ref)
        node.geom = self._geom(item)
        parent.add_child(node)
        if self.picture_text:
            self._children(item, node)
        else:  # text recognised inside the figure is not body text
            for ref in getattr(item, "children", None) or ():
                self.seen.add(ref.cref)

    def _table(self, item: Any, parent: ParsingResult) -> None:
        data = getattr(item, "data", None)
        rendering = _grid_markdown(data) if data is not None else ""
        node = self._node_for(
            _value(item.label),
            rendering,
            native_id=item.self_ref,
            num_rows=getattr(data, "num_rows", None),
            num_cols=getattr(data, "num_cols", None),
        )
        node.geom = self._geom(item)
        parent.add_child(node)
        if data is None:
            return
        provs = list(getattr(item, "prov", None) or ())
        rows: dict[int, list[Any]] = {}
        for cell in data.table_cells:
            rows.setdefault(int(cell.start_row_offset_idx), []).append(cell)
        for row_idx in sorted(rows):
            row = self._new(T.TABLE_ROW, "", row=row_idx)
            row_boxes: dict[int, list[ParsingBoundingBox]] = {}
            for cell in sorted(rows[row_idx], key=lambda c: int(c.start_col_offset_idx)):
                cell_node = self._new(
                    T.TABLE_CELL,
                    cell.text or "",
                    row=int(cell.start_row_offset_idx),
                    col=int(cell.start_col_offset_idx),
                    row_span=int(getattr(cell, "row_span", 1) or 1),
                    col_span=int(getattr(cell, "col_span", 1) or 1),
                    column_header=bool(getattr(cell, "column_header", False)) or None,
                    row_header=bool(getattr(cell, "row_header", False)) or None,
                )
                box = self._cell_box(cell, provs)
                if box is not None:
                    cell_node.geom = [box]
                    row_boxes.setdefault(box.page, []).append(box)
                row.add_child(cell_node)
            row.geom = [ParsingBoundingBox.enclosing(b) for _, b in sorted(row_boxes.items())]
            node.add_child(row)

    def _cell_box(self, cell: Any, provs: list[Any]) -> ParsingBoundingBox | None:
        if getattr(cell, "bbox", None) is None or not provs:
            return None
        candidates = [self._box(p.page_no, cell.bbox) for p in provs]
        if len(provs) > 1:  # a table split over pages: the prov whose box holds the cell centre
            for prov, cand in zip(provs, candidates):
                table_box = self._box(prov.page_no, prov.bbox)
                if cand is not None and table_box is not None and cand.intersection_area(table_box) > 0:
                    return cand
        return candidates[0]

    def _graph(self, item: Any, label: str, parent: ParsingResult) -> None:
        node = self._node_for(label, "", native_id=item.self_ref)
        node.geom = self._geom(item)
        parent.add_child(node)
        graph = getattr(item, "graph", None)
        for cell in getattr(graph, "cells", None) or ():
            child = self._new(
                T.KEY_VALUE,
                getattr(cell, "text", "") or "",
                native_label=_value(cell.label),
                cell_id=cell.cell_id,
            )
            prov = getattr(cell, "prov", None)
            if prov is not None:
                box = self._box(prov.page_no, prov.bbox)
                if box is not None:
                    child.geom = [box]
            node.add_child(child)


def _grid_markdown(data: Any) -> str:
    """Plain Markdown rendering of a docling table grid (first row = header)."""
    grid = getattr(data, "grid", None) or []
    rows = [["".join((c.text or "").split("|")).replace("\n", " ").strip() for c in row] for row in grid]
    rows = [r for r in rows if r]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    lines = ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in rows]
    lines.insert(1, "|" + " --- |" * width)
    return "\n".join(lines)


def docling_to_tree(
    doc: Any,
    label_map: Mapping[str, ParsingResultType] = DOCLING_LABEL_MAP,
    *,
    content_layers: Iterable[str] | None = ("body", "furniture"),
    picture_text: bool = False,
    id_prefix: str = "d",
) -> ParsingResult:
    """Convert a ``DoclingDocument`` into a ROOT node (reading order, top-left fractions).

    ``content_layers``: docling content layers to keep (None = all); page headers/footers live in
    ``furniture`` and are kept so that post-processing (not the transform) decides to drop them.
    ``picture_text``: also emit text docling recognised inside figures (as children of the FIGURE).
    """
    return _TreeBuilder(doc, label_map, content_layers, picture_text, id_prefix).build()
