"""Recursive delimiter chunking (thesis §3.4.2) on the whole document's token stream."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from grounded.errors import ChunkingError
from grounded.text.splitting import DEFAULT_DELIMITERS

from ..base import Option
from ..pieces import Document, Piece, PieceStrategy


class RecursiveStrategy(PieceStrategy):
    """Split at the coarsest delimiter that yields pieces, recurse into pieces above N with the
    next delimiter, then merge neighbours up to N with an overlap of O tokens."""

    name = "recursive"
    piece_kind = None
    options = (
        Option("delimiters", None, param=True,
               help="the delimiters to split at, coarsest first (default: paragraphs, lines, sentences, words)"),
    )

    def __init__(self, max_tokens: int = 256, overlap: int = 0, delimiters: Sequence[str] | None = None) -> None:
        super().__init__(max_tokens, overlap)
        self.delimiters = tuple(DEFAULT_DELIMITERS if delimiters is None else delimiters)
        if not self.delimiters:
            raise ChunkingError("delimiters must not be empty")

    def split(self, pieces: Sequence[Piece], doc: Document) -> Iterable[tuple[int, int]]:
        return doc.split(0, len(doc), self.max_tokens, self.overlap, self.delimiters)
