"""The chunking module's facade: tree -> token stream -> strategy groups -> assembled chunks."""

from __future__ import annotations

import gc
import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import ChunkingError
from ..model.chunk import Chunk, ChunkingResult
from ..model.elements import ParsingResult
from ..model.elements import ParsingResultType as T
from ..text.assembly import BOX_MODES, ChunkAssembler
from ..text.bound import enforce_bound
from ..text.ids import class_identity, repeat_id, stable_hash
from ..text.ids import source_key as _source_key
from ..text.stream import TokenStream, build_stream, document_text
from ..text.tokenizer import Tokenizer, load_tokenizer
from .base import ChunkingStrategy, strategy_class

__all__ = ["Chunker", "chunk", "GroundedTextStrategy"]


@runtime_checkable
class GroundedTextStrategy(Protocol):
    """A strategy whose chunks are texts grounded in the document (a model's chunks), not token
    ranges of the stream: it builds its chunks itself with the document's assembler (ids, boxes for
    any char span) and keeps the token bound and the chunk invariants (``vision``)."""

    def chunks(self, root: ParsingResult, assembler: ChunkAssembler) -> Iterator[Chunk]: ...


def _resolve_overlap(overlap: int | float, max_tokens: int) -> int:
    if isinstance(overlap, bool) or not isinstance(overlap, (int, float, np.integer)):
        raise ChunkingError(f"overlap must be a token count or a fraction in (0, 1), got {overlap!r}")
    if isinstance(overlap, float) and 0.0 < overlap < 1.0:
        return int(round(overlap * max_tokens))
    if isinstance(overlap, float) and not overlap.is_integer():
        raise ChunkingError(f"overlap must be a token count or a fraction in (0, 1), got {overlap!r}")
    return int(overlap)


