"""The Documents of grounded's LangChain loader as framework-free parts (:class:`DocPart`: text,
metadata, id): what ``langchain_grounded`` wraps into ``Document`` objects (loader, blob parser,
splitter).

Metadata conventions (every mode):

* source keys as LangChain's ``PyMuPDFLoader`` names them: ``source`` and ``file_path`` (the path,
  or the name given for bytes input), ``file_name``, ``total_pages``, the PDF's ``title``,
  ``author``, ``subject``, ``keywords``, ``creator``, ``producer``, ``creationdate``, ``moddate``
  (ISO 8601), plus ``source_sha256`` and ``parser``;
* ``page``: **0-based** index of the (first) page, as ``PyMuPDFLoader`` and ``PyPDFLoader`` set it;
  grounded's own ``pages`` / ``page_start`` / ``page_end`` and every box's page are **1-based**
  page numbers;
* ``text_hash`` of the Document's text (see :func:`grounded.metadata.boxes_from_metadata`);
* ``grounded_tree_ref``: a ~100-byte reference to the parse tree in a
  :class:`~grounded.parsers.cache.ParseCache` (never the tree itself), so
  :class:`~langchain_grounded.GroundedTextSplitter` can split these Documents again with exact boxes.

By default (``flat=True``) every value is a scalar: lists are compact JSON strings, so Chroma,
``filter_complex_metadata`` and SQL-backed stores keep all of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..grounding.blocks import ELEMENT_KEY, Block, iter_blocks, page_runs
from ..io.box_codec import BOXES_KEY, TEXT_HASH_KEY, boxes_to_metadata, text_hash
from ..io.chunk_codec import chunk_metadata, flatten_metadata
from ..model import Chunk, ParsingResult
from ..runtime.bounded import BoundedCache
from ..text.ids import stable_hash
from ..text.tokenizer import Tokenizer
from .profiles import KIND_KEY, PAGE_JOINER, SPANS_KEY, page_keys
from .sources import SourceView

__all__ = ["DocPart", "chunk_part", "element_parts", "page_parts", "single_part", "block_index"]

@dataclass
class DocPart:
    """A Document before a framework wraps it: its text, metadata and id (``None``: the framework's)."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


def _finish(metadata: dict[str, Any], flat: bool) -> dict[str, Any]:
    return flatten_metadata(metadata) if flat else metadata


def chunk_part(
    chunk: Chunk,
    source: Mapping[str, Any],
    *,
    flat: bool = True,
    line_spans: bool = True,
    add_start_index: bool = False,
) -> DocPart:
    """One chunk as a Document: its text is the chunk content (headings prepended by the
    hierarchical strategy included), metadata = source keys + :func:`grounded.metadata.chunk_metadata`
    + ``page``; ``start_index`` (the body's offset in the document text) only when asked."""
    meta = chunk_metadata(chunk, flat=False, line_spans=line_spans)
    metadata: dict[str, Any] = {**source, **meta, "page": max(chunk.page_start - 1, 0), KIND_KEY: "chunk"}
    if add_start_index and chunk.start_char is not None:
        metadata["start_index"] = chunk.start_char
    return DocPart(chunk.content, _finish(metadata, flat), id=chunk.id)


def element_parts(
    root: ParsingResult, source: Mapping[str, Any], *, flat: bool = True, line_spans: bool = True, payload: bool = False
) -> Iterator[DocPart]:
    """One Document per block (text element, or a whole table/list), in reading order, with its
    boxes. :class:`~langchain_grounded.GroundedTextSplitter` re-chunks them from the parse tree
    (``grounded_tree_ref``); ``payload=True`` also stores each block's lossless subtree
    (``grounded_element``: its lines and character extents, up to tens of kB for a table) so the
    Documents re-chunk anywhere, without the parse cache."""
    key = stable_hash([source.get("source_sha256", ""), source.get("parser", ""), "element"], 10)
    sha = str(source.get("source_sha256", ""))[:12]
    headings: dict[str, str] = {}
    for block in iter_blocks(root):
        node = block.node
        path = [headings[a.id] for a in reversed(node.ancestors()) if a.id in headings]
        if node.type.value in ("SECTION_HEADER", "TITLE"):
            headings[node.id] = " ".join(node.content.split())
        metadata: dict[str, Any] = {
            **source,
            KIND_KEY: "element",
            "element_id": node.id,
            "element_type": node.type.value,
            "start_char": block.start_char,
            "end_char": block.end_char,
            **page_keys([b.page for b in block.geom]),
            "section": " > ".join(path),
            "heading_path": path,
            BOXES_KEY: boxes_to_metadata(block.geom, line_spans=line_spans),
            TEXT_HASH_KEY: text_hash(block.text),
        }
        if payload:
            metadata[ELEMENT_KEY] = block.payload()
        yield DocPart(
            block.text,
            _finish(metadata, flat),
            f"{sha}-{key}-element-{node.id}" if sha else None,
        )


def block_index(view: SourceView) -> dict[str, Block]:
    """The tree's element blocks by element id (what element Documents hold), kept per view."""
    return _BLOCKS.get_or_make(id(view), lambda: {b.node.id: b for b in iter_blocks(view.root)})


_BLOCKS: BoundedCache[dict[str, Block]] = BoundedCache(4)


def page_parts(
    root: ParsingResult,
    source: Mapping[str, Any],
    view: SourceView,
    *,
    tokenizer: Tokenizer | None = None,
    box_mode: str = "auto",
    flat: bool = True,
    line_spans: bool = True,
) -> Iterator[DocPart]:
    """One Document per page (``mode="page"``): the page's text in reading order (its runs of the
    document text joined by a blank line), its exact boxes, ``page`` (0-based) and ``char_spans``."""
    doc = view.doc
    by_page: dict[int, list[tuple[int, int]]] = {}
    for page, start, end in page_runs(doc.nodes, doc.starts):
        by_page.setdefault(page, []).append((start, end))
    sha = str(source.get("source_sha256", ""))[:12]
    key = stable_hash([source.get("source_sha256", ""), source.get("parser", ""), "page"], 10)
    for page in range(1, int(source.get("total_pages") or 0) + 1):
        spans = by_page.get(page, [])
        text = PAGE_JOINER.join(doc.text[s:e] for s, e in spans)
        geom = [b for s, e in spans for b in view.boxes(s, e, tokenizer=tokenizer, box_mode=box_mode)]
        metadata: dict[str, Any] = {
            **source,
            KIND_KEY: "page",
            "page": page - 1,
            "pages": [page],
            "page_start": page,
            "page_end": page,
            "start_char": spans[0][0] if spans else 0,
            "end_char": spans[-1][1] if spans else 0,
            SPANS_KEY: [list(s) for s in spans],
            BOXES_KEY: boxes_to_metadata(geom, line_spans=line_spans),
            TEXT_HASH_KEY: text_hash(text),
        }
        yield DocPart(text, _finish(metadata, flat), f"{sha}-{key}-page-{page}" if sha else None)


def single_part(root: ParsingResult, source: Mapping[str, Any], text: str, *, flat: bool = True) -> DocPart:
    """The whole PDF as one Document (``mode="single"``): the document text, no boxes (a whole
    document's boxes would be megabytes); :class:`~langchain_grounded.GroundedTextSplitter` chunks
    it from its parse tree (``grounded_tree_ref``) with exact boxes."""
    sha = str(source.get("source_sha256", ""))[:12]
    key = stable_hash([source.get("source_sha256", ""), source.get("parser", ""), "single"], 10)
    metadata: dict[str, Any] = {
        **source,
        KIND_KEY: "single",
        "start_char": 0,
        "end_char": len(text),
        TEXT_HASH_KEY: text_hash(text),
    }
    return DocPart(text, _finish(metadata, flat), f"{sha}-{key}-single" if sha else None)
