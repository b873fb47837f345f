"""The chunking module's facade: tree -> token stream -> strategy groups -> assembled chunks."""

from __future__ import annotations

import gc
import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ChunkingError
from ..model import Chunk, ChunkingResult, ParsingResult
from ..model import ParsingResultType as T
from .assembly import BOX_MODES, ChunkAssembler
from .base import ChunkingStrategy, strategy_class
from .stream import TokenStream, build_stream, document_text
from .tokenizer import Tokenizer, load_tokenizer

__all__ = ["Chunker", "chunk"]


def _resolve_overlap(overlap: int | float, max_tokens: int) -> int:
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
            self.strategy = strategy_class(strategy)(max_tokens, _resolve_overlap(overlap, max_tokens), **options)
        self.tokenizer: Tokenizer = load_tokenizer(tokenizer)
        self.box_mode = box_mode

    @property
    def max_tokens(self) -> int:
        return self.strategy.max_tokens

    def stream(self, root: ParsingResult) -> TokenStream:
        if root.type != T.ROOT:
            raise ChunkingError(f"chunking needs a ROOT node, got {root.type}")
        return build_stream(root, self.tokenizer, document_text(root))

    def iter_chunks(self, root: ParsingResult) -> Iterator[Chunk]:
        """Lazily yield chunks in reading order."""
        stream = self.stream(root)
        assembler = ChunkAssembler(stream, root, strategy=self.strategy.name, box_mode=self.box_mode, doc_key=_doc_key(root, stream))
        for index, group in enumerate(self.strategy.groups(stream, root)):
            if group.end <= group.start:
                continue
            yield assembler.assemble(group, index)

    def chunk(self, root: ParsingResult) -> ChunkingResult:
        started = time.perf_counter()
        with _gc_paused():
            chunks = list(self.iter_chunks(root))
        metadata = {
            "strategy": self.strategy.name,
            "parameters": self.strategy.params(),
            "box_mode": self.box_mode,
            "tokenizer": self.tokenizer.describe(),
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


def _doc_key(root: ParsingResult, stream: TokenStream) -> str:
    sha = root.metadata.get("source", {}).get("sha256") if isinstance(root.metadata.get("source"), dict) else None
    if not sha:
        sha = hashlib.sha256(stream.text.encode("utf-8")).hexdigest()
    return str(sha)[:12]


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
