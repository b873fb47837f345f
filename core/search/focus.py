"""The focus of search hits (:mod:`grounded.focus`) with boxes from the parse cache.

A hit knows its PDF (``source_sha256``) and where its body lies in the document text
(``start_char``), not the parser options its tree was made with. Ingest parses through the parse
cache (the default), so the tree is there under the PDF's hash: every entry of that hash is tried,
newest first, and the first whose document text holds the hit's body at ``start_char`` places the
focus. A hit whose tree is not in the cache (ingested with ``--no-parse-cache``, the cache cleared)
keeps its focus spans without boxes, and one :class:`~grounded.focus.FocusWarning` says so.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace

from ..chunking.minilm_onnx import QueryEmbedder
from ..focus import FocusSettings, FocusWarning, focus_texts
from ..focus.boxes import span_boxes
from ..grounding.sources import SourceView, source_view
from ..parsers.cache import TREE_REF_KEY, ParseCache
from .hit import Hit, hit_box

__all__ = ["with_focus", "hit_view"]


def hit_view(hit: Hit, cache: ParseCache | None = None) -> SourceView | None:
    """The source view of the parse tree ``hit`` was chunked from, when the parse cache holds it."""
    if hit.start_char is None or hit.end_char is None:
        return None
    store = cache or ParseCache()
    body = hit.body
    for ref in store.refs_of(hit.source_sha256):
        view, _ = source_view({TREE_REF_KEY: ref}, cache=store)
        if view is not None and view.text[hit.start_char:hit.end_char] == body:
            return view
    return None


def with_focus(hits: Sequence[Hit], question: str, embed: QueryEmbedder | None,
               cache: ParseCache | None = None, settings: FocusSettings | None = None) -> list[Hit]:
    """``hits`` with their focus for ``question`` (scored together: one embedding batch; ``embed``
    None: a lexical focus) and its boxes."""
    if not hits:
        return []
    choices = focus_texts([(h.text, h.body_start) for h in hits], question, embed=embed, settings=settings)
    views: dict[tuple[str, int | None], SourceView | None] = {}
    unplaced: list[str] = []
    out: list[Hit] = []
    for hit, choice in zip(hits, choices):
        boxes: tuple = ()
        if choice.spans:
            key = (hit.source_sha256, hit.start_char)
            if key not in views:
                views[key] = hit_view(hit, cache)
            view = views[key]
            if view is not None:
                placed = span_boxes(view, hit.text, choice.spans, body_start=hit.body_start, start_char=hit.start_char)
                boxes = tuple(hit_box(b) for b in placed)
            elif hit.source_path not in unplaced:
                unplaced.append(hit.source_path)
        out.append(replace(hit, focus=choice.spans, focus_boxes=boxes, focus_method=choice.method))
    if unplaced:
        warnings.warn(
            f"the focus of hits from {', '.join(unplaced[:3])}{' ...' if len(unplaced) > 3 else ''} has no boxes: "
            "their parse tree is not in the parse cache (ingest keeps it there unless --no-parse-cache)",
            FocusWarning, stacklevel=3,
        )
    return out
