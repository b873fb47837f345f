"""Metadata per surface profile: which document-level keys each framework surface carries, shows
and passes on, beside the chunk field table (:mod:`grounded.model.chunk_fields`, the chunk's own keys).

:data:`SOURCE_KEY_TABLE` has one row per document-level key (the PDF, its parse, its pages, its
information dictionary) with the LlamaIndex columns; the LangChain profile names its keys in
``PyMuPDFLoader``'s order (:data:`LANGCHAIN_SOURCE_KEYS`). The conventions that differ:

* **LlamaIndex** (``GroundedPDFReader`` Documents, ``GroundedNodeParser`` nodes): ``page`` and
  ``page_label`` are 1-based (``page_label`` a string, as LlamaIndex's PDF readers set it); the
  reader's keys are hidden from the embedder, and from the LLM but for the file name, the page label
  and the title; a chunk node repeats its Document's keys but the derivable ones;
* **LangChain** (``GroundedPDFLoader`` Documents, ``GroundedTextSplitter`` parts): ``page`` is the
  **0-based** index of the first page, as ``PyMuPDFLoader``/``PyPDFLoader`` set it; every
  document-level key is copied onto the parts split from a Document.

Grounded's own ``pages``, ``page_start``/``page_end`` and every box's page are 1-based on every surface.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..grounding.blocks import ELEMENT_KEY
from ..grounding.wrappers import GROUNDING_KEYS
from ..io.box_codec import boxes_to_metadata, compact_json
from ..io.chunk_codec import PAYLOAD_KEYS, chunk_metadata, flatten_metadata, part_fields
from ..io.pdf_info import PDF_METADATA_KEYS
from ..io.tree_payload import TREE_KEY, source_info
from ..model import Chunk, ParsingBoundingBox, ParsingResult
from ..model.chunk_fields import STORED_KEYS, embed_hidden_keys, llm_hidden_keys, resplit_keys
from ..parsers.cache import PARSER_OPTIONS_KEY, TREE_REF_KEY
from ..text.tokenizer import Tokenizer
from .sources import PAGE_KEY

__all__ = [
    # the source-key table and what it decides
    "SourceKey", "SOURCE_KEY_TABLE", "NODE_HIDDEN", "NODE_EMBED_HIDDEN", "NODE_DROPPED", "DOCUMENT_KEYS",
    "LLM_VISIBLE_KEYS", "GROUNDING_HIDDEN", "node_hidden_keys", "reader_hidden_keys",
    # LlamaIndex's chunk nodes
    "CHUNK_KEYS", "is_chunk_metadata", "inherited_metadata", "section_of", "node_text_and_metadata", "page_without_boxes", "file_info", "grounded_node_fields",
    # LangChain's Documents
    "RESPLIT_NOT_INHERITED", "LANGCHAIN_OWN_KEYS", "LANGCHAIN_PART_KEYS", "LANGCHAIN_GROUNDED_PART_KEYS",
    "LANGCHAIN_SOURCE_KEYS", "KIND_KEY", "SPANS_KEY", "PAGE_JOINER", "page_keys", "source_metadata",
    # a retrieved hit
    "FOCUS_KEYS", "focus_metadata", "hit_fields",
]


@dataclass(frozen=True, slots=True)
class SourceKey:
    """One document-level key: what it holds and how LlamaIndex's surfaces treat it. ``embed`` /
    ``llm``: a chunk node shows it to the embedder / the LLM; ``inherit``: a chunk node repeats it
    from its Document (else it stays on the Document: derivable, or the PDF's own); ``reader``: the
    reader's Documents set it (hidden from their embedder); ``reader_llm``: and show it to the LLM."""

    key: str
    what: str
    embed: bool = False
    llm: bool = False
    inherit: bool = True
    reader: bool = True
    reader_llm: bool = False


#: the document-level keys, in the order a chunk node hides them
SOURCE_KEY_TABLE: tuple[SourceKey, ...] = (
    SourceKey(TREE_KEY, "the parse tree itself (only when asked to carry it)", inherit=False),
    SourceKey(TREE_REF_KEY, "the parse tree's reference in the parse cache"),
    SourceKey(PARSER_OPTIONS_KEY, "the parser options of that tree (JSON)"),
    SourceKey(PAGE_KEY, "the 1-based page a per-page Document holds"),
    SourceKey("source_sha256", "the PDF's sha256 (in the tree reference again)", inherit=False),
    SourceKey("file_path", "the PDF's path"),
    SourceKey("total_pages", "the PDF's page count"),
    SourceKey("parser", "the parser's name (in the tree reference again)", inherit=False),
    SourceKey("page", "the first page, 1-based (pymupdf4llm's key)", reader=False),
    SourceKey("page_label", "the first page as a label (LlamaIndex's PDF readers' key)", llm=True, reader_llm=True),
    SourceKey("file_name", "the PDF's file name", llm=True, reader_llm=True),
    *(
        SourceKey(key, f"the PDF's {key} (its information dictionary)", embed=True, llm=True,
                  inherit=key in ("title", "author"), reader_llm=key == "title")
        for key in PDF_METADATA_KEYS
    ),
)
#: what a chunk node never shows: machine payload and derivable file keys
NODE_HIDDEN: tuple[str, ...] = tuple(s.key for s in SOURCE_KEY_TABLE if not s.embed and not s.llm)
#: what a chunk node shows the LLM (to cite) but not the embedder
NODE_EMBED_HIDDEN: tuple[str, ...] = tuple(s.key for s in SOURCE_KEY_TABLE if not s.embed and s.llm)
#: what a chunk node does not repeat from its Document
NODE_DROPPED: tuple[str, ...] = tuple(s.key for s in SOURCE_KEY_TABLE if not s.inherit)
#: the keys the reader sets besides ``extra_info`` and the PDF's information (none reaches the embedder)
DOCUMENT_KEYS: tuple[str, ...] = tuple(s.key for s in SOURCE_KEY_TABLE if s.reader and s.key not in PDF_METADATA_KEYS)
#: the reader's keys an LLM sees (to cite): the page of a per-page Document, the file name, the title
LLM_VISIBLE_KEYS: tuple[str, ...] = tuple(s.key for s in SOURCE_KEY_TABLE if s.reader_llm)
#: what a node of a wrapped splitter (``GroundingNodeParser``) never shows: the chunk payload and
#: the hidden document keys (its own ``page``, the wrapped reader's, stays as it was)
GROUNDING_HIDDEN: tuple[str, ...] = (*embed_hidden_keys(), *(k for k in NODE_HIDDEN if k != "page"))

# -- LangChain: the keys -------------------------------------------------------------------------------------
#: "chunk", "element", "page" or "single": which loader mode produced a document
KIND_KEY = "grounded_kind"
#: a page Document's text as ``[[start, end], ...]`` spans of the document text (joined by PAGE_JOINER)
SPANS_KEY = "char_spans"
PAGE_JOINER = "\n\n"
#: document-level keys, in ``PyMuPDFLoader``'s order: copied from the loader's Documents onto the
#: parts split from them
LANGCHAIN_SOURCE_KEYS = (
    "source",
    "file_path",
    "file_name",
    "source_sha256",
    "parser",
    "total_pages",
    *PDF_METADATA_KEYS,
    TREE_REF_KEY,
    PARSER_OPTIONS_KEY,
)


def node_hidden_keys(given: Sequence[str], *, embed: bool, heading_context: str) -> list[str]:
    """Metadata keys a chunk node's embedder (``embed``) or LLM does not see: the input node's own
    exclusions, the chunk payload (the field table's ``embed``/``llm`` columns) and the hidden
    document keys; the embedder sees no ``pages`` and sees ``section`` only with
    ``heading_context="metadata"``, the LLM sees it unless that is ``"none"``."""
    chunk_hidden = embed_hidden_keys() if embed else llm_hidden_keys()
    hidden = list(dict.fromkeys([*given, *chunk_hidden, *NODE_HIDDEN]))
    if embed:
        hidden += [*NODE_EMBED_HIDDEN, "pages"]
        if heading_context != "metadata":
            hidden.append("section")
    elif heading_context == "none":
        hidden.append("section")
    return [k for k in dict.fromkeys(hidden) if k != TREE_KEY]


def reader_hidden_keys(metadata: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The keys of a reader Document's ``metadata`` hidden from its embedder and from its LLM."""
    embed = [k for k in metadata if k in DOCUMENT_KEYS or k in PDF_METADATA_KEYS]
    return embed, [k for k in embed if k not in LLM_VISIBLE_KEYS]


def page_keys(pages: Sequence[int]) -> dict[str, Any]:
    """LangChain's page keys of a text on ``pages``: ``page`` (0-based index of the first page; 0
    when the text has no page), ``pages`` (1-based, sorted), ``page_start``/``page_end`` (1-based)."""
    ordered = sorted({int(p) for p in pages})
    first = ordered[0] if ordered else 0
    return {
        "page": max(first - 1, 0),
        "pages": ordered,
        "page_start": first,
        "page_end": ordered[-1] if ordered else 0,
    }


# -- what a part does not inherit ------------------------------------------------------------------
#: the chunk keys a re-split part never takes over from its parent (the field table's ``resplit``
#: column: recomputed for its own text, or dropped); each surface adds the keys below
RESPLIT_NOT_INHERITED = frozenset({*resplit_keys("recompute"), *resplit_keys("drop")})
#: the keys LangChain's loader modes and element Documents write for one Document's own text
LANGCHAIN_OWN_KEYS = frozenset({KIND_KEY, "page", SPANS_KEY, "element_id", "element_type", ELEMENT_KEY})
#: a part ``GroundedTextSplitter`` cuts: its own chunk writes strategy and heading ids anew
LANGCHAIN_PART_KEYS = frozenset(
    {*RESPLIT_NOT_INHERITED, "strategy", "strategy_params", "heading_ids", *LANGCHAIN_OWN_KEYS, "start_index"}
)
#: a part ``GroundingSplitter`` grounds: grounding finds its headings anew, the tree is never copied
LANGCHAIN_GROUNDED_PART_KEYS = frozenset(
    {*RESPLIT_NOT_INHERITED, "strategy", "section", "heading_path", "heading_ids", *LANGCHAIN_OWN_KEYS, TREE_KEY}
)


# -- LlamaIndex: a chunk node -----------------------------------------------------------------------
#: metadata keys a chunk node gets from its chunk (replaced, not inherited, when a node is re-split):
#: the field table's keys plus LlamaIndex's page keys
CHUNK_KEYS = frozenset({*STORED_KEYS, "page", "page_label"})


#: keys describing the parent's own text: recomputed for each grounded node (or dropped when refused)
_GROUNDED_PARENT_KEYS = (*PAYLOAD_KEYS, *GROUNDING_KEYS, "pages", "section")


def is_chunk_metadata(meta: Mapping[str, Any]) -> bool:
    """Whether ``meta`` is a chunk's (a node to re-split), not a Document's."""
    return any(k in meta for k in ("chunk_id", "text_hash", "start_char"))


def inherited_metadata(meta: Mapping[str, Any], *, include: bool) -> dict[str, Any]:
    """What a chunk node takes over of its input node's metadata: nothing without ``include``
    (LlamaIndex's ``include_metadata``), never the tree itself, and of a chunk node being re-split
    none of its chunk keys (its parts write their own)."""
    if not include:
        return {}
    drop_chunk_keys = is_chunk_metadata(meta)
    return {k: v for k, v in meta.items() if k != TREE_KEY and not (drop_chunk_keys and k in CHUNK_KEYS)}


def grounded_node_fields(
    meta: Mapping[str, Any], record: Chunk, embed_hidden: list[str], llm_hidden: list[str], *, line_spans: bool
) -> tuple[dict[str, Any], list[str], list[str]]:
    """``GroundingNodeParser``'s node: the wrapped parser's metadata with the parent's own-text keys
    replaced by the fields of the node's grounded ``record`` (flat), and the hidden-key lists with
    the grounding payload added."""
    out = {k: v for k, v in meta.items() if k not in _GROUNDED_PARENT_KEYS}
    out.update(part_fields(record, flat=True, line_spans=line_spans))
    out = flatten_metadata(out)
    embed = list(dict.fromkeys([*embed_hidden, *(k for k in (*GROUNDING_HIDDEN, "pages") if k in out)]))
    llm = list(dict.fromkeys([*llm_hidden, *(k for k in GROUNDING_HIDDEN if k in out)]))
    return out, embed, llm


def section_of(chunk: Chunk, heading_context: str, tokenizer: Tokenizer, max_tokens: int) -> str:
    """The heading path as ``section``; shown to the embedder (``heading_context="metadata"``) it
    takes at most a quarter of ``max_tokens``."""
    section = " > ".join(chunk.heading_path)
    if heading_context != "metadata" or not section:
        return section
    limit = max(1, max_tokens // 4)
    _, offsets = tokenizer.encode(section)
    if len(offsets) <= limit:
        return section
    return section[: offsets[limit - 2][1] if limit > 1 else 0].rstrip() + "…"


def node_text_and_metadata(
    chunk: Chunk,
    inherited: Mapping[str, Any],
    info: Mapping[str, Any] | None,
    *,
    heading_context: str,
    flat: bool,
    line_spans: bool,
    section: str,
) -> tuple[str, dict[str, Any]]:
    """A chunk's node text and node metadata (inherited keys + file keys + chunk keys)."""
    text = chunk.content if heading_context == "text" else chunk.body
    meta = chunk_metadata(chunk, flat=flat, line_spans=line_spans, text=text)
    if heading_context != "text":
        meta["body_start"] = 0
    meta["section"] = section
    pages = chunk.pages
    extra: dict[str, Any] = {"page_label": str(pages[0]) if pages else str(inherited.get("page_label", ""))}
    # pymupdf4llm's key: the first page, 1-based (``pages`` lists them all); a chunk without boxes
    # (page furniture only, refused) gets the page its text comes from, so every node has one
    page = pages[0] if pages else page_without_boxes(chunk, inherited)
    if page is not None:
        extra["page"] = page
        extra["page_label"] = extra["page_label"] or str(page)
    if info is not None:
        extra["file_name"] = inherited.get("file_name") or info["name"]
        extra["file_path"] = inherited.get("file_path", info["path"])
        extra["total_pages"] = inherited.get("total_pages", info["page_count"])
    merged = {**inherited, **extra, **meta}
    for key in NODE_DROPPED:  # derivable, or on the source Document: a vector store keeps every key twice
        merged.pop(key, None)
    return text, merged


def page_without_boxes(chunk: Chunk, inherited: Mapping[str, Any]) -> int | None:
    """The 1-based page of a chunk that has no boxes: its input Document's page (``page`` when an
    int, else ``page_label`` when it is a page number, as LlamaIndex's PDF reader sets it), else the
    first page of its furniture boxes (text found only in running headers or footers), else None."""
    page = inherited.get("page")
    if isinstance(page, int) and not isinstance(page, bool) and page >= 1:
        return page
    label = str(inherited.get("page_label") or "").strip()
    if label.isdigit() and int(label) >= 1:
        return int(label)
    rows = chunk.grounding_furniture_boxes
    return int(rows[0][0]) if rows else None


def file_info(root: ParsingResult | None) -> dict[str, Any] | None:
    """The file keys of a parse tree that names its PDF (None otherwise)."""
    return source_info(root) if root is not None and root.info.source else None


def source_metadata(
    root: ParsingResult,
    pdf_info: Mapping[str, str] | None = None,
    *,
    tree_ref: str | None = None,
    parser_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Document-level metadata of a parsed PDF (see the module docstring)."""
    info = source_info(root)
    out: dict[str, Any] = {
        "source": info["path"] or info["name"],
        "file_path": info["path"] or info["name"],
        "file_name": info["name"],
        "source_sha256": info["sha256"],
        "parser": info["parser"],
        "total_pages": info["page_count"],
    }
    for key in PDF_METADATA_KEYS:
        out[key] = str((pdf_info or {}).get(key, ""))
    if tree_ref:
        out[TREE_REF_KEY] = tree_ref
        if parser_options:
            out[PARSER_OPTIONS_KEY] = json.dumps(dict(parser_options), sort_keys=True, separators=(",", ":"), default=repr)
    return out


# -- a retrieved hit ---------------------------------------------------------------------------------
#: the metadata keys of a retrieved node's / Document's focus: what the reader highlights, never what
#: the embedder or the LLM reads
FOCUS_KEYS = ("focus_spans", "focus_boxes")


def focus_metadata(hit: Any, *, flat: bool = False, line_spans: bool = True) -> dict[str, Any]:
    """``focus_spans`` (``[start, end]`` offsets into the hit's text) and ``focus_boxes`` (the form of
    a chunk's ``boxes`` metadata) of a search hit (its ``focus``/``focus_boxes``: :mod:`grounded.focus`),
    as the retrievers add them; ``flat``: both as compact JSON strings (store-safe)."""
    boxes = [ParsingBoundingBox(b.page, b.left, b.top, b.right, b.bottom, mode=b.mode, element_id=b.element_id,
                                spans=[ParsingBoundingBox(b.page, s.left, s.top, s.right, s.bottom) for s in b.spans])
             for b in hit.focus_boxes]
    spans: Any = [list(span) for span in hit.focus]
    return {"focus_spans": compact_json(spans) if flat else spans,
            "focus_boxes": boxes_to_metadata(boxes, flat, line_spans=line_spans)}


def hit_fields(
    hit: Any, chunk: Chunk, *, flat: bool, line_spans: bool, drop: tuple[str, ...] = (), pages: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A search hit's metadata for LlamaIndex's retriever: every field of the chunk field table (of
    the row's ``chunk``, but ``drop``), the page keys of ``pages``, then the indexed PDF
    (``file_name``, ``file_path``, ``source_sha256``), the ingest configuration (``config_fingerprint``)
    and the hit's focus (:func:`focus_metadata`)."""
    fields = chunk_metadata(chunk, flat=flat, line_spans=line_spans, text=chunk.content)
    return {
        **{k: v for k, v in fields.items() if k not in drop}, **(pages or {}),
        "file_name": Path(hit.source_path).name, "file_path": hit.source_path,
        "source_sha256": hit.source_sha256, "config_fingerprint": hit.config,
        **focus_metadata(hit, flat=flat, line_spans=line_spans),
    }
