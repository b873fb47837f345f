"""Greg Kamradt's original semantic chunker (Chroma's ``KamradtSemanticChunker`` row; LangChain's
``SemanticChunker`` with its defaults).

The algorithm, as seed 003 describes it and LangChain implements it: split the document into
sentences; embed each sentence *combined* with its ``buffer`` neighbours on either side (a sliding
window, LangChain's ``buffer_size=1``); compute the cosine distance between consecutive combined
sentences; a new chunk starts after every distance strictly above the ``percentile``-th percentile of
all distances (LangChain's default ``breakpoint_threshold_amount=95``, numpy's linear
interpolation). There is no minimum chunk size and no target size: the threshold is relative, so the
chunks grow with the corpus (Chroma's row reads "N/A (~660)").

Differences from the reference, all forced by this library's contract:

* sentences are NLTK Punkt sentences that never cross a text element (``piece_kind = "sentence"``),
  not LangChain's regex ``(?<=[.?!])\\s+`` over the raw text; a window is the exact document text
  from its first to its last sentence (LangChain joins the sentence strings with a space);
* a group above ``max_tokens`` is re-split by the recursive delimiter splitter (every strategy's
  chunks fit N); pass a large N to reproduce the unbounded original.

Cost: S sentences embedded once as S windows, O(S D) for the distances.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from grounded.errors import ChunkingError

from ..base import Option, is_int
from ..embedded import (
    EMBEDDER_OPTION,
    LANGUAGE_OPTION,
    Embedder,
    EmbeddingStrategy,
    consecutive_distances,
    embed_checked,
    neighbour_windows,
    percentile_breakpoints,
    percentile_option,
    split_at,
)
from ..pieces import Document, Piece

__all__ = ["KamradtStrategy", "percentile_breakpoints"]


class KamradtStrategy(EmbeddingStrategy):
    """Parameters: ``percentile`` (breakpoint quantile in (0, 1), default 0.95), ``buffer`` (sentences
    on each side combined into one embedding window, default 1), ``embedder`` (texts -> vectors;
    default MiniLM), ``language`` (Punkt sentences). No overlap: the chunks partition the document."""

    name = "kamradt"
    piece_kind = "sentence"
    supports_overlap = False
    options = (
        percentile_option(0.95),
        Option("buffer", int, 1, "sentences on each side combined into one embedding window", low=0),
        EMBEDDER_OPTION,
        LANGUAGE_OPTION,
    )

    def __init__(
        self,
        max_tokens: int = 256,
        overlap: int = 0,
        percentile: float = 0.95,
        buffer: int = 1,
        embedder: Embedder | None = None,
        language: str = "english",
    ) -> None:
        super().__init__(max_tokens, overlap)
        if isinstance(percentile, bool) or not isinstance(percentile, (int, float)) or not 0.0 < percentile < 1.0:
            raise ChunkingError(f"percentile must be a number in (0, 1), got {percentile!r}")
        if not is_int(buffer) or buffer < 0:
            raise ChunkingError(f"buffer must be a non-negative int, got {buffer!r}")
        self.percentile = float(percentile)
        self.buffer = int(buffer)
        self.language = language
        self._embedder = embedder

    def piece_options(self) -> dict[str, Any]:
        return {"language": self.language}

    def windows(self, pieces: Sequence[Piece], doc: Document) -> list[str]:
        """Each sentence with its ``buffer`` neighbours on either side, as exact document text."""
        return neighbour_windows(pieces, doc, self.buffer)

    def split(self, pieces: Sequence[Piece], doc: Document) -> Iterator[tuple[int, int]]:
        if not pieces:
            return
        starts = [0]
        if len(pieces) > 1:
            distances = consecutive_distances(embed_checked(self.embedder, self.windows(pieces, doc), "windows"))
            starts += percentile_breakpoints(distances, self.percentile)
        yield from split_at(pieces, doc, starts, self.max_tokens)
