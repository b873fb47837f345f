"""A token range: what a strategy returns and the assembler turns into a chunk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .stream import TokenStream

__all__ = ["TokenGroup"]


@dataclass(frozen=True, slots=True)
class TokenGroup:
    """One chunk-to-be: body tokens ``[start, end)`` of the stream plus the text-node indices of
    headings prepended to it (hierarchical strategy).

    ``char_start`` / ``char_end`` (document-text offsets) cut the body inside its first / last
    token; only the token bound sets them (:mod:`grounded.text.bound`), for a token whose text
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
