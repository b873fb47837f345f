"""One heading-level algorithm and one list-grouping algorithm for every backend (issue #13.6).

Post-processing (:meth:`BaseParser.finish`) runs both on every backend's tree; backends only hand
over evidence:

* a heading's native level as ``heading.native_level`` (or ``heading.level`` written by a
  backend that predates this module), kept when it is an integer >= 1;
* its style as ``style.size`` / ``style.bold`` where the backend reads the
  text layer itself (PyMuPDF), and the body text size as the root's
  ``info.body_font_size``; :func:`measure_styles` fills both in from the PDF text layer for
  the headings that lack them;
* the numbering in the heading text ("2.3.1 Results", "IV. Discussion").

:func:`assign_heading_levels` decides, per TITLE / SECTION_HEADER, ``heading.level`` and how
(``heading.source``):

``backend``
    a valid native level;
``title``
    a TITLE is level 1;
``numbering``
    the depth of its section number;
``numbering_style``
    unnumbered, but numbered headings of the same style (size, ALL CAPS) have this depth (the most
    common one);
``font_size``
    a style no numbered heading has: placed among the numbered styles by font size (the depth of
    the same size, else one below the deepest larger size, else 1);
``style``
    no numbering in the document: the rank of the style (larger first, ALL CAPS above mixed case);
``default``
    no evidence at all: 1.

With style evidence it also fixes two labels: an unnumbered SECTION_HEADER set clearly smaller than
the body text (:data:`SMALL_HEADER_RATIO`; table notes a layout model took for headings) becomes a
PARAGRAPH (``relabel.demoted_from``), and when no TITLE is on page 1 the first heading there
becomes the TITLE if it is set at least :data:`TITLE_SIZE_RATIO` times larger than every smaller
heading and no heading is larger (``relabel.promoted_from``).

:func:`group_lists` wraps every run of LIST_ITEM (REFERENCE_ITEM) siblings in a LIST
(REFERENCE_LIST) marked synthetic (metadata key :data:`SYNTHETIC`); page headers/footers about to be dropped
do not interrupt a run (they move behind the list). Nested runs (items whose children are items)
get their own container.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model.boxes import ParsingBoundingBox
from ..model.elements import HEADING_TYPES, ParsingResult, ParsingResultType
from .textlayer import TextLayer

__all__ = [
    "numbering_level",
    "HeadingStyle",
    "heading_style",
    "all_caps",
    "assign_heading_levels",
    "measure_styles",
    "group_lists",
    "CONTAINER_OF",
    "SYNTHETIC",
    "SMALL_HEADER_RATIO",
    "TITLE_SIZE_RATIO",
]

T = ParsingResultType

#: an unnumbered section header set below this share of the body text size is not a heading
SMALL_HEADER_RATIO = 0.85
#: the first heading on page 1 is the title when set at least this much larger than the smaller ones
TITLE_SIZE_RATIO = 1.25
#: list item type -> the container a run of them goes in
CONTAINER_OF = {T.LIST_ITEM: T.LIST, T.REFERENCE_ITEM: T.REFERENCE_LIST}
#: metadata key marking a container made by :func:`group_lists` (not by the backend)
SYNTHETIC = "synthetic"
_FURNITURE = frozenset({T.PAGE_HEADER, T.PAGE_FOOTER})

# ---------------------------------------------------------------------------------------------
# evidence
# ---------------------------------------------------------------------------------------------

_NUMBERING = re.compile(r"^\s*(?:(?:chapter|section|part)\s+)?(\d{1,3}(?:\.\d{1,3})*)(?:\.|\)|\s|$)", re.IGNORECASE)
_ROMAN = re.compile(r"^\s*(?=[IVXLC]+\.\s)[IVXLC]+\.\s")


def numbering_level(text: str) -> int | None:
    """Depth of a heading's section number: '2' -> 1, '2.1' -> 2, 'IV.' -> 1; None if unnumbered.

    Numbers that look like years or quantities ('2014 results', '3 mg') are not numbering:
    the number must be followed by a dot, a parenthesis, or a space and a capitalized word.
    """
    m = _NUMBERING.match(text)
    if m:
        number = m.group(1)
        rest = text[m.end() :].lstrip()
        parts = number.split(".")
        bare = len(parts) == 1 and text[m.end(1) : m.end(1) + 1] not in (".", ")")
        # bare "2 Methods": accept only small numbers followed by a capitalized word
        if bare and (int(parts[0]) > 50 or not rest[:1].isupper()):
            return None
        return len(parts)
    if _ROMAN.match(text):
        return 1
    return None


@dataclass(frozen=True)
class HeadingStyle:
    """How a heading is set: font size (points), ALL CAPS, bold."""

    size: float
    caps: bool
    bold: bool

    @property
    def key(self) -> tuple[float, bool]:
        """What tells heading levels apart: size, then ALL CAPS (bold is not used: too noisy)."""
        return (self.size, self.caps)


def _number(value: object) -> float | None:
    """``value`` as a finite float; None for anything else (bools, strings, NaN)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def all_caps(text: str) -> bool:
    """At least two letters, all upper case."""
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def heading_style(node: ParsingResult) -> HeadingStyle | None:
    """The style a node's metadata records (``font_size``, ``font_bold``), None without a size."""
    size = _number(node.style.size)
    if size is None or size <= 0:
        return None
    return HeadingStyle(size, all_caps(node.content), bool(node.style.bold))


