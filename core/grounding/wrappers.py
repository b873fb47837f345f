"""Grounded chunks from any splitter's output (chonkie, docling-core ``HybridChunker``, plain strings).

``ground_chunks(items, root, splitter=...)`` grounds each item's text (in order, each searched near
the previous one's end so repeated passages resolve to the right occurrence) in the parse tree
``root`` and returns :class:`~grounded.model.Chunk` objects:

* ``content`` = the item's text as the splitter made it (never replaced by the document text);
* ``metadata``: ``strategy`` (``grounding:<splitter class>``), ``token_count`` (grounded's
  tokenizer), ``start_char``/``end_char`` (the grounded span in ``document_text(root).text``; for a
  text made of non-contiguous pieces, the first piece's start and the last piece's end, every piece
  in ``grounding_spans``), ``body_start`` 0, ``pages``, ``element_ids``, ``grounding_status``
  (``exact``/``fuzzy``/``partial``/``furniture``/``refused``), ``grounding_score``, ``grounding_reason``,
  ``grounding_furniture_boxes`` (page text outside the tree: ``[[page, left, top, right, bottom]]``);
* ``geom`` = the grounded boxes. A refused text gets no boxes, no offsets and no pages;
* ``id`` = :func:`grounded.text.ids.chunk_id` of the source (PDF sha256 + parser), a
  fingerprint of the wrapped splitter (class + scalar parameters) and the span.

Accepted items: strings, objects with ``.text`` (chonkie ``Chunk``, docling-core ``DocChunk``: the
raw ``.text`` is grounded, not ``chunker.contextualize(chunk)``, whose headings are not contiguous
with the body), ``.page_content`` (LangChain ``Document``) or ``get_content()`` (LlamaIndex nodes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import ChunkingError
from ..io.box_codec import FURNITURE_BOXES_KEY, text_hash
from ..model.boxes import ParsingBoundingBox
from ..model.chunk import Chunk
from ..model.chunk_fields import STORED_KEYS
from ..model.elements import ParsingResult
from ..text.ids import chunk_id, refused_id, repeat_id, source_key, stable_hash
from .grounder import Grounder, Grounding
from .limits import text_problem

__all__ = [
    "GROUNDING_KEYS",
    "text_of",
    "splitter_fingerprint",
    "grounding_fields",
    "furniture_boxes_to_list",
    "furniture_boxes_from_list",
    "grounded_chunk",
    "ground_chunks",
    "ground_texts",
    "refused_texts",
    "with_grounding",
    "status_counts",
]

#: metadata keys describing the grounding of a chunk (the field table's ``grounding_*`` keys)
GROUNDING_KEYS = tuple(k for k in STORED_KEYS if k.startswith("grounding_"))
_SCALARS = (str, int, float, bool, type(None))


def text_of(item: Any) -> str:
    """The text of a splitter's output item (see the module docstring for what is accepted)."""
    if isinstance(item, str):
        return item
    for attr in ("text", "page_content"):
        value = getattr(item, attr, None)
        if isinstance(value, str):
            return value
    get_content = getattr(item, "get_content", None)
    if callable(get_content):
        try:
            from llama_index.core.schema import MetadataMode

            return str(get_content(metadata_mode=MetadataMode.NONE))
        except ImportError:  # pragma: no cover - get_content without LlamaIndex
            return str(get_content())
    raise ChunkingError(f"cannot ground a {type(item).__name__}: expected a string or an object with .text / .page_content")


def _params(obj: Any) -> dict[str, Any]:
    raw: Mapping[str, Any] = {}
    fields = getattr(type(obj), "model_fields", None)
    if isinstance(fields, Mapping) and hasattr(obj, "__dict__"):  # pydantic: declared fields only
        raw = {k: getattr(obj, k, None) for k in fields}
    elif hasattr(obj, "__dict__"):
        raw = vars(obj)
    out: dict[str, Any] = {}
    for key, value in sorted(raw.items()):
        name = key.lstrip("_")
        if callable(value) and not isinstance(value, type):
            out[name] = f"<{type(value).__name__}>"
        elif isinstance(value, _SCALARS):
            out[name] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, _SCALARS) for v in value):
            out[name] = list(value)
        else:
            out[name] = f"<{type(value).__module__}.{type(value).__qualname__}>"
    return out


