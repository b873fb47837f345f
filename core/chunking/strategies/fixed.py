"""Fixed-size windows of N tokens with O tokens of overlap (thesis §3.4.1)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..pieces import Document, Piece, PieceStrategy


class FixedSizeStrategy(PieceStrategy):
    """Emit the first N tokens of the queue, drop N - O, repeat; the residue forms a final chunk.

    Window ends are moved back to the nearest word start so no word is cut in two (a word longer
    than N is the only exception)."""

    name = "fixed"
    piece_kind = None
    options = ()

    def split(self, pieces: Sequence[Piece], doc: Document) -> Iterable[tuple[int, int]]:
        return doc.windows(0, len(doc), self.max_tokens, self.overlap)
