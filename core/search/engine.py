"""``search(out, question, k, mode)``: full-text (BM25), vector (MiniLM cosine) or hybrid retrieval
over an ingest output.

* ``hybrid`` (default): both lists, each cut at :func:`candidates` ``(k)`` rows, fused by their min-max
  normalised scores, full-text weight :data:`~grounded.search.fusion.TEXT_WEIGHT` (0.7), vector weight
  0.3 (:mod:`grounded.search.fusion`; ``fusion="rrf"``: reciprocal rank, ``K = 60``, the fusion
  before). A question without words the full-text index can match is answered from the vector list alone.
* ``text``: LanceDB's full-text search over the FTS-indexed ``search_text`` (the heading path, then
  the chunk body: :func:`grounded.ingest.rows.search_text`; ``text`` in outputs of older versions), BM25 scores.
* ``vector``: the question embedded with all-MiniLM-L6-v2 -- the model ``grounded ingest --embed
  minilm`` embeds the chunks with, offline -- and the nearest chunk vectors by cosine distance.

``mode=None`` (the default) is :func:`default_mode` of the index: ``hybrid`` when it has both a
full-text index and MiniLM vectors, else ``text`` (an output ingested without ``--embed``), else
``vector``. An explicit mode the index cannot serve is a typed error.

Why hybrid: measured on Chroma's 5 corpora and on the development question set over 6 shared PDFs
(``docs/results/search_fusion.md``, ``python benchmarks/search_fusion.py``), its weight chosen by
leave-one-corpus-out cross-validation over the 11 corpora (0.7 in every fold): recall@5 89.7 % vs
88.1 % (text) and 77.8 % (vector) on Chroma, 75.4 % vs 72.3 % and 61.5 % on the question set, and
no corpus where it is below the better single list beyond noise (paired 95 % intervals all reach 0).

Every search is restricted to one ingest configuration (:meth:`SearchIndex.choose_config`), so hits
of two configurations are never mixed.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..chunking.minilm_onnx import QueryEmbedder, query_embedder
from ..focus.select import FocusSettings
from .errors import (
    EmptyQueryError,
    InvalidQueryError,
    NoEmbeddingsError,
    NoSearchableWordsError,
    NoTextIndexError,
    PageFilterError,
)
from .fusion import RRF_K, TEXT_WEIGHT, normalized_score_fusion, reciprocal_rank_fusion
from .hit import ROW_COLUMNS, Hit, hit_from_row
from .index import SearchIndex, sql_string

__all__ = [
    "search", "Mode", "MODES", "DEFAULT_MODE", "candidates", "query_embedder", "MINILM_DIM", "query_operators",
    "unsearchable_reason", "check_question", "pages_filter", "page_numbers", "parse_page_range", "default_mode",
]

Mode = Literal["hybrid", "vector", "text"]
MODES: tuple[Mode, ...] = ("hybrid", "vector", "text")
Fusion = Literal["score", "rrf"]
FUSIONS: tuple[Fusion, ...] = ("score", "rrf")
DEFAULT_MODE: Mode = "hybrid"  # measured best, see the module doc; default_mode() falls back
#: the size of all-MiniLM-L6-v2 vectors (what ``grounded ingest --embed minilm`` stores)
MINILM_DIM = 384


def default_mode(index: SearchIndex) -> Mode:
    """The mode a search without one uses on ``index``: :data:`DEFAULT_MODE` (hybrid) when the index
    has a full-text index and vectors, else ``text`` (no embeddings), else ``vector`` (no full-text index)."""
    has_text = index.text_index() is not None
    if index.vector_column is None:
        return "text"
    return DEFAULT_MODE if has_text else "vector"


def candidates(k: int) -> int:
    """Rows each list contributes to the fusion: ``max(50, 4 k)``."""
    return max(50, 4 * k)


def pages_filter(pages: Iterable[int]) -> str:
    """The LanceDB filter of the chunks touching any of ``pages`` (1-based page numbers): the
    ``pages`` list column holds one of them. ``pages`` must be a non-empty collection of integers
    >= 1 (``range(3, 6)`` for pages 3-5), else :class:`PageFilterError` (a ``ValueError``)."""
    if isinstance(pages, (str, bytes)):
        raise PageFilterError(f"pages must be 1-based page numbers, got {pages!r}")
    try:
        values = list(pages)
    except TypeError:
        raise PageFilterError(f"pages must be a collection of 1-based page numbers, got {pages!r}") from None
    for page in values:
        if isinstance(page, bool) or not isinstance(page, (int, np.integer)) or page < 1:
            raise PageFilterError(f"pages must be integers >= 1 (1-based page numbers), got {page!r}")
    if not values:
        raise PageFilterError("pages is empty: give at least one 1-based page number")
    return f"array_has_any(pages, [{', '.join(str(p) for p in sorted({int(p) for p in values}))}])"


def page_numbers(pages: Iterable[int] | None = None, page_range: Sequence[int] | None = None) -> list[int] | None:
    """The 1-based pages of a filter given as ``pages`` (page numbers) or ``page_range=(first, last)``
    (inclusive: ``(3, 5)`` is pages 3, 4 and 5), checked (:func:`pages_filter`); None when neither is
    given. The one rule of every page filter: :func:`search`, both retrievers and ``grounded search
    --pages``. Both given, or a bad range: :class:`PageFilterError` (a ``ValueError``)."""
    if page_range is not None:
        if pages is not None:
            raise PageFilterError("give pages or page_range, not both")
        iterable = not isinstance(page_range, (str, bytes)) and _iterable(page_range)
        bounds: list[Any] = list(page_range) if iterable else [page_range]
        if (len(bounds) != 2 or any(isinstance(b, bool) or not isinstance(b, (int, np.integer)) for b in bounds)
                or not 1 <= bounds[0] <= bounds[1]):
            raise PageFilterError(
                f"page_range must be (first, last) with 1 <= first <= last (1-based, inclusive), got {page_range!r}"
            )
        pages = range(int(bounds[0]), int(bounds[1]) + 1)
    if pages is None:
        return None
    if isinstance(pages, (str, bytes)) or not _iterable(pages):
        pages_filter(pages)  # raises, naming the value
    wanted = list(pages)
    pages_filter(wanted)
    return wanted


def _iterable(value: object) -> bool:
    try:
        iter(value)  # type: ignore[call-overload]
    except TypeError:
        return False
    return True


def parse_page_range(text: str) -> tuple[int, int]:
    """``"3-5"`` -> ``(3, 5)`` and ``"4"`` -> ``(4, 4)`` (the command line's ``--pages``), checked by
    :func:`page_numbers`; anything else: :class:`PageFilterError`."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if match is not None:
        bounds = (int(match.group(1)), int(match.group(2) or match.group(1)))
        with contextlib.suppress(PageFilterError):
            page_numbers(page_range=bounds)
            return bounds
    raise PageFilterError(
        f"a page range is FIRST-LAST with 1 <= FIRST <= LAST, or one page >= 1 (1-based, inclusive: 3-5, 4), got {text!r}"
    )


def search(
    out: str | Path | SearchIndex,
    question: str,
    k: int = 5,
    *,
    mode: Mode | None = None,
    config: str | None = None,
    embedder: QueryEmbedder | None = None,
    rrf_k: int = RRF_K,
    fusion: Fusion = "score",
    pages: Iterable[int] | None = None,
    page_range: Sequence[int] | None = None,
    focus: bool = True,
    focus_settings: FocusSettings | None = None,
) -> list[Hit]:
    """The ``k`` best chunks of ``out`` (an ingest output folder or an open :class:`SearchIndex`)
    for ``question``, best first.

    ``mode``: ``hybrid`` | ``vector`` | ``text`` (module doc); None: :func:`default_mode` of the
    index (hybrid, or text when it has no embeddings). ``config``: the ingest configuration
    fingerprint (or a unique prefix) to search when the table holds several; by default the
    table's only one. ``embedder``: texts -> unit vectors, default MiniLM (:func:`query_embedder`);
    it must be the model the chunks were embedded with. ``fusion`` (hybrid): ``"score"`` (default:
    min-max normalised scores, full-text weight :data:`~grounded.search.fusion.TEXT_WEIGHT`) or
    ``"rrf"`` (reciprocal rank with constant ``rrf_k``). ``pages``: only chunks touching one of these
    1-based pages (a chunk on pages 3-4 matches ``pages=[4]``), filtered in the query (before the
    ranking's cut, so ``k`` hits come back when that many chunks match); ``page_range=(first, last)``:
    the chunks touching that inclusive range (``(3, 5)``: pages 3-5), as the retrievers' ``page_range``;
    one or the other (:func:`page_numbers`, :class:`PageFilterError`).
    ``focus`` (default): each hit gets its focus (:mod:`grounded.search.focus`): the sentences, rows
    or items that answer the question, with boxes; semantic (MiniLM + lexical evidence) in vector
    and hybrid mode, lexical in text mode (no model is loaded for it); ``focus_settings``: its
    weights and limits (:class:`~grounded.focus.FocusSettings`).

    Raises :class:`EmptyQueryError` (blank question), :class:`InvalidQueryError` (``bytes``, or a
    string that is not valid Unicode: see :func:`check_question`), :class:`NoSearchableWordsError` (text mode, a
    question without a word the full-text index can match), :class:`NoEmbeddingsError` (vector/hybrid on
    an output without MiniLM vectors), :class:`NoTextIndexError` (text/hybrid without a full-text
    index), :class:`MixedConfigurationsError`, and the errors of :class:`SearchIndex`.
    """
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
    check_question(question)
    wanted = page_numbers(pages, page_range)
    page_where = pages_filter(wanted) if wanted is not None else None
    index = out if isinstance(out, SearchIndex) else SearchIndex(out)
    with index.reading():  # a damaged table file: a typed error naming it
        chosen = default_mode(index) if mode is None else mode
        hits = _search(index, question, k, chosen, config, embedder, rrf_k, fusion, page_where)
    if not focus:
        return hits
    from .focus import with_focus

    return with_focus(hits, question, None if chosen == "text" else (embedder or query_embedder()),
                      settings=focus_settings, parse=chosen != "text")


def check_question(question: object) -> None:
    """Refuse a question no mode can search, before the index is read: not a ``str``
    (:class:`InvalidQueryError`; ``bytes`` must be decoded by the caller), a string with lone
    surrogates -- a command-line argument whose bytes are not UTF-8 arrives so (``\\udcff`` for
    the byte 0xff) -- (:class:`InvalidQueryError`, naming the first one), or a blank one
    (:class:`EmptyQueryError`). The decodable words of a broken question are not searched: a
    question that lost a byte may have lost a word, and the hits would answer another question."""
    if not isinstance(question, str):
        kind = type(question).__name__
        hint = "; decode it first (question.decode('utf-8'))" if isinstance(question, (bytes, bytearray)) else ""
        raise InvalidQueryError(f"the question must be text (str), got {kind}{hint}")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(question[exc.start])
        what = (f"the byte 0x{code - 0xDC00:02x}, which is not UTF-8" if 0xDC80 <= code <= 0xDCFF
                else f"a lone surrogate U+{code:04X}")
        raise InvalidQueryError(
            f"the question is not valid text: character {exc.start + 1} is {what}; type the question again "
            "in UTF-8 (or decode it to text first)"
        ) from None
    if not question.strip():
        raise EmptyQueryError("the question is empty: type the words or the question to search for")


def _search(
    index: SearchIndex, question: str, k: int, mode: Mode, config: str | None,
    embedder: QueryEmbedder | None, rrf_k: int, fusion: Fusion = "score", page_where: str | None = None,
) -> list[Hit]:
    fts = index.text_index() if mode != "vector" else None  # of the published version
    if mode != "vector" and fts is None:
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
    rows = index.configs().get(chosen, 0)
    k = min(k, rows)  # no more hits than rows (a huge k is no error)
    where = f"config_fingerprint = {sql_string(chosen)}" + (f" AND {page_where}" if page_where else "")
    depth = k if mode != "hybrid" else min(candidates(k), rows)
    text_rows: list[dict[str, Any]] = []
    if fts is not None:
        words = plain_words(question)
        terms = index.query_terms(words, fts[1])
        text_rows = _text_rows(index, words, fts[0], where, depth) if terms else []
        if mode == "text" and not text_rows:
            reason = unsearchable_reason(terms)
            if reason and page_where is None:
                raise NoSearchableWordsError(reason)
    vector_rows = _vector_rows(index, question, where, depth, embedder) if mode != "text" else []
    if mode == "text":
        return [hit_from_row(r, rank=i, score=r["_score"], mode=mode, text_rank=i)
                for i, r in enumerate(text_rows, 1)]
    if mode == "vector":
        return [hit_from_row(r, rank=i, score=1.0 - float(r["_distance"]), mode=mode, vector_rank=i)
                for i, r in enumerate(vector_rows, 1)]
    by_id = {r["chunk_id"]: r for r in [*vector_rows, *text_rows]}
    text_ranks = {r["chunk_id"]: i for i, r in enumerate(text_rows, 1)}
    vector_ranks = {r["chunk_id"]: i for i, r in enumerate(vector_rows, 1)}
    if fusion == "rrf":
        fused = reciprocal_rank_fusion([[r["chunk_id"] for r in text_rows], [r["chunk_id"] for r in vector_rows]], rrf_k)
    else:
        fused = normalized_score_fusion(
            [[(r["chunk_id"], float(r["_score"])) for r in text_rows],
             [(r["chunk_id"], 1.0 - float(r["_distance"])) for r in vector_rows]],
            (TEXT_WEIGHT, 1.0 - TEXT_WEIGHT),
        )
    return [
        hit_from_row(by_id[cid], rank=i, score=score, mode=mode, text_rank=text_ranks.get(cid),
                     vector_rank=vector_ranks.get(cid))
        for i, (cid, score) in enumerate(fused[:k], 1)
    ]


#: scripts written without spaces between words (CJK ideographs, kana, Thai, Lao, Khmer, Myanmar):
#: LanceDB's tokenizer keeps a whole run of them as one word, which the index rarely holds
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\U00020000-\U0002ffff]"
)
#: what full-text search engines read as operators; here every question is plain words
_OPERATORS = re.compile(r'["*:~^]|(?<!\S)[+-](?=[^\W\d_])|\b(?:AND|OR|NOT)\b')


