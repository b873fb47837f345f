"""Native -> tree for the PyMuPDF backend: every text element rebuilt from the PDF text layer in its
layout box (line spans and character extents attached here), tables, figures, OCR'd-page rules."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grounded.errors import escape_controls
from grounded.io.markdown import table_to_markdown
from grounded.model.boxes import ParsingBoundingBox
from grounded.model.element_info import RelabelHistory, TablePlace
from grounded.model.elements import HEADING_TYPES, TEXT_TYPES, ParsingResult, ParsingResultType
from grounded.parsers.base import map_label
from grounded.parsers.column_split import split_columns
from grounded.parsers.furniture import furniture_key, has_words, recurs_in
from grounded.parsers.hyphenation import resolve_document
from grounded.parsers.reading_order import Rect, reading_order, upright
from grounded.parsers.textlayer import RIGHT, PageChars, TextLayer, build_lines, clip_to_page, lines_to_spans

from .extras import PyMuPDFElementExtras
from .ocr_text import (
    OCR_FROM_PICTURES_KEY,
    OCR_LEFT_OUT_KEY,
    is_garbage_element,
    readable_unclaimed,
    reads_as_text,
    text_in_picture,
    text_layer_rects,
)
from .running_furniture import mark_running_furniture
from .tables import (
    _CAPTION_START,
    _FIGURE_CAPTION_START,
    Grid,
    _find_tables_grid,
    _grid_line_tops,
    _grown_box,
    _join_continuation_rows,
    _merge_image_strips,
    _running_text,
    _small_print,
    _split_panels,
    _split_table_gutters,
    _split_table_notes,
    _style_of,
    _table_notes,
)

log = logging.getLogger(__name__)
# ---------------------------------------------------------------------------------------------
# native -> tree
# ---------------------------------------------------------------------------------------------

T = ParsingResultType

#: layout classes of the bundled model (pymupdf/layout/resources/onnx/*.yaml ``class_list``)
LABEL_MAP: dict[str, ParsingResultType] = {
    "title": T.TITLE,
    "section-header": T.SECTION_HEADER,
    "text": T.PARAGRAPH,
    "list-item": T.LIST_ITEM,
    "table": T.TABLE,
    "picture": T.FIGURE,
    "caption": T.CAPTION,
    "footnote": T.FOOTNOTE,
    "formula": T.FORMULA,
    "page-header": T.PAGE_HEADER,
    "page-footer": T.PAGE_FOOTER,
}
#: A page with at least this many non-space characters none of which the layout model put in a
#: text or table box gets its text from MuPDF's text blocks instead (see _TreeBuilder).
FALLBACK_MIN_CHARS = 20
#: The same fallback takes the characters the layout left in no box at all when they are at least
#: this share of the page's text (a failed layout, not a stray margin note) ...
FALLBACK_UNBOXED_SHARE = 0.10
#: ... or all unclaimed characters, pictures' included, when they are at least this share (a text
#: page the model saw as one picture); text inside genuine figures stays out of the body.
FALLBACK_UNCLAIMED_SHARE = 0.50
#: Text in this outer band of the page (share of its width/height) that the layout put in no box
#: does not trigger the fallback; the fallback takes a block lying wholly in the band only when it
#: is body text: its text (:func:`~grounded.parsers.furniture.furniture_key`) has words and recurs
#: in the band of no page within :data:`FALLBACK_MARGIN_PAGES` of it (printer's slugs, side stamps,
#: running headers/footers and page numbers repeat from page to page and stay out).
FALLBACK_MARGIN_SHARE = 0.06
#: how many pages before and after a page are searched for a margin block's text (running
#: furniture alternates between odd and even pages: 2)
FALLBACK_MARGIN_PAGES = 2
#: When the fallback runs on a born-digital page, text whose centre lies inside a picture box
#: belongs to the picture (axis ticks, legends, labels along a curve: the FIGURE's ``content``,
#: ``PyMuPDFElementExtras.picture_text``, searchable but no body paragraph) unless the picture is a text
#: region the model saw as one picture: its characters' boxes cover at least this share of its
#: area (body text 0.3-0.6, the sideways table of the shared peerj page 9 about 0.1; a chart's
#: labels about 0.02). A block at the picture's top or bottom edge that reads as text (a caption
#: the picture swallowed: upright, nothing of the picture's text beyond it) stays body text.
FALLBACK_PICTURE_TEXT_DENSITY = 0.05

_TEXT_CLASSES = frozenset(
    {"title", "section-header", "text", "list-item", "caption", "footnote", "formula", "page-header", "page-footer"}
)
_FURNITURE = (T.PAGE_HEADER, T.PAGE_FOOTER)


#: How an element's layout box grows to the text lines it holds (#13.5), by type (others: "grow"):
#: "grow" = to the lines' full height and width (whole words are taken, so a line may stick out of
#: a tight box), "width" = sideways only (the model's top and bottom kept), "layout" = the model's
#: box as is. Chosen per class from DLA F1@50:95 (docs/results/dla.md).
BOX_GROWTH: dict[ParsingResultType, str] = {}

#: a page header is a heading when set at least this much larger than the body text (or bold)
HEADING_SIZE_RATIO = 1.15


def _in_band(rect: tuple[float, float, float, float], width: float, height: float) -> bool:
    """Whether ``rect`` lies wholly in the page's outer FALLBACK_MARGIN_SHARE band."""
    x0, y0, x1, y1 = rect
    mx, my = FALLBACK_MARGIN_SHARE * width, FALLBACK_MARGIN_SHARE * height
    return x1 <= mx or x0 >= width - mx or y1 <= my or y0 >= height - my


