"""One answer to "the boxes of this node / Document / hit", whatever made it.

:func:`chunk_of` reads a stored chunk the way :func:`grounded.io.chunk_codec.read_stored_chunk`
does (a LlamaIndex node or ``NodeWithScore``, a LangChain ``Document``, an ingest/LanceDB row, a
chunks-JSON dict, a :class:`~grounded.model.Chunk`) and then makes sure its boxes belong to its
own text:

* the recorded boxes when the text is the one they were made for (``text_hash`` matches);
* otherwise (a part of a re-split chunk that copied its parent's metadata, a node of a framework's
  own splitter or reader, a citation chunk) the boxes are made again from the PDF behind it
  (:func:`~.sources.source_view`: grounded's tree reference, or the PDF its metadata names): the
  exact span of its text when it is a slice of the document text, else its grounding;
* when neither is possible: no boxes, no pages, no offsets, and one
  :class:`~grounded.io.box_codec.GroundingWarning` naming the item and the cause - never the
  parent's boxes.

``grounded.metadata.read_stored_chunk``, ``llama_index_grounded.node_boxes``, the adapters'
``GroundedParts`` and ``grounded.attribution.highlight``/``render`` all go through it.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import SchemaError
from ..grounding.grounder import Grounding
from ..grounding.wrappers import ground_texts, refused_texts, with_grounding
from ..io.box_codec import TEXT_HASH_KEY, GroundingWarning, text_hash
from ..io.chunk_codec import part_metadata, read_stored_chunk, unflatten_metadata
from ..model.boxes import ParsingBoundingBox
from ..model.chunk import Chunk
from ..parsers.cache import ParseCache
from ..runtime.callers import user_stacklevel
from ..text.tokenizer import load_tokenizer
from .sources import SourceView, document_view, names_pdf, names_source, pdf_path_of

__all__ = ["chunk_of", "boxes_of", "item_text_and_metadata", "ground_in_view", "ground_parts", "warn_refused", "own_part_metadata"]


def item_text_and_metadata(item: Any) -> tuple[str, Mapping[str, Any], str, int | None] | None:
    """``(text, metadata, name, start_char_idx)`` of a framework node / ``NodeWithScore`` /
    LangChain Document; ``None`` for anything else (rows, chunk dicts, chunks)."""
    inner = getattr(item, "node", None)
    if inner is not None and hasattr(inner, "metadata") and hasattr(item, "score"):
        item = inner
    if hasattr(item, "page_content") and hasattr(item, "metadata"):
        return str(item.page_content), item.metadata, str(getattr(item, "id", None) or "document"), None
    if hasattr(item, "get_content") and hasattr(item, "metadata"):
        start = getattr(item, "start_char_idx", None)
        return str(item.get_content(metadata_mode="none")), item.metadata, f"node {item.node_id}", start
    return None


def _fresh(meta: Mapping[str, Any], text: str) -> bool:
    """Whether recorded boxes belong to ``text`` (its ``text_hash`` matches; metadata of older
    releases without a hash are taken as they are)."""
    recorded = meta.get(TEXT_HASH_KEY)
    return bool(meta.get("boxes")) and (recorded is None or str(recorded) == text_hash(text))


def chunk_of(
    item: Any,
    *,
    cache: ParseCache | str | Path | None = None,
    box_mode: str = "auto",
    password: str | None = None,
    warn: bool = True,
) -> Chunk:
    """The :class:`~grounded.model.Chunk` of ``item`` with the boxes of its own text (see
    the module docstring)."""
    seen = item_text_and_metadata(item)
    if seen is None:
        return read_stored_chunk(item)
    text, meta, name, start_idx = seen
    if _fresh(meta, text):
        return read_stored_chunk(item)
    with warnings.catch_warnings():  # the stale boxes are replaced below, not just withheld
        warnings.simplefilter("ignore", GroundingWarning)
        chunk = read_stored_chunk(item)
    if not names_pdf(meta) and not (names_source(meta) and pdf_path_of(meta)[0] is not None):
        if warn and meta.get("boxes"):
            warnings.warn(f"{name}: boxes withheld: its text is not the text they were made for and its metadata "
                          "names no PDF to make them again from", GroundingWarning, stacklevel=user_stacklevel())
        elif warn and names_source(meta):  # a source that is no PDF (a text file, /dev/zero): as the splitters say
            warnings.warn(f"{name}: no boxes: {pdf_path_of(meta)[1]}", GroundingWarning, stacklevel=user_stacklevel())
        return _unplaced(chunk)
    view, why = document_view(unflatten_metadata(meta), cache=cache, password=password)
    if view is None:
        if warn:
            warnings.warn(f"{name}: no boxes: {why}", GroundingWarning, stacklevel=user_stacklevel())
        return _unplaced(chunk)
    span = view.span_of(text, meta, start_idx)
    if span is not None:
        boxes = view.boxes(*span, box_mode=box_mode)
        placed = Chunk.of_boxes(chunk.id, chunk.content, boxes)
        return _unplaced(chunk).replace(
            start_char=span[0], end_char=span[1], boxes=placed.boxes, pages=placed.pages, element_ids=placed.element_ids
        )
    g = view.grounder(box_mode=box_mode, password=password).ground(text)
    if not g.ok and warn:
        warnings.warn(f"{name}: no boxes: its text could not be found in the PDF ({g.reason})", GroundingWarning, stacklevel=user_stacklevel())
    grounded = with_grounding(_unplaced(chunk), g)
    if g.ok and g.spans:
        grounded = grounded.replace(start_char=int(g.spans[0][0]), end_char=int(g.spans[-1][1]))
    return grounded


def _unplaced(chunk: Chunk) -> Chunk:
    """``chunk`` without anything that places it (boxes, pages, offsets, element spans): what is
    left of a part whose parent's placement it copied."""
    return chunk.replace(
        boxes=[], pages=[], start_char=None, end_char=None, element_ids=[], element_spans=[], grounding_spans=[],
        grounding_furniture_boxes=[],
    )