def unsearchable_reason(terms: Sequence[str]) -> str | None:
    """Why a text search for a question whose index words are ``terms`` (:meth:`SearchIndex.query_terms`)
    found nothing because of the question's form, or None (a plain miss)."""
    if not terms:
        return ("the question has no word the full-text index can match (only stop words, operators or "
                "punctuation)")
    if all(_UNSPACED.search(t) for t in terms):
        return ("full-text search matches whole space-separated words, and the question is in a script written "
                "without spaces (e.g. Chinese, Japanese or Thai): none of its words is in the index")
    return None


#: the operator words of full-text query languages (upper case only: "not" in a question is a word)
_OPERATOR_WORDS = re.compile(r"\b(?:AND|OR|NOT)\b")


def plain_words(question: str) -> str:
    """``question`` as the plain words the full-text index is asked for: the upper-case operator words
    ``AND``/``OR``/``NOT`` removed (whether LanceDB's tokenizer drops them as stop words differs between
    its versions: 0.41 keeps "not"); quotes, ``*`` and ``:`` are punctuation its tokenizer drops."""
    return _OPERATOR_WORDS.sub(" ", question)


def query_operators(question: str) -> list[str]:
    """The full-text operators in ``question`` (quotes, ``*``, ``:``, ``AND``/``OR``/``NOT``, ``+``/``-``
    prefixes...), in order, each once. ``search`` treats every question as plain words: a phrase in
    quotes is its words, ``OR``/``NOT`` are stop words, ``*`` and ``:`` are dropped."""
    found: list[str] = []
    for m in _OPERATORS.finditer(question):
        if m.group() not in found:
            found.append(m.group())
    return found


def _text_rows(index: SearchIndex, question: str, column: str, where: str, limit: int) -> list[dict[str, Any]]:
    from lancedb.query import MatchQuery

    # a match query: the question's words, never parsed as a phrase or operators (LanceDB reads a
    # quoted string as a phrase query, which needs positions the index does not store)
    query = index.table.search(MatchQuery(question, column), query_type="fts")  # type: ignore[call-arg]
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