def _rect_key(pc: PageChars, rect: tuple[float, float, float, float]) -> str:
    """The furniture key of the characters in ``rect``."""
    return furniture_key("".join(pc.chars[i] for i in pc.select(*rect).tolist()))


def _in_margin(pc: PageChars) -> np.ndarray:
    """Characters whose centre lies in the page's outer FALLBACK_MARGIN_SHARE band."""
    cx, cy = (pc.x0 + pc.x1) / 2, (pc.y0 + pc.y1) / 2
    mx, my = FALLBACK_MARGIN_SHARE * pc.width, FALLBACK_MARGIN_SHARE * pc.height
    return np.asarray((cx < mx) | (cx > pc.width - mx) | (cy < my) | (cy > pc.height - my))


def _insert_boxes(
    boxes: list[Any],
    small: list[bool],
    nodes: dict[int, ParsingResult],
    notes: dict[int, int],
    added: dict[int, list[tuple[bool, ParsingResult]]],
    width: float,
    height: float,
) -> tuple[list[Any], list[bool], dict[int, ParsingResult], dict[int, int]]:
    """The page's boxes, small-print flags, elements and table notes (by box index) with the
    elements ``added`` next to box ``i`` (``added[i]``: each before it or not) as text boxes of
    their own: where a page without columns reads them (in the model's order)."""
    out_boxes: list[Any] = []
    out_small: list[bool] = []
    out_nodes: dict[int, ParsingResult] = {}
    moved: dict[int, int] = {}

    def add(node: ParsingResult) -> None:
        out_nodes[len(out_boxes)] = node
        out_boxes.append(Rect(*node.geom[0].to_points(width, height), "text"))
        out_small.append(False)

    for i, box in enumerate(boxes):
        for node in (n for before, n in added.get(i, []) if before):
            add(node)
        moved[i] = len(out_boxes)
        out_boxes.append(box)
        out_small.append(small[i])
        if i in nodes:
            out_nodes[moved[i]] = nodes[i]
        for node in (n for before, n in added.get(i, []) if not before):
            add(node)
    return out_boxes, out_small, out_nodes, {moved[k]: moved[v] for k, v in notes.items()}


def _edge_text(pc: PageChars, mine: np.ndarray, rects: list[tuple[float, float, float, float]]) -> np.ndarray:
    """Of a picture's text ``mine``, the text-layer blocks (``rects``) at its top or bottom edge (no
    other character of ``mine`` above, or below, the block's centre line) set upright that read as
    text (:func:`reads_as_text` as picture text) or open like a caption ("Figure 3"): a caption or a
    body line the picture box swallowed, not the picture's labels."""
    out = np.zeros(len(pc), dtype=bool)
    cy = (pc.y0 + pc.y1) / 2
    for rect in rects:
        sel = pc.select(*rect)
        sel = sel[mine[sel]]
        ink = sel[pc.solid[sel]]
        if not len(ink) or any(pc.line_dir[int(k)] != RIGHT for k in np.unique(pc.line[ink])):
            continue
        text = build_lines([pc], [sel]).text
        if not (reads_as_text(text, in_picture=True) or _FIGURE_CAPTION_START.match(text)):
            continue
        rest = mine & pc.solid
        rest[sel] = False
        top, bottom = float(pc.y0[ink].min()), float(pc.y1[ink].max())
        if not (cy[rest] < bottom).any() or not (cy[rest] > top).any():
            out[sel] = True
    return out


def _layout_lost_text(
    pc: PageChars, claimed: np.ndarray, in_picture: np.ndarray, readable: np.ndarray | None = None
) -> bool:
    """Whether the layout pass lost enough of the page's text to take it from the text layer:
    no character claimed at all (fewer than :data:`FALLBACK_MIN_CHARS` count when any of them lies
    outside pictures and the margin band: a tiny or one-word page's only text), or the characters in no box (or in none but pictures) are at
    least :data:`FALLBACK_UNBOXED_SHARE` (:data:`FALLBACK_UNCLAIMED_SHARE`) of the page's text.
    On an OCR'd page (``readable`` given, see :func:`readable_unclaimed`) only unclaimed text
    that reads as text counts, pictures' included, against :data:`FALLBACK_UNBOXED_SHARE` of the
    page's text without the rest: that is Tesseract's reading of figures, not text the layout lost."""
    text = pc.solid if readable is None else pc.solid & (claimed | readable)
    total = int(text.sum())
    if not claimed.any() and total >= FALLBACK_MIN_CHARS:
        return True
    if not claimed.any():  # a short text the layout boxed none of: the page's only text (#21.5)
        return bool((text & ~in_picture & ~_in_margin(pc)).any())
    if total < FALLBACK_MIN_CHARS:
        return False
    unclaimed = text & ~claimed & ~_in_margin(pc)
    if readable is not None:
        return int(unclaimed.sum()) >= FALLBACK_UNBOXED_SHARE * total
    if int((unclaimed & ~in_picture).sum()) >= FALLBACK_UNBOXED_SHARE * total:
        return True
    return int(unclaimed.sum()) >= FALLBACK_UNCLAIMED_SHARE * total


