"""Parse trees behind Documents and nodes, and the boxes of any node's own text.

Documents of :class:`~llama_index_grounded.GroundedPDFReader` carry a compact reference to their
parse tree (``grounded_tree_ref``, see :mod:`grounded.parse_cache`), never the tree itself.
:func:`tree_for` resolves it (process memory -> cache directory -> re-parse of an unchanged PDF),
restricted to one page for the reader's per-page Documents. :func:`node_boxes` gives the boxes of a
node's *own* text: the recorded boxes when the node is the chunk they were made for, else (a part
made by ``SentenceSplitter``, a ``CitationQueryEngine`` citation chunk, a node of the default
splitter) the boxes of the part's char span located in the document text, or ``[]`` with one
:class:`~grounded.metadata.GroundingWarning` - never the boxes of a parent.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from grounded.chunking.assembly import ChunkAssembler
from grounded.chunking.chunker import Chunker
from grounded.chunking.stream import document_text
from grounded.errors import SchemaError
from grounded.metadata import TREE_KEY, GroundingWarning, boxes_from_metadata, decode_tree, text_hash
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.parse_cache import TREE_REF_KEY, ParseCache, resolve_tree

__all__ = ["PAGE_KEY", "tree_for", "page_tree", "document_text_of", "locate", "node_boxes", "GroundingWarning"]

#: metadata key of the reader's per-page Documents: the 1-based page the Document holds
PAGE_KEY = "grounded_page"
_CITATION = re.compile(r"^Source \d+:\n")

_lock = threading.Lock()
_pages: OrderedDict[tuple[str, int], ParsingResult] = OrderedDict()
_texts: OrderedDict[int, tuple[ParsingResult, str]] = OrderedDict()
_assemblers: OrderedDict[tuple[int, str], tuple[ParsingResult, ChunkAssembler]] = OrderedDict()
_MEMORY = 16


def _lru_put(store: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    with _lock:
        store[key] = value
        store.move_to_end(key)
        while len(store) > _MEMORY:
            store.popitem(last=False)


def _lru_get(store: OrderedDict[Any, Any], key: Any) -> Any:
    with _lock:
        value = store.get(key)
        if value is not None:
            store.move_to_end(key)
        return value


def _first_page(node: ParsingResult) -> int | None:
    holder: ParsingResult | None = node
    while holder is not None:
        if holder.geom:
            return min(b.page for b in holder.geom)
        holder = holder.parent
    return None


def page_tree(root: ParsingResult, page: int) -> ParsingResult:
    """The part of ``root`` on ``page``: every element whose first box lies on that page, nested as in
    the tree; elements of other pages are left out and their children on ``page`` move up to the
    nearest kept ancestor (a heading on the previous page does not repeat on this one). The result
    shares boxes with ``root`` (treat both as read-only)."""
    out = ParsingResult(root.id, root.type, root.content, list(root.geom), metadata=dict(root.metadata))
    stack: list[tuple[ParsingResult, ParsingResult]] = [(child, out) for child in reversed(root.children)]
    while stack:
        node, parent = stack.pop()
        target = parent
        if _first_page(node) == page:
            target = parent.add_child(
                ParsingResult(node.id, node.type, node.content, list(node.geom), metadata=dict(node.metadata), image=node.image)
            )
        stack.extend((child, target) for child in reversed(node.children))
    return out


def tree_for(metadata: Mapping[str, Any], cache_dir: str | None = None) -> ParsingResult | None:
    """The parse tree a Document's (or node's) metadata refers to, restricted to its page for a
    per-page Document; ``None`` without a reference or when it cannot be resolved. Documents of older
    releases that embed the tree (``grounded_tree``) are still read."""
    ref = metadata.get(TREE_REF_KEY)
    if ref:
        root = resolve_tree(metadata, ParseCache(cache_dir) if cache_dir else None)
    elif metadata.get(TREE_KEY):
        root = decode_tree(metadata[TREE_KEY], source=str(metadata.get("file_path") or "<metadata>"))
    else:
        return None
    if root is None:
        return None
    page = metadata.get(PAGE_KEY)
    if page in (None, ""):
        return root
    key = (str(ref or id(root)), int(page))
    cached = _lru_get(_pages, key)
    if cached is None:
        cached = page_tree(root, int(page))
        _lru_put(_pages, key, cached)
    return cached


def document_text_of(root: ParsingResult) -> str:
    """``document_text(root).text``, memoized per tree object."""
    hit = _lru_get(_texts, id(root))
    if hit is not None and hit[0] is root:
        return hit[1]
    text = document_text(root).text
    _lru_put(_texts, id(root), (root, text))
    return text


def assembler_for(root: ParsingResult, chunker: Chunker) -> ChunkAssembler:
    """An assembler over ``root``'s token stream (memoized per tree and chunk configuration)."""
    key = (id(root), chunker.fingerprint)
    hit = _lru_get(_assemblers, key)
    if hit is not None and hit[0] is root:
        return hit[1]
    assembler = chunker.assembler(root)
    _lru_put(_assemblers, key, (root, assembler))
    return assembler


