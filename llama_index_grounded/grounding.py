"""Parse trees behind Documents and nodes, and the boxes of any node's own text.

Documents of :class:`~llama_index_grounded.GroundedPDFReader` carry a compact reference to their
parse tree (``grounded_tree_ref``, see :mod:`grounded.parsers.cache`), never the tree itself.
:func:`tree_for` resolves it (process memory -> cache directory -> re-parse of an unchanged PDF),
restricted to one page for the reader's per-page Documents. :func:`node_boxes` gives the boxes of a
node's *own* text: the recorded boxes when the node is the chunk they were made for, else (a part
made by ``SentenceSplitter``, a ``CitationQueryEngine`` citation chunk, a node of the default
splitter) the boxes of the part's char span located in the document text, or ``[]`` with one
:class:`~grounded.metadata.GroundingWarning` - never the boxes of a parent.
:class:`GroundingNodeParser` wraps any node parser so each node it makes is grounded (boxes, pages,
char offsets of its own text; see :mod:`grounded.grounding`).
"""

from __future__ import annotations

import re
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import BaseNode, Document, MetadataMode, TextNode

from grounded.chunking.chunker import Chunker
from grounded.errors import SchemaError
from grounded.grounding.grounder import Grounder, Grounding
from grounded.grounding.wrappers import GROUNDING_KEYS, grounded_record, splitter_fingerprint
from grounded.io.chunk_metadata import (
    PAYLOAD_KEYS,
    TREE_KEY,
    GroundingWarning,
    boxes_from_metadata,
    decode_tree,
    flatten_metadata,
    part_fields,
    text_hash,
)
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.parsers.cache import PARSER_OPTIONS_KEY, TREE_REF_KEY, ParseCache, resolve_tree
from grounded.text.assembly import ChunkAssembler
from grounded.text.ids import repeat_id, source_key, stable_hash
from grounded.text.stream import document_text

__all__ = [
    "PAGE_KEY",
    "tree_for",
    "page_tree",
    "document_text_of",
    "locate",
    "node_boxes",
    "GroundingWarning",
    "GroundingNodeParser",
]

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


# -- GroundingNodeParser: any node parser, its nodes grounded in the PDF ------------------------------

#: node metadata an embedder / LLM never sees (machine payload of the grounding)
GROUNDING_HIDDEN = (
    *PAYLOAD_KEYS, TREE_REF_KEY, PARSER_OPTIONS_KEY, PAGE_KEY, *GROUNDING_KEYS,
    "source_sha256", "file_path", "total_pages", "parser",
)
#: keys describing the parent's own text: recomputed for each node (or dropped when refused)
_PARENT_KEYS = (*PAYLOAD_KEYS, *GROUNDING_KEYS, "pages", "section")


