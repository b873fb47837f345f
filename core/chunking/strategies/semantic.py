"""Breakpoint-based semantic chunking (thesis §3.4.3).

Sentences come from NLTK's Punkt, embeddings from all-MiniLM-L6-v2, both offline
(:mod:`grounded.chunking.nlp`). A breakpoint goes between adjacent sentences whose cosine distance exceeds the Q-th percentile of
all distances; groups below M tokens merge with the next; groups above N are re-split recursively.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from grounded.errors import ChunkingError

from ..base import Option
from ..embedded import (
    EMBEDDER_OPTION,
    LANGUAGE_OPTION,
    Embedder,
    EmbeddingStrategy,
    percentile_breakpoints,
    percentile_option,
)
from ..nlp import minilm_embedder, punkt_sentence_tokenizer
from ..pieces import Document, Piece

#: ``minilm_embedder`` and ``punkt_sentence_tokenizer`` live in :mod:`grounded.chunking.nlp`; this
#: module's names for them are public (README, the adapters' embeddings) and stay
__all__ = ["SemanticStrategy", "punkt_sentence_tokenizer", "minilm_embedder"]


class SemanticStrategy(EmbeddingStrategy):
    """Parameters: ``percentile`` Q in (0, 1) (thesis grid 0.7 / 0.9), ``min_tokens`` M (default
    N/2), ``embedder`` (texts -> normalized vectors; default MiniLM), ``language`` for Punkt.
    The sentence groups partition the document: ``overlap`` must be 0 (as for ``cluster`` and
    ``kamradt_mod``; the base class raises :class:`~grounded.errors.ChunkingError` otherwise)."""

    name = "semantic"
    piece_kind = "sentence"
    supports_overlap = False
    options = (
        percentile_option(0.9),
        Option("min_tokens", int, None, "minimum chunk size M (default: max-tokens / 2)", low=0),
        EMBEDDER_OPTION,
        LANGUAGE_OPTION,
    )

    def __init__(
        self,
        max_tokens: int = 256,
        overlap: int = 0,
        percentile: float = 0.9,
        min_tokens: int | None = None,
        embedder: Embedder | None = None,
        language: str = "english",
    ) -> None:
        super().__init__(max_tokens, overlap)
        if not 0.0 < percentile < 1.0:
            raise ChunkingError(f"percentile must be in (0, 1), got {percentile!r}")
        self.percentile = percentile
        self.min_tokens = max_tokens // 2 if min_tokens is None else int(min_tokens)
        if not 0 <= self.min_tokens <= max_tokens:
            raise ChunkingError(f"min_tokens must be in [0, max_tokens], got {min_tokens!r}")
        self._embedder = embedder
        self.language = language
        self._sentences = punkt_sentence_tokenizer(language)

    def piece_options(self) -> dict[str, Any]:
        return {"language": self.language}

    def split(self, pieces: Sequence[Piece], doc: Document) -> Iterator[tuple[int, int]]:
        """Sentences (delimiters join the following sentence, so they tile the document) grouped at
        breakpoints, short groups merged, long ones re-split."""
        bounds = [(p.start, p.end) for p in pieces]
        if len(bounds) > 1:
            vecs = self.embedder([p.text for p in pieces])
            sims = np.sum(vecs[:-1] * vecs[1:], axis=1)  # the embedder's vectors are normalized
            breaks = percentile_breakpoints(1.0 - sims, self.percentile)
        else:
            breaks = []
        edges = [0, *breaks, len(bounds)]
        groups = [(bounds[a][0], bounds[b - 1][1]) for a, b in zip(edges, edges[1:], strict=False) if b > a]
        for lo, hi in self._enforce_sizes(groups):
            yield from doc.split(lo, hi, self.max_tokens)

    def _enforce_sizes(self, groups: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Merge groups shorter than M with the following ones (the last short group joins its predecessor
        when that stays within N)."""
        merged: list[tuple[int, int]] = []
        pending: tuple[int, int] | None = None
        for lo, hi in groups:
            pending = (pending[0], hi) if pending else (lo, hi)
            if pending[1] - pending[0] >= self.min_tokens:
                merged.append(pending)
                pending = None
        if pending:
            if merged and pending[1] - merged[-1][0] <= self.max_tokens:
                merged[-1] = (merged[-1][0], pending[1])
            else:
                merged.append(pending)
        return merged
