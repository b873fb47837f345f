"""Split one input node, framework-free: which chunks its text becomes (grounded's tree, a re-split
span, or plain text grounded in the PDF) and the room the metadata the embedder sees takes
(:class:`NodeChunker`). The node's text and metadata follow the LlamaIndex profile
(:mod:`.profiles`); ``llama_index_grounded`` keeps the LlamaIndex types (nodes, relationships,
templates) and calls these.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..chunking.base import ChunkingStrategy
from ..chunking.chunker import Chunker
from ..io.box_codec import GroundingWarning
from ..io.tree_payload import TREE_KEY, text_tree
from ..model import Chunk, ParsingResult
from ..parsers.cache import TREE_REF_KEY
from ..runtime.callers import user_stacklevel
from ..text.ids import chunk_id, repeat_id, text_key
from .boxes import ground_in_view
from .profiles import file_info, is_chunk_metadata
from .sources import PAGE_KEY, SourceView, document_view, names_source, source_view

__all__ = ["NodeChunks", "NodeChunker", "Overhead", "settings_key", "ChunkerMemo", "heading_path_of", "Repeats"]


# -- one input node -> chunks ---------------------------------------------------------------------------
@dataclass
class NodeChunks:
    """The chunks of one input node; ``root`` is the PDF's tree when they come from it (file keys),
    ``base_offset`` where the chunks' offsets start in the input node's Document."""

    chunks: list[Chunk]
    root: ParsingResult | None
    base_offset: int


#: ``overhead(chunk, file_info)``: the tokens the embedder sees of a chunk node besides its text
#: (its visible metadata as the framework writes it), ``file_info`` the tree's file keys or None
Overhead = Callable[[Chunk, "dict[str, Any] | None"], int]


def settings_key(
    strategy: Any, max_tokens: int, overlap: int | float, box_mode: str, tokenizer: Any, options: Mapping[str, Any]
) -> tuple[Any, ...]:
    """What tells a splitter's chunking settings apart: scalars by value, a strategy or tokenizer
    object by identity (it may be changed in place only by replacing it), options by their JSON."""
    def ident(value: Any) -> Any:
        return value if value is None or isinstance(value, (str, int, float)) else id(value)

    return (ident(strategy), max_tokens, overlap, box_mode, ident(tokenizer), json.dumps(dict(options), sort_keys=True, default=repr))


class ChunkerMemo:
    """The chunker of a splitter's current settings (:func:`settings_key`), built again only when a
    setting changed, and the smaller chunkers the metadata budget made of it (:attr:`budgets`,
    dropped with it)."""

    def __init__(self) -> None:
        self.key: tuple[Any, ...] | None = None
        self.chunker: Chunker | None = None
        self.budgets: dict[int, Chunker] = {}

    def get(self, key: tuple[Any, ...], build: Callable[[], Chunker]) -> Chunker:
        if self.chunker is None or self.key != key:
            self.chunker, self.key, self.budgets = build(), key, {}
        return self.chunker


class NodeChunker:
    """The chunks of one input node's text (see :meth:`split`) and the metadata budget
    (:meth:`fit`). ``budgets`` keeps the chunkers of smaller sizes between calls (the owner's
    :attr:`ChunkerMemo.budgets`, dropped with its chunker); ``strategy``: the owner's (a name, or an
    object of one size)."""

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

    def split(
        self,
        text: str,
        meta: Mapping[str, Any],
        *,
        start: int | None,
        name: Any,
        ref: str,
        inherited: Mapping[str, Any],
        embed_hidden: Sequence[str],
        overhead: Overhead,
    ) -> NodeChunks:
        """A Document of grounded's reader (or a chunk of one) is chunked from its parse tree, inside
        its own span when it is a part; any other text is chunked as plain text and grounded in the
        PDF its metadata names (one :class:`GroundingWarning` when that names a PDF it cannot read).
        ``start``: the node's ``start_char_idx``; ``ref``: what names plain text in ids."""
        hidden = set(embed_hidden)

        def fit(root: ParsingResult, chunks: list[Chunk], key: str, whole: bool) -> list[Chunk]:
            if self.heading_context != "metadata" and not any(k not in hidden for k in inherited):
                return chunks  # the embedder sees no metadata: nothing to make room for
            info = file_info(root)
            return self.fit(root, chunks, key, overhead=lambda c: overhead(c, info), whole=whole)

        is_chunk = is_chunk_metadata(meta)
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


class Repeats:
    """The parts of one call without repeats (overlapping inputs can give one span twice): a part
    the same as the earlier part with its id is that chunk again and is dropped; one with an earlier
    part's id but other content gets :func:`~grounded.text.ids.repeat_id` ``<id>~<n>``."""

    def __init__(self) -> None:
        self._seen: dict[str, Any] = {}

    def id_for(self, part_id: str, part: Any, same: Callable[[Any, Any], bool]) -> str | None:
        """The id ``part`` (a framework's part, compared by ``same``) keeps, or None to drop it."""
        first = self._seen.get(part_id)
        if first is not None and same(first, part):
            return None
        if first is not None:
            n = 1
            while repeat_id(part_id, n) in self._seen:
                n += 1
            part_id = repeat_id(part_id, n)
        self._seen[part_id] = part
        return part_id