def _given_level(node: ParsingResult) -> int | None:
    for value in (_number(node.heading.native_level), _number(node.heading.level)):
        if value is not None and int(value) >= 1:
            return int(value)
    return None


def measure_styles(root: ParsingResult, pdf_path: str | Path) -> int:
    """Font size and boldness from the PDF text layer for headings that carry none (the characters
    whose centre lies in the heading's boxes: the most common size, rounded to 0.5 pt; bold when
    at least half are), and the root's ``body_font_size`` (the most common size of PARAGRAPH text on
    the pages with such headings) when the backend gave none. Returns how many headings got a style.
    """
    headings = [
        n for n in root.walk() if n.type in HEADING_TYPES and n.geom and n.content.strip() and heading_style(n) is None
    ]
    if not headings:
        return 0
    need_body = _number(root.info.body_font_size) is None
    pages = sorted({b.page for n in headings for b in n.geom})
    paragraphs: dict[int, list[ParsingBoundingBox]] = {}
    if need_body:
        for n in root.walk():
            if n.type == T.PARAGRAPH:
                for b in n.geom:
                    paragraphs.setdefault(b.page, []).append(b)
    by_page: dict[int, list[tuple[ParsingResult, ParsingBoundingBox]]] = {}
    for n in headings:
        for b in n.geom:
            by_page.setdefault(b.page, []).append((n, b))
    sizes: dict[int, Counter[float]] = {}
    bold: dict[int, list[bool]] = {}
    body: Counter[float] = Counter()
    with TextLayer(pdf_path, cache_pages=1) as layer:
        for page in pages:
            if page < 1 or page > layer.page_count:
                continue
            pc = layer.page(page)
            for n, box in by_page[page]:
                solid = [int(i) for i in pc.select_box(box) if not pc.chars[i].isspace()]
                sizes.setdefault(id(n), Counter()).update(round(float(pc.size[i]) * 2) / 2 for i in solid)
                bold.setdefault(id(n), []).extend(bool(pc.bold[i]) for i in solid)
            for box in paragraphs.get(page, []):
                chars = pc.select_box(box)
                if len(chars):
                    body.update((np.round(pc.size[chars] * 2) / 2).tolist())
    measured = 0
    for n in headings:
        counts = sizes.get(id(n))
        if counts:
            n.style.size = counts.most_common(1)[0][0]
            n.style.bold = bool(np.mean(bold[id(n)]) >= 0.5)
            measured += 1
    if need_body and body:
        root.info.body_font_size = body.most_common(1)[0][0]
    return measured


# ---------------------------------------------------------------------------------------------
# heading levels
# ---------------------------------------------------------------------------------------------


def assign_heading_levels(root: ParsingResult) -> None:
    """``heading.level`` and ``heading.source`` for every TITLE / SECTION_HEADER in
    the tree (see the module docstring for the rules). Headings that already have a
    ``level_source`` were decided before and are left alone, so running it twice changes nothing."""
    body = _number(root.info.body_font_size)
    if body is not None and body > 0:
        _demote_small_headers(root, body)
    headers = [n for n in root.walk() if n.type in HEADING_TYPES]
    if not headers:
        return
    styles = {id(n): heading_style(n) for n in headers}
    if not any(n.type == T.TITLE and n.pages in ([1], []) for n in headers):  # a title on page 1 (or unplaced)
        _promote_title([n for n in headers if styles[id(n)] is not None], styles)
    open_ = [n for n in headers if n.heading.source is None]
    sections = [n for n in open_ if n.type == T.SECTION_HEADER and _given_level(n) is None]
    numbered = {id(n): numbering_level(n.content) for n in sections}
    depths: dict[tuple[float, bool], Counter[int]] = {}
    for n in sections:
        style = styles[id(n)]
        if style is not None and numbered[id(n)] is not None:
            depths.setdefault(style.key, Counter())[numbered[id(n)]] += 1  # type: ignore[index]
    anchored = {key: c.most_common(1)[0][0] for key, c in depths.items()}  # style -> depth
    keys = sorted({s.key for n in sections if (s := styles[id(n)]) is not None}, key=lambda k: (-k[0], not k[1]))
    ranks = {k: i + 1 for i, k in enumerate(keys)}
    for n in open_:
        level, source = _decide(n, styles[id(n)], numbered.get(id(n)), anchored, ranks)
        n.heading.level, n.heading.source = level, source