@dataclass(frozen=True)
class Pending:
    """Scratch values of one element that only :meth:`_TreeBuilder.finish` uses (it needs the whole
    document). They live in the builder, never in the element's ``metadata``; pages built in a
    worker process travel to the parent with their elements (:meth:`_TreeBuilder.pending_of`,
    :meth:`_TreeBuilder.adopt`)."""

    #: line-break hyphens kept in ``content``: (position, token before, token after) each (#13.3)
    hyphens: tuple[tuple[int, str, str], ...] = ()
    #: a PAGE_HEADER's style (size, caps, bold): evidence for a first-line heading
    style: tuple[float, bool, bool] | None = None


@dataclass
class _TreeBuilder:
    """Layout boxes + text layer -> elements, page by page; :meth:`finish` does the document-wide
    part (line-break hyphens, first-line headings). Pages may be built in different processes
    (a worker's pages go to the parent's builder with :meth:`pending_of` and :meth:`adopt`)."""

    path: Path
    image_dir: Path | None = None
    image_dpi: int = 150
    elements: list[ParsingResult] = field(default_factory=list)
    label_map: dict[str, ParsingResultType] = field(default_factory=lambda: dict(LABEL_MAP))
    body_sizes: Counter[float] = field(default_factory=Counter)  # paragraph font size -> chars
    #: 1-based pages whose text layer is Tesseract's (figures' insides included: see OCR_TEXT_MIN_WORD_SHARE)
    ocr_pages: frozenset[int] = frozenset()
    #: page -> furniture keys of its text-layer blocks in the margin band (neighbours of fallback pages)
    _band_keys: dict[int, list[str]] = field(default_factory=dict, init=False, repr=False)
    _layer: TextLayer | None = field(default=None, init=False, repr=False)
    #: id() of an element -> (the element, its scratch values): held, so no other takes its id()
    _pending: dict[int, tuple[ParsingResult, Pending]] = field(default_factory=dict, init=False, repr=False)

    def hold(self, node: ParsingResult, pending: Pending) -> None:
        """Keep ``pending`` for ``node`` until :meth:`finish` (replacing what it had)."""
        self._pending[id(node)] = (node, pending)

    def pending_of(self, elements: list[ParsingResult]) -> dict[int, Pending]:
        """The scratch values of ``elements`` and their descendants, keyed by position in
        ``[d for n in elements for d in n.walk()]``, so they survive pickling with the elements
        (a worker process returns them with its pages: :meth:`adopt`)."""
        out: dict[int, Pending] = {}
        for k, node in enumerate(d for n in elements for d in n.walk()):
            held = self._pending.get(id(node))
            if held is not None and held[0] is node:
                out[k] = held[1]
        return out

    def adopt(self, elements: list[ParsingResult], pending: dict[int, Pending]) -> None:
        """Append elements built elsewhere (a worker's pages) with their :meth:`pending_of`."""
        self.elements.extend(elements)
        if pending:
            for k, node in enumerate(d for n in elements for d in n.walk()):
                if k in pending:
                    self.hold(node, pending[k])

    def add_page(self, page: Any, pc: PageChars, layer: TextLayer) -> None:
        self._layer = layer  # the fallback reads neighbouring pages' margins (see FALLBACK_MARGIN_SHARE)
        claimed = np.zeros(len(pc), dtype=bool)
        w, h = pc.width, pc.height
        if abs(w - page.width) > 0.5 or abs(h - page.height) > 0.5:
            log.warning("%s: page %d size differs between layout and text layer", escape_controls(str(self.path)), page.page_number)
        figures = 0
        pictures: dict[int, int] = {}  # OCR'd page: box index of a picture -> its figure number
        in_picture = np.zeros(len(pc), dtype=bool)
        self._table_leftover: list[np.ndarray] = []
        self._captions: dict[int, ParsingResult] = {}  # id(table) -> its caption taken from its grid
        # the turn that shows the page as the layout model saw it (text reading left to right)
        self._turn = int((getattr(page, "view", None) or {}).get("layout_turn", 0))
        nodes: dict[int, ParsingResult] = {}  # box index -> element; appended in reading order below
        boxes = _merge_image_strips(page.boxes, layer, pc.page)
        if not self._turn:  # two tables side by side in one box; panels stacked top to bottom as shown
            boxes = _split_table_gutters(boxes, pc, layer)
            boxes = _split_panels(boxes, layer, pc.page)
        if not self._turn:  # a text box over a column gutter: one part per column (scans)
            boxes = split_columns(boxes, pc)
        small = _small_print(boxes, pc, w, h)
        table_notes = _table_notes(boxes, upright(boxes, self._turn, w, h), small, pc)
        if not self._turn:  # one box per marked note (lines run across only on an upright page)
            boxes, small, table_notes = _split_table_notes(boxes, small, table_notes, pc)
        for index, box in enumerate(boxes):
            label = box.boxclass
            type_, meta = map_label(label, self.label_map)
            if index in table_notes:  # a table's notes: footnotes read right after the table
                meta = {**meta, "table_note": True}
                type_ = T.FOOTNOTE
            x0, y0, x1, y1 = clip_to_page(box.x0, box.y0, box.x1, box.y1, w, h)
            if x1 - x0 <= 0 or y1 - y0 <= 0:
                continue
            geom = ParsingBoundingBox.from_points(pc.page, x0, y0, x1, y1, w, h)
            node: ParsingResult | None
            if label == "table":
                if getattr(box, "gutter_split", False):
                    meta = {**meta, "split_at_gutter": True}
                node = self._table(box, pc, claimed, geom, meta, layer)
            elif label == "picture":
                in_picture[pc.select(x0, y0, x1, y1)] = True
                figures += 1
                if getattr(box, "strips", 0):
                    meta = {**meta, "image_strips": box.strips}
                if getattr(box, "panel", None):
                    meta = {**meta, "panel": box.panel}
                node = ParsingResult("", T.FIGURE, geom=[geom], metadata=meta)
                if pc.page in self.ocr_pages:  # its image once text it swallowed is taken out
                    pictures[index] = figures
                else:
                    node.image = self._figure_image(layer, pc.page, figures, (x0, y0, x1, y1))
            elif label in _TEXT_CLASSES or type_ == T.MISSING:
                node = self._text(type_, pc, claimed, (x0, y0, x1, y1), geom, meta)
                if node is None:
                    continue
                if type_ == T.LIST_ITEM:
                    PyMuPDFElementExtras(node.metadata).indent = round(getattr(box, "upright_x0", x0 / w), 4)
            else:  # pragma: no cover - every class of the model is handled above
                node = ParsingResult("", type_, geom=[geom], metadata=meta)
            nodes[index] = node
        garbage = self._drop_garbage(pc, nodes) if pc.page in self.ocr_pages else (0, 0)
        # an OCR'd page: its text-layer blocks, for the text pictures swallowed and the fallback
        rects = text_layer_rects(pc, layer) if pc.page in self.ocr_pages else []
        if pictures:  # an OCR'd page: text the pictures swallowed, next to its picture in the model's order
            boxes = list(boxes)  # the pictures' boxes shrink: never the layout's own list
            taken = self._picture_text(page, pc, claimed, pictures, boxes, nodes, layer, rects)
            boxes, small, nodes, table_notes = _insert_boxes(boxes, small, nodes, table_notes, taken, w, h)
        in_output = claimed.copy()  # claimed chars minus those a table box took but no cell holds
        for leftover in self._table_leftover:
            in_output[leftover] = False
        if pc.page in self.ocr_pages:
            # an OCR'd page: the fallback's elements are read in the page's reading order with the
            # rest (a born-digital page keeps them after the rest, as before)
            for node in self._ocr_fallback(page, pc, in_output, in_picture, rects, garbage):
                nodes[len(boxes)] = node
                x0, y0, x1, y1 = node.geom[0].to_points(w, h)
                boxes = [*boxes, Rect(x0, y0, x1, y1, "text")]
                small = [*small, False]
        # text is claimed in the model's order (unchanged); elements follow the page's reading
        # order from the boxes' geometry: columns, bands, footnotes after the body (#13.1, #13.2)
        order = reading_order(upright(boxes, self._turn, w, h), small, table_notes)
        for i in order:
            if i in nodes:
                caption = self._captions.pop(id(nodes[i]), None)
                self.elements.extend([nodes[i]] if caption is None else [caption, nodes[i]])
        if pc.page not in self.ocr_pages and _layout_lost_text(pc, in_output, in_picture):
            rects = text_layer_rects(pc, layer)
            figures_text = self._figures_keep_text(pc, in_output, [n for n in nodes.values() if n.type == T.FIGURE], rects)
            self.elements.extend(self._text_layer_blocks(pc, in_output, rects, keep_out=figures_text))

    def _figures_keep_text(
        self,
        pc: PageChars,
        claimed: np.ndarray,
        figures: list[ParsingResult],
        rects: list[tuple[float, float, float, float]],
    ) -> np.ndarray | None:
        """A born-digital page the layout fallback reads: the unclaimed characters whose centre lies
        inside a genuine picture box (see :data:`FALLBACK_PICTURE_TEXT_DENSITY`) become that
        FIGURE's ``content`` (line spans attached, ``PyMuPDFElementExtras.picture_text``); returns them (the
        fallback leaves them out; None: no such picture)."""
        if not figures:
            return None
        cx, cy = (pc.x0 + pc.x1) / 2, (pc.y0 + pc.y1) / 2
        area = (pc.x1 - pc.x0) * (pc.y1 - pc.y0)
        owner = np.full(len(pc), -1)
        owner_area = np.full(len(pc), np.inf)
        boxes = []
        for k, figure in enumerate(figures):
            x0, y0, x1, y1 = figure.geom[0].to_points(pc.width, pc.height)
            boxes.append((x0, y0, x1, y1))
            inside = (cx >= x0) & (cx <= x1) & (cy >= y0) & (cy <= y1)
            size = max((x1 - x0) * (y1 - y0), 1e-6)
            if float(area[inside & pc.solid].sum()) >= FALLBACK_PICTURE_TEXT_DENSITY * size:
                continue  # a text region seen as a picture: the fallback reads it as text
            smaller = inside & ~claimed & (size < owner_area)  # the innermost picture holds it
            owner[smaller], owner_area[smaller] = k, size
        if not (owner >= 0).any():
            return None
        kept = np.zeros(len(pc), dtype=bool)
        for k, figure in enumerate(figures):
            mine = owner == k
            if not mine.any():
                continue
            mine &= ~claimed
            mine &= ~_edge_text(pc, mine, rects)  # a caption or line the picture swallowed stays body text
            sel = np.flatnonzero(mine)
            if not len(sel):
                continue
            built = build_lines([pc], [sel])
            if not built.text.strip():
                continue
            kept[sel] = True
            figure.content = built.text
            figure.geom[0].spans = lines_to_spans(built.lines, [pc]).get(0, [])
            PyMuPDFElementExtras(figure.metadata).picture_text = True
        return kept if kept.any() else None

    def _picture_text(
        self,
        page: Any,
        pc: PageChars,
        claimed: np.ndarray,
        pictures: dict[int, int],
        boxes: list[Any],
        nodes: dict[int, ParsingResult],
        layer: TextLayer,
        rects: list[tuple[float, float, float, float]],
    ) -> dict[int, list[tuple[bool, ParsingResult]]]:
        """An OCR'd page: the text its picture boxes swallowed (:func:`text_in_picture`) as
        elements of their own (returned per picture's box index, each read before the picture or
        not; CAPTION when it opens like one, else PARAGRAPH; their characters are marked in
        ``claimed``). Each picture's box (in ``boxes``, and its FIGURE
        node's) shrinks to what is left, a picture with nothing left is dropped from ``nodes``;
        what was taken is counted in the page's :data:`OCR_FROM_PICTURES_KEY` (set on ``page``);
        ``rects``: the page's text-layer blocks (:func:`text_layer_rects`)."""
        found: dict[int, list[tuple[bool, ParsingResult]]] = {}
        taken_chars = 0
        for index, number in pictures.items():
            figure = nodes[index]
            x0, y0, x1, y1 = figure.geom[0].to_points(pc.width, pc.height)
            # top and bottom as displayed: a page laid out turned keeps its pictures whole
            blocks, left = ([], (x0, y0, x1, y1)) if self._turn else text_in_picture(pc, claimed, (x0, y0, x1, y1), rects)
            for sel, before in blocks:
                taken_chars += int(pc.solid[sel].sum())
                sel = self._with_line_pieces(pc, claimed, nodes, sel)
                text = build_lines([pc], [sel]).text
                type_ = T.CAPTION if _FIGURE_CAPTION_START.match(text) else T.PARAGRAPH
                ink = sel[pc.solid[sel]]
                rect = clip_to_page(pc.x0[ink].min(), pc.y0[ink].min(), pc.x1[ink].max(), pc.y1[ink].max(), pc.width, pc.height)
                geom = ParsingBoundingBox.from_points(pc.page, *rect, pc.width, pc.height)
                others = np.ones(len(pc), dtype=bool)  # take this block's characters, nothing else
                others[sel] = False
                meta = {**RelabelHistory.new(native_label="text in picture"), **PyMuPDFElementExtras.new(from_picture=True)}
                node = self._text(type_, pc, others, rect, geom, meta)
                claimed[sel] = True
                if node is not None and node.content:
                    found.setdefault(index, []).append((before, node))
            if left is None:
                log.debug("%s: page %d: a picture box held nothing but text", escape_controls(str(self.path)), pc.page)
                del nodes[index]
                continue
            if blocks:
                PyMuPDFElementExtras(figure.metadata).text_taken_out = len(blocks)
                figure.geom = [ParsingBoundingBox.from_points(pc.page, *left, pc.width, pc.height)]
                boxes[index] = Rect(*left, "picture")
            figure.image = self._figure_image(layer, pc.page, number, left)
        setattr(page, OCR_FROM_PICTURES_KEY, {
            "elements": sum(len(taken) for taken in found.values()),
            "chars": taken_chars,
        })
        return found

    def _with_line_pieces(
        self, pc: PageChars, claimed: np.ndarray, nodes: dict[int, ParsingResult], sel: np.ndarray
    ) -> np.ndarray:
        """``sel`` (text taken out of a picture) with the layout's paragraphs and captions that
        hold pieces of its lines and nothing outside its rows (the model boxed "Figure S1 Query
        fragment that" of a caption line the picture swallowed the rest of): they join it and
        leave ``nodes``."""
        lines = np.unique(pc.line[sel])
        solid = pc.solid
        ink = sel[solid[sel]]
        top, bottom = pc.y0[ink].min(), pc.y1[ink].max()
        for j in [j for j, node in nodes.items() if node.type in (T.PARAGRAPH, T.CAPTION)]:
            if PyMuPDFElementExtras(nodes[j].metadata).from_picture or not nodes[j].geom:
                continue
            inside = pc.select(*nodes[j].geom[0].to_points(pc.width, pc.height))
            piece = inside[claimed[inside]]
            cy = pc.cy[piece]
            if len(piece) and np.isin(pc.line[piece], lines).any() and ((cy >= top) & (cy <= bottom)).all():
                log.debug("%s: page %d: %r joins the text taken out of a picture", escape_controls(str(self.path)), pc.page,
                          nodes[j].content[:60])
                sel = np.union1d(sel, piece)
                del nodes[j]
        return sel

    def _drop_garbage(self, pc: PageChars, nodes: dict[int, ParsingResult]) -> tuple[int, int]:
        """An OCR'd page: the text and table elements in ``nodes`` whose text is Tesseract's
        garbage (:func:`is_garbage_element`, a table judged as a whole) leave ``nodes`` (their
        characters stay claimed: the fallback never takes them back); a table's caption stays in
        its place. Returns (elements, non-space characters) left out."""
        count = chars = 0
        for index, node in list(nodes.items()):
            if node.type == T.TABLE:
                text = " ".join(c.content for c in node.walk() if c.content)
            elif node.type in TEXT_TYPES:
                text = node.content
            else:
                continue
            if not is_garbage_element(text):
                continue
            count += 1
            chars += sum(not c.isspace() for c in text)
            log.debug("%s: page %d: OCR garbage left out (%s): %r", self.path, pc.page, node.type, text[:120])
            caption = self._captions.pop(id(node), None)
            if caption is None:
                del nodes[index]
            else:
                nodes[index] = caption
        return count, chars

    def _ocr_fallback(
        self,
        page: Any,
        pc: PageChars,
        claimed: np.ndarray,
        in_picture: np.ndarray,
        rects: list[tuple[float, float, float, float]],
        garbage: tuple[int, int] = (0, 0),
    ) -> list[ParsingResult]:
        """An OCR'd page's layout fallback: the text-layer blocks that read as text when the layout
        lost enough of them (:func:`_layout_lost_text`), never a figure's OCR; what stays out is
        counted in the page's :data:`OCR_LEFT_OUT_KEY` (set on ``page``, the layout object, which
        travels back from worker processes), with ``garbage``: the elements :meth:`_drop_garbage`
        left out and their characters; ``rects``: the page's text-layer blocks."""
        readable, verdicts = readable_unclaimed(self.path, pc, claimed, in_picture, rects)
        found = []
        if _layout_lost_text(pc, claimed, in_picture, readable):
            found = self._text_layer_blocks(pc, claimed, rects, keep_out=~readable)
        left_out = pc.solid & ~claimed
        setattr(page, OCR_LEFT_OUT_KEY, {
            "chars": int(left_out.sum()),
            "in_pictures": int((left_out & in_picture).sum()),
            "unreadable_blocks": verdicts.count(False),
            "unreadable_chars": int((left_out & ~readable).sum()),
            "garbage_elements": garbage[0],
            "garbage_chars": garbage[1],
        })
        return found

    def _text_layer_blocks(
        self,
        pc: PageChars,
        claimed: np.ndarray,
        rects: list[tuple[float, float, float, float]],
        keep_out: np.ndarray | None = None,
    ) -> list[ParsingResult]:
        """The layout model left (much of) the page's text out of its text and table boxes (it can
        fail on unusual pages): MuPDF's text blocks (``rects``) become PARAGRAPHs (returned)
        holding the characters no element took (``PyMuPDFElementExtras.layout_fallback``; they are marked in
        ``claimed``), so no text is lost without a trace. ``keep_out``: characters never taken (on
        an OCR'd page, those that do not read as text: a figure's OCR, see :func:`readable_unclaimed`)."""
        log.warning(
            "%s: the layout model missed %d of %d characters on page %d; adding them from the text layer's blocks",
            escape_controls(str(self.path)), int((~claimed & pc.solid).sum()), int(pc.solid.sum()), pc.page,
        )
        taken = claimed if keep_out is None else claimed | keep_out
        found: list[ParsingResult] = []
        for x0, y0, x1, y1 in rects:
            # a margin block on a page that has other text is taken only when it is body text
            any_taken = claimed.any() if keep_out is None else (taken & ~keep_out).any()
            if any_taken and _in_band((x0, y0, x1, y1), pc.width, pc.height) and self._margin_furniture(pc, (x0, y0, x1, y1)):
                continue  # a printer's mark or running furniture in the margin, not text the layout lost
            geom = ParsingBoundingBox.from_points(pc.page, x0, y0, x1, y1, pc.width, pc.height)
            meta = {**RelabelHistory.new(native_label="text-layer block"), **PyMuPDFElementExtras.new(layout_fallback=True)}
            node = self._text(T.PARAGRAPH, pc, taken, (x0, y0, x1, y1), geom, meta)
            if node is not None and node.content:
                found.append(node)
        if keep_out is not None:
            claimed |= taken & ~keep_out
        return found

    def _margin_furniture(self, pc: PageChars, rect: tuple[float, float, float, float]) -> bool:
        """Whether a text-layer block lying in the margin band of page ``pc`` is a printer's mark or
        running furniture rather than body text: its text has no words (a page number), or it
        recurs (numbers ignored, near-equal texts match: :func:`~grounded.parsers.furniture.recurs_in`)
        among the margin-band blocks of the pages within :data:`FALLBACK_MARGIN_PAGES` of it."""
        key = _rect_key(pc, rect)
        if not has_words(key):
            return True
        layer = self._layer
        if layer is None:
            return False
        others: list[str] = []
        for number in range(pc.page - FALLBACK_MARGIN_PAGES, pc.page + FALLBACK_MARGIN_PAGES + 1):
            if number == pc.page or not 1 <= number <= layer.page_count:
                continue
            if number not in self._band_keys:
                near = layer.page(number)
                self._band_keys[number] = [
                    _rect_key(near, r) for r in text_layer_rects(near, layer) if _in_band(r, near.width, near.height)
                ]
            others.extend(self._band_keys[number])
        return recurs_in(key, others)

    def _text(
        self,
        type_: ParsingResultType,
        pc: PageChars,
        claimed: np.ndarray,
        rect: tuple[float, float, float, float],
        geom: ParsingBoundingBox,
        meta: dict[str, Any],
    ) -> ParsingResult | None:
        sel = pc.select(*rect)
        sel = sel[~claimed[sel]]
        claimed[sel] = True
        built = build_lines([pc], [sel], defer_hyphens=True)
        spans = lines_to_spans(built.lines, [pc]).get(0, [])
        if spans:  # whole words are taken, so a line may stick out of a tight box: grow the box
            geom = _grown_box(geom, spans, BOX_GROWTH.get(type_, "grow"))
        geom.spans = spans
        node = ParsingResult("", type_, content=built.text, geom=[geom], metadata=meta)
        # line-break hyphens: decided once per document in finish() (#13.3)
        hyphens = tuple((int(p), str(a), str(b)) for p, a, b in built.hyphens)
        if type_ == T.PARAGRAPH and len(sel):
            sizes, counts = np.unique(np.round(pc.size[sel] * 2) / 2, return_counts=True)
            self.body_sizes.update(dict(zip(sizes.tolist(), counts.tolist(), strict=True)))
        if type_ in HEADING_TYPES and built.text:
            style = _style_of(pc, sel, built.text)
            node.style.size, node.style.bold = style.size, style.bold
        elif type_ == T.PAGE_HEADER and built.text:
            style = _style_of(pc, sel, built.text)
            self.hold(node, Pending(hyphens, (style.size, style.caps, style.bold)))
            return node
        if hyphens:
            self.hold(node, Pending(hyphens))
        return node

    def _table(
        self,
        box: Any,
        pc: PageChars,
        claimed: np.ndarray,
        geom: ParsingBoundingBox,
        meta: dict[str, Any],
        layer: TextLayer,
    ) -> ParsingResult:
        table = ParsingResult("", T.TABLE, geom=[geom], metadata=meta)
        info = box.table or {}
        grid = info.get("cells")
        source = "layout"
        if not grid:
            grid = _find_tables_grid(layer, pc.page, geom.to_points(pc.width, pc.height))
            source = "find_tables" if grid else "lines"
        if not grid:  # no grid at all: one row per text line
            x0, y0, x1, y1 = geom.to_points(pc.width, pc.height)
            sel = pc.select(x0, y0, x1, y1)
            built = build_lines([pc], [sel[~claimed[sel]]])
            grid = [[(x0, ln.y0, x1, ln.y1)] for ln in built.lines]
        PyMuPDFElementExtras(table.metadata).cell_source = source
        turn = self._turn if source == "layout" else 0
        grid, joined = _join_continuation_rows(grid, _grid_line_tops(grid, pc, claimed, turn))
        if joined:
            PyMuPDFElementExtras(table.metadata).continuation_rows_joined = joined
        caption = self._caption_row(grid, pc, claimed)
        if caption is not None:  # the table's caption inside its box: a CAPTION before the table
            self._captions[id(table)] = caption
            grid = grid[1:]
            rest = [b for row_boxes in grid for b in row_boxes if b is not None]
            x0, y0, x1, y1 = clip_to_page(min(b[0] for b in rest), min(b[1] for b in rest), max(b[2] for b in rest),
                                   max(b[3] for b in rest), pc.width, pc.height)
            geom = ParsingBoundingBox.from_points(pc.page, x0, y0, x1, y1, pc.width, pc.height)
            table.geom = [geom]
        for r, row_boxes in enumerate(grid):
            row = ParsingResult("", T.TABLE_ROW, metadata=TablePlace.new(row=r))
            cells: list[ParsingResult] = []
            for c, cell_box in enumerate(row_boxes):
                if cell_box is None:
                    continue
                cx0, cy0, cx1, cy1 = cell_box
                x0, y0, x1, y1 = clip_to_page(cx0, cy0, cx1, cy1, pc.width, pc.height)
                if x1 - x0 <= 0 or y1 - y0 <= 0:
                    continue
                cell_geom = ParsingBoundingBox.from_points(pc.page, x0, y0, x1, y1, pc.width, pc.height)
                cell = self._text(T.TABLE_CELL, pc, claimed, (x0, y0, x1, y1), cell_geom, TablePlace.new(row=r, col=c))
                if cell is not None:
                    cells.append(cell)
            if not any(cell.content for cell in cells):
                continue  # empty grid row
            row.geom = [ParsingBoundingBox.enclosing([cell.geom[0] for cell in cells])]
            for cell in cells:
                row.add_child(cell)
            table.add_child(row)
        # claim whatever else lies in the table box (e.g. text between grid lines), but remember
        # it: when a page loses much text this way, add_page takes it from the text layer
        x0, y0, x1, y1 = geom.to_points(pc.width, pc.height)
        inside = pc.select(x0, y0, x1, y1)
        self._table_leftover.append(inside[~claimed[inside]])
        claimed[inside] = True
        if table.children:
            table.geom = [ParsingBoundingBox.enclosing([geom, *(r.geom[0] for r in table.children)])]
        table.content = table_to_markdown(table) if table.children else ""
        return table

    def _caption_row(self, grid: Grid, pc: PageChars, claimed: np.ndarray) -> ParsingResult | None:
        """The grid's first row when it is the table's caption ("Table 2 ...", "Tab. 3: ...") that
        the layout model boxed with the table: a CAPTION element over that row, else None."""
        if not any(b is not None for row_boxes in grid[1:] for b in row_boxes):
            return None  # nothing but the caption: not a table to take it from
        cells = [b for b in grid[0] if b is not None]
        if not cells:
            return None
        x0, y0 = min(b[0] for b in cells), min(b[1] for b in cells)
        x1, y1 = max(b[2] for b in cells), max(b[3] for b in cells)
        x0, y0, x1, y1 = clip_to_page(x0, y0, x1, y1, pc.width, pc.height)
        if x1 <= x0 or y1 <= y0:
            return None
        sel = pc.select(x0, y0, x1, y1)
        if not _CAPTION_START.match(build_lines([pc], [sel[~claimed[sel]]]).text):
            return None
        geom = ParsingBoundingBox.from_points(pc.page, x0, y0, x1, y1, pc.width, pc.height)
        return self._text(T.CAPTION, pc, claimed, (x0, y0, x1, y1), geom, RelabelHistory.new(native_label="table caption row"))

    def _figure_image(
        self, layer: TextLayer, page: int, number: int, rect: tuple[float, float, float, float]
    ) -> str | None:
        out_dir = self.image_dir
        if out_dir is None:
            return None
        import pymupdf

        from grounded.io.atomic import atomic_write_bytes

        pdf_page = layer._doc.load_page(page - 1)
        clip = pymupdf.Rect(rect) * pdf_page.derotation_matrix  # displayed -> unrotated page space
        pix = pdf_page.get_pixmap(clip=clip, dpi=self.image_dpi)
        name = f"{self.path.stem}-p{page:04d}-{number:02d}.png"
        return str(atomic_write_bytes(out_dir / name, pix.tobytes("png")))

    def finish(self) -> list[ParsingResult]:
        """Document-wide part: line-break hyphens, first-line headings, running headers/footers the
        model gave a text type on OCR'd pages; returns the root's children (heading levels and lists
        are post-processing's, as for every backend)."""
        self._resolve_hyphens()
        self._first_line_headings()
        self._pending.clear()
        mark_running_furniture(self.elements, pages=self.ocr_pages)
        return self.elements

    def _resolve_hyphens(self) -> None:
        """Keep or drop each line-break hyphen with the whole document as evidence (#13.3);
        tables whose cells changed get their Markdown again."""
        hyphens = {key: pending.hyphens for key, (_, pending) in self._pending.items() if pending.hyphens}
        changed = {id(n) for n in resolve_document(self.elements, hyphens)}
        if changed:
            for n in self.elements:
                if n.type == T.TABLE and any(id(d) in changed for d in n.walk()):
                    n.content = table_to_markdown(n)

    # -- headers --------------------------------------------------------------------------------
    def _first_line_headings(self) -> None:
        """A PAGE_HEADER that opens its page's text flow is a heading, not furniture, when it is
        one line set like a heading (at least HEADING_SIZE_RATIO x the body size, or bold and not
        smaller), its text is not repeated on another page (running headers are), and body text
        (a paragraph or list item) follows right below it. It becomes a SECTION_HEADER
        (``relabel.relabeled_from = "PAGE_HEADER"``, native label kept)."""
        styles = {key: pending.style for key, (_, pending) in self._pending.items()}
        if not self.body_sizes:
            return
        body = self.body_sizes.most_common(1)[0][0]
        repeats: dict[str, set[int]] = {}
        by_page: dict[int, list[ParsingResult]] = {}
        for n in self.elements:
            if not n.geom:
                continue
            if n.type in _FURNITURE:
                repeats.setdefault(_running_text(n.content), set()).add(n.geom[0].page)
            if n.type != T.FIGURE and n.content.strip():
                by_page.setdefault(n.geom[0].page, []).append(n)
        for nodes in by_page.values():
            if len(nodes) < 2 or nodes[0].type != T.PAGE_HEADER:
                continue
            first, after = nodes[0], nodes[1]
            style = styles.get(id(first))
            if style is None or after.type not in (T.PARAGRAPH, T.LIST_ITEM):
                continue
            size, caps, bold = style
            if not (size >= HEADING_SIZE_RATIO * body or (bold and size >= body)):
                continue
            if len(repeats.get(_running_text(first.content), ())) > 1 or len(first.geom[0].spans) != 1:
                continue
            box, below = first.geom[0], after.geom[0]
            height = box.bottom - box.top
            if not (box.bottom - 0.5 * height <= below.top <= box.bottom + 2.5 * height):
                continue
            first.type = T.SECTION_HEADER
            first.relabel.relabeled_from = T.PAGE_HEADER.value
            first.style.size, first.style.bold = size, bold

