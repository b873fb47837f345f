"""Search an ingest output (``grounded ingest --sink lancedb``): BM25, vector or hybrid retrieval with
exact source boxes.

``grounded.search.search(out, question, k=5, mode=None) -> list[Hit]`` (None: hybrid, or text without embeddings); each :class:`Hit`
carries the chunk id, score, source path + sha256, configuration fingerprint, pages, boxes with
line spans, heading path and text, and its focus (the sentences that answer, with their boxes:
:mod:`grounded.search.focus`). ``render_hits`` draws them on their pages (PNG);
``source_pdf`` reads a hit's PDF after checking it is the one indexed. See
:mod:`grounded.search.engine` for the modes and the fusion.
"""

from __future__ import annotations

from .engine import (
    DEFAULT_MODE,
    MODES,
    Mode,
    QueryEmbedder,
    candidates,
    default_mode,
    page_numbers,
    pages_filter,
    parse_page_range,
    query_embedder,
    search,
)
from .errors import (
    ChunkNotInIndexError,
    EmptyQueryError,
    IndexNotFoundError,
    InvalidQueryError,
    MixedConfigurationsError,
    NoEmbeddingsError,
    NoSearchableWordsError,
    NotAnIndexError,
    NoTextIndexError,
    PageFilterError,
    SearchError,
    SourceChangedError,
)
from .focus import FOCUS_KEYS, focus_metadata, hit_view, with_focus
from .fusion import RRF_K, TEXT_WEIGHT, normalized_score_fusion, reciprocal_rank_fusion
from .hit import Hit, HitBox, Span, hit_chunk, hit_from_row
from .index import SearchIndex
from .sources import render_hits, source_pdf

__all__ = [
    "QueryEmbedder",
    "search",
    "Hit",
    "HitBox",
    "Span",
    "Mode",
    "MODES",
    "DEFAULT_MODE",
    "default_mode",
    "RRF_K",
    "SearchIndex",
    "candidates",
    "pages_filter",
    "page_numbers",
    "parse_page_range",
    "query_embedder",
    "reciprocal_rank_fusion",
    "normalized_score_fusion",
    "TEXT_WEIGHT",
    "hit_chunk",
    "hit_from_row",
    "FOCUS_KEYS",
    "focus_metadata",
    "hit_view",
    "with_focus",
    "render_hits",
    "source_pdf",
    "SearchError",
    "IndexNotFoundError",
    "NotAnIndexError",
    "NoEmbeddingsError",
    "NoTextIndexError",
    "MixedConfigurationsError",
    "EmptyQueryError",
    "InvalidQueryError",
    "NoSearchableWordsError",
    "PageFilterError",
    "ChunkNotInIndexError",
    "SourceChangedError",
]
