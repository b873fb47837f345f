"""Running headers and footers the layout model did not label as page furniture (#11).

The layout model tells a running header from body text largely by its font (the rank of the
line's font among the page's fonts is one of its features). An OCR'd page's text layer has one
font for every line, so on scanned pages the model often calls the same running header a
paragraph, a section header or a title, and it stays in the text while the born-digital copy
drops it. The document, not the page, is the evidence: a short text element lying wholly in the
page's top or bottom band whose text -- OCR noise and page numbers tolerated -- recurs at about
the same height on another page (as an element the model labelled PAGE_HEADER/PAGE_FOOTER, or
as another such band element) is page furniture. :func:`mark_running_furniture` relabels it
PAGE_HEADER (top band) or PAGE_FOOTER (bottom band); post-processing then drops it like any
furniture. The PyMuPDF parser applies it to OCR'd pages only (``pages=``): on a born-digital page
the model has the font evidence, and the rule cannot tell a running header from a numbered
heading at the top of every page ("Section 1: dosing", "Section 2: dosing" on slides or forms).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from rapidfuzz import process
from rapidfuzz.distance import Indel

from grounded.model.elements import ParsingResult, ParsingResultType
from grounded.parsers.furniture import MIN_FUZZY_CHARS, SIMILARITY, furniture_key

__all__ = [
    "BAND_SHARE",
    "MAX_LINES",
    "MIN_FUZZY_CHARS",
    "POSITION_TOLERANCE",
    "SIMILARITY",
    "furniture_key",
    "mark_running_furniture",
]

log = logging.getLogger(__name__)

T = ParsingResultType

#: An element is a candidate when its box lies wholly within this share of the page height from
#: the top or the bottom edge (running headers/footers sit in the margin; a body line below a
#: header, e.g. a repeated "Figure N to paragraph ..." title, starts lower than this).
BAND_SHARE = 0.08
#: ... and it has at most this many lines (running furniture is a line or two; a licence footer two or three).
MAX_LINES = 3
#: Two occurrences are "at about the same height" when their vertical centres differ by at most
#: this share of the page height.
POSITION_TOLERANCE = 0.025

#: element types the rule may relabel: the ones the model gives running headers/footers on OCR'd
#: pages. Not footnotes (a document may repeat one, e.g. the corresponding-author note of an article
#: and of its supplement), captions, list items, tables or figures.
_RELABEL = frozenset({T.TITLE, T.PARAGRAPH, T.SECTION_HEADER, T.UNKNOWN, T.MISSING})
_TYPES = _RELABEL | {T.PAGE_HEADER, T.PAGE_FOOTER}


@dataclass(frozen=True)
class _Line:
    node: ParsingResult
    page: int
    top_band: bool
    centre: float
    key: str


def _band_line(node: ParsingResult) -> _Line | None:
    """``node`` as a band element (None when it is not wholly in the top or bottom band)."""
    if not node.geom or not node.content.strip():
        return None
    box = node.geom[0]
    if len(box.spans) > MAX_LINES:
        return None
    if box.bottom <= BAND_SHARE:
        top_band = True
    elif box.top >= 1.0 - BAND_SHARE:
        top_band = False
    else:
        return None
    key = furniture_key(node.content)
    if not key:
        return None
    return _Line(node, box.page, top_band, (box.top + box.bottom) / 2, key)


def _near(a: _Line, b: _Line) -> bool:
    """Same band, another page, about the same height."""
    return a.page != b.page and a.top_band == b.top_band and abs(a.centre - b.centre) <= POSITION_TOLERANCE


def _repeats(line: _Line, by_key: dict[str, list[_Line]], fuzzy_keys: Sequence[str]) -> bool:
    """Whether ``line``'s text recurs near its height on another page (exact key, else fuzzy)."""
    if any(_near(line, other) for other in by_key[line.key]):
        return True
    if len(line.key) < MIN_FUZZY_CHARS:
        return False
    similar = process.extract(
        line.key, fuzzy_keys, scorer=Indel.normalized_similarity, score_cutoff=SIMILARITY, limit=None
    )
    return any(_near(line, other) for key, _, _ in similar if key != line.key for other in by_key[key])


def mark_running_furniture(
    elements: Iterable[ParsingResult], pages: Collection[int] | None = None
) -> list[ParsingResult]:
    """Relabel the running headers/footers among ``elements`` (the document's top-level elements)
    that the layout model gave a text type: each band element (see :data:`BAND_SHARE`,
    :data:`MAX_LINES`) whose text matches (:data:`SIMILARITY`, :data:`MIN_FUZZY_CHARS`) a band
    element at about the same height (:data:`POSITION_TOLERANCE`) on another page -- one the model
    labelled furniture or another candidate -- becomes PAGE_HEADER (top band) or PAGE_FOOTER
    (bottom band), ``relabel.relabeled_from`` naming its old type and
    ``relabel.running_furniture = True``. ``pages`` (1-based, optional): only elements on
    these pages are relabelled (all pages still count as evidence). Returns the relabelled elements."""
    lines = [line for line in map(_band_line, elements) if line is not None and line.node.type in _TYPES]
    candidates = [line for line in lines if line.node.type in _RELABEL and (pages is None or line.page in pages)]
    if not candidates:
        return []
    by_key: dict[str, list[_Line]] = {}
    for line in lines:  # references: what the model labelled furniture, and the other candidates
        by_key.setdefault(line.key, []).append(line)
    fuzzy_keys = [key for key in by_key if len(key) >= MIN_FUZZY_CHARS]
    found = [c for c in candidates if _repeats(c, by_key, fuzzy_keys)]
    for line in found:
        node = line.node
        node.relabel.relabeled_from = node.type.value
        node.relabel.running_furniture = True
        node.type = T.PAGE_HEADER if line.top_band else T.PAGE_FOOTER
    if found:
        log.info("running headers/footers found by repetition on page(s) %s", sorted({f.page for f in found}))
    return [line.node for line in found]
