"""Strategy interface and registry: a new strategy is one module with one registered class."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any, ClassVar, TypeVar

from ..errors import ChunkingError
from ..model import ParsingResult
from .stream import TokenStream

__all__ = ["TokenGroup", "ChunkingStrategy", "STRATEGIES", "register_strategy", "strategy_class"]


@dataclass(frozen=True, slots=True)
class TokenGroup:
    """One chunk-to-be: body tokens ``[start, end)`` of the stream plus the text-node indices of
    headings prepended to it (hierarchical strategy).

    ``char_start`` / ``char_end`` (document-text offsets) cut the body inside its first / last
    token; only the token bound sets them (:mod:`grounded.chunking.bound`), for a token whose text
    alone re-tokenizes to more than N tokens."""

    start: int
    end: int
    headings: tuple[int, ...] = ()
    char_start: int | None = None
    char_end: int | None = None

    def __len__(self) -> int:
        return self.end - self.start

    def char_span(self, stream: TokenStream) -> tuple[int, int]:
        """Document-text span of the body: the tokens' span, cut at ``char_start`` / ``char_end``."""
        start, end = stream.char_span(self.start, self.end)
        if self.char_start is not None:
            start = max(start, self.char_start)
        if self.char_end is not None:
            end = min(end, self.char_end)
        return start, end

    def clip_extents(self, extents: Sequence[Any], stream: TokenStream) -> Sequence[Any]:
        """Cut the element extents of the chunk assembly (objects with ``node``, ``char_lo``,
        ``char_hi``) at ``char_start`` / ``char_end``; unchanged without a cut."""
        if self.char_start is None and self.char_end is None:
            return extents
        offsets = stream.doc.element_offsets
        for ext in extents:
            base = offsets[ext.node.id]
            if self.char_start is not None:
                ext.char_lo = max(ext.char_lo, self.char_start - base)
            if self.char_end is not None:
                ext.char_hi = min(ext.char_hi, self.char_end - base)
        return extents


class ChunkingStrategy(ABC):
    """Groups a :class:`TokenStream` into :class:`TokenGroup` s lazily (a generator).

    The full-control interface; most strategies derive from
    :class:`grounded.chunking.pieces.PieceStrategy` instead (pieces in, token ranges out).

    ``max_tokens`` (N) bounds every chunk including prepended headings; ``overlap`` (O) tokens are
    repeated between consecutive windows where the strategy supports it.
    """

    name: ClassVar[str] = ""
    #: the strategy embeds text through an ``embedder`` option (an evaluation run passes its cached one)
    uses_embedder: ClassVar[bool] = False
    #: False: the chunks partition the document, ``overlap`` must be 0
    supports_overlap: ClassVar[bool] = True

    def __init__(self, max_tokens: int = 256, overlap: int = 0) -> None:
        if not _is_int(max_tokens) or max_tokens < 1:
            raise ChunkingError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if not _is_int(overlap) or not 0 <= overlap < max_tokens:
            raise ChunkingError(f"overlap must be an int in [0, max_tokens), got {overlap!r} with max_tokens={max_tokens}")
        if overlap and not self.supports_overlap:
            raise ChunkingError(f"the {self.name} strategy partitions the document: overlap must be 0")
        self.max_tokens = int(max_tokens)
        self.overlap = int(overlap)

    @abstractmethod
    def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
        """Yield token groups in reading order."""

    def params(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "overlap": self.overlap}


def _is_int(value: Any) -> bool:
    """An integer (numpy integers included) that is not a bool (``True`` is no token count)."""
    return isinstance(value, Integral) and not isinstance(value, bool)


STRATEGIES: dict[str, type[ChunkingStrategy]] = {}
S = TypeVar("S", bound=type[ChunkingStrategy])


def register_strategy(cls: S) -> S:
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    STRATEGIES[cls.name] = cls
    return cls


def strategy_class(name: str) -> type[ChunkingStrategy]:
    from . import strategies  # noqa: F401  (registers the built-in strategies)

    try:
        return STRATEGIES[name]
    except KeyError:
        raise ChunkingError(f"unknown strategy {name!r}; choose one of: {', '.join(sorted(STRATEGIES))}") from None