def _normalized(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs collapsed to one space, and the original index of each char."""
    out: list[str] = []
    index: list[int] = []
    in_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not in_space and out:
                out.append(" ")
                index.append(i)
            in_space = True
        else:
            out.append(ch)
            index.append(i)
            in_space = False
    return "".join(out), index


def locate(part: str, text: str, lo: int = 0, hi: int | None = None) -> tuple[int, int] | None:
    """Char span ``[start, end)`` of ``part`` inside ``text[lo:hi]`` (exactly, else ignoring
    whitespace differences: splitters strip and re-join); the first occurrence, ``None`` if absent."""
    hi = len(text) if hi is None else hi
    lo = max(0, lo)
    core = part.strip()
    if not core:
        return None
    at = text.find(core, lo, hi)
    if at >= 0:
        return at, at + len(core)
    window, index = _normalized(text[lo:hi])
    wanted, _ = _normalized(core)
    at = window.find(wanted.strip())
    if at < 0:
        return None
    end = at + len(wanted.strip()) - 1
    return lo + index[at], lo + index[end] + 1


def _int(meta: Mapping[str, Any], key: str) -> int | None:
    value = meta.get(key)
    try:
        return int(value) if value is not None and value != "" else None
    except (TypeError, ValueError):
        return None


def span_of(text: str, meta: Mapping[str, Any], doc_text: str, start_idx: int | None = None) -> tuple[int, int] | None:
    """Where ``text`` (a node's text, or a part of a chunk that copied the chunk's metadata) lies in
    the document text: inside the chunk's recorded body span when there is one, else at the node's
    ``start_char_idx``, else anywhere (first occurrence). Heading lines a chunk starts with (text
    mode of the hierarchical strategy) are skipped: they are not contiguous with the body."""
    part = _CITATION.sub("", text, count=1)
    start, end = _int(meta, "start_char"), _int(meta, "end_char")
    windows: list[tuple[int, int]] = []
    if start is not None and end is not None and 0 <= start <= end <= len(doc_text):
        windows.append((start, end))
    if start_idx is not None and 0 <= start_idx < len(doc_text):
        windows.append((start_idx, min(len(doc_text), start_idx + len(part) + 64)))
    windows.append((0, len(doc_text)))
    candidates = [part]
    rest = part
    while "\n\n" in rest:  # a heading prefix ends with a blank line
        rest = rest.split("\n\n", 1)[1]
        candidates.append(rest)
    for lo, hi in windows:
        for candidate in candidates:
            if not candidate.strip():
                continue
            found = locate(candidate, doc_text, lo, hi)
            if found is not None:
                return found
    return None


_DEFAULT_CHUNKERS: dict[str, Chunker] = {}


def _default_chunker(box_mode: str) -> Chunker:
    chunker = _DEFAULT_CHUNKERS.get(box_mode)
    if chunker is None:
        chunker = _DEFAULT_CHUNKERS[box_mode] = Chunker("fixed", 64, box_mode=box_mode)
    return chunker


def node_boxes(node: Any, *, cache_dir: str | None = None, box_mode: str = "auto") -> list[ParsingBoundingBox]:
    """The boxes of ``node``'s own text (a LlamaIndex node, or a ``NodeWithScore``).

    * a node made by :class:`~llama_index_grounded.GroundedNodeParser`: its recorded ``boxes``
      (``text_hash`` matches its text);
    * any other node with a grounded source (a ``SentenceSplitter`` part of a grounded node, a
      ``CitationQueryEngine`` citation chunk, a node of the default splitter over reader
      Documents): its text is located in the document text - inside the parent chunk's span when
      recorded - and the boxes of exactly that span are made from the parse tree;
    * when that is impossible (no reference, the tree cannot be resolved, the text is not found):
      ``[]`` with one :class:`~grounded.metadata.GroundingWarning` if the node carries boxes made
      for another text; plain ``[]`` for a node that never had a grounded source.
    """
    inner = getattr(node, "node", node)
    meta: Mapping[str, Any] = inner.metadata
    text = inner.get_content(metadata_mode="none") if hasattr(inner, "get_content") else str(inner.text)
    has_boxes = bool(meta.get("boxes"))
    recorded = meta.get("text_hash")
    if has_boxes and recorded is not None and str(recorded) == text_hash(text):
        return boxes_from_metadata(meta)
    if has_boxes and recorded is None:  # nodes of an older release: no hash to check
        return boxes_from_metadata(meta)
    grounded_source = bool(meta.get(TREE_REF_KEY) or meta.get(TREE_KEY))
    if not grounded_source:
        return []
    try:
        root = tree_for(meta, cache_dir)
    except SchemaError:
        root = None
    found = None
    if root is not None:
        doc_text = document_text_of(root)
        found = span_of(text, meta, doc_text, getattr(inner, "start_char_idx", None))
    if found is None:
        warnings.warn(
            f"node {getattr(inner, 'node_id', '?')}: boxes withheld - its text is not the chunk its metadata describes "
            "(re-split or edited) and it could not be located in the source's parse tree"
            + ("" if root is not None else " (the tree is not cached and the PDF is gone or changed)"),
            GroundingWarning,
            stacklevel=2,
        )
        return []
    assert root is not None
    return assembler_for(root, _default_chunker(box_mode)).boxes_for_chars(*found)