def splitter_fingerprint(splitter: Any = None, params: Mapping[str, Any] | None = None) -> str:
    """16 hex digits naming a splitter configuration: its class and scalar parameters (``params``
    when given, else the object's scalar attributes; nested objects count by type only)."""
    if splitter is None:
        return stable_hash({"class": "text", "params": dict(params or {})}, 16)
    cls = splitter if isinstance(splitter, type) else type(splitter)
    values = dict(params) if params is not None else _params(splitter)
    return stable_hash({"class": f"{cls.__module__}.{cls.__qualname__}", "params": values}, 16)


def grounding_fields(g: Grounding) -> dict[str, Any]:
    """``grounding_status``, ``grounding_score``, ``grounding_reason`` (when there is one),
    ``grounding_spans`` (``[[start, end], ...]``; absent when refused) and
    ``grounding_furniture_boxes`` (``[[page, left, top, right, bottom], ...]``: page text outside the
    parse tree, see :class:`~.grounder.Grounding`; absent when there is none) of one grounding."""
    out: dict[str, Any] = {"grounding_status": g.status, "grounding_score": float(g.score)}
    if g.reason:
        out["grounding_reason"] = g.reason
    if g.spans:
        out["grounding_spans"] = [[int(s), int(e)] for s, e in g.spans]
    if g.furniture_boxes:
        out[FURNITURE_BOXES_KEY] = furniture_boxes_to_list(g.furniture_boxes)
    return out


def furniture_boxes_to_list(boxes: Sequence[ParsingBoundingBox]) -> list[list[float]]:
    """Furniture boxes as compact ``[page, left, top, right, bottom]`` rows (5 decimals)."""
    return [[int(b.page), *(round(float(v), 5) for v in (b.left, b.top, b.right, b.bottom))] for b in boxes]


def furniture_boxes_from_list(rows: Sequence[Sequence[float]]) -> list[ParsingBoundingBox]:
    """Inverse of :func:`furniture_boxes_to_list`."""
    return [ParsingBoundingBox(page=int(r[0]), left=r[1], top=r[2], right=r[3], bottom=r[4], mode="exact") for r in rows]


def grounded_chunk(
    text: str,
    g: Grounding,
    *,
    key: str,
    fingerprint: str,
    strategy: str = "grounding",
    token_count: int = 0,
) -> Chunk:
    """One grounded text as a :class:`~grounded.model.Chunk` (see the module
    docstring): the id, offsets, boxes (with their pages and element ids) and grounding fields of
    ``g``; a text without spans (refused, or page furniture only) gets no offsets and no boxes."""
    start = end = None
    if g.ok and g.spans:
        start, end = int(g.spans[0][0]), int(g.spans[-1][1])
        cid = chunk_id(key, fingerprint, start, end)
    else:
        cid = refused_id(key, fingerprint, text_hash(text))
    return Chunk.of_boxes(
        cid,
        text,
        list(g.boxes) if g.ok else [],
        strategy=strategy,
        token_count=int(token_count),
        start_char=start,
        end_char=end,
        **grounding_fields(g),
    )


def with_grounding(chunk: Chunk, g: Grounding) -> Chunk:
    """``chunk`` (a chunk of text made elsewhere: a foreign Document's text chunked as plain text)
    with the boxes, pages and element ids of its grounding ``g`` and the grounding fields; a
    refused grounding gives no boxes and no pages. The chunk's own offsets are kept."""
    boxes = list(g.boxes) if g.ok else []
    placed = Chunk.of_boxes(chunk.id, chunk.content, boxes)
    return chunk.replace(
        boxes=placed.boxes, pages=placed.pages, element_ids=placed.element_ids, element_spans=[],
        grounding_status=None, grounding_score=None, grounding_reason=None,
        grounding_spans=[], grounding_furniture_boxes=[],
    ).replace(**grounding_fields(g))


