"""What the embedding strategies share (``semantic``, ``cluster``, ``kamradt_mod``, ``kamradt``), each
rule written once: the embedder (given, or all-MiniLM-L6-v2 loaded on first use), its vectors checked
against the texts, a piece's window with its neighbours, the cosine distance of consecutive vectors,
the percentile breakpoints, and the chunks cut at breakpoints and re-split to the token bound."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from ..errors import ChunkingError
from ..model.options import Option
from .nlp import Embedder, minilm_embedder
from .pieces import Document, Piece, PieceStrategy

#: option declarations the embedding strategies share (written once; each strategy lists the ones it takes)
EMBEDDER_OPTION = Option("embedder", None, help="texts -> normalized vectors (default: all-MiniLM-L6-v2)")
LANGUAGE_OPTION = Option("language", str, "english", "language of the Punkt sentence splitter")


def percentile_option(default: float) -> Option:
    """The breakpoint percentile Q in (0, 1) of a semantic strategy, with its own default."""
    return Option("percentile", float, default, "breakpoint percentile Q", low=0.0, high=1.0, open_low=True, open_high=True)

__all__ = [
    "Embedder",
    "EmbeddingStrategy",
    "embed_checked",
    "neighbour_windows",
    "consecutive_distances",
    "percentile_breakpoints",
    "split_at",
]

class EmbeddingStrategy(PieceStrategy):
    """A piece strategy that embeds texts: :attr:`embedder` is the one its constructor got
    (``self._embedder``) or, on first use, the process's MiniLM embedder."""

    uses_embedder = True
    _embedder: Embedder | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = minilm_embedder()
        return self._embedder


def embed_checked(embedder: Embedder, texts: Sequence[str], what: str, dtype: type = np.float64) -> np.ndarray:
    """``embedder(texts)`` as a 2-D array of ``dtype``, one row per text; any other shape is a
    :class:`~grounded.errors.ChunkingError` naming the shape and ``what`` the texts are."""
    vecs: np.ndarray = np.asarray(embedder(texts), dtype=dtype)
    if vecs.ndim != 2 or vecs.shape[0] != len(texts):
        raise ChunkingError(f"embedder returned shape {getattr(vecs, 'shape', None)} for {len(texts)} {what}")
    return vecs


def neighbour_windows(pieces: Sequence[Piece], doc: Document, buffer: int) -> list[str]:
    """Each piece with its ``buffer`` neighbours on either side, as exact document text."""
    last = len(pieces) - 1
    return [doc.text(pieces[max(0, i - buffer)].start, pieces[min(last, i + buffer)].end) for i in range(len(pieces))]


def consecutive_distances(vecs: np.ndarray) -> np.ndarray:
    """Cosine distance between each row and the next (rows normalized here; an all-zero row stays zero)."""
    norms = np.linalg.norm(vecs, axis=1)
    norms[norms == 0] = 1.0
    unit = vecs / norms[:, None]
    return 1.0 - np.einsum("ij,ij->i", unit[:-1], unit[1:])


def percentile_breakpoints(distances: np.ndarray, percentile: float) -> list[int]:
    """Indices ``i + 1`` of the pieces that start a chunk: distance ``i`` strictly above the
    ``percentile`` (in (0, 1)) quantile of ``distances`` (numpy's linear interpolation, as LangChain),
    the quantile taken in the distances' own precision."""
    d = np.asarray(distances)
    if d.size == 0:
        return []
    threshold = float(np.percentile(d, percentile * 100.0))
    return [i + 1 for i in np.flatnonzero(d.astype(np.float64) > threshold).tolist()]


def split_at(pieces: Sequence[Piece], doc: Document, starts: Sequence[int], max_tokens: int) -> Iterator[tuple[int, int]]:
    """The chunks that start at the pieces ``starts`` (ascending, the first 0), each re-split to at most
    ``max_tokens`` by the document's delimiter splitter."""
    edges = [*starts, len(pieces)]
    for a, b in zip(edges, edges[1:], strict=False):
        yield from doc.split(pieces[a].start, pieces[b - 1].end, max_tokens)
