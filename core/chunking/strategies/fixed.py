"""Fixed-size windows of N tokens with O tokens of overlap (thesis §3.4.1)."""

from __future__ import annotations

from collections.abc import Iterator

from ...model import ParsingResult
from ..base import ChunkingStrategy, TokenGroup, register_strategy
from ..splitting import window_split
from ..stream import TokenStream


@register_strategy
class FixedSizeStrategy(ChunkingStrategy):
    """Emit the first N tokens of the queue, drop N - O, repeat; the residue forms a final chunk.

    Window ends are moved back to the nearest word start so no word is cut in two (a word longer
    than N is the only exception)."""

    name = "fixed"

    def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
        for start, end in window_split(stream, 0, len(stream), self.max_tokens, self.overlap):
            yield TokenGroup(start, end)