def _decide(
    node: ParsingResult,
    style: HeadingStyle | None,
    number: int | None,
    anchored: dict[tuple[float, bool], int],
    ranks: dict[tuple[float, bool], int],
) -> tuple[int, str]:
    given = _given_level(node)
    if given is not None:
        return given, "backend"
    if node.type == T.TITLE:
        return 1, "title"
    if number is not None:
        return number, "numbering"
    if style is None:
        return 1, "default"
    if style.key in anchored:
        return anchored[style.key], "numbering_style"
    if anchored:
        same = [d for k, d in anchored.items() if k[0] == style.size]
        larger = [d for k, d in anchored.items() if k[0] > style.size]
        return (min(same) if same else (max(larger) + 1 if larger else 1)), "font_size"
    return ranks[style.key], "style"


def _demote_small_headers(root: ParsingResult, body: float) -> None:
    for n in root.walk():
        if n.type != T.SECTION_HEADER or n.heading.source is not None:
            continue
        style = heading_style(n)
        if style is not None and style.size < SMALL_HEADER_RATIO * body and numbering_level(n.content) is None:
            n.type = T.PARAGRAPH
            n.relabel.demoted_from = "section-header"
            del n.style.size, n.style.bold, n.heading.level, n.heading.native_level


def _promote_title(styled: list[ParsingResult], styles: dict[int, HeadingStyle | None]) -> None:
    """The first styled heading on page 1 becomes TITLE when it is set clearly larger than any other."""
    if not styled:
        return
    first = styled[0]
    if first.type != T.SECTION_HEADER or first.pages != [1] or first.heading.source is not None:
        return
    if numbering_level(first.content) is not None:
        return
    size = styles[id(first)].size  # type: ignore[union-attr]
    other_sizes = [styles[id(n)].size for n in styled[1:]]  # type: ignore[union-attr]
    smaller = [s for s in other_sizes if s < size]
    # repeated copies of the title (same size) are fine; a larger heading is not
    if smaller and len(smaller) + other_sizes.count(size) == len(other_sizes) and size >= TITLE_SIZE_RATIO * max(smaller):
        first.type = T.TITLE
        first.relabel.promoted_from = "section-header"


# ---------------------------------------------------------------------------------------------
# lists
# ---------------------------------------------------------------------------------------------


def group_lists(root: ParsingResult, drop_types: Iterable[ParsingResultType | str] = ()) -> int:
    """Wrap each run of LIST_ITEM (REFERENCE_ITEM) siblings anywhere in the tree in a LIST
    (REFERENCE_LIST) marked synthetic (:data:`SYNTHETIC`) and one box per page enclosing its
    items. Children of existing LIST / REFERENCE_LIST containers are left as they are. A
    PAGE_HEADER / PAGE_FOOTER of ``drop_types`` between two items does not end the run: it moves
    behind the list (where the filter removes it). Returns how many containers were made."""
    drop = frozenset(ParsingResultType(t) for t in drop_types) & _FURNITURE
    made = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type not in CONTAINER_OF.values() and any(c.type in CONTAINER_OF for c in node.children):
            made += _group_children(node, drop)
        stack.extend(node.children)
    return made


def _group_children(parent: ParsingResult, drop: frozenset[ParsingResultType]) -> int:
    out: list[ParsingResult] = []
    current: ParsingResult | None = None
    parked: list[ParsingResult] = []
    made = 0

    def close() -> None:
        nonlocal current, parked
        if current is not None:
            current.geom = _enclosing_per_page(current.children)
            out.extend(parked)
        current, parked = None, []

    for child in parent.children:
        container = CONTAINER_OF.get(child.type)
        if container is not None:
            if current is not None and current.type != container:
                close()
            if current is None:
                current = ParsingResult("", container, metadata={SYNTHETIC: True})
                out.append(current)
                made += 1
            current.add_child(child)
        elif current is not None and child.type in drop:
            parked.append(child)
        else:
            close()
            out.append(child)
    close()
    parent.children = out
    for child in out:
        child.parent = parent
    return made


def _enclosing_per_page(items: list[ParsingResult]) -> list[ParsingBoundingBox]:
    by_page: dict[int, list[ParsingBoundingBox]] = {}
    for item in items:
        for b in item.geom:
            by_page.setdefault(b.page, []).append(b)
    return [ParsingBoundingBox.enclosing(bs) for _, bs in sorted(by_page.items())]
