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

__all__ = ["furniture_key", "has_words"]


def furniture_key(text: str) -> str:
    """``text`` as it repeats from page to page: case folded, each run of digits one ``#`` (page
    numbers, dates), everything but letters and ``#`` dropped (OCR's spaces and punctuation vary)."""
    return re.sub(r"[^\w#]|_", "", re.sub(r"\d+", "#", text.casefold()))


def has_words(key: str) -> bool:
    """Whether a :func:`furniture_key` holds letters (a bare page number "12" or "- 3 -" does not:
    it is furniture even on the one page that shows it)."""
    return any(c.isalpha() for c in key)
