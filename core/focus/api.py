"""``focus_of(item, query)``: the focus of any chunk, node, Document, row or hit, with its boxes.

The item is read the way :func:`grounded.integrations.boxes.chunk_of` reads it (grounded's chunks,
LlamaIndex nodes and ``NodeWithScore``, LangChain Documents - foreign readers' and splitters'
included -, ingest rows, chunk dicts, search hits), and its boxes come from the same source view as
``boxes_of``: the parse tree its metadata refers to, or the PDF it names, or the ``root``/``pdf``
given here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import GroundedError
from ..integrations.boxes import chunk_of, item_text_and_metadata
from ..integrations.sources import SourceView, document_view, names_pdf, source_view
from ..io.chunk_codec import unflatten_metadata
from ..model.boxes import ParsingBoundingBox
from ..model.chunk import Chunk
from ..model.elements import ParsingResult
from .boxes import span_boxes
from .select import Choice, Chooser, Embedder, FocusSettings, choose_many

__all__ = ["Focus", "focus_of", "focus_texts", "focus_embedder", "FocusWarning"]


class FocusWarning(UserWarning):
    """A focus was chosen but its boxes could not be made (no PDF or parse tree to place it in)."""


@dataclass(frozen=True)
class Focus:
    """The focus of one chunk for one query: ``spans``, ``(start, end)`` offsets into the chunk's
    text in reading order; ``boxes``, their boxes (1-based page, fractions, line ``spans``) cut at
    the first and last character; ``method``: ``semantic`` (MiniLM + lexical), ``lexical``,
    ``single`` (a one-unit chunk), ``model`` (named by a configured model) or ``none`` (an empty
    query, no evidence: no spans)."""

    spans: tuple[tuple[int, int], ...]
    boxes: tuple[ParsingBoundingBox, ...] = ()
    method: str = "none"
    text: str = field(default="", repr=False)

    def texts(self) -> list[str]:
        """The focused text of each span."""
        return [self.text[s:e] for s, e in self.spans]

    def __bool__(self) -> bool:
        return bool(self.spans)


def focus_embedder() -> Embedder:
    """The embedder of a semantic focus: MiniLM's query path (ONNX Runtime when its checked graph
    is available, else sentence-transformers), loaded once per process."""
    from ..chunking.minilm_onnx import query_embedder

    return query_embedder()


def focus_texts(
    texts: Sequence[tuple[str, int]], query: str, *, embed: Embedder | Literal["minilm"] | None = "minilm",
    settings: FocusSettings | None = None,
) -> list[Choice]:
    """The focus spans of several ``(text, body_start)`` for one query, without boxes (scored
    together: one embedding batch). ``embed``: ``"minilm"`` (default), any texts -> vectors
    callable, or ``None`` for a lexical focus."""
    embedder = focus_embedder() if embed == "minilm" else embed
    return choose_many(texts, query, embedder if callable(embedder) else None, settings)


def _resolve(item: Any, pdf: str | os.PathLike[str] | None, root: ParsingResult | None,
             ) -> tuple[str, int, int | None, SourceView | None, str]:
    """``(text, body_start, start_char, view, why)`` of an item (``why``: no view, in words)."""
    given: tuple[SourceView | None, str] = (None, "give root= or pdf= to place it")
    if root is not None:
        given = source_view({}, tree=root)
    elif pdf is not None:
        given = source_view({"file_path": os.fspath(pdf)})
    if isinstance(item, Chunk):
        return item.content, item.body_start, item.start_char, *given
    if hasattr(item, "body_start") and hasattr(item, "source_path") and isinstance(getattr(item, "text", None), str):
        if given[0] is None:  # a search hit: the PDF it was ingested from
            given = source_view({"file_path": str(item.source_path)})
        return item.text, int(item.body_start), getattr(item, "start_char", None), *given
    chunk = chunk_of(item)
    seen = item_text_and_metadata(item)
    meta: Mapping[str, Any] | None = seen[1] if seen is not None else item.get("metadata", item) if isinstance(item, Mapping) else None
    if given[0] is None and meta is not None and names_pdf(meta):
        given = document_view(unflatten_metadata(meta))
    return chunk.content, chunk.body_start, chunk.start_char, *given


def focus_of(
    item: Any, query: str, *, pdf: str | os.PathLike[str] | None = None, root: ParsingResult | None = None,
    embed: Embedder | Literal["minilm"] | None = "minilm", settings: FocusSettings | None = None,
    box_mode: str = "auto", chooser: Chooser | None = None,
) -> Focus:
    """The :class:`Focus` of ``item`` (a chunk, node, ``NodeWithScore``, Document, ingest row, chunk
    dict or search hit) for ``query``. Boxes come from the parse tree or PDF the item refers to, or
    from ``root`` (the tree) / ``pdf`` when given; when there is none the focus has its spans and no
    boxes, and a :class:`FocusWarning` says why. ``chooser``: another way to choose the units (a
    configured model: ``grounded.llm.focus.model_chooser(llm)``); when it fails (a model error), the
    scored focus is given and a :class:`FocusWarning` says why."""
    import warnings

    text, body_start, start_char, view, why = _resolve(item, pdf, root)
    choice = None
    if chooser is not None:
        try:
            choice = chooser(text, body_start, query)
        except GroundedError as exc:  # a model that fails or answers nonsense: the scored focus instead
            warnings.warn(f"the chosen focus failed, the scored focus is given: {exc}", FocusWarning, stacklevel=2)
    if choice is None:
        choice = focus_texts([(text, body_start)], query, embed=embed, settings=settings)[0]
    if not choice.spans:
        return Focus((), (), choice.method, text)
    if view is None:
        warnings.warn(f"focus without boxes: {why}", FocusWarning, stacklevel=2)
        return Focus(choice.spans, (), choice.method, text)
    boxes = span_boxes(view, text, choice.spans, body_start=body_start, start_char=start_char, box_mode=box_mode)
    return Focus(choice.spans, tuple(boxes), choice.method, text)
