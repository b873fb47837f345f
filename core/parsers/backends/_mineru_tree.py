"""MinerU ``middle.json`` -> :class:`~grounded.model.ParsingResult` tree.

Works for the pipeline backend (MinerU 0.7+ and 2.x: ``pdf_info[].para_blocks`` -> blocks ->
lines -> spans) and for the VLM backend of MinerU 2.5+ (same structure; lists/code are level-1
blocks with level-2 ``blocks``; every block has an ``angle``). All boxes in ``middle.json`` are
``[x0, y0, x1, y1]`` PDF points with the origin top-left on a page of ``page_size = [w, h]``.

* Reading order: pages in order, ``para_blocks`` in their order (MinerU sorts them).
* A paragraph MinerU merged across a page break keeps all lines in the first block; the moved
  spans carry ``cross_page: true`` and lie on the next page, the emptied block carries
  ``lines_deleted: true`` and is skipped. Such elements get one box per page.
* Text = spans joined as MinerU's own Markdown does (inline equations as ``$...$``, a hyphen
  ending a line is dropped and the word joined, other spans separated by one space; no spaces
  for CJK text). Display equations keep their raw LaTeX.
* Tables: TABLE content = MinerU's HTML; rows/cells parsed from it (MinerU gives no cell boxes).
* List blocks: pipeline items are runs of lines delimited by ``is_list_start_line`` /
  ``is_list_end_line``; VLM items are the list's level-2 blocks. ``sub_type: ref_text`` lists
  become REFERENCE_LIST/REFERENCE_ITEM.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from grounded.errors import SchemaError
from grounded.model.boxes import ParsingBoundingBox
from grounded.model.elements import ParsingResult, ParsingResultType

from ..base import map_label
from ..native import grid_columns, parse_html_table

__all__ = ["MINERU_LABEL_MAP", "mineru_to_tree", "block_text", "html_table_rows"]

log = logging.getLogger(__name__)

T = ParsingResultType

#: MinerU block type (``para_blocks``/``discarded_blocks``, level 1 and level 2) -> ParsingResultType.
MINERU_LABEL_MAP: dict[str, ParsingResultType] = {
    "title": T.SECTION_HEADER,
    "text": T.PARAGRAPH,
    "list": T.LIST,
    "list_item": T.LIST_ITEM,  # one item of a list block (pipeline: a run of lines)
    "ref_list": T.REFERENCE_LIST,  # a VLM list with sub_type "ref_text"
    "ref_text": T.REFERENCE_ITEM,
    "index": T.DOC_INDEX,
    "interline_equation": T.FORMULA,
    "equation": T.FORMULA,
    "image_body": T.FIGURE,
    "image_caption": T.CAPTION,
    "image_footnote": T.FOOTNOTE,
    "chart_body": T.FIGURE,
    "chart_caption": T.CAPTION,
    "chart_footnote": T.FOOTNOTE,
    "table_body": T.TABLE,
    "table_row": T.TABLE_ROW,  # rows/cells parsed from the table HTML (no boxes in MinerU)
    "table_cell": T.TABLE_CELL,
    "table_caption": T.CAPTION,
    "table_footnote": T.FOOTNOTE,
    "code_body": T.PARAGRAPH,
    "code_caption": T.CAPTION,
    "code_footnote": T.FOOTNOTE,
    "algorithm": T.PARAGRAPH,
    "header": T.PAGE_HEADER,
    "footer": T.PAGE_FOOTER,
    "page_number": T.PAGE_FOOTER,
    "page_footnote": T.FOOTNOTE,
    "aside_text": T.UNKNOWN,
    "phonetic": T.UNKNOWN,
    # "discarded" (pipeline's header/footer/footnote bucket, not further typed) -> MISSING
}

#: level-1 blocks whose level-2 ``blocks`` are emitted as siblings (figure/table + captions)
_GROUP_BLOCKS = frozenset({"image", "table", "chart", "code"})
_LIST_BLOCKS = frozenset({"list", "index"})
_HYPHEN_END = re.compile(r"[A-Za-z]-$")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_LETTER = re.compile(r"\w")


def _center_inside(box: ParsingBoundingBox, outer: ParsingBoundingBox) -> bool:
    cx, cy = (box.left + box.right) / 2, (box.top + box.bottom) / 2
    return outer.left <= cx <= outer.right and outer.top <= cy <= outer.bottom


def _is_cjk(text: str) -> bool:
    letters = len(_LETTER.findall(text))
    return letters > 0 and len(_CJK.findall(text)) / letters > 0.5


def _span_text(span: Mapping[str, Any]) -> str:
    kind = span.get("type")
    content = str(span.get("content") or "")
    if kind == "text":
        return content
    if kind == "inline_equation":
        return f"${content}$" if content else ""
    if kind == "interline_equation":
        return content
    return ""


def block_text(lines: list[Mapping[str, Any]]) -> str:
    """Join the spans of ``lines`` the way MinerU's Markdown/content_list do (MinerU 2.7).

    Spans are separated by one space; a line ending in letter + hyphen is joined to the next line
    without a space, dropping the hyphen when the next line continues in lower case
    (``intra-`` + ``metapath``) and keeping it otherwise (``MIMIC-`` + ``IV``); CJK text is joined
    without spaces.
    """
    cjk = _is_cjk("".join(str(s.get("content") or "") for ln in lines for s in ln.get("spans", ())))
    pieces: list[tuple[str, str, bool]] = []  # (text, span type, last span of its line)
    for line in lines:
        spans = [(_span_text(s).strip(), str(s.get("type"))) for s in line.get("spans", ())]
        spans = [(text, kind) for text, kind in spans if text]
        pieces += [(text, kind, j == len(spans) - 1) for j, (text, kind) in enumerate(spans)]
    out: list[str] = []
    for i, (text, kind, last) in enumerate(pieces):
        following = pieces[i + 1][0] if i + 1 < len(pieces) else ""
        if cjk:
            out.append(text if last and kind != "inline_equation" else text + " ")
        elif last and kind == "text" and _HYPHEN_END.search(text) and following:
            out.append(text[:-1] if following[:1].islower() else text)
        else:
            out.append(text + " ")
    return "".join(out).strip()


def html_table_rows(html: str) -> list[list[dict[str, Any]]]:
    """Parse table HTML (:func:`~grounded.parsers.native.parse_html_table`) into rows of cells
    ``{"text", "row", "col", "row_span", "col_span"}``; a cell's column skips the grid slots taken
    by row/col spans from the left and from rows above (empty ``<tr>`` rows count)."""
    grid = parse_html_table(html or "", keep_empty_rows=True)
    return [
        [
            {"text": cell.text, "row": r, "col": col, "row_span": cell.row_span, "col_span": cell.col_span}
            for cell, col in zip(cells, cols)
        ]
        for r, (cells, cols) in enumerate(zip(grid, grid_columns(grid)))
    ]


class _Builder:
    def __init__(
        self, middle: Mapping[str, Any], label_map: Mapping[str, ParsingResultType], discarded: bool
    ):
        pdf_info = middle.get("pdf_info")
        if not isinstance(pdf_info, list):
            raise SchemaError("MinerU middle.json has no 'pdf_info' list")
        self.pdf_info = pdf_info
        self.label_map = label_map
        self.discarded = discarded
        self.counter = 0
        self.sizes: dict[int, tuple[float, float]] = {}
        for page in pdf_info:
            w, h = page.get("page_size", (0, 0))
            if w and h:
                self.sizes[int(page["page_idx"]) + 1] = (float(w), float(h))

    # -- helpers ----------------------------------------------------------------------------------
    def _new(self, label: str, content: str = "", **metadata: Any) -> ParsingResult:
        type_, meta = map_label(label, self.label_map)
        self.counter += 1
        meta.update({k: v for k, v in metadata.items() if v is not None})
        return ParsingResult(id=f"mineru-{self.counter}", type=type_, content=content, metadata=meta)

    def _box(self, page: int, bbox: Any) -> ParsingBoundingBox | None:
        size = self.sizes.get(page)
        if size is None or not bbox or len(bbox) != 4:
            return None
        w, h = size
        x0, x1 = sorted((float(bbox[0]), float(bbox[2])))
        y0, y1 = sorted((float(bbox[1]), float(bbox[3])))
        x0, y0, x1, y1 = max(0.0, x0), max(0.0, y0), min(w, x1), min(h, y1)
        if x1 < x0 or y1 < y0:
            return None
        return ParsingBoundingBox(page, x0 / w, y0 / h, x1 / w, y1 / h)

    @staticmethod
    def _line_page(line: Mapping[str, Any], page: int) -> int:
        spans = line.get("spans") or ()
        return page + 1 if spans and all(s.get("cross_page") for s in spans) else page

    def _lines_geom(self, lines: list[Mapping[str, Any]], page: int) -> list[ParsingBoundingBox]:
        by_page: dict[int, list[ParsingBoundingBox]] = {}
        for ln in lines:
            p = self._line_page(ln, page)
            box = self._box(p, ln.get("bbox"))
            if box is not None:
                by_page.setdefault(p, []).append(box)
        return [ParsingBoundingBox.enclosing(b) for _, b in sorted(by_page.items())]

    def _geom(self, block: Mapping[str, Any], page: int) -> list[ParsingBoundingBox]:
        """The block box, plus one box per run of lines MinerU merged in from another column or page.

        A paragraph continued in the next column or on the next page keeps all lines in its first
        block, whose ``bbox`` still covers only the first part; the other parts get the enclosing
        box of their lines.
        """
        home = self._box(page, block.get("bbox"))
        runs: list[tuple[int, bool, list[ParsingBoundingBox]]] = []  # (page, inside home box, line boxes)
        for ln in block.get("lines") or ():
            p = self._line_page(ln, page)
            box = self._box(p, ln.get("bbox"))
            if box is None:
                continue
            inside = home is not None and p == page and _center_inside(box, home)
            if runs and runs[-1][0] == p and runs[-1][1] == inside:
                runs[-1][2].append(box)
            else:
                runs.append((p, inside, [box]))
        if home is None:
            return [ParsingBoundingBox.enclosing(r[2]) for r in runs]
        boxes = [home]
        for _page, inside, line_boxes in runs:
            if not inside:
                boxes.append(ParsingBoundingBox.enclosing(line_boxes))
        return boxes

    @staticmethod
    def _meta(block: Mapping[str, Any]) -> dict[str, Any]:
        meta: dict[str, Any] = {"native_index": block.get("index")}
        angle = block.get("angle")
        if angle:
            meta["angle"] = angle
        return meta

    # -- traversal --------------------------------------------------------------------------------
    def build(self, source_meta: dict[str, Any]) -> ParsingResult:
        root = ParsingResult(id="mineru-0", type=T.ROOT, metadata=dict(source_meta))
        if self.sizes:
            root.info.pages = [
                {"page": p, "width": w, "height": h} for p, (w, h) in sorted(self.sizes.items())
            ]
        for page_info in self.pdf_info:
            page = int(page_info["page_idx"]) + 1
            for block in page_info.get("para_blocks") or ():
                self._block(block, page, root)
            if self.discarded:
                for block in page_info.get("discarded_blocks") or ():
                    self._block(block, page, root)
        return root

    def _block(self, block: Mapping[str, Any], page: int, parent: ParsingResult) -> None:
        if block.get("lines_deleted"):
            return  # its lines were merged into a block on an earlier page
        kind = str(block.get("type"))
        if kind in _GROUP_BLOCKS and block.get("blocks"):
            for sub in block["blocks"]:
                self._block(sub, page, parent)
        elif kind in _LIST_BLOCKS:
            self._list(block, kind, page, parent)
        elif kind == "table_body":
            self._table(block, page, parent)
        elif kind in ("image_body", "chart_body"):
            node = self._new(kind, "", **self._meta(block))
            node.geom = self._geom(block, page)
            path = next(
                (
                    s.get("image_path")
                    for ln in block.get("lines", ())
                    for s in ln.get("spans", ())
                    if s.get("image_path")
                ),
                None,
            )
            node.image = f"images/{path}" if path else None
            parent.add_child(node)
        elif kind == "title":
            level = block.get("level")
            node = self._new(
                kind,
                block_text(block.get("lines", [])),
                native_level=int(level) if level else None,
                **self._meta(block),
            )
            node.geom = self._geom(block, page)
            parent.add_child(node)
        else:
            node = self._new(kind, block_text(block.get("lines", [])), **self._meta(block))
            node.geom = self._geom(block, page)
            parent.add_child(node)

    def _list(self, block: Mapping[str, Any], kind: str, page: int, parent: ParsingResult) -> None:
        ref = block.get("sub_type") == "ref_text"
        label = "ref_list" if ref and kind == "list" else kind
        node = self._new(label, "", sub_type=block.get("sub_type"), **self._meta(block))
        node.geom = self._geom(block, page)
        parent.add_child(node)
        item_label = "ref_text" if ref else "list_item"
        if block.get("blocks"):  # VLM: one level-2 block per item
            for sub in block["blocks"]:
                if sub.get("lines_deleted"):
                    continue
                item = self._item_node(item_label, sub.get("lines", []), sub, page)
                node.add_child(item)
            return
        # pipeline: items are runs of lines delimited by is_list_start_line / is_list_end_line
        items: list[list[Mapping[str, Any]]] = []
        for line in block.get("lines", []):
            if not items or line.get("is_list_start_line"):
                items.append([])
            items[-1].append(line)
            if line.get("is_list_end_line"):
                items.append([])
        for lines in (i for i in items if i):
            node.add_child(self._item_node(item_label, lines, block, page))
        # the container box covers every page its items reach
        pages = {b.page for c in node.children for b in c.geom}
        if pages - {page}:
            node.geom = [
                ParsingBoundingBox.enclosing([b for c in node.children for b in c.geom if b.page == p])
                for p in sorted(pages)
            ]

    def _item_node(
        self, label: str, lines: list[Mapping[str, Any]], block: Mapping[str, Any], page: int
    ) -> ParsingResult:
        item = self._new(label, block_text(lines))
        item.geom = self._lines_geom(lines, page) if lines else self._geom(block, page)
        return item

    def _table(self, block: Mapping[str, Any], page: int, parent: ParsingResult) -> None:
        spans = [s for ln in block.get("lines", ()) for s in ln.get("spans", ())]
        html = next((s.get("html") for s in spans if s.get("html")), "") or ""
        latex = next((s.get("latex") for s in spans if s.get("latex")), None)
        image = next((s.get("image_path") for s in spans if s.get("image_path")), None)
        node = self._new("table_body", html or latex or "", **self._meta(block))
        node.geom = self._geom(block, page)
        node.image = f"images/{image}" if image else None
        parent.add_child(node)
        for r, cells in enumerate(html_table_rows(html) if html else []):
            row = node.add_child(self._new("table_row", "", row=r))
            for cell in cells:
                text = cell.pop("text")
                row.add_child(self._new("table_cell", text, **cell))


def mineru_to_tree(
    middle: Mapping[str, Any],
    label_map: Mapping[str, ParsingResultType] = MINERU_LABEL_MAP,
    *,
    discarded: bool = False,
) -> ParsingResult:
    """Convert a MinerU ``middle.json`` dict into a ROOT node.

    ``discarded``: also emit ``discarded_blocks`` (page headers/footers/footnotes MinerU removed),
    after each page's content; post-processing then decides what to drop.
    """
    source = {
        "native_format": {
            "backend": middle.get("_backend", "pipeline"),
            "version": middle.get("_version_name"),
        }
    }
    return _Builder(middle, label_map, discarded).build(source)