class GroundingNodeParser(NodeParser):
    """Wraps any LlamaIndex node parser (``SentenceSplitter``, ``MarkdownNodeParser``,
    ``SemanticSplitterNodeParser``, ...) so every node it makes carries the boxes, pages and char
    offsets of its own text, grounded (:mod:`grounded.grounding`) in the parse tree its source
    Document refers to (``grounded_tree_ref`` of :class:`~llama_index_grounded.GroundedPDFReader`;
    ``tree=`` for Documents without one). The Document's text may be the reader's text or any
    rendering of the same PDF (Markdown from ``pymupdf4llm.to_markdown``).

    Each node keeps the wrapped parser's id, text, relationships and metadata and gets (flat,
    store-safe): ``chunk_id``, ``strategy`` (``grounding:<parser class>``), ``token_count``,
    ``start_char``/``end_char`` and ``start_char_idx``/``end_char_idx`` (the grounded span in the
    tree's document text - the reader Document's own text - never found with ``str.find``),
    ``body_start`` 0, ``pages``, ``page_start``/``page_end``, ``element_ids``, ``boxes``, ``text_hash``,
    ``grounding_status``, ``grounding_score``, ``grounding_reason`` and ``grounding_spans`` - the
    fields of the node's chunk record (:func:`grounded.io.chunk_metadata.part_fields`); the payload
    keys are excluded from embedding and LLM metadata. A node that cannot be grounded gets no boxes, offsets or
    pages, ``grounding_status="refused"`` and the reason (one
    :class:`~grounded.metadata.GroundingWarning` per call).
    """

    node_parser: NodeParser = Field(description="the wrapped node parser")
    min_score: float | None = Field(default=None, description="Grounder min_score (default: the Grounder's)")
    box_mode: str = Field(default="auto", description="box mode of the grounded boxes")
    cache_dir: str | None = Field(default=None, description="parse cache directory (default: the reader's default)")
    line_boxes: bool = Field(default=True, description="keep each box's line boxes")
    tree: Any = Field(default=None, exclude=True, description="parse tree for Documents without grounded_tree_ref")
    password: str | None = Field(
        default=None,
        exclude=True,
        repr=False,
        description="password of encrypted source PDFs: grounding reads their page furniture (never serialized)",
    )
    _grounders: Any = PrivateAttr(default_factory=OrderedDict)

    def __init__(self, node_parser: NodeParser, *, tree: ParsingResult | None = None, **data: Any) -> None:
        if isinstance(node_parser, GroundingNodeParser):
            raise SchemaError("the node parser is already a GroundingNodeParser")
        if tree is not None and not isinstance(tree, ParsingResult):
            raise SchemaError(f"tree must be a grounded ParsingResult, got {type(tree).__name__}")
        super().__init__(node_parser=node_parser, tree=tree, **data)  # type: ignore[call-arg]

    @classmethod
    def class_name(cls) -> str:
        return "GroundingNodeParser"

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if isinstance(private, dict):  # grounders are rebuilt on demand: never pickle their indexes
            state["__pydantic_private__"] = {**private, "_grounders": OrderedDict()}
        return state

    def _grounder(self, meta: Mapping[str, Any]) -> tuple[Grounder | None, str]:
        ref = str(meta.get(TREE_REF_KEY) or "")
        page = meta.get(PAGE_KEY)
        key = f"{ref}#{page}" if ref else (f"tree:{id(self.tree)}" if self.tree is not None else "")
        if not key:
            return None, "the Document refers to no parse tree (no grounded_tree_ref; read it with GroundedPDFReader or pass tree=)"
        grounders: OrderedDict[str, Grounder] = self._grounders
        grounder = grounders.get(key)
        if grounder is None:
            try:
                root = tree_for(meta, self.cache_dir) if ref else self.tree
            except SchemaError as exc:
                return None, f"its parse tree cannot be read ({exc})"
            if root is None:
                return None, "its parse tree is not in the parse cache and the PDF is missing or changed"
            options: dict[str, Any] = {"box_mode": self.box_mode, "password": self.password}
            if self.min_score is not None:
                options["min_score"] = self.min_score
            grounder = Grounder(root, **options)
            grounders[key] = grounder
            while len(grounders) > 4:
                grounders.popitem(last=False)
        grounders.move_to_end(key)
        return grounder, ""

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        refused: list[str] = []
        for node in nodes:
            out.extend(self._ground(node, refused))
        if refused:
            warnings.warn(
                f"{len(refused)} of {len(out)} nodes could not be grounded and carry no boxes "
                f"(grounding_status='refused'; first reason: {refused[0]})",
                GroundingWarning,
                stacklevel=4,
            )
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]) -> list[BaseNode]:
        # the wrapped parser linked and merged already; offsets come from the grounding, not str.find
        return nodes

    def _ground(self, source: BaseNode, refused: list[str]) -> list[BaseNode]:
        parts = self.node_parser.get_nodes_from_documents([source])  # type: ignore[list-item]
        grounder, why = self._grounder(source.metadata)
        texts = [p.get_content(metadata_mode=MetadataMode.NONE) for p in parts]
        if grounder is None:
            groundings = [Grounding([], 0.0, [], "refused", why) for _ in texts]
            key = stable_hash([source.node_id, texts], 24)
        else:
            groundings = grounder.ground_all(texts)
            key = source_key(grounder.root.metadata, grounder.text)
        fingerprint = splitter_fingerprint(self.node_parser)
        name = type(self.node_parser).__name__
        tok = grounder.stream.tokenizer if grounder is not None else None
        seen: dict[str, int] = {}
        for part, text, g in zip(parts, texts, groundings, strict=True):
            if not g.ok:  # status "furniture" (page text outside the tree) has boxes of its own
                refused.append(g.reason)
            record = grounded_record(
                text, g, key=key, fingerprint=fingerprint, strategy=f"grounding:{name}",
                token_count=tok.count(text) if tok is not None else 0,
            )
            repeats = seen.get(record.id, 0)
            seen[record.id] = repeats + 1
            record = record.replace(id=repeat_id(record.id, repeats))
            meta = {k: v for k, v in part.metadata.items() if k not in _PARENT_KEYS}
            meta.update(part_fields(record, flat=True, line_spans=self.line_boxes))
            part.metadata = flatten_metadata(meta)
            start, end = record.start_char, record.end_char
            if isinstance(part, TextNode):
                part.start_char_idx = start
                part.end_char_idx = end
            part.excluded_embed_metadata_keys = list(
                dict.fromkeys([*part.excluded_embed_metadata_keys, *(k for k in (*GROUNDING_HIDDEN, "pages") if k in part.metadata)])
            )
            part.excluded_llm_metadata_keys = list(
                dict.fromkeys([*part.excluded_llm_metadata_keys, *(k for k in GROUNDING_HIDDEN if k in part.metadata)])
            )
        return list(parts)