class Chunker:
    """Chunk parse trees with one strategy and one tokenizer.

    ``overlap`` is a token count or, as a float in (0, 1), a fraction of ``max_tokens``.
    Strategy-specific options (``delimiters``, ``percentile``, ``min_tokens``, ``embedder``,
    ``heading_budget``) are passed through ``**options``.

    Token bound (:mod:`grounded.text.bound`): every chunk's ``content``, headings included,
    encodes to at most ``max_tokens`` tokens by the chunker's tokenizer (no special tokens), except
    a chunk that holds one single character (with its combining marks) that alone encodes to more.
    """

    def __init__(
        self,
        strategy: str | ChunkingStrategy = "recursive",
        max_tokens: int = 256,
        overlap: int | float = 0,
        *,
        tokenizer: Any = None,
        box_mode: str = "auto",
        **options: Any,
    ) -> None:
        if box_mode not in BOX_MODES:
            raise ChunkingError(f"box_mode must be one of {BOX_MODES}, got {box_mode!r}")
        if isinstance(strategy, ChunkingStrategy):
            if options:
                raise ChunkingError("options cannot be combined with a strategy instance")
            self.strategy = strategy
        else:
            cls = strategy_class(strategy)
            checked = cls.check_options(options)  # by the declaration: a typed error naming strategy and option
            self.strategy = cls(max_tokens, _resolve_overlap(overlap, max_tokens), **checked)
        self.tokenizer: Tokenizer = load_tokenizer(tokenizer)
        self.box_mode = box_mode
        self._fingerprint: str | None = None

    @property
    def max_tokens(self) -> int:
        return self.strategy.max_tokens

    def config(self) -> dict[str, Any]:
        """Everything that decides the chunks of a tree: strategy (class, name, all parameters,
        semantic embedder), tokenizer identity and box mode (what :attr:`fingerprint` hashes)."""
        strategy = self.strategy
        cls = type(strategy)
        config: dict[str, Any] = {
            "strategy": strategy.name,
            "strategy_class": class_identity(cls),
            "parameters": strategy.params(),
            "tokenizer": _tokenizer_identity(self.tokenizer),
            "box_mode": self.box_mode,
        }
        if hasattr(strategy, "_embedder"):  # semantic: the embedder decides the breakpoints
            embedder = getattr(strategy, "_embedder", None)
            config["embedder"] = "default" if embedder is None else _callable_identity(embedder)
        return config

    @property
    def fingerprint(self) -> str:
        """Stable hex hash of :meth:`config` (same across processes and runs): part of every chunk id,
        so two configurations never share ids."""
        if self._fingerprint is None:
            self._fingerprint = stable_hash(self.config())
        return self._fingerprint

    def stream(self, root: ParsingResult) -> TokenStream:
        if root.type != T.ROOT:
            raise ChunkingError(f"chunking needs a ROOT node, got {root.type}")
        return build_stream(root, self.tokenizer, document_text(root))

    def assembler(self, root: ParsingResult, *, source_key: str | None = None) -> ChunkAssembler:
        """The assembler of ``root``'s token stream: builds this chunker's chunks and gives boxes for any
        char span of the document text (``boxes_for_chars``), e.g. for parts of a re-split chunk."""
        stream = self.stream(root)
        key = source_key or _source_key(root.metadata, stream.text)
        return ChunkAssembler(
            stream, root, strategy=self.strategy.name, box_mode=self.box_mode, doc_key=key, fingerprint=self.fingerprint
        )

    def iter_chunks(self, root: ParsingResult, *, source_key: str | None = None) -> Iterator[Chunk]:
        """Lazily yield chunks in reading order.

        Chunk ids come from :func:`grounded.text.ids.chunk_id` of the source key (default: the
        PDF's sha256 + parser from the root metadata, or a hash of the text), :attr:`fingerprint`
        and the chunk's char span. Pass ``source_key`` to name the source yourself (an adapter
        chunking plain text passes its document id, so equal texts of two documents differ)."""
        assembler = self.assembler(root, source_key=source_key)
        stream = assembler.stream
        seen: dict[str, int] = {}
        if isinstance(self.strategy, GroundedTextStrategy):
            chunks: Iterator[Chunk] = self.strategy.chunks(root, assembler)
        else:
            groups = enforce_bound(self.strategy.groups(stream, root), stream, self.strategy.max_tokens)  # bound.py
            chunks = (assembler.assemble(g, i) for i, g in enumerate(groups) if g.end > g.start)
        for chunk in chunks:
            repeats = seen.get(chunk.id, 0)
            seen[chunk.id] = repeats + 1
            if repeats:  # one body span twice (a custom strategy): still one id per chunk
                chunk.id = repeat_id(chunk.id, repeats)
            yield chunk

    def chunk(self, root: ParsingResult, *, source_key: str | None = None) -> ChunkingResult:
        started = time.perf_counter()
        with _gc_paused():
            chunks = list(self.iter_chunks(root, source_key=source_key))
        metadata = {
            "strategy": self.strategy.name,
            "parameters": self.strategy.params(),
            "box_mode": self.box_mode,
            "tokenizer": self.tokenizer.describe(),
            "fingerprint": self.fingerprint,
            "elapsed_seconds": round(time.perf_counter() - started, 4),
            "chunk_count": len(chunks),
            "document": {k: v for k, v in root.metadata.items()},
        }
        return ChunkingResult(chunks=chunks, metadata=_jsonable(metadata))


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many small objects: a parse tree holds hundreds of
    thousands of boxes, and generation scans over them would dominate assembly time. The chunks
    hold no reference cycles, so nothing accumulates meanwhile."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _callable_identity(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    module = getattr(fn, "__module__", None) or type(fn).__module__
    model = getattr(fn, "model_name", None) or getattr(fn, "name", None)
    return f"{module}.{name}" + (f"[{model}]" if isinstance(model, str) else "")


def _tokenizer_identity(tokenizer: Tokenizer) -> dict[str, Any]:
    """Name, kind and - where the tokenizer can be serialized - a hash of its vocabulary/config,
    so two tokenizer.json files at one path (or one vocabulary under two names) are told apart."""
    identity: dict[str, Any] = {**tokenizer.describe(), "class": class_identity(type(tokenizer))}
    inner = getattr(tokenizer, "_tok", None)
    to_str = getattr(inner, "to_str", None)
    if callable(to_str):
        identity["vocab_sha256"] = hashlib.sha256(str(to_str()).encode("utf-8")).hexdigest()
    fn = getattr(tokenizer, "_fn", None)
    if fn is not None:
        identity["callable"] = _callable_identity(fn)
    return identity


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def chunk(
    root: ParsingResult,
    strategy: str = "recursive",
    max_tokens: int = 256,
    overlap: int | float = 0,
    *,
    tokenizer: Any = None,
    box_mode: str = "auto",
    **options: Any,
) -> ChunkingResult:
    """One-call chunking: ``chunk(root, "hierarchical", max_tokens=512)``."""
    return Chunker(strategy, max_tokens, overlap, tokenizer=tokenizer, box_mode=box_mode, **options).chunk(root)
