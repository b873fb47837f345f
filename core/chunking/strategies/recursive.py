"""Recursive delimiter chunking (thesis §3.4.2) on the whole document's token stream."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ...errors import ChunkingError
from ...model import ParsingResult
from ..base import ChunkingStrategy, TokenGroup, register_strategy
from ..splitting import DEFAULT_DELIMITERS, recursive_split
from ..stream import TokenStream


@register_strategy
class RecursiveStrategy(ChunkingStrategy):
    """Split at the coarsest delimiter that yields pieces, recurse into pieces above N with the
    next delimiter, then merge neighbours up to N with an overlap of O tokens."""

    name = "recursive"

    def __init__(self, max_tokens: int = 256, overlap: int = 0, delimiters: Sequence[str] | None = None) -> None:
        super().__init__(max_tokens, overlap)
        self.delimiters = tuple(DEFAULT_DELIMITERS if delimiters is None else delimiters)
        if not self.delimiters:
            raise ChunkingError("delimiters must not be empty")

    def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
        for start, end in recursive_split(stream, 0, len(stream), self.max_tokens, self.overlap, self.delimiters):
            yield TokenGroup(start, end)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "delimiters": list(self.delimiters)}
