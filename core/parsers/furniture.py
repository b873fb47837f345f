"""What makes a line page furniture, for every backend: the text key under which a running header
or footer repeats from page to page.

Page furniture is text that *repeats*: a running header, a footer, a page number. A line whose
text recurs on no other page cannot be running furniture, whatever a layout model labelled it;
post-processing (:func:`grounded.parsers.postprocess.keep_body_furniture`) keeps such lines, and
the PyMuPDF backend's running-header rule (``backends/pymupdf/running_furniture.py``) matches
lines by the same key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rapidfuzz import process
from rapidfuzz.distance import Indel

__all__ = ["MIN_FUZZY_CHARS", "SIMILARITY", "furniture_key", "has_words", "recurs_in"]

#: Two texts are the same furniture when their normalised forms (see :func:`furniture_key`) have
#: at least this Indel similarity (OCR drops, adds and swaps a few characters per line) ...
SIMILARITY = 0.85
#: ... and normalised texts shorter than this must be equal (a page number is "#").
MIN_FUZZY_CHARS = 12


def furniture_key(text: str) -> str:
    """``text`` as it repeats from page to page: case folded, each run of digits one ``#`` (page
    numbers, dates), everything but letters and ``#`` dropped (OCR's spaces and punctuation vary)."""
    return re.sub(r"[^\w#]|_", "", re.sub(r"\d+", "#", text.casefold()))


#: A lower-case Roman numeral up to 399 (front-matter page numbers "iii", "xi", "xlii"); no D or M,
#: so words made of those letters ("mix", "did", "mid") are not numerals.
_ROMAN = re.compile(r"c{0,3}(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})")


def has_words(key: str) -> bool:
    """Whether a :func:`furniture_key` holds words: letters that are not one Roman numeral (a bare
    page number "12", "- 3 -" or "iii" does not: it is furniture even on the one page that shows it)."""
    return any(c.isalpha() for c in key) and not _ROMAN.fullmatch(key.replace("#", ""))


def recurs_in(key: str, others: Iterable[str]) -> bool:
    """Whether the :func:`furniture_key` ``key`` is among ``others`` (keys of lines on other
    pages) with its numbers ignored ("47705 Federal Register / Vol. 85" and "Federal Register /
    Vol. 85 47706" are one running header), or, when at least :data:`MIN_FUZZY_CHARS` long, has
    :data:`SIMILARITY` with one of them."""
    bare = key.replace("#", "")
    pool = {other.replace("#", "") for other in others}
    if bare in pool:
        return True
    if len(bare) < MIN_FUZZY_CHARS:
        return False
    return bool(process.extractOne(bare, pool, scorer=Indel.normalized_similarity, score_cutoff=SIMILARITY))
