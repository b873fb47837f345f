"""Strategy interface and registry: a new strategy is one module with one registered class."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ..errors import ChunkingError
from ..model import ParsingResult
from .stream import TokenStream

__all__ = ["TokenGroup", "ChunkingStrategy", "STRATEGIES", "register_strategy", "strategy_class"]


@dataclass(frozen=True, slots=True)
class TokenGroup:
    """One chunk-to-be: body tokens ``[start, end)`` of the stream plus the text-node indices of
    headings prepended to it (hierarchical strategy)."""

    start: int
    end: int
    headings: tuple[int, ...] = ()

    def __len__(self) -> int:
        return self.end - self.start


class ChunkingStrategy(ABC):
    """Groups a :class:`TokenStream` into :class:`TokenGroup` s lazily (a generator).

    ``max_tokens`` (N) bounds every chunk including prepended headings; ``overlap`` (O) tokens are
    repeated between consecutive windows where the strategy supports it.
    """

    name: ClassVar[str] = ""

    def __init__(self, max_tokens: int = 256, overlap: int = 0) -> None:
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ChunkingError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if not isinstance(overlap, int) or not 0 <= overlap < max_tokens:
            raise ChunkingError(f"overlap must be an int in [0, max_tokens), got {overlap!r} with max_tokens={max_tokens}")
        self.max_tokens = max_tokens
        self.overlap = overlap

    @abstractmethod
    def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
        """Yield token groups in reading order."""

    def params(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "overlap": self.overlap}


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

