"""Shared post-processing run by :meth:`BaseParser.finish` for every backend (thesis §3.3).

0. :func:`keep_body_furniture` -- page headers/footers that hold a page's body text are kept.
1. :func:`filter_elements` -- drop unwanted element types and empty text elements.
2. :func:`infer_hierarchy` -- nest content under section headers by heading level.
3. :func:`attach_line_spans` -- line boxes and per-character extents from the PDF text layer.
4. :func:`assign_ids` -- stable, document-unique ids in reading order.

Hierarchy choices (documented contract):

* Only the root's direct children are re-nested; existing structure (TABLE -> TABLE_ROW ->
  TABLE_CELL, LIST -> LIST_ITEM, anything a backend nested) moves as a whole.
* A SECTION_HEADER of level L becomes the parent of everything that follows it up to the next
  header of level <= L (Docling HybridChunker-style heading matching).
* A TITLE is the document title: it stays a top-level *leaf* and closes all open sections, so
  sections after it are its siblings (their heading path does not repeat the title).
* Heading levels come from :func:`.hierarchy.assign_heading_levels` (one algorithm for every
  backend: a valid backend level, numbering, numbering style, font size, style rank), which
  :meth:`BaseParser.finish` runs before nesting; ``heading.source`` says which.

Lists: :func:`.hierarchy.group_lists` wraps runs of LIST_ITEM / REFERENCE_ITEM siblings in a
synthetic LIST / REFERENCE_LIST (marked as such, see :mod:`.hierarchy`) before filtering, for every backend.
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import escape_controls
from ..model.boxes import ParsingBoundingBox
from ..model.elements import CONTAINER_TYPES, HEADING_TYPES, TEXT_TYPES, ParsingResult, ParsingResultType
from .furniture import furniture_key, has_words, recurs_in
from .hierarchy import assign_heading_levels, group_lists, numbering_level
from .textlayer import BuiltText, PageChars, TextLayer, _fill_gaps, build_lines

__all__ = [
    "keep_body_furniture",
    "page_report",
    "dropped_text",
    "FurnitureKeptWarning",
    "FURNITURE_RESCUE_MIN_CHARS",
    "filter_elements",
    "infer_hierarchy",
    "attach_line_spans",
    "assign_ids",
    "align_text",
    "numbering_level",
    "assign_heading_levels",
    "group_lists",
    "MIN_CHAR_ALIGNMENT",
]

log = logging.getLogger(__name__)
T = ParsingResultType

#: Below this share of matched content characters an element keeps line spans without char info.
MIN_CHAR_ALIGNMENT = 0.8
# Empty cells are kept: they are grid placeholders that keep the columns of a table aligned.
_KEEP_EMPTY = frozenset({T.TABLE_CELL})


# ---------------------------------------------------------------------------------------------
# 0. page furniture that is really body text
# ---------------------------------------------------------------------------------------------

#: A page's PAGE_HEADER/PAGE_FOOTER text is kept when it has at least this many non-space chars...
FURNITURE_RESCUE_MIN_CHARS = 200
#: ... and at least this many times the page's other kept text (running headers are short lines;
#: a layout model that sees a page sideways or at an odd scale may call all of its text furniture).
FURNITURE_RESCUE_RATIO = 3.0
#: A single header/footer element of more than this many lines (and at least
#: FURNITURE_RESCUE_MIN_CHARS characters) is body text whatever the rest of its page holds: running
#: headers and footers are a line or two, a block of many lines is content the model mislabelled.
FURNITURE_MAX_LINES = 6
_FURNITURE = (T.PAGE_HEADER, T.PAGE_FOOTER)
#: On a one-page document no line can repeat, so "repeats nowhere" is no evidence: a header/footer
#: lying wholly within this share of the page's height (width) from its top or bottom (left or right: a
#: page turned by /Rotate) edge, of at most
#: :data:`FURNITURE_MAX_LINES` lines, stays furniture when it is set apart from the page's body text ...
ONE_PAGE_BAND_SHARE = 0.1
#: ... a font size differing by at least this share of the body's, or bold where the body is not
#: (or the reverse); without characters to measure (no text layer) the band and the model's label decide.
FURNITURE_SIZE_DIFFERENCE = 0.1
#: On an OCR'd page Tesseract's text layer sets every line alike (no size or weight to compare), so
#: there a band line is set apart when the blank between it and the nearest body element (across the
#: band's edge: vertical for the top/bottom band, horizontal for a side band) is at least this many of
#: its own line heights. Measured on the scanned shared pages: running headers/footers stand 1.4-7.4
#: line heights off the body (Federal Register p. 14, Clinical Science p. 2, PeerJ p. 1); a page's
#: scanned first line labelled a header by the layout model stands at its line spacing, 0.6
#: (tests/parse/test_ocr_noise.py).
ONE_PAGE_OCR_GAP_LINES = 1.0


class FurnitureKeptWarning(UserWarning):
    """Text labelled page header/footer was kept as body text because it is most of its page or a
    block of many lines: the layout model mistook a page's body for furniture, so that page's
    structure (headings, tables) may be wrong too. The ordinary line rules (a page's only text, a
    line that repeats on no other page, a heading's twin) do not warn: they fire on ordinary PDFs
    (a title page's one-off footer) and ask nothing of the user; they are logged at DEBUG and
    counted in ``pages[i]["furniture_kept_chars"]`` like every kept character."""


def _solid(text: str) -> int:
    return sum(1 for c in text if not c.isspace())


def _text_nodes(root: ParsingResult) -> Iterable[ParsingResult]:
    """Nodes whose ``content`` is text of their own: text types, and leaves of other types
    (a TABLE's content repeats its cells, a LIST has none)."""
    for node in root.walk():
        if node.type == T.ROOT:
            continue
        if node.type in TEXT_TYPES or not node.children:
            yield node


def keep_body_furniture(
    root: ParsingResult,
    drop_types: Iterable[ParsingResultType | str],
    source: str | Path = "document",
    page_count: int | None = None,
) -> dict[int, int]:
    """Relabel the PAGE_HEADER/PAGE_FOOTER nodes that are not page furniture, so the filter does not
    silently remove a page's body. Page furniture repeats from page to page; these rules (documented
    contract, README "headers and footers never swallow a page's body") keep the rest:

    * **the page's only text**: on a page where nothing else is kept, its headers/footers that
      repeat on no other page are its body, bare numbers included (a tiny page, a one-word page, a
      page a layout model saw at an odd scale); a running header on a figure-only page stays furniture;
    * **dominant**: on a page where the headers/footers about to be dropped hold at least
      :data:`FURNITURE_RESCUE_MIN_CHARS` non-space characters and at least
      :data:`FURNITURE_RESCUE_RATIO` times the page's other kept text, all of them are kept;
    * **a block**: a single header/footer element of more than :data:`FURNITURE_MAX_LINES` lines and
      at least :data:`FURNITURE_RESCUE_MIN_CHARS` characters;
    * **a heading's twin**: a header/footer whose text (:func:`.furniture.furniture_key`, numbers
      and case ignored) recurs on other pages mostly as a heading ("Heading 2" between "Heading 1" and
      "Heading 3" that the model called section headers) becomes that heading type;
    * **repeats nowhere**: a header/footer with words whose text recurs on no other page (as any
      element; numbers ignored, near-equal texts match, :func:`.furniture.recurs_in`) is not running
      furniture. A bare page number ("12", "- 3 -") stays furniture. On a one-page document
      (``page_count`` 1) nothing can repeat: there a line in the furniture band set apart from the
      body (:data:`ONE_PAGE_BAND_SHARE`, :data:`FURNITURE_MAX_LINES`,
      :data:`FURNITURE_SIZE_DIFFERENCE`; ``source``, the PDF, is read for the font sizes; on an
      OCR'd page, a blank of :data:`ONE_PAGE_OCR_GAP_LINES` line heights to the body) stays
      furniture, as the layout model labelled it.

    Kept nodes become PARAGRAPHs (or the heading type of their twins), ``relabel.native_label``
    is kept and ``relabel.relabeled_from`` names the old type. One :class:`FurnitureKeptWarning`
    names the pages where the *dominant* or *block* rule fired (the layout model misread a page);
    the line rules are logged at DEBUG only. Returns page -> characters kept this way (every rule;
    :meth:`BaseParser.finish` records it as ``pages[i]["furniture_kept_chars"]``).
    """
    drop = frozenset(ParsingResultType(t) for t in drop_types)
    dropped_furniture = [t for t in _FURNITURE if t in drop]
    if not dropped_furniture:
        return {}
    furniture: dict[int, list[ParsingResult]] = {}
    furniture_chars: dict[int, int] = {}
    body_chars: dict[int, int] = {}
    seen: dict[str, dict[int, list[ParsingResultType]]] = {}  # furniture key -> page -> types there
    for node in _text_nodes(root):
        if not node.geom or (node.type in drop and node.type not in dropped_furniture):
            continue
        page = node.geom[0].page
        chars = _solid(node.content)
        if chars:
            seen.setdefault(furniture_key(node.content), {}).setdefault(page, []).append(node.type)
        if node.type in dropped_furniture:
            furniture.setdefault(page, []).append(node)
            furniture_chars[page] = furniture_chars.get(page, 0) + chars
        elif not any(a.type in drop for a in _ancestors(node)):
            body_chars[page] = body_chars.get(page, 0) + chars
    kept: dict[int, int] = {}
    misread: dict[int, int] = {}  # pages whose body the layout model took for furniture (warned)
    apart = _SetApart(root, source, drop) if page_count == 1 else None
    for page, nodes in sorted(furniture.items()):
        chars = furniture_chars[page]
        body = body_chars.get(page, 0)
        whole_page = chars >= FURNITURE_RESCUE_MIN_CHARS and chars >= FURNITURE_RESCUE_RATIO * body
        rescued: list[tuple[ParsingResult, ParsingResultType]] = []
        for node in nodes:
            if whole_page or _block(node):
                misread[page] = misread.get(page, 0) + _solid(node.content)
                rescued.append((node, T.PARAGRAPH))
            elif (new_type := _not_furniture(node, page, seen, only_text=not body)) is not None:
                if apart is not None and body and new_type == T.PARAGRAPH and apart.furniture(node):
                    continue  # a one-page document's header/footer: it cannot repeat
                rescued.append((node, new_type))
        for node, new_type in rescued:
            node.relabel.relabeled_from = node.type.value
            node.type = new_type
        if rescued:
            kept[page] = sum(_solid(n.content) for n, _ in rescued)
    if apart is not None:
        apart.close()
    if misread:
        warnings.warn(
            f"{escape_controls(str(source))}: page header/footer text kept as body text on page(s) "
            f"{sorted(misread)} ({sum(misread.values())} characters: most of the page's text, or blocks of "
            f"more than {FURNITURE_MAX_LINES} lines; the layout of these pages may be misread)",
            FurnitureKeptWarning,
            stacklevel=3,
        )
    if set(kept) - set(misread):
        log.debug(
            "%s: page header/footer lines kept as text on page(s) %s (a page's only text, lines that repeat "
            "on no other page, or a heading's twin)",
            escape_controls(str(source)),
            sorted(set(kept) - set(misread)),
        )
    return kept


class _SetApart:
    """Whether a header/footer of a one-page document is set apart from the page's body text (see
    :data:`ONE_PAGE_BAND_SHARE`): font sizes and boldness read from the PDF once."""

    def __init__(self, root: ParsingResult, source: str | Path, drop: frozenset[ParsingResultType]) -> None:
        self.root, self.source, self.drop = root, Path(source), drop
        self._layer: TextLayer | None = None
        self._body: tuple[float, bool] | None = None
        self._read = False
        pages = root.info.pages or []
        self.ocr_pages = {p.get("page") for p in pages if isinstance(p, dict) and p.get("text_source") == "ocr"}

    def furniture(self, node: ParsingResult) -> bool:
        box = node.geom[0]
        band = ONE_PAGE_BAND_SHARE  # any edge: on a page turned by /Rotate the running lines run down its sides
        in_band = box.bottom <= band or box.top >= 1.0 - band or box.right <= band or box.left >= 1.0 - band
        if not in_band or _lines(node) > FURNITURE_MAX_LINES:
            return False
        if box.page in self.ocr_pages:  # Tesseract's text layer sets every line alike: the blank decides
            return self._gap_lines(node) >= ONE_PAGE_OCR_GAP_LINES
        body = self._body_style(box.page)
        style = self._style([box]) if body is not None else None
        if body is None or style is None:
            return True  # nothing to measure: the band and the layout model's label decide
        size, bold = style
        return abs(size - body[0]) >= FURNITURE_SIZE_DIFFERENCE * body[0] or bold != body[1]

    def _gap_lines(self, node: ParsingResult) -> float:
        """The blank between ``node`` (a band line) and the nearest body element of its page, in
        ``node``'s line heights, measured across the band's edge (vertical for the top/bottom band,
        horizontal for a side band); infinite when the page holds no body element."""
        box = node.geom[0]
        band = ONE_PAGE_BAND_SHARE
        vertical = box.bottom <= band or box.top >= 1.0 - band
        lines = [s for b in node.geom for s in (b.spans or [b])]
        heights = sorted((s.bottom - s.top) if vertical else (s.right - s.left) for s in lines)
        line = heights[len(heights) // 2]
        gaps = [
            max(0.0, b.top - box.bottom, box.top - b.bottom) if vertical else max(0.0, b.left - box.right, box.left - b.right)
            for n in _text_nodes(self.root)
            if n.type not in self.drop and n.type not in _FURNITURE and n.content.strip()
            for b in n.geom
            if b.page == box.page
        ]
        if not gaps:
            return float("inf")
        return min(gaps) / line if line > 0 else float("inf")

    def _body_style(self, page: int) -> tuple[float, bool] | None:
        if not self._read:
            self._read = True
            boxes = [b for n in _text_nodes(self.root) if n.type not in self.drop and n.type not in _FURNITURE
                     and n.type in TEXT_TYPES and n.content.strip() for b in n.geom if b.page == page]
            if self.source.is_file():
                try:
                    self._layer = TextLayer(self.source, cache_pages=1)
                except (RuntimeError, ValueError, OSError) as exc:  # MuPDF cannot read it: no style evidence
                    log.debug("%s: no font sizes for one-page furniture (%s)", escape_controls(str(self.source)), exc)
                else:
                    self._body = self._style(boxes)
        return self._body

    def _style(self, boxes: list[ParsingBoundingBox]) -> tuple[float, bool] | None:
        """The most common font size (rounded to 0.5 pt) and whether most characters are bold."""
        if self._layer is None or not boxes:
            return None
        sizes: list[float] = []
        bold: list[bool] = []
        for box in boxes:
            if not 1 <= box.page <= self._layer.page_count:
                continue
            pc = self._layer.page(box.page)
            chars = pc.select_box(box)
            chars = chars[pc.solid[chars]]
            sizes.extend((np.round(pc.size[chars] * 2) / 2).tolist())
            bold.extend(pc.bold[chars].tolist())
        if not sizes:
            return None
        values, counts = np.unique(sizes, return_counts=True)
        return float(values[int(np.argmax(counts))]), 2 * sum(bold) >= len(bold)

    def close(self) -> None:
        if self._layer is not None:
            self._layer.close()
            self._layer = None


def _block(node: ParsingResult) -> bool:
    """A header/footer element too long to be running furniture (see :data:`FURNITURE_MAX_LINES`)."""
    return _lines(node) > FURNITURE_MAX_LINES and _solid(node.content) >= FURNITURE_RESCUE_MIN_CHARS


def _not_furniture(
    node: ParsingResult, page: int, seen: dict[str, dict[int, list[ParsingResultType]]], only_text: bool
) -> ParsingResultType | None:
    """The type a header/footer ``node`` on ``page`` takes because it is not page furniture (see
    :func:`keep_body_furniture`), or None when it is. ``only_text``: nothing else on the page is
    kept (then a bare number that repeats nowhere is the page's text too)."""
    key = furniture_key(node.content)
    if not has_words(key) and not only_text:
        return None
    bare = key.replace("#", "")
    elsewhere = [types for k, pages in seen.items() if k.replace("#", "") == bare for p, types in pages.items() if p != page]
    if not elsewhere:
        others = (k for k, pages in seen.items() if any(p != page for p in pages))
        return None if recurs_in(key, others) else T.PARAGRAPH
    headings = [next(t for t in types if t in HEADING_TYPES) for types in elsewhere if any(t in HEADING_TYPES for t in types)]
    if 2 * len(headings) > len(elsewhere):
        return max(set(headings), key=headings.count)
    return None


def _lines(node: ParsingResult) -> int:
    return sum(len(box.spans) for box in node.geom)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(root: ParsingResult, markdown: str) -> str:
    """Replace lone UTF-16 surrogates (undecodable glyphs of damaged fonts and broken metadata come
    out of MuPDF this way) with U+FFFD in every node's content and metadata strings and in
    ``markdown`` (returned): such text cannot be written as UTF-8. One code point for one, so
    character offsets and extents stay valid."""
    for node in root.walk():
        if node.content and _LONE_SURROGATE.search(node.content):
            node.content = _LONE_SURROGATE.sub("\ufffd", node.content)
        if node.metadata:
            node.metadata = _clean(node.metadata)
    return _LONE_SURROGATE.sub("\ufffd", markdown)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_clean(v) for v in value)
    return value


def _ancestors(node: ParsingResult) -> Iterable[ParsingResult]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def dropped_text(root: ParsingResult, drop_types: Iterable[ParsingResultType | str]) -> dict[int, dict[str, int]]:
    """Per page, the non-space characters of text that :func:`filter_elements` will drop, by type."""
    drop = frozenset(ParsingResultType(t) for t in drop_types)
    out: dict[int, dict[str, int]] = {}
    for node in _text_nodes(root):
        if not node.geom or not node.content:
            continue
        kind = node.type if node.type in drop else next((a.type for a in _ancestors(node) if a.type in drop), None)
        if kind is not None:
            per = out.setdefault(node.geom[0].page, {})
            per[kind.value] = per.get(kind.value, 0) + _solid(node.content)
    return out


def page_report(
    root: ParsingResult,
    page_count: int,
    text_pages: Iterable[int],
    damaged_pages: Iterable[int] = (),
    page_warnings: dict[int, list[str]] | None = None,
    dropped: dict[int, dict[str, int]] | None = None,
    damage_reasons: dict[int, str] | None = None,
) -> tuple[dict[int, dict[str, object]], int]:
    """Per 1-based page: ``status`` (``ok``, ``damaged``, ``no_text_layer``, ``empty`` or
    ``unknown`` when the result has no boxes), a
    ``reason`` unless ok, ``chars`` (non-space characters of the result's text on the page) and
    MuPDF's ``warnings``; and the result's total characters (also text without page boxes).

    ``damaged``: MuPDF could not read the page's content completely, or its glyphs map to no
    Unicode (whatever text it has is kept; ``damage_reasons`` gives the page's reason);
    ``no_text_layer``: the page has no text to extract (image-only or blank);
    ``empty``: the page has a text layer but no text of it is in the result.
    """
    per_page: dict[int, int] = {}
    total = 0
    located = False
    for node in _text_nodes(root):
        chars = _solid(node.content)
        total += chars
        located = located or bool(node.geom)
        if node.geom and chars:
            page = node.geom[0].page
            per_page[page] = per_page.get(page, 0) + chars
    have_text = set(text_pages)
    damaged = set(damaged_pages)
    messages = page_warnings or {}
    out: dict[int, dict[str, object]] = {}
    for page in range(1, page_count + 1):
        chars = per_page.get(page, 0)
        entry: dict[str, object] = {"status": "ok", "chars": chars, "warnings": list(messages.get(page, []))}
        if page in damaged:
            entry["status"] = "damaged"
            entry["reason"] = (damage_reasons or {}).get(page) or (
                "MuPDF could not read the page's content completely; text may be missing or wrong"
            )
        elif chars:
            pass
        elif not located and total:
            entry["status"] = "unknown"
            entry["reason"] = "the parser gives no page positions"
        elif page not in have_text:
            entry["status"] = "no_text_layer"
            entry["reason"] = "the page has no text layer (blank or image-only; OCR would be needed)"
        else:
            entry["status"] = "empty"
            gone = (dropped or {}).get(page)
            if gone:
                kinds = ", ".join(f"{k} ({n} chars)" for k, n in sorted(gone.items()))
                entry["reason"] = f"the page's text is only of dropped element types: {kinds}"
                entry["dropped"] = dict(gone)
            else:
                entry["reason"] = (
                    "the page has a text layer but none of its text is in an element "
                    "(e.g. text inside figures only)"
                )
        out[page] = entry
    return out, total


# ---------------------------------------------------------------------------------------------
# 1. filtering
# ---------------------------------------------------------------------------------------------


def filter_elements(root: ParsingResult, drop_types: Iterable[ParsingResultType | str]) -> int:
    """Remove nodes of ``drop_types`` and empty text elements; return how many nodes went.

    Children of a dropped node that are not dropped themselves are lifted into its place (a
    dropped FORM_AREA keeps its KEY_VALUEs). Text elements whose content is blank and have no
    children go, except empty TABLE_CELLs (grid placeholders). Containers left without children
    and without content of their own go too. The root is never removed.
    """
    drop = frozenset(ParsingResultType(t) for t in drop_types)
    removed = 0

    def keep_list(node: ParsingResult) -> list[ParsingResult]:
        """Post-order: the nodes that replace ``node`` in its parent's child list."""
        nonlocal removed
        had_children = bool(node.children)
        new_children: list[ParsingResult] = []
        for child in node.children:
            new_children.extend(keep_list(child))
        node.children = new_children
        for child in new_children:
            child.parent = node
        if node.type == T.ROOT:
            return [node]
        if node.type in drop:
            removed += 1
            return new_children
        blank = not node.content.strip()
        if node.type in TEXT_TYPES and blank and not new_children and node.type not in _KEEP_EMPTY:
            removed += 1
            return []
        if node.type in CONTAINER_TYPES and had_children and not new_children and blank:
            removed += 1
            return []
        return [node]

    # iterative-safe enough: trees are shallow (root -> sections -> blocks -> rows -> cells)
    keep_list(root)
    return removed


# ---------------------------------------------------------------------------------------------
# 2. hierarchy
# ---------------------------------------------------------------------------------------------


def infer_hierarchy(root: ParsingResult) -> None:
    """Make section headers parents of the content that follows them, nested by level.

    See the module docstring for the rules (TITLE stays a top-level leaf).
    """
    flat = list(root.children)
    if not any(n.type in HEADING_TYPES for n in flat):
        return
    assign_heading_levels(root)  # a no-op for headings BaseParser.finish has given levels already
    root.children = []
    stack: list[tuple[int, ParsingResult]] = []  # (level, header)
    for node in flat:
        if node.type == T.TITLE:
            stack.clear()
            root.add_child(node)
            continue
        if node.type == T.SECTION_HEADER:
            level = int(node.heading.level)  # type: ignore[arg-type]  # assign_heading_levels gave every heading one
            while stack and stack[-1][0] >= level:
                stack.pop()
            (stack[-1][1] if stack else root).add_child(node)
            stack.append((level, node))
            continue
        (stack[-1][1] if stack else root).add_child(node)


# ---------------------------------------------------------------------------------------------
# 3. line spans + character alignment
# ---------------------------------------------------------------------------------------------


def _has_char_spans(node: ParsingResult) -> bool:
    return any(s.char_start is not None for b in node.geom for s in b.spans)


def attach_line_spans(root: ParsingResult, pdf_path: str | Path, merge_overlap: float = 0.5) -> None:
    """Give every text element with boxes but no character-aware spans its PDF text lines.

    Lines come from the characters whose centre lies in the element's boxes; their text is
    aligned to the element's ``content`` so each line span knows its character range and every
    character's horizontal extent. ``trace.char_alignment`` records the share of content
    characters matched; below :data:`MIN_CHAR_ALIGNMENT` spans are kept without char info.
    """
    targets = [n for n in root.walk() if n.type in TEXT_TYPES and n.geom and n.content.strip() and not _has_char_spans(n)]
    if not targets:
        return
    with TextLayer(pdf_path) as layer:
        count = layer.page_count
        missing: set[int] = set()
        for node in targets:
            boxes: list[ParsingBoundingBox] = []
            pages: list[PageChars] = []
            selections = []
            for box in node.geom:
                if box.page > count:
                    missing.add(box.page)
                    continue
                pc = layer.page(box.page)
                boxes.append(box)
                pages.append(pc)
                selections.append(pc.select_box(box))
            if boxes:
                _attach(node, boxes, pages, selections, merge_overlap)
        if missing:
            warnings.warn(
                f"{escape_controls(str(pdf_path))}: element boxes refer to page(s) {sorted(missing)} beyond the document's {count} pages",
                stacklevel=2,
            )


def _attach(
    node: ParsingResult,
    boxes: list[ParsingBoundingBox],
    pages: list[PageChars],
    selections: list,
    merge_overlap: float,
) -> None:
    built = build_lines(pages, selections, merge_overlap, keep_hyphens=True)
    if not built.lines:
        node.trace.char_alignment = 0.0
        for box in boxes:
            box.spans = []
        return
    mapping, ratio = align_text(node.content, built)
    node.trace.char_alignment = round(ratio, 4)
    with_chars = ratio >= MIN_CHAR_ALIGNMENT
    spans_by_box = _spans_from_alignment(node.content, built, mapping, pages, with_chars)
    for i, box in enumerate(boxes):
        box.spans = spans_by_box.get(i, [])


def _norm_char(c: str) -> str:
    n = unicodedata.normalize("NFKC", c).casefold()
    return n[:1] if n else c


def align_text(content: str, built: BuiltText) -> tuple[list[int], float]:
    """Map each ``content`` char to a char of the text-layer text (-1 = none); return the map and
    the share of non-space content chars matched.

    Fast path: equal modulo whitespace and line-break hyphens. Otherwise an edit-distance
    alignment (rapidfuzz when installed, difflib otherwise) over the non-space characters.
    """
    mapping = [-1] * len(content)
    c_idx = [i for i, c in enumerate(content) if not c.isspace()]
    t_text = built.text
    t_idx = [j for j, c in enumerate(t_text) if not c.isspace()]
    if not c_idx:
        return mapping, 0.0
    # fast path: walk both, skipping droppable hyphens of the text layer
    ok, a, b = True, 0, 0
    pairs: list[tuple[int, int]] = []
    while a < len(c_idx):
        if b >= len(t_idx):
            ok = False
            break
        ci, tj = c_idx[a], t_idx[b]
        if content[ci] == t_text[tj]:
            pairs.append((ci, tj))
            a += 1
            b += 1
        elif tj in built.droppable:
            b += 1
        else:
            ok = False
            break
    if ok and all(t_idx[k] in built.droppable for k in range(b, len(t_idx))):
        for ci, tj in pairs:
            mapping[ci] = tj
        return mapping, 1.0
    # fallback: edit-distance alignment on normalized non-space characters
    a_str = "".join(_norm_char(content[i]) for i in c_idx)
    b_str = "".join(_norm_char(t_text[j]) for j in t_idx)
    matched = 0
    for tag, i1, i2, j1, j2 in _opcodes(a_str, b_str):
        if tag == "equal":
            for k in range(i2 - i1):
                mapping[c_idx[i1 + k]] = t_idx[j1 + k]
            matched += i2 - i1
        elif tag == "replace" and i2 - i1 == j2 - j1:
            # same-length substitutions (OCR confusions): positions are still right
            for k in range(i2 - i1):
                mapping[c_idx[i1 + k]] = t_idx[j1 + k]
    return mapping, matched / len(c_idx)


def _opcodes(a: str, b: str) -> list[tuple[str, int, int, int, int]]:
    try:
        from rapidfuzz.distance import Indel
    except ImportError:  # pragma: no cover - rapidfuzz is installed with the default extras
        import difflib

        return [tuple(op) for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()]  # type: ignore[misc]
    return [(op.tag, op.src_start, op.src_end, op.dest_start, op.dest_end) for op in Indel.opcodes(a, b)]


def _spans_from_alignment(
    content: str,
    built: BuiltText,
    mapping: list[int],
    pages: list[PageChars],
    with_chars: bool,
) -> dict[int, list[ParsingBoundingBox]]:
    lines = built.lines
    n = len(content)
    # line of each content char: the line of its matched text char; others inherit
    line_of = [built.line_of[t] if t >= 0 else -1 for t in mapping]
    last = -1
    for i in range(n):
        if line_of[i] >= 0:
            last = max(last, line_of[i])  # keep ranges ordered (monotone)
            line_of[i] = last
        else:
            line_of[i] = last
    nxt = -1
    for i in range(n - 1, -1, -1):  # leading unmatched chars belong to the first matched line
        if line_of[i] >= 0:
            nxt = line_of[i]
        elif nxt >= 0:
            line_of[i] = nxt
    ranges: dict[int, list[int]] = {}
    for i, ln in enumerate(line_of):
        if ln >= 0 and not content[i].isspace():
            r = ranges.setdefault(ln, [i, i + 1])
            r[1] = i + 1
    out: dict[int, list[ParsingBoundingBox]] = {}
    for k, line in enumerate(lines):
        pc = pages[line.box_index]
        w, h = pc.width, pc.height
        kwargs: dict = {}
        if with_chars and k in ranges:
            start, end = ranges[k]
            kwargs = {"char_start": start, "char_end": end}
            if line.char_x is not None:
                xs: list[tuple[float, float]] = []
                for i in range(start, end):
                    t = mapping[i]
                    if t >= 0 and line.start <= t < line.end:
                        off = 2 * (t - line.start)
                        xs.append((line.char_x[off], line.char_x[off + 1]))
                    else:
                        xs.append((math.nan, math.nan))
                kwargs["char_x"] = tuple(v / w for v in _fill_gaps(xs))
        out.setdefault(line.box_index, []).append(
            ParsingBoundingBox(line.page, line.x0 / w, line.y0 / h, line.x1 / w, line.y1 / h, **kwargs)
        )
    return out


# ---------------------------------------------------------------------------------------------
# 4. ids
# ---------------------------------------------------------------------------------------------

_OWN_ID = re.compile(r"root|e\d+")


def assign_ids(root: ParsingResult) -> None:
    """Ids in depth-first (reading) order: ``root``, ``e1``, ``e2``, ...; same tree -> same ids.

    A backend's own id (anything not of this form) is kept as ``trace.native_id``.
    """
    for n, node in enumerate(root.walk()):
        if node.id and not _OWN_ID.fullmatch(node.id) and "native_id" not in node.metadata:
            node.trace.native_id = node.id
        node.id = "root" if n == 0 else f"e{n}"

