"""The focus of search hits (:mod:`grounded.focus`) with boxes from the parse cache.

A hit knows its PDF (``source_sha256``) and where its body lies in the document text
(``start_char``), not the parser options its tree was made with. Ingest parses through the parse
cache (the default), so the tree is there under the PDF's hash: every entry of that hash is tried,
newest first, and the first whose document text holds the hit's body at ``start_char`` places the
focus. A tree that is not in the cache (ingested with ``--no-parse-cache``, the cache cleared or evicted)
is made again from the PDF when it is unchanged (its sha256), by the default parser, and kept in
the cache (seconds, once per PDF; not in text mode, which loads no model); when that tree differs (ingest used other parser options) or the
PDF is gone or changed, the hit keeps its focus spans without boxes, and one
:class:`~grounded.focus.FocusWarning` says so.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace

from ..chunking.minilm_onnx import QueryEmbedder
from ..focus import FocusSettings, FocusWarning, focus_texts
from ..focus.boxes import span_boxes
from ..integrations.profiles import FOCUS_KEYS, focus_metadata
from ..integrations.sources import SourceView, source_view
from ..parsers.cache import TREE_REF_KEY, ParseCache, file_sha256
from .hit import Hit, hit_box

__all__ = ["with_focus", "hit_view", "focus_metadata", "FOCUS_KEYS"]


def hit_view(hit: Hit, cache: ParseCache | None = None, *, parse: bool = True) -> SourceView | None:
    """The source view of the parse tree ``hit`` was chunked from: from the parse cache, else (with
    ``parse``) its unchanged PDF parsed again by the default parser; None when neither gives the tree
    the hit's body comes from."""
    if hit.start_char is None or hit.end_char is None:
        return None
    store = cache or ParseCache()
    body = hit.body
    for ref in store.refs_of(hit.source_sha256):
        view, _ = source_view({TREE_REF_KEY: ref}, cache=store)
        if view is not None and view.text[hit.start_char:hit.end_char] == body:
            return view
    try:  # not in the cache (cleared, evicted, another machine): the unchanged PDF parsed again, then kept
        unchanged = file_sha256(hit.source_path) == hit.source_sha256
    except OSError:
        return None
    if unchanged and parse:
        view, _ = source_view({"file_path": hit.source_path}, cache=store)
        if view is not None and view.text[hit.start_char:hit.end_char] == body:
            return view
    return None


def with_focus(hits: Sequence[Hit], question: str, embed: QueryEmbedder | None,
               cache: ParseCache | None = None, settings: FocusSettings | None = None, parse: bool = True) -> list[Hit]:
    """``hits`` with their focus for ``question`` (scored together: one embedding batch; ``embed``
    None: a lexical focus) and its boxes (``parse``: a tree missing from the cache may be made again
    from the PDF; text mode says no, it loads no model)."""
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
                views[key] = hit_view(hit, cache, parse=parse)
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
            "their parse tree is not in the parse cache" + ("" if parse else " (text mode parses nothing; a hybrid or "
            "vector search parses an unchanged PDF again and keeps its tree)") + ", or their PDF is gone, changed, or "
            "was ingested with other parser options",
            FocusWarning, stacklevel=3,
        )
    return out

