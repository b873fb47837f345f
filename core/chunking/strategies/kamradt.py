"""Kamradt semantic chunking with a size target (Chroma's ``KamradtModifiedChunker``).

The document is split into small pieces (at most ``min_chunk_tokens`` tokens, default 50, with the
recursive delimiter splitter). Each piece is embedded together with its ``buffer`` neighbours on
either side (a sliding window of text, default 3 as in Chroma's reference); the cosine distance
between consecutive windows marks topic shifts. Instead of Kamradt's fixed percentile, a binary
search finds the distance threshold whose breakpoints (distances above it) make the number of
chunks closest to, and not above, ``total tokens / avg_tokens`` (target average chunk size,
default ``max_tokens``). Chunks above ``max_tokens`` are then re-split by the recursive strategy.

Cost: P pieces embedded once as P windows (each of up to 2 buffer + 1 pieces), O(P D) for the
distances, O(P log(1/tol)) for the search.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from grounded.errors import ChunkingError

from ..base import Option, is_int
from ..embedded import (
    EMBEDDER_OPTION,
    Embedder,
    EmbeddingStrategy,
    consecutive_distances,
    embed_checked,
    neighbour_windows,
    split_at,
)
from ..pieces import Document, Piece

__all__ = ["KamradtModifiedStrategy", "threshold_for_cuts", "breakpoints"]


def threshold_for_cuts(distances: np.ndarray, cuts: int) -> float:
    """The smallest threshold ``t`` with at most ``cuts`` distances strictly above it: the
    ``cuts + 1``-th largest distance, exactly (a search to a tolerance could not tell apart distances
    closer than it and gave too few cuts). More cuts means smaller chunks, so this hits the target
    average size from the large side; tied distances never push the cuts over the budget.
    ``cuts >= len(distances)`` gives a threshold below every distance."""
    d = np.asarray(distances, dtype=np.float64)
    if d.size == 0:
        return 0.0
    if cuts >= d.size:
        return float(d.min()) - 1.0
    return float(np.sort(d)[::-1][max(cuts, 0)])


def breakpoints(distances: np.ndarray, threshold: float) -> list[int]:
    """Piece indices ``i + 1`` where a new chunk starts (distance ``i`` above the threshold)."""
    return [i + 1 for i in np.flatnonzero(np.asarray(distances) > threshold).tolist()]


class KamradtModifiedStrategy(EmbeddingStrategy):
    """Parameters: ``avg_tokens`` (target mean chunk size, default ``max_tokens``),
    ``min_chunk_tokens`` (piece size, default 50, at most N), ``buffer`` (neighbour pieces on each side in an
    embedding window, default 3), ``embedder`` (texts -> normalized vectors; default MiniLM)."""

    name = "kamradt_mod"
    piece_kind = "split"
    supports_overlap = False
    options = (
        Option("avg_tokens", int, None, "target mean chunk size (default: max-tokens)", low=1),
        Option("min_chunk_tokens", int, None, "tokens per piece (default: min(50, max-tokens))", low=1),
        Option("buffer", int, 3, "neighbour pieces on each side in an embedding window", low=0),
        EMBEDDER_OPTION,
    )

    def __init__(
        self,
        max_tokens: int = 256,
        overlap: int = 0,
        avg_tokens: int | None = None,
        min_chunk_tokens: int | None = None,
        buffer: int = 3,
        embedder: Embedder | None = None,
    ) -> None:
        super().__init__(max_tokens, overlap)
        self.avg_tokens = max_tokens if avg_tokens is None else avg_tokens
        if not is_int(self.avg_tokens) or self.avg_tokens < 1:
            raise ChunkingError(f"avg_tokens must be a positive int, got {avg_tokens!r}")
        if min_chunk_tokens is None:
            min_chunk_tokens = min(50, self.max_tokens)
        if not is_int(min_chunk_tokens) or not 1 <= min_chunk_tokens <= max_tokens:
            raise ChunkingError(f"min_chunk_tokens must be an int in [1, max_tokens], got {min_chunk_tokens!r}")
        if not is_int(buffer) or buffer < 0:
            raise ChunkingError(f"buffer must be a non-negative int, got {buffer!r}")
        self.avg_tokens = int(self.avg_tokens)
        self.min_chunk_tokens = int(min_chunk_tokens)
        self.buffer = int(buffer)
        self._embedder = embedder

    def piece_options(self) -> dict[str, Any]:
        return {"max_tokens": self.min_chunk_tokens}

    def split(self, pieces: Sequence[Piece], doc: Document) -> Iterator[tuple[int, int]]:
        if not pieces:
            return
        starts = [0]
        if len(pieces) > 1:
            windows = neighbour_windows(pieces, doc, self.buffer)
            distances = consecutive_distances(embed_checked(self.embedder, windows, "windows"))
            total = sum(p.tokens for p in pieces)
            cuts = max(0, -(-total // self.avg_tokens) - 1)  # chunks = ceil(total / avg)
            starts += breakpoints(distances, threshold_for_cuts(distances, cuts))
        yield from split_at(pieces, doc, starts, self.max_tokens)