def boxes_of(item: Any, **options: Any) -> list[ParsingBoundingBox]:
    """The boxes of ``item``'s own text (:func:`chunk_of`)."""
    return list(chunk_of(item, **options).boxes)


def ground_in_view(
    view: SourceView, chunks: list[Chunk], *, label: object, what: str = "chunks", box_mode: str = "auto"
) -> list[Chunk]:
    """Records of a text made elsewhere (a framework reader's page, another splitter's part, chunked
    as plain text) with the boxes, pages and grounding fields of their bodies grounded in ``view``
    (:func:`~grounded.grounding.wrappers.with_grounding`); one :class:`GroundingWarning` naming ``label`` when some
    could not be found. The adapters' drop-in path."""
    groundings = view.grounder(box_mode=box_mode).ground_all([r.body for r in chunks])
    refused = [g.reason for g in groundings if not g.ok]
    if refused:
        warnings.warn(
            f"{label}: {len(refused)} of {len(chunks)} {what} could not be found in the PDF and carry no boxes "
            f"(first reason: {refused[0]})",
            GroundingWarning,
            stacklevel=user_stacklevel(),
        )
    return [with_grounding(r, g) for r, g in zip(chunks, groundings, strict=True)]


def ground_parts(
    meta: Mapping[str, Any],
    texts: list[str],
    *,
    tree: Any = None,
    cache: ParseCache | str | Path | None = None,
    password: str | None = None,
    fingerprint: str,
    strategy: str,
    refused_key: str,
    near: int | None = None,
    **grounder_options: Any,
) -> list[tuple[Chunk, Grounding]]:
    """The grounding wrappers' step (LlamaIndex ``GroundingNodeParser``, LangChain
    ``GroundingSplitter``): the parts another splitter made of one Document (``meta``: its metadata)
    grounded in the PDF behind it (``tree=`` for a Document that names none), each a chunk with
    its grounding; every part refused with the cause when there is no readable tree."""
    try:
        view, why = document_view(meta, tree=tree, cache=cache, password=password)
    except SchemaError as exc:
        view, why = None, f"its parse tree cannot be read ({exc})"
    if view is None:
        return refused_texts(texts, why, key=refused_key, fingerprint=fingerprint, strategy=strategy)
    grounder = view.grounder(password=password, **grounder_options)
    return ground_texts(grounder, texts, fingerprint=fingerprint, strategy=strategy, near=near)


def warn_refused(reasons: list[str], total: int, what: str) -> None:
    """One :class:`GroundingWarning` for the parts of a call that could not be grounded (none: quiet),
    reported at the user's line (:func:`~grounded.runtime.callers.user_stacklevel`)."""
    if reasons:
        warnings.warn(
            f"{len(reasons)} of {total} {what} could not be grounded and carry no boxes "
            f"(grounding_status='refused'; first reason: {reasons[0]})",
            GroundingWarning,
            stacklevel=user_stacklevel(),
        )


def own_part_metadata(
    item: Any, text: str, meta: Mapping[str, Any], tokenizer: Any = None, **options: Any
) -> tuple[dict[str, Any], list[int] | None] | None:
    """The metadata ``item`` (a part another splitter made of a grounded chunk: its ``text`` under
    its parent's ``meta``) should carry for its own text, by the field table's re-split rules
    (:func:`~grounded.io.chunk_codec.part_metadata`), and its pages (``None``: not located).
    Offsets and boxes are located or grounded in the PDF behind it (:func:`chunk_of`; ``options``
    go there), withheld with one warning when impossible. ``None`` when ``meta`` already describes
    ``text`` or names no PDF (nothing to change); ``tokenizer`` (default MiniLM) counts ``token_count``."""
    recorded = meta.get(TEXT_HASH_KEY)
    if (recorded is not None and str(recorded) == text_hash(text)) or (recorded is None and not names_pdf(meta)):
        return None
    tokens = (tokenizer or load_tokenizer(None)).count(text)
    chunk = chunk_of(item, **options)
    if chunk.start_char is None or chunk.end_char is None:
        return part_metadata(meta, text, token_count=tokens), None
    span = (chunk.start_char, chunk.end_char)
    return part_metadata(meta, text, span=span, boxes=chunk.boxes, token_count=tokens), chunk.pages
