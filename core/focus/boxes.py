"""The boxes of a focus: the same assembly as chunk boxes (:meth:`~grounded.integrations.sources.SourceView.boxes`),
cut at the focus's first and last character, across page and column breaks.

A focus span lies in a chunk text; where the chunk body is a slice of the document text
(``start_char``, grounded's own chunks and every re-grounded part) the span maps to document offsets
and is checked to hold the same characters there. Otherwise (a text made elsewhere, grounded by
alignment) the span's own text is grounded in the view (:meth:`~grounded.grounding.grounder.Grounder.ground`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..integrations.sources import SourceView
from ..model.boxes import ParsingBoundingBox

__all__ = ["span_boxes"]


def span_boxes(
    view: SourceView, text: str, spans: Sequence[tuple[int, int]], *, body_start: int = 0,
    start_char: int | None = None, box_mode: str = "auto",
) -> list[ParsingBoundingBox]:
    """Boxes of ``text[s:e]`` for each focus span in ``view``'s document, in reading order. Parts of a
    span before ``body_start`` (prepended headings, not in the PDF at that place) get none."""
    boxes: list[ParsingBoundingBox] = []
    for s, e in spans:
        s = max(int(s), body_start)
        if e <= s:
            continue
        if start_char is not None:
            a = start_char + s - body_start
            b = a + (e - s)
            if a >= 0 and b <= len(view.text) and view.text[a:b] == text[s:e]:
                boxes.extend(view.boxes(a, b, box_mode=box_mode))
                continue
        grounding = view.grounder(box_mode=box_mode).ground(text[s:e])
        if grounding.ok:
            boxes.extend(grounding.boxes)
    return boxes