def ground_texts(
    grounder: Grounder,
    texts: Sequence[str],
    *,
    fingerprint: str,
    strategy: str,
    near: int | None = None,
    key: str | None = None,
) -> list[tuple[Chunk, Grounding]]:
    """The one ground-each-part loop of the wrappers (:func:`ground_chunks`, LlamaIndex
    ``GroundingNodeParser``, LangChain ``GroundingSplitter``): each text grounded in document order
    (:meth:`Grounder.ground_all`, searched near the previous one's end), as a chunk
    (:func:`grounded_chunk`) with ids unique within the call (:func:`~grounded.text.ids.repeat_id`
    for a span met again). A text that cannot be grounded at all (too long, not valid Unicode) is
    refused without being tokenized (``token_count`` 0)."""
    key = key if key is not None else source_key(grounder.root.metadata, grounder.text)
    tok = grounder.stream.tokenizer
    out: list[tuple[Chunk, Grounding]] = []
    seen: Counter[str] = Counter()
    for text, g in zip(texts, grounder.ground_all(list(texts), near=near), strict=True):
        chunk = grounded_chunk(
            text, g, key=key, fingerprint=fingerprint, strategy=strategy,
            token_count=tok.count(text) if tok is not None and text_problem(text, grounder.max_chars) is None else 0,
        )
        seen[chunk.id] += 1
        if seen[chunk.id] > 1:  # the same span twice (overlapping or repeated items): still unique ids
            chunk = chunk.replace(id=repeat_id(chunk.id, seen[chunk.id] - 1))
        out.append((chunk, g))
    return out


def refused_texts(
    texts: Sequence[str], reason: str, *, key: str, fingerprint: str, strategy: str, tokenizer: Any = None
) -> list[tuple[Chunk, Grounding]]:
    """What :func:`ground_texts` gives when there is no tree to ground in: every text refused
    with ``reason`` (no boxes, no offsets), ids unique within the call."""
    out: list[tuple[Chunk, Grounding]] = []
    seen: Counter[str] = Counter()
    for text in texts:
        g = Grounding([], 0.0, [], "refused", reason)
        chunk = grounded_chunk(text, g, key=key, fingerprint=fingerprint, strategy=strategy,
                                 token_count=tokenizer.count(text) if tokenizer is not None else 0)
        seen[chunk.id] += 1
        if seen[chunk.id] > 1:
            chunk = chunk.replace(id=repeat_id(chunk.id, seen[chunk.id] - 1))
        out.append((chunk, g))
    return out


def ground_chunks(
    items: Iterable[Any],
    root: ParsingResult | None = None,
    *,
    splitter: Any = None,
    grounder: Grounder | None = None,
    near: int | None = None,
    min_score: float | None = None,
    tokenizer: Any = None,
) -> list[Chunk]:
    """Ground a splitter's output items (in document order) in ``root`` -> grounded Chunks.

    ``splitter``: the splitter that made the items (its class and parameters go into the chunk ids
    and ``strategy``). Pass a ``grounder`` built once to ground several batches of one document
    (then ``root``, ``min_score`` and ``tokenizer`` are not needed). ``near``: the document-text
    offset where the first item is expected."""
    if grounder is None:
        if root is None:
            raise ChunkingError("ground_chunks needs the parse tree (root) or a Grounder")
        options: dict[str, Any] = {"tokenizer": tokenizer}
        if min_score is not None:
            options["min_score"] = min_score
        grounder = Grounder(root, **options)
    elif min_score is not None or tokenizer is not None:
        raise ChunkingError("min_score and tokenizer belong to the Grounder: pass them when building it")
    texts = [text_of(item) for item in items]
    name = "text" if splitter is None else type(splitter).__name__
    chunks = ground_texts(grounder, texts, fingerprint=splitter_fingerprint(splitter), strategy=f"grounding:{name}", near=near)
    return [chunk for chunk, _ in chunks]


def status_counts(chunks: Sequence[Chunk] | Sequence[Grounding]) -> dict[str, int]:
    """``{"exact": n, "fuzzy": n, "partial": n, "furniture": n, "refused": n}`` of grounded chunks or
    groundings."""
    counts = dict.fromkeys(("exact", "fuzzy", "partial", "furniture", "refused"), 0)
    for c in chunks:
        status = c.status if isinstance(c, Grounding) else str(c.metadata.get("grounding_status", "refused"))
        counts[status] = counts.get(status, 0) + 1
    return counts
