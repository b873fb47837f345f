"""Cluster semantic chunking (Chroma's ``ClusterSemanticChunker``, Smith & Troynikov 2024).

The document is split into small pieces (at most ``piece_tokens`` tokens, default 50, with the
recursive delimiter splitter). Pieces are embedded; the chunks are the partition of the piece
sequence into contiguous runs that maximizes the sum, over all runs, of the pairwise similarities
inside each run, where a similarity is the cosine similarity minus the mean similarity of all
piece pairs of the document (as Chroma centres its matrix; a run of one piece scores 0). A run
holds at most ``max_tokens // piece_tokens`` pieces (Chroma's bound) and at most ``max_tokens``
tokens (so the token bound never has to cut a chunk).

Cost: with P pieces, K = max pieces per chunk and embedding dimension D, the band of
similarities ``s[i, i+1..i+K-1]`` takes O(P K D) time and O(P K) memory; the dynamic programme
is O(P K). The mean of all pairwise similarities comes from the sum of the vectors in O(P D), so
no P x P matrix is ever built.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from grounded.errors import ChunkingError

from ..base import Option, is_int
from ..embedded import EMBEDDER_OPTION, Embedder, EmbeddingStrategy, embed_checked
from ..pieces import Document, Piece, Span, join

__all__ = ["ClusterStrategy", "mean_pair_similarity", "similarity_band", "optimal_segmentation"]


def mean_pair_similarity(vecs: np.ndarray) -> float:
    """Mean of ``v_i . v_j`` over all pairs ``i < j`` in O(P D): ``(|sum v|^2 - sum |v_i|^2) / 2``."""
    p = vecs.shape[0]
    if p < 2:
        return 0.0
    v = vecs.astype(np.float64)
    total = v.sum(axis=0)
    pair_sum = (float(total @ total) - float(np.einsum("ij,ij->", v, v))) / 2.0
    return pair_sum / (p * (p - 1) / 2.0)


def similarity_band(vecs: np.ndarray, width: int, centre: float = 0.0) -> np.ndarray:
    """``band[i, d] = v_i . v_{i+d} - centre`` for ``d`` in ``1..width-1`` (column 0 and pairs past
    the end are 0): the only similarities a run of at most ``width`` pieces can use."""
    p = vecs.shape[0]
    band = np.zeros((p, max(width, 1)), dtype=np.float64)
    v = vecs.astype(np.float64)
    for d in range(1, width):
        if d >= p:
            break
        band[: p - d, d] = np.einsum("ij,ij->i", v[: p - d], v[d:]) - centre
    return band


def optimal_segmentation(band: np.ndarray, sizes: Sequence[int], max_pieces: int, max_tokens: int) -> list[tuple[int, int]]:
    """Piece ranges ``[a, b)`` tiling ``0..P`` that maximize the sum over ranges of
    ``sum_{a <= i < j < b} band[i, j - i]`` with at most ``max_pieces`` pieces and ``max_tokens``
    tokens (``sizes`` are the pieces' token counts) per range; a single piece is always allowed.

    ``best[j]`` is the optimum for the first ``j`` pieces; the reward of ``[a, j)`` grows from
    ``[a + 1, j)`` by the row ``band[a, 1 .. j-1-a]``, read off a prefix sum, so each end ``j`` costs
    O(K). Ties keep the longest run (fewer chunks)."""
    p = band.shape[0]
    if p == 0:
        return []
    k = max(1, int(max_pieces))
    prefix = np.cumsum(band, axis=1)  # prefix[a, d] = sum of band[a, 1..d] (band[a, 0] == 0)
    csize = np.concatenate(([0], np.cumsum(np.asarray(sizes, dtype=np.int64))))
    best = np.full(p + 1, -np.inf)
    best[0] = 0.0
    back = np.zeros(p + 1, dtype=np.int64)
    for j in range(1, p + 1):
        reward = 0.0
        best_val, best_start = -np.inf, j - 1
        for a in range(j - 1, max(-1, j - 1 - k), -1):
            if a < j - 1:
                if csize[j] - csize[a] > max_tokens:
                    break
                reward += 2.0 * float(prefix[a, min(j - 1 - a, prefix.shape[1] - 1)])
            value = best[a] + reward
            if value >= best_val:
                best_val, best_start = value, a
        best[j] = best_val
        back[j] = best_start
    out: list[tuple[int, int]] = []
    j = p
    while j > 0:
        a = int(back[j])
        out.append((a, j))
        j = a
    out.reverse()
    return out


class ClusterStrategy(EmbeddingStrategy):
    """Parameters: ``piece_tokens`` (piece size, default 50, at most N), ``max_pieces`` (pieces per chunk,
    default ``max_tokens // piece_tokens``), ``centre`` (subtract the mean pairwise similarity, as
    Chroma does; default True), ``embedder`` (texts -> normalized vectors; default MiniLM)."""

    name = "cluster"
    piece_kind = "split"
    supports_overlap = False
    options = (
        Option("piece_tokens", int, None, "tokens per piece (default: min(50, max-tokens))", low=1),
        Option("max_pieces", int, None, "pieces per chunk (default: max-tokens // piece-tokens)", low=1),
        Option("centre", bool, True, "subtract the mean pairwise similarity, as Chroma does"),
        EMBEDDER_OPTION,
    )

    def __init__(
        self,
        max_tokens: int = 256,
        overlap: int = 0,
        piece_tokens: int | None = None,
        max_pieces: int | None = None,
        centre: bool = True,
        embedder: Embedder | None = None,
    ) -> None:
        super().__init__(max_tokens, overlap)
        if piece_tokens is None:
            piece_tokens = min(50, self.max_tokens)
        if not is_int(piece_tokens) or not 1 <= piece_tokens <= max_tokens:
            raise ChunkingError(f"piece_tokens must be an int in [1, max_tokens], got {piece_tokens!r}")
        self.piece_tokens = int(piece_tokens)
        self.max_pieces = max(1, self.max_tokens // self.piece_tokens) if max_pieces is None else int(max_pieces)
        if self.max_pieces < 1:
            raise ChunkingError(f"max_pieces must be >= 1, got {max_pieces!r}")
        self.centre = bool(centre)
        self._embedder = embedder

    def piece_options(self) -> dict[str, Any]:
        return {"max_tokens": self.piece_tokens}

    def split(self, pieces: Sequence[Piece], doc: Document) -> Iterator[Span]:
        if len(pieces) < 2:
            yield from (join([p]) for p in pieces)
            return
        vecs = embed_checked(self.embedder, [p.text for p in pieces], "pieces", np.float32)
        centre = mean_pair_similarity(vecs) if self.centre else 0.0
        band = similarity_band(vecs, self.max_pieces, centre)
        sizes = [p.tokens for p in pieces]
        for a, b in optimal_segmentation(band, sizes, self.max_pieces, self.max_tokens):
            yield join(pieces[a:b])
