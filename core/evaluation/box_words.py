"""Do a chunk's boxes show its words? Word recall and precision of highlight boxes.

The PDF's own words (PyMuPDF ``page.get_text("words")``) whose centre lies inside one of a chunk's
line boxes are what a reader sees highlighted; the chunk's words are what it says. Both are reduced
to their lower-case letters and digits (spacing, punctuation and line-end hyphens no longer matter:
readers such as pypdf write "I c o u l d n ' t" where the PDF shows "I couldn't") and aligned in
order (``difflib.SequenceMatcher``):

* **recall**: share of the chunk's letters/digits that are highlighted;
* **precision**: share of the highlighted letters/digits that are the chunk's.

A chunk with no boxes scores ``None`` (it is counted apart, as "without boxes").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from ..model.boxes import ParsingBoundingBox

__all__ = ["BoxWords", "box_word_scores", "tokens"]

_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])-\s*\n\s*(?=[^\W\d_])")
_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """Lower-case letter/digit runs of ``text``, a word hyphenated at a line end joined."""
    return _TOKEN.findall(_HYPHEN_BREAK.sub("", text).lower())


@dataclass(frozen=True)
class BoxWords:
    """Scores of one chunk (``None`` when it has no boxes)."""

    recall: float | None
    precision: float | None


def _page_words(doc: object, page: int) -> list[tuple[float, float, str]]:
    """``(centre x, centre y, text)`` of the page's words as fractions of the page as shown (a
    rotated page's words turned with it, as grounded's boxes are), a word that ends in a hyphen at
    its line's end joined with the next line's first word."""
    import pymupdf

    pg = doc[page - 1]  # type: ignore[index]
    width, height = pg.rect.width, pg.rect.height  # the page as shown (a /Rotate applied)
    turn = pg.rotation_matrix  # words come in unrotated page space; boxes are fractions of the page as shown
    raw = pg.get_text("words")
    out: list[tuple[float, float, str]] = []
    i = 0
    while i < len(raw):
        x0, y0, x1, y1, text, block, line, _ = raw[i][:8]
        if text.endswith("-") and i + 1 < len(raw) and (raw[i + 1][5], raw[i + 1][6]) != (block, line) and raw[i + 1][4][:1].islower():
            text = text[:-1] + raw[i + 1][4]
            i += 1
        centre = pymupdf.Point((x0 + x1) / 2, (y0 + y1) / 2) * turn
        out.append((centre.x / width, centre.y / height, text))
        i += 1
    return out


def box_word_scores(pdf: str | Path, chunks: Iterable[tuple[str, Sequence[ParsingBoundingBox]]]) -> list[BoxWords]:
    """:class:`BoxWords` of each ``(text, boxes)`` over ``pdf`` (see the module docstring)."""
    import pymupdf

    scores: list[BoxWords] = []
    with pymupdf.open(str(pdf)) as doc:
        words: dict[int, list[tuple[float, float, str]]] = {}
        for text, boxes in chunks:
            lines = [line for b in boxes for line in (b.spans or [b])]
            if not lines:
                scores.append(BoxWords(None, None))
                continue
            shown: list[str] = []
            for page in sorted({ln.page for ln in lines}):
                if page not in words:
                    words[page] = _page_words(doc, page)
                rects = [ln for ln in lines if ln.page == page]
                for cx, cy, word in words[page]:
                    if any(r.left <= cx <= r.right and r.top <= cy <= r.bottom for r in rects):
                        shown.extend(tokens(word))
            said, seen = "".join(tokens(text)), "".join(shown)
            common = sum(m.size for m in SequenceMatcher(None, said, seen, autojunk=False).get_matching_blocks())
            recall = common / len(said) if said else 1.0
            precision = common / len(seen) if seen else 0.0
            scores.append(BoxWords(recall, precision))
    return scores
