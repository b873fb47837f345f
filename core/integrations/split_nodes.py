"""What LlamaIndex's ``GroundedNodeParser`` decides, framework-free: which chunks one input node's
text becomes (grounded's tree, a re-split span, or plain text grounded in the PDF), how much room
the metadata the embedder sees takes, and each node's text and metadata. ``llama_index_grounded``
keeps the LlamaIndex types (nodes, relationships, templates) and calls these.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..chunking.base import ChunkingStrategy, strategy_class
from ..chunking.chunker import Chunker
from ..errors import ChunkingError
from ..grounding.wrappers import GROUNDING_KEYS
from ..io.box_codec import GroundingWarning
from ..io.chunk_codec import PAYLOAD_KEYS, chunk_metadata, flatten_metadata, part_fields
from ..io.tree_payload import TREE_KEY, source_info, text_tree
from ..model import Chunk, ParsingResult
from ..model.chunk_fields import STORED_KEYS, embed_hidden_keys, llm_hidden_keys
from ..parsers.cache import PARSER_OPTIONS_KEY, TREE_REF_KEY
from ..runtime.callers import user_stacklevel
from ..text.assembly import BOX_MODES
from ..text.ids import chunk_id, repeat_id, text_key
from ..text.tokenizer import Tokenizer
from .boxes import ground_in_view
from .sources import PAGE_KEY, SourceView, document_view, names_source, source_view

__all__ = [
    "CHUNK_KEYS", "ALIASES", "NodeChunks", "NodeChunker", "sort_keywords", "chunker_fields", "check_fields",
    "hidden_keys", "node_text_and_metadata", "grounded_node_fields", "GROUNDING_HIDDEN", "setting_identity", "without_defaults", "keep_unique",
]

#: metadata keys a chunk node gets from its chunk (replaced, not inherited, when a node is re-split):
#: the field table's keys plus LlamaIndex's page keys
CHUNK_KEYS = frozenset({*STORED_KEYS, "page", "page_label"})
#: machine payload: never shown to an embedder or an LLM (the field table decides for chunk keys)
_SOURCE_HIDDEN = (TREE_KEY, TREE_REF_KEY, PARSER_OPTIONS_KEY, PAGE_KEY, "source_sha256", "file_path", "total_pages", "parser", "page")
_EMBED_HIDDEN = (*embed_hidden_keys(), *_SOURCE_HIDDEN)
_LLM_HIDDEN = (*llm_hidden_keys(), *_SOURCE_HIDDEN)
#: LlamaIndex's names of two fields
ALIASES = {"chunk_size": "max_tokens", "chunk_overlap": "overlap"}
#: keys a node does not repeat: the sha256 and parser are in the tree reference, the rest stays on
#: the source Document
_NODE_DROPPED = (
    "source_sha256", "parser",
    "creator", "producer", "subject", "keywords", "creationdate", "moddate",
)


#: node metadata an embedder / LLM never sees (machine payload of the grounding)
GROUNDING_HIDDEN = (
    *PAYLOAD_KEYS, TREE_REF_KEY, PARSER_OPTIONS_KEY, PAGE_KEY, *GROUNDING_KEYS,
    "source_sha256", "file_path", "total_pages", "parser",
)
#: keys describing the parent's own text: recomputed for each grounded node (or dropped when refused)
_GROUNDED_PARENT_KEYS = (*PAYLOAD_KEYS, *GROUNDING_KEYS, "pages", "section")


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


# -- configuration ---------------------------------------------------------------------------------
def sort_keywords(data: dict[str, Any], known: set[str], owner: str) -> dict[str, Any]:
    """Strategy keywords go to ``strategy_options``; anything else unknown is refused, naming what
    ``owner`` accepts (``known``: its fields)."""
    unknown = [k for k in data if k not in known and k not in ALIASES]
    if not unknown:
        return data
    strategy = data.get("strategy", "recursive")
    accepted: set[str] = set()
    if isinstance(strategy, str):  # the strategy's declared options (an undeclared one: all, checked by its class)
        try:
            declared = strategy_class(strategy).options
            accepted = set(unknown) if declared is None else {o.name for o in declared}
        except ChunkingError:
            accepted = set()
    bad = [k for k in unknown if k not in accepted]
    if bad:
        valid = sorted((known - {"callback_manager"}) | set(ALIASES) | accepted)
        raise ChunkingError(f"{owner} got unknown keyword(s) {', '.join(sorted(bad))}; valid keywords: {', '.join(valid)}")
    options = dict(data.get("strategy_options") or {})
    options.update({k: data.pop(k) for k in unknown})
    data["strategy_options"] = options
    return data


def chunker_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The fields of a given ``chunker=`` / ``strategy=<Chunker>`` (its strategy, tokenizer, box mode,
    size, overlap) or of a strategy object (its size and overlap, unless given alike)."""
    data.pop("fingerprint", None)  # derived, written by to_dict
    given = data.pop("chunker", None)
    if isinstance(data.get("strategy"), Chunker):
        given = data["strategy"]
    if given is not None:
        if not isinstance(given, Chunker):
            raise ChunkingError(f"chunker must be a grounded Chunker, got {type(given).__name__}")
        data.update(
            strategy=given.strategy, tokenizer=given.tokenizer, box_mode=given.box_mode,
            max_tokens=given.strategy.max_tokens, overlap=given.strategy.overlap,
        )
    strategy = data.get("strategy")
    if isinstance(strategy, ChunkingStrategy):  # its size is the parser's size
        size = data.get("max_tokens", data.get("chunk_size", strategy.max_tokens))
        if size != strategy.max_tokens:
            raise ChunkingError(
                f"max_tokens={size} differs from the given {type(strategy).__name__} (max_tokens={strategy.max_tokens}); "
                "pass a new strategy object or a strategy name"
            )
        if "max_tokens" not in data and "chunk_size" not in data:
            data["max_tokens"] = strategy.max_tokens
        if "overlap" not in data and "chunk_overlap" not in data:
            data["overlap"] = strategy.overlap
    box_mode = data.get("box_mode", "auto")
    if box_mode not in BOX_MODES:
        raise ChunkingError(f"box_mode must be one of {BOX_MODES}, got {box_mode!r}")
    return data


def check_fields(strategy: Any, max_tokens: int, overlap: int | float, box_mode: str) -> None:
    """The fields agree (checked again on every assignment)."""
    if box_mode not in BOX_MODES:
        raise ChunkingError(f"box_mode must be one of {BOX_MODES}, got {box_mode!r}")
    if isinstance(strategy, ChunkingStrategy):
        if strategy.max_tokens != max_tokens or (isinstance(overlap, int) and overlap and strategy.overlap != overlap):
            raise ChunkingError(
                f"max_tokens={max_tokens}/overlap={overlap} differ from the given {type(strategy).__name__} "
                f"(max_tokens={strategy.max_tokens}, overlap={strategy.overlap}); pass a new strategy object "
                "or a strategy name"
            )
    elif not isinstance(strategy, str):
        raise ChunkingError(f"strategy must be a name, a ChunkingStrategy or a Chunker, got {type(strategy).__name__}")


# -- what a node shows -------------------------------------------------------------------------------
def hidden_keys(given: list[str], *, embed: bool, heading_context: str) -> list[str]:
    """Metadata keys the embedder (``embed``) or the LLM does not see: the input node's own
    exclusions plus the machine payload; the embedder sees ``section`` only with
    ``heading_context="metadata"``, the LLM unless it is ``"none"``."""
    hidden = list(dict.fromkeys([*given, *(_EMBED_HIDDEN if embed else _LLM_HIDDEN)]))
    if embed:
        hidden += ["page_label", "file_name", "pages"]
        if heading_context != "metadata":
            hidden.append("section")
    elif heading_context == "none":
        hidden.append("section")
    return [k for k in dict.fromkeys(hidden) if k != TREE_KEY]


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
    for key in _NODE_DROPPED:  # derivable, or on the source Document: a vector store keeps every key twice
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


# -- one input node -> chunks ---------------------------------------------------------------------------
@dataclass
class NodeChunks:
    """The chunks of one input node; ``root`` is the PDF's tree when they come from it (file keys),
    ``base_offset`` where the chunks' offsets start in the input node's Document."""

    chunks: list[Chunk]
    root: ParsingResult | None
    base_offset: int


#: ``fit(root, chunks, key, whole)``: the chunks with room made for the metadata the embedder sees
Fit = Callable[[ParsingResult, list[Chunk], str, bool], list[Chunk]]


class NodeChunker:
    """The chunks of one input node's text (see :meth:`split`) and the metadata budget
    (:meth:`fit`). ``budgets`` keeps the chunkers of smaller sizes between calls (the owner clears it
    when its configuration changes); ``strategy``: the owner's (a name, or an object of one size)."""

    def __init__(
        self,
        chunker: Chunker,
        *,
        strategy: Any,
        strategy_options: Mapping[str, Any],
        budgets: dict[int, Chunker],
        heading_context: str,
        cache: str | None,
        parse_sources: bool,
    ) -> None:
        self.chunker = chunker
        self.strategy = strategy
        self.options = strategy_options
        self.budgets = budgets
        self.heading_context = heading_context
        self.cache = cache
        self.parse_sources = parse_sources

    def split(self, text: str, meta: Mapping[str, Any], *, start: int | None, name: Any, ref: str, fit: Fit) -> NodeChunks:
        """A Document of grounded's reader (or a chunk of one) is chunked from its parse tree, inside
        its own span when it is a part; any other text is chunked as plain text and grounded in the
        PDF its metadata names (one :class:`GroundingWarning` when that names a PDF it cannot read).
        ``start``: the node's ``start_char_idx``; ``ref``: what names plain text in ids."""
        is_chunk = any(k in meta for k in ("chunk_id", "text_hash", "start_char"))
        view, why = document_view(meta, cache=self.cache, parse=self.parse_sources)
        if view is not None and (meta.get(TREE_REF_KEY) or meta.get(TREE_KEY)):
            root = view.root
            key = view.key
            if meta.get(PAGE_KEY) not in (None, ""):
                key = f"{key}#p{int(meta[PAGE_KEY])}"
            if text == view.text:
                return NodeChunks(fit(root, list(self.chunker.iter_chunks(root, source_key=key)), key, True), root, 0)
            span = view.span_of(text, meta, start)
            if span is not None:
                parts = self.sub_chunks(view, span, key, self.chunker, heading_path_of(meta))
                return NodeChunks(fit(root, parts, key, False), root, 0)
            # text from elsewhere (edited, or a rendering of the PDF): chunked as text, then grounded
        elif view is None and names_source(meta):  # plain text (no source named) has no boxes to give
            warnings.warn(f"{name}: its chunks get no boxes: {why}", GroundingWarning, stacklevel=user_stacklevel())
        plain = text_tree(text)
        plain_key = text_key(text, name=ref)
        chunks = fit(plain, list(self.chunker.iter_chunks(plain, source_key=plain_key)), plain_key, True)
        if view is not None:  # the boxes of their grounding in the PDF; one warning for those that failed
            records = ground_in_view(view, chunks, label=name, box_mode=self.chunker.box_mode)
            chunks = records
        return NodeChunks(chunks, None, start if start is not None and not is_chunk else 0)

    @staticmethod
    def sub_chunks(view: SourceView, span: tuple[int, int], key: str, chunker: Chunker, heading_path: list[str]) -> list[Chunk]:
        """Chunks of document text ``[start, end)`` only (a re-split node's own span, or a chunk that
        does not fit once its metadata is counted), each with the boxes of exactly its span."""
        start, end = span
        doc_text = view.text
        out = []
        for part in chunker.iter_chunks(text_tree(doc_text[start:end]), source_key=key):
            own = part
            s, e = start + (own.start_char or 0), start + (own.end_char or 0)
            record = Chunk.of_boxes(
                chunk_id(key, chunker.fingerprint, s, e), doc_text[s:e],
                view.boxes(s, e, tokenizer=chunker.tokenizer, box_mode=chunker.box_mode),
                start_char=s, end_char=e, token_count=own.token_count, strategy=chunker.strategy.name, heading_path=heading_path,
            )
            out.append(record)
        return out

    def at_budget(self, budget: int) -> Chunker | None:
        """The same configuration at a smaller ``max_tokens`` (room for metadata the embedder sees);
        None for a strategy given as an object (it has one size)."""
        chunker = self.chunker
        if budget >= chunker.max_tokens:
            return chunker
        if isinstance(self.strategy, ChunkingStrategy) or budget < 1:
            return None
        smaller = self.budgets.get(budget)
        if smaller is None:
            overlap = chunker.strategy.overlap
            options = dict(self.options)
            if "heading_budget" in options:
                options["heading_budget"] = min(int(options["heading_budget"]), budget - 1)
            if "min_tokens" in options:
                options["min_tokens"] = min(int(options["min_tokens"]), budget)
            smaller = Chunker(
                self.strategy, budget,
                min(overlap, budget - 1) if overlap else 0, tokenizer=chunker.tokenizer, box_mode=chunker.box_mode, **options,
            )
            self.budgets[budget] = smaller
        return smaller

    def fit(self, root: ParsingResult, chunks: list[Chunk], key: str, *, overhead: Callable[[Chunk], int], whole: bool) -> list[Chunk]:
        """Make room for the metadata the embedder sees (``overhead``: its tokens for a chunk), so
        text + metadata fits ``max_tokens``: the whole document is chunked again at the size that
        leaves room for the largest metadata block; what still does not fit (strategy objects,
        re-split parts) is split inside its own span."""
        max_tokens = self.chunker.max_tokens
        tok = self.chunker.tokenizer
        overheads: dict[str, int] = {}

        def fits(c: Chunk) -> bool:
            if c.id not in overheads:
                overheads[c.id] = overhead(c)
            text = c.content if self.heading_context == "text" else c.body
            return tok.count(text) + overheads[c.id] <= max_tokens

        smaller: Chunker | None = None
        for _ in range(3):
            if all([fits(c) for c in chunks]):  # noqa: C419 - every overhead is needed below
                return chunks
            smaller = self.at_budget(max_tokens - max(overheads.values()))
            if smaller is None or not whole:
                break
            chunks = list(smaller.iter_chunks(root, source_key=key))
        budget = max_tokens - max(overheads.values())
        if budget < 1:
            warnings.warn(
                f"the metadata the embedder sees takes {max(overheads.values())} of max_tokens={max_tokens} tokens; "
                "hide keys with excluded_embed_metadata_keys",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
            return chunks
        if smaller is None or smaller.max_tokens > budget:
            smaller = Chunker("recursive", budget, tokenizer=tok, box_mode=self.chunker.box_mode)
        out: list[Chunk] = []
        view: SourceView | None = None
        for c in chunks:
            if fits(c) or c.start_char is None or c.end_char is None:
                out.append(c)
                continue
            if view is None:
                view, _ = source_view({}, tree=root)
                assert view is not None
            out.extend(self.sub_chunks(view, (c.start_char, c.end_char), key, smaller, c.heading_path))
        return out


def heading_path_of(meta: Mapping[str, Any]) -> list[str]:
    """The heading path a node's metadata records (``heading_path``, or ``section`` alone)."""
    value = meta.get("heading_path")
    if value is None:  # nodes keep the path as ``section`` only
        section = str(meta.get("section") or "")
        return section.split(" > ") if section else []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    return [str(h) for h in value] if isinstance(value, list) else []


def file_info(root: ParsingResult | None) -> dict[str, Any] | None:
    """The file keys of a parse tree that names its PDF (None otherwise)."""
    return source_info(root) if root is not None and root.metadata.get("source") else None


def setting_identity(value: Any) -> Any:
    """How a strategy or tokenizer setting is written in a serialized parser: scalars as they are,
    a strategy object as its name, class and parameters, a tokenizer as its description, anything
    else as its class path."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, ChunkingStrategy):
        return {"name": value.name, "class": type(value).__qualname__, **value.params()}
    if isinstance(value, Tokenizer):
        return value.describe()
    return f"{type(value).__module__}.{type(value).__qualname__}"


def without_defaults(entry: Any, defaults: Mapping[str, Any], class_name: str | None = None) -> Any:
    """A serialized record (a dict) without the fields that hold their ``defaults`` and without
    its constant ``class_name``: reading it back by its field type restores exactly those values."""
    if not isinstance(entry, dict):
        return entry
    out = {name: value for name, value in entry.items() if name not in defaults or value != defaults[name]}
    if class_name is not None and out.get("class_name") == class_name:
        del out["class_name"]
    return out


def same_node_part(a: Any, b: Any) -> bool:
    """Whether two LlamaIndex nodes of one call are the same chunk: same id, text, metadata, offsets
    and SOURCE (what a store keeps of a node, neighbours aside)."""
    return (
        a.node_id == b.node_id
        and a.text == b.text
        and a.metadata == b.metadata
        and (a.start_char_idx, a.end_char_idx) == (b.start_char_idx, b.end_char_idx)
        and a.source_node == b.source_node
    )


def keep_unique(parts: list[Any], seen: dict[str, Any], *, same: Callable[[Any, Any], bool]) -> list[Any]:
    """The parts (nodes with ``node_id``/``id_``) of one input that are not repeats of an earlier
    part of the same call (``seen``, by id): a part ``same`` as the earlier one with its id is that
    chunk again and is dropped; one with an earlier part's id but other content gets
    :func:`~grounded.text.ids.repeat_id` ``<id>~<n>``."""
    kept = []
    for part in parts:
        first = seen.get(part.node_id)
        if first is not None and same(first, part):
            continue
        if first is not None:
            n = 1
            while repeat_id(part.node_id, n) in seen:
                n += 1
            part.id_ = repeat_id(part.node_id, n)
        seen[part.node_id] = part
        kept.append(part)
    return kept
