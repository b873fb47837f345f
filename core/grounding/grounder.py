"""Grounding: map any text back onto the document text and from there onto the PDF.

Algorithm (linear-ish in the document length):

1. The document text (:func:`~grounded.text.stream.document_text`) is reduced once to its
   letter/digit stream (:mod:`.normalize`: whitespace, hyphenation, ligatures, quotes, dashes, markup
   and case no longer matter) and every k-gram (k=12) of that stream is indexed (:mod:`.index`).
2. A query text is reduced the same way (after :func:`strip_markup`). Its k-grams are looked up in
   the index - first in a window around ``near`` (the neighbouring chunk's end or a running cursor),
   then, if that does not explain the text, in the whole document - giving seeds
   ``(query position, document position)``.
3. Seeds are clustered by document position (gaps up to ``gap`` characters join a cluster: words
   changed, dropped or added, sentences or table cells re-ordered inside the chunk all stay in one
   cluster). The cluster explaining most of the query wins (among near-equal ones: the occurrence
   nearest ``near``); further clusters are added while each explains enough *new* query text, and
   mostly new (a cluster that re-explains placed text is another occurrence of it) (non-contiguous pieces). Unmatched query ends are extended fuzzily (Levenshtein) when the text's
   first/last words were edited. A verbatim (normalized) occurrence short-cuts all of this; when
   k-grams explain too little (table cells re-ordered, short fields), a bag-of-words alignment
   (maximum-sum run of document words) inside the window is tried as well. Texts shorter than two
   k-grams are matched verbatim only.
4. ``coverage`` = query letters explained, ``precision`` = matched share of the chosen document
   spans; ``score`` = their harmonic mean. Below ``min_score`` (or ``min_coverage``) the text is
   refused: no spans, no boxes, a reason. Otherwise the spans' boxes are made by the chunk
   assembly itself (:meth:`~grounded.text.assembly.ChunkAssembler.boxes_for_chars`).
"""

from __future__ import annotations

import bisect
import gc
import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from rapidfuzz.distance import Levenshtein

from ..errors import ChunkingError, InputError
from ..model.boxes import ParsingBoundingBox
from ..model.elements import ParsingResult
from ..model.elements import ParsingResultType as T
from ..text.assembly import ChunkAssembler
from ..text.stream import TokenStream, build_stream, document_text
from ..text.tokenizer import load_tokenizer
from .furniture import FurnitureIndex, FurnitureMatch, source_pdf
from .index import KgramIndex, kgram_hashes
from .limits import MAX_TEXT_CHARS, lone_surrogate, text_problem
from .normalize import AlnumText, alnum_text, max_word_run, strip_markup
from .tables import align_table, looks_like_table_serialization, table_ranges

__all__ = ["Grounding", "Grounder", "GroundingStatus", "MAX_TEXT_CHARS", "ground", "ground_quote", "lone_surrogate", "text_problem"]

GroundingStatus = Literal["exact", "fuzzy", "partial", "furniture", "refused"]

_MARKUP_CHARS = "*_#|>`~"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Grounding:
    """Where a text is in the document.

    ``spans``: character spans in ``document_text(root).text`` (several for a text made of
    non-contiguous pieces), in document order. ``score`` in [0, 1]. ``boxes``: the chunk assembly's
    boxes for those spans (empty when refused). ``status``: ``exact`` (the text's letters and digits
    equal the span's), ``fuzzy`` (aligned with edits), ``partial`` (part of the text was not found;
    ``reason`` says how much) or ``refused`` (no boxes; ``reason`` says why). ``coverage``: share of
    the text's letters/digits found in the spans (and in page furniture).

    ``furniture_boxes``: line boxes of text that is on the page but not in the parse tree (running
    headers/footers, copyright lines, cover decoration: :mod:`.furniture`), read from the PDF text
    layer. That text has no offset in the document text, so it adds no span and is kept apart from
    ``boxes``; a text made of such text only gets status ``furniture`` (no spans, no ``boxes``).
    ``furniture_coverage``: share of the text's letters/digits explained by them."""

    spans: list[tuple[int, int]]
    score: float
    boxes: list[ParsingBoundingBox]
    status: GroundingStatus
    reason: str = ""
    coverage: float = 0.0
    furniture_boxes: list[ParsingBoundingBox] = field(default_factory=list)
    furniture_coverage: float = 0.0

    @property
    def ok(self) -> bool:
        """True unless refused."""
        return self.status != "refused"

    @property
    def start(self) -> int | None:
        return self.spans[0][0] if self.spans else None

    @property
    def end(self) -> int | None:
        return self.spans[-1][1] if self.spans else None

    @property
    def pages(self) -> list[int]:
        """Pages of ``boxes`` and ``furniture_boxes``."""
        return sorted({b.page for b in self.boxes} | {b.page for b in self.furniture_boxes})

    @property
    def all_boxes(self) -> list[ParsingBoundingBox]:
        """``boxes`` then ``furniture_boxes``: everything to highlight."""
        return [*self.boxes, *self.furniture_boxes]

    def to_dict(self) -> dict[str, Any]:
        out = {
            "spans": [list(s) for s in self.spans],
            "score": self.score,
            "status": self.status,
            "reason": self.reason,
            "coverage": self.coverage,
            "boxes": [b.to_dict() for b in self.boxes],
        }
        if self.furniture_boxes:
            out["furniture_boxes"] = [b.to_dict() for b in self.furniture_boxes]
            out["furniture_coverage"] = self.furniture_coverage
        return out


def _refused(reason: str, score: float = 0.0, coverage: float = 0.0) -> Grounding:
    return Grounding(spans=[], score=round(score, 4), boxes=[], status="refused", reason=reason, coverage=round(coverage, 4))


@dataclass
class _Piece:
    """One chosen cluster: document stream range ``[lo, hi)`` and the query positions it explains."""

    lo: int
    hi: int
    q_mask: np.ndarray
    doc_matched: int
    q_first: int  # smallest / largest query position explained, and their document positions
    q_last: int
    d_of_q_first: int
    d_of_q_last: int
    extra_matched: int = 0


@dataclass
class _Alignment:
    pieces: list[_Piece] = field(default_factory=list)
    coverage: float = 0.0
    precision: float = 0.0
    covered: np.ndarray | None = None  # query letters explained (k-gram alignments; None: not known per letter)
    note: str = ""  # how it was matched, when that is worth saying (the table matcher)

    @property
    def score(self) -> float:
        c, p = self.coverage, self.precision
        return 2 * c * p / (c + p) if c + p else 0.0


def _union_mask(starts: np.ndarray, k: int, length: int) -> np.ndarray:
    """Characters of ``[0, length)`` covered by the intervals ``[s, s + k)``."""
    size = length + k + 1
    diff = np.bincount(starts, minlength=size) - np.bincount(starts + k, minlength=size)
    return np.cumsum(diff)[:length] > 0


#: a further piece of an alignment must explain at least this share of its query letters anew
_MIN_NEW_SHARE = 0.5

class Grounder:
    """Grounds texts in one document; build once per document (cost: one pass over its text, a
    k-gram index and - unless ``stream`` is given - its token stream for the boxes).

    ``near`` (a document-text offset, e.g. the previous chunk's end) picks among repeated
    occurrences and lets the search stay local; :meth:`ground_all` keeps a running cursor.

    Pass the chunker's ``stream`` to share its tokenization (boxes in ``line`` mode use token
    positions). Thresholds: refused below ``min_score`` (harmonic mean of coverage and precision)
    or ``min_coverage`` (share of the text's letters found) or with fewer than ``min_letters``
    letters/digits; ``partial`` below ``partial_below`` coverage. ``k``: k-gram length in letters.

    ``furniture``: match what the tree does not explain against the page text the tree does not
    hold (:class:`~.furniture.FurnitureIndex`, read from the source PDF on first need). ``None``
    (default): when the PDF recorded in the tree's metadata is there unchanged; ``True``: required
    (:class:`~grounded.errors.InputError` when it is not); ``False``: never. ``pdf``: the PDF to
    read instead of the recorded path (it must be the PDF the tree was parsed from); ``password``:
    its password when it is encrypted. ``max_chars``: longer texts are refused before any work
    (:data:`MAX_TEXT_CHARS` by default).
    """

    def __init__(
        self,
        root: ParsingResult,
        *,
        stream: TokenStream | None = None,
        tokenizer: Any = None,
        box_mode: str = "auto",
        k: int = 12,
        min_score: float = 0.45,
        min_coverage: float = 0.3,
        partial_below: float = 0.9,
        min_letters: int = 4,
        furniture: bool | None = None,
        pdf: str | Path | None = None,
        password: str | None = None,
        max_chars: int = MAX_TEXT_CHARS,
    ) -> None:
        if root.type != T.ROOT:
            raise ChunkingError(f"grounding needs a ROOT node, got {root.type}")
        if not 4 <= k <= 64:
            raise ChunkingError(f"k must be in [4, 64], got {k!r}")
        if not (0.0 < min_score <= 1.0 and 0.0 < min_coverage <= 1.0 and 0.0 < partial_below <= 1.0):
            raise ChunkingError("min_score, min_coverage and partial_below must lie in (0, 1]")
        if stream is None:
            stream = build_stream(root, load_tokenizer(tokenizer), document_text(root))
        self.root = root
        self.stream = stream
        self.text = stream.doc.text
        self.assembler = ChunkAssembler(stream, root, strategy="grounding", box_mode=box_mode)
        self.k = k
        self.min_score = min_score
        self.min_coverage = min_coverage
        self.partial_below = partial_below
        self.min_letters = min_letters
        if max_chars < 1:
            raise ChunkingError(f"max_chars must be positive, got {max_chars!r}")
        self.max_chars = max_chars
        self.norm: AlnumText = alnum_text(self.text)
        self.index = KgramIndex(self.norm.codes(), k)
        self.furniture = furniture
        self._pdf = Path(pdf) if pdf is not None else None
        self._password = password
        self._furniture_index: FurnitureIndex | None = None
        self._furniture_tried = False
        self._tables: list[tuple[int, int]] | None = None
        if furniture:
            self.furniture_index()  # required: fail now, not at the first text that needs it

    # -- public API -------------------------------------------------------------------------------
    def ground(self, text: str, *, near: int | None = None) -> Grounding:
        """Spans, score, status and boxes of ``text`` in this document."""
        problem = text_problem(text, self.max_chars)
        if problem is not None:
            return _refused(problem)
        cleaned = strip_markup(text)
        query = alnum_text(cleaned).text
        m = len(query)
        if m == 0:
            return _refused("the text has no letters or digits")
        if m < self.min_letters:
            return _refused(f"the text is too short to place ({m} letters/digits < {self.min_letters})")
        g = self._ground_in_tree(query, cleaned, near)
        if g.status == "refused":
            return self._ground_furniture_only(query, near) or g
        return g

    def _ground_in_tree(self, query: str, cleaned: str, near: int | None) -> Grounding:
        m = len(query)
        near_pos = self.norm.position(near) if near is not None else None
        if m < 2 * self.k:
            return self._ground_short(query, cleaned, near_pos)
        qh = kgram_hashes(np.frombuffer(query.encode("utf-32-le"), dtype=np.uint32), self.k)
        n = len(self.norm)
        hit = self._verbatim(query, qh, near_pos)
        if hit is not None:
            piece = _Piece(hit, hit + m, np.ones(m, dtype=bool), m, 0, m, hit, hit + m)
            return self._finish(_Alignment([piece], 1.0, 1.0), query, cleaned)
        best: _Alignment | None = None
        if near_pos is not None:
            lo, hi = max(0, near_pos - m - 1000), min(n, near_pos + 2 * m + 4000)
            best = self._align(query, qh, lo, hi, near_pos, cap=16)
            if best is not None and (best.coverage < self.partial_below or best.score < self.min_score):
                wide = self._align(query, qh, 0, n, near_pos, cap=64)
                if wide is not None and wide.score > best.score + 0.02:
                    best = wide
        if best is None and near_pos is None:
            best = self._align(query, qh, 0, n, None, cap=64)
        elif best is None:
            best = self._align(query, qh, 0, n, near_pos, cap=64)
        if best is None or (best.coverage < self.partial_below and not self._rest_is_furniture(best, query)):
            window = None
            if best is not None and best.pieces:
                window = (min(p.lo for p in best.pieces) - m, max(p.hi for p in best.pieces) + m)
            elif near_pos is not None:
                window = (near_pos - m - 1000, near_pos + 2 * m + 4000)
            if window is not None:
                by_words = self._align_words(cleaned, m, max(0, window[0]), min(n, window[1]))
                if by_words is not None and (best is None or by_words.score > best.score):
                    best = by_words
        if looks_like_table_serialization(cleaned):
            by_table = self._align_table(cleaned, m, near_pos)
            if by_table is not None:
                best = self._with_table(best, by_table, m)
        if best is None or not best.pieces:
            return _refused("no part of the text was found in the document")
        return self._finish(best, query, cleaned)

    def ground_all(self, texts: Iterable[str], *, near: int | None = None) -> list[Grounding]:
        """Ground texts that follow each other in the document (a splitter's chunks): each is
        searched near the previous one's end first, so repeated passages resolve to the right
        occurrence and the cost stays linear in the number of texts."""
        out = []
        cursor = near
        enabled = gc.isenabled()
        gc.disable()  # as in chunking: generation scans over a large tree's boxes would dominate
        try:
            for text in texts:
                g = self.ground(text, near=cursor)
                out.append(g)
                if g.spans:
                    cursor = g.spans[-1][1]
        finally:
            if enabled:
                gc.enable()
        return out

    def boxes_for_chars(self, start: int, end: int) -> list[ParsingBoundingBox]:
        return self.assembler.boxes_for_chars(start, end)

    def furniture_index(self) -> FurnitureIndex | None:
        """The page-furniture side index (built on first call; None when off or no PDF)."""
        if self.furniture is False or self._furniture_tried:
            return self._furniture_index
        self._furniture_tried = True
        pdf = self._pdf if self._pdf is not None else source_pdf(self.root)
        if pdf is None or not pdf.is_file():
            if self.furniture:
                where = pdf or (self.root.info.source or {}).get("path", "the tree's source PDF")
                raise InputError(where, "furniture=True needs the PDF the tree was parsed from (not found or changed)")
            return None
        try:
            self._furniture_index = FurnitureIndex.from_pdf(pdf, self.root, password=self._password)
        except InputError as exc:
            if self.furniture:
                raise
            log.info("grounding without a page furniture index: %s", exc)
        return self._furniture_index

    def page_at(self, offset: int) -> int | None:
        """Page of the text node holding document-text ``offset`` (the nearest one before it)."""
        doc = self.stream.doc
        k = bisect.bisect_right(doc.starts, offset) - 1
        for j in range(max(k, 0), max(k - 64, -1), -1):
            if doc.nodes[j].geom:
                return int(doc.nodes[j].geom[0].page)
        return None

    # -- alignment --------------------------------------------------------------------------------
    def _align(self, query: str, qh: np.ndarray, lo: int, hi: int, near_pos: int | None, cap: int) -> _Alignment | None:
        k, m = self.k, len(query)
        qp, dp = self.index.lookup(qh, lo, hi, cap)
        if not len(dp):
            return None
        order = np.lexsort((qp, dp))
        qp, dp = qp[order], dp[order]
        gap = max(4 * k, 64)
        cuts = np.nonzero(np.diff(dp) > gap)[0] + 1
        bounds = np.concatenate([[0], cuts, [len(dp)]]).astype(np.int64)
        sizes = np.diff(bounds)
        min_new = max(k + 8, int(0.05 * m))
        # only clusters that can matter: a cluster of s seeds explains at most s + k - 1 letters, so
        # one that cannot add min_new letters is skipped unless it is among the largest (at most 48)
        order_by_size = np.argsort(-sizes, kind="stable")[:48]
        largest = int(sizes[order_by_size[0]])
        pieces: list[_Piece] = []
        for c in order_by_size.tolist():
            size = int(sizes[c])
            if size + k - 1 < min_new and size < largest // 2:
                break
            a, b = int(bounds[c]), int(bounds[c + 1])
            pieces.append(self._piece(qp[a:b], dp[a:b], m))
        if not pieces:
            return None
        cover = [int(p.q_mask.sum()) for p in pieces]
        top = max(cover)
        tied = [i for i, c in enumerate(cover) if c >= 0.9 * top]
        if near_pos is not None:
            first = min(tied, key=lambda i: (abs(pieces[i].lo - near_pos), -cover[i]))
        else:
            first = min(tied, key=lambda i: (-cover[i], pieces[i].lo))
        chosen = [pieces[first]]
        covered = pieces[first].q_mask.copy()
        for i in sorted(range(len(pieces)), key=lambda i: -cover[i]):
            if i == first:
                continue
            new = int((pieces[i].q_mask & ~covered).sum())
            # a piece that mostly re-explains covered text is another occurrence of a passage already
            # placed (a title repeated on a supplement's first page), not a further part of the text
            if new >= min_new and new >= _MIN_NEW_SHARE * cover[i]:
                chosen.append(pieces[i])
                covered |= pieces[i].q_mask
        chosen.sort(key=lambda p: p.lo)
        head, tail = self._extend_ends(chosen, query, covered)
        matched_q = int(covered.sum()) + sum(p.extra_matched for p in chosen)
        doc_len = sum(p.hi - p.lo for p in chosen)
        doc_matched = sum(p.doc_matched + p.extra_matched for p in chosen)
        explained = covered.copy()
        explained[:head] = True
        explained[tail:] = True
        return _Alignment(chosen, min(1.0, matched_q / m), min(1.0, doc_matched / doc_len) if doc_len else 0.0, explained)

    def _verbatim(self, query: str, qh: np.ndarray, near_pos: int | None) -> int | None:
        """Stream position of a verbatim (normalized) occurrence of the query - the one nearest
        ``near`` - found through the occurrences of its first k-gram (no scan of the document)."""
        _, starts = self.index.lookup(qh[:1], 0, len(self.norm), cap=1 << 62)
        hits = [p for p in starts.tolist() if self.norm.text.startswith(query, p)]
        if not hits:
            return None
        return min(hits, key=lambda h: abs(h - near_pos)) if near_pos is not None else hits[0]

    def _align_words(self, cleaned: str, m: int, lo: int, hi: int) -> _Alignment | None:
        """Bag-of-words alignment inside a window, for texts whose k-grams were destroyed (table
        cells re-ordered, short fields): the run of document words maximizing letters of query
        words minus letters of other words (maximum subarray), scored by multiset overlap."""
        q_words, _ = alnum_text(cleaned).words(0, m)
        want = Counter(q_words)
        words, starts = self.norm.words(lo, hi)
        if not words or not want:
            return None
        best_a, best_b = max_word_run(words, want)
        if best_b < best_a:
            return None
        got = Counter(words[best_a : best_b + 1])
        matched = sum(len(w) * min(c, got[w]) for w, c in want.items())
        d_lo = int(starts[best_a])
        d_hi = d_lo + sum(len(w) for w in words[best_a : best_b + 1])
        piece = _Piece(d_lo, d_hi, np.zeros(m, dtype=bool), matched, 0, m, d_lo, d_hi)
        return _Alignment([piece], min(1.0, matched / m), min(1.0, matched / (d_hi - d_lo)))

    def _align_table(self, cleaned: str, m: int, near_pos: int | None) -> _Alignment | None:
        """A ``row header, column header = value`` serialization matched onto a table's cells
        (:mod:`.tables`): the tables around ``near`` first, else every table of the document."""
        if self._tables is None:
            self._tables = table_ranges(self.root, self.stream.doc.element_offsets, self.norm)
        ranges = self._tables
        if near_pos is not None:
            lo, hi = near_pos - m - 1000, near_pos + 2 * m + 4000
            ranges = [r for r in self._tables if r[0] < hi and r[1] > lo] or self._tables
        q_words, q_starts = alnum_text(cleaned).words(0, m)
        found = align_table(Counter(q_words), m, self.norm, ranges)
        if found is None:
            return None
        runs, coverage, precision, words = found
        covered = np.zeros(m, dtype=bool)
        for w, start in zip(q_words, q_starts.tolist(), strict=True):
            if w in words:
                covered[start : start + len(w)] = True
        pieces = [_Piece(r.lo, r.hi, np.zeros(m, dtype=bool), r.matched, 0, m, r.lo, r.hi) for r in runs]
        note = f"table serialization matched onto the table's cells ({len(runs)} run{'s' if len(runs) > 1 else ''})"
        return _Alignment(sorted(pieces, key=lambda p: p.lo), coverage, precision, covered, note)

    def _with_table(self, best: _Alignment | None, table: _Alignment, m: int) -> _Alignment:
        """The better of the text alignment, the table alignment and both together (a text that
        holds a paragraph and a serialized table)."""
        if best is None:
            return table
        choice = table if table.score > best.score else best
        if best.covered is None or table.covered is None:
            return choice
        union = best.covered | table.covered
        if int(union.sum()) < max(int(best.covered.sum()), int(table.covered.sum())) + max(self.k + 8, int(0.05 * m)):
            return choice
        pieces = sorted([*best.pieces, *table.pieces], key=lambda p: p.lo)
        doc_len = sum(p.hi - p.lo for p in pieces)
        doc_matched = sum(p.doc_matched + p.extra_matched for p in pieces)
        both = _Alignment(pieces, float(union.sum()) / m, min(1.0, doc_matched / doc_len) if doc_len else 0.0, union, table.note)
        return both if both.score > choice.score else choice

    def _piece(self, qp: np.ndarray, dp: np.ndarray, m: int) -> _Piece:
        """A cluster of seeds (sorted by document position) -> a piece, after trimming stray seeds
        at its ends (a k-gram matched alone - two k-grams in a row on one diagonal at least)."""
        k = self.k
        qp, dp = _one_seed_per_query_position(qp, dp)
        if len(dp) >= 3:
            same_run = (np.diff(dp) == 1) & (np.diff(qp) == 1)
            run_id = np.concatenate([[0], np.cumsum(~same_run)])
            run_len = np.bincount(run_id)[run_id]
            solid = np.nonzero(run_len >= 2)[0]
            if len(solid):
                a, b = int(solid[0]), int(solid[-1]) + 1
                qp, dp = qp[a:b], dp[a:b]
        lo, hi = int(dp[0]), int(dp[-1]) + k
        q_mask = _union_mask(qp, k, m)
        doc_matched = int(_union_mask(dp - lo, k, hi - lo).sum())
        i_first, i_last = int(np.argmin(qp)), int(np.argmax(qp))
        return _Piece(lo, hi, q_mask, doc_matched, int(qp[i_first]), int(qp[i_last]) + k, int(dp[i_first]), int(dp[i_last]) + k)

    def _extend_ends(self, chosen: list[_Piece], query: str, covered: np.ndarray) -> tuple[int, int]:
        """Align the query's unexplained head (tail) with the document just before (after) the piece
        whose start (end) explains the query's start (end): the first/last words were edited.
        Returns the query head ``[0, h)`` and tail ``[t, m)`` explained that way (``0``, ``m``: none)."""
        m, doc = len(query), self.norm.text
        head_to, tail_from = 0, m
        q_first = min(p.q_first for p in chosen)
        head = next(p for p in chosen if p.q_first == q_first)
        if 0 < q_first <= 64 and head.d_of_q_first - head.lo <= self.k and not covered[:q_first].any():
            piece = query[:q_first]
            window = doc[max(0, head.lo - len(piece) - len(piece) // 3 - 2) : head.lo]
            best = _best_suffix(piece, window)
            if best is not None:
                used, dist = best
                head.lo -= used
                head.extra_matched += len(piece) - dist
                head_to = q_first
        q_last = max(p.q_last for p in chosen)
        tail = next(p for p in chosen if p.q_last == q_last)
        rest = m - q_last
        if 0 < rest <= 64 and tail.hi - tail.d_of_q_last <= self.k and not covered[q_last:].any():
            piece = query[q_last:]
            window = doc[tail.hi : tail.hi + len(piece) + len(piece) // 3 + 2]
            best = _best_suffix(piece[::-1], window[::-1])
            if best is not None:
                used, dist = best
                tail.hi += used
                tail.extra_matched += len(piece) - dist
                tail_from = q_last
        return head_to, tail_from

    def _ground_short(self, query: str, cleaned: str, near_pos: int | None) -> Grounding:
        """Texts shorter than two k-grams: verbatim (normalized) occurrences only."""
        doc = self.norm.text
        hits: list[int] = []
        if near_pos is not None:  # the nearest occurrence after, or else before, the cursor
            lo = max(0, near_pos - len(query) - 1000)
            i = doc.find(query, lo, near_pos + 2 * len(query) + 4000)
            while i >= 0 and len(hits) < 64:
                hits.append(i)
                i = doc.find(query, i + 1, near_pos + 2 * len(query) + 4000)
        if not hits:
            i = doc.find(query)
            while i >= 0 and len(hits) < 64:
                hits.append(i)
                i = doc.find(query, i + 1)
        if not hits:
            return _refused(f"the text is short ({len(query)} letters/digits) and does not occur verbatim in the document")
        pos = min(hits, key=lambda h: abs(h - near_pos)) if near_pos is not None else hits[0]
        piece = _Piece(pos, pos + len(query), np.ones(len(query), dtype=bool), len(query), 0, len(query), pos, pos + len(query))
        return self._finish(_Alignment([piece], 1.0, 1.0), query, cleaned)

    def _finish(self, al: _Alignment, query: str, cleaned: str) -> Grounding:
        if al.covered is not None and len(al.pieces) > 1:
            al = self._drop_far_pieces_that_are_furniture(al, query)
        furn = self._furniture_for(al, query) if al.covered is not None and al.coverage < 1.0 else None
        f_cov = float(furn.covered.sum()) / len(query) if furn is not None else 0.0
        coverage = min(1.0, al.coverage + f_cov)
        prec = al.precision
        score = 2 * coverage * prec / (coverage + prec) if coverage + prec else 0.0
        if coverage < self.min_coverage or score < self.min_score:
            return _refused(
                f"alignment too weak: {coverage:.0%} of the text's letters found, score {score:.2f} < {self.min_score:.2f}"
                if score < self.min_score
                else f"only {coverage:.0%} of the text's letters were found in the document (< {self.min_coverage:.0%})",
                score,
                coverage,
            )
        merged: list[list[int]] = []
        for p in sorted(al.pieces, key=lambda p: p.lo):
            if merged and p.lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], p.hi)
            else:
                merged.append([p.lo, p.hi])
        spans = [self.norm.source_span(lo, hi) for lo, hi in merged]
        spans = self._widen_punctuation(spans, cleaned)
        exact = len(merged) == 1 and self.norm.text[merged[0][0] : merged[0][1]] == query
        boxes: list[ParsingBoundingBox] = []
        for s, e in spans:
            boxes.extend(self.assembler.boxes_for_chars(s, e))
        if not boxes:
            return _refused("the matching text has no boxes in the parse tree", score, coverage)
        if exact:
            return Grounding(spans, 1.0, boxes, "exact", "", 1.0)
        f_boxes = furn.boxes if furn is not None else []
        notes = [al.note] if al.note else []
        if f_boxes:
            notes.append(f"{f_cov:.0%} of the text's letters are page text outside the parse tree (furniture_boxes, no span)")
        note = "; ".join(notes)
        if coverage < self.partial_below:
            reason = f"{1 - coverage:.0%} of the text's letters were not found in the document (added or heavily edited text)"
            reason = f"{reason}; {note}" if note else reason
            return Grounding(spans, round(score, 4), boxes, "partial", reason, round(coverage, 4), f_boxes, round(f_cov, 4))
        return Grounding(spans, round(score, 4), boxes, "fuzzy", note, round(coverage, 4), f_boxes, round(f_cov, 4))

    # -- page furniture ---------------------------------------------------------------------------
    def _rest_is_furniture(self, al: _Alignment, query: str) -> bool:
        """Whether page furniture explains enough of what the tree alignment ``al`` left (a
        chunk's last sentence followed by the page's footer and licence lines): then ``al`` is
        kept -- a word alignment would replace it with one that has no letter mask, and the
        furniture could not be matched at all."""
        if al.covered is None or not al.pieces:
            return False
        furn = self._furniture_for(al, query)
        return furn is not None and al.coverage + float(furn.covered.sum()) / len(query) >= self.partial_below

    def _furniture_for(self, al: _Alignment, query: str) -> FurnitureMatch | None:
        """Furniture lines explaining the query letters the tree alignment left unexplained. Each
        unexplained run is looked for on the pages of the tree match around it: from the page of
        the explained letter before it to the page of the one after it (one page before/after at
        the text's head/tail)."""
        assert al.covered is not None
        index = self.furniture_index()
        if index is None or not al.pieces:
            return None
        m = len(query)
        est = np.full(m, -1, dtype=np.int64)  # document stream position of each explained query letter
        for p in al.pieces:
            q = np.flatnonzero(p.q_mask & (est < 0))
            est[q] = np.clip(p.d_of_q_first + (q - p.q_first), p.lo, p.hi - 1)
        known = np.flatnonzero(est >= 0)
        if not len(known):
            return None

        def page_of(q: int) -> int | None:
            return self.page_at(self.norm.source_span(int(est[q]), int(est[q]) + 1)[0])

        def pages(a: int, b: int) -> tuple[int, int] | None:
            i = int(np.searchsorted(known, a)) - 1
            j = int(np.searchsorted(known, b))
            before = page_of(int(known[i])) if i >= 0 else None
            after = page_of(int(known[j])) if j < len(known) else None
            if before is None and after is None:
                return None
            lo = before if before is not None else max(1, (after or 1) - 1)
            hi = after if after is not None else (before or 0) + 1
            return (min(lo, hi), max(lo, hi))

        return index.match(query, al.covered, pages)

    def _drop_far_pieces_that_are_furniture(self, al: _Alignment, query: str) -> _Alignment:
        """A running header is in the tree once (where the parser kept it, e.g. on page 1) and on
        every other page as furniture: a piece pages away from the text's main piece whose letters
        furniture near the main piece explains just as well is furniture there, not that far piece."""
        if self.furniture_index() is None:
            return al
        assert al.covered is not None
        main = max(al.pieces, key=lambda p: int(p.q_mask.sum()))
        first = self.page_at(self.norm.source_span(main.lo, main.lo + 1)[0])
        last = self.page_at(self.norm.source_span(main.hi - 1, main.hi)[0])
        if first is None or last is None:
            return al
        for p in [p for p in al.pieces if p is not main]:
            page = self.page_at(self.norm.source_span(p.lo, p.lo + 1)[0])
            if page is None or first - 1 <= page <= last + 1:
                continue
            others = [o for o in al.pieces if o is not p]
            own = p.q_mask.copy()
            for o in others:
                own &= ~o.q_mask
            if not own.any():
                continue
            trial = _Alignment(others, al.coverage, al.precision, al.covered & ~own)
            furn = self._furniture_for(trial, query)
            if furn is None or furn.covered[own].mean() < 0.9:
                continue
            m = len(query)
            matched_q = int(trial.covered.sum()) if trial.covered is not None else 0
            doc_len = sum(o.hi - o.lo for o in others)
            doc_matched = sum(o.doc_matched + o.extra_matched for o in others)
            al = _Alignment(others, min(1.0, matched_q / m), min(1.0, doc_matched / doc_len) if doc_len else 0.0, trial.covered)
        return al

    def _ground_furniture_only(self, query: str, near: int | None) -> Grounding | None:
        """A text the tree does not hold at all: page furniture only (status ``furniture``, no
        spans, no ``boxes``), when furniture lines explain at least ``partial_below`` of it."""
        index = self.furniture_index()
        if index is None:
            return None
        page = self.page_at(near) if near is not None else None
        pages = (max(1, page - 1), page + 1) if page is not None else None
        furn = index.match(query, np.zeros(len(query), dtype=bool), pages)
        if furn is None:
            return None
        f_cov = float(furn.covered.sum()) / len(query)
        if f_cov < self.partial_below:
            return None
        reason = "page text outside the parse tree (running header/footer, cover or copyright line): furniture_boxes only, no span"
        return Grounding([], round(f_cov, 4), [], "furniture", reason, round(f_cov, 4), furn.boxes, round(f_cov, 4))

    def _widen_punctuation(self, spans: list[tuple[int, int]], cleaned: str) -> list[tuple[int, int]]:
        """Letter spans -> text spans: the punctuation the text has before its first letter (after its
        last) is taken from the document too where it follows in the same order (whitespace
        skipped, Markdown markup ignored, at most 12 characters)."""
        if not spans:
            return spans
        text = self.text
        i = 0
        while i < len(cleaned) and not cleaned[i].isalnum():
            i += 1
        j = len(cleaned)
        while j > i and not cleaned[j - 1].isalnum():
            j -= 1
        lead = [c for c in cleaned[:i] if not c.isspace() and c not in _MARKUP_CHARS]
        trail = [c for c in cleaned[j:] if not c.isspace() and c not in _MARKUP_CHARS]
        s0, e1 = spans[0][0], spans[-1][1]
        pos, best = e1, e1
        for c in trail:
            while pos < len(text) and pos - e1 < 12 and text[pos].isspace():
                pos += 1
            if pos < len(text) and pos - e1 < 12 and _same_punct(text[pos], c):
                pos += 1
                best = pos
            else:
                break
        e1 = best
        pos, best = s0, s0
        for c in reversed(lead):
            while pos > 0 and s0 - pos < 12 and text[pos - 1].isspace():
                pos -= 1
            if pos > 0 and s0 - pos < 12 and _same_punct(text[pos - 1], c):
                pos -= 1
                best = pos
            else:
                break
        s0 = best
        if len(spans) == 1:
            return [(s0, e1)]
        return [(s0, spans[0][1]), *spans[1:-1], (spans[-1][0], e1)]


_PUNCT_FOLD = str.maketrans("\u2018\u2019\u201a\u201b\u2032\u201c\u201d\u201e\u2033\u2010\u2011\u2012\u2013\u2014\u2212", "'''''" + '""""' + "------")


def _same_punct(a: str, b: str) -> bool:
    return a == b or a.translate(_PUNCT_FOLD) == b.translate(_PUNCT_FOLD)


def _one_seed_per_query_position(qp: np.ndarray, dp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where a query k-gram occurs several times in one cluster (a phrase repeated nearby), keep the
    occurrence on the diagonal of its nearest unambiguous neighbour in the query (so re-ordered
    sentences keep their own diagonal); input and output sorted by document position."""
    _, inv, cnt = np.unique(qp, return_inverse=True, return_counts=True)
    single = cnt[inv] == 1
    if single.all():
        return qp, dp
    if single.any():
        sq, sd = qp[single], dp[single]
        o = np.argsort(sq, kind="stable")
        sq, sd = sq[o], sd[o]
        j = np.searchsorted(sq, qp)
        j0, j1 = np.clip(j - 1, 0, len(sq) - 1), np.clip(j, 0, len(sq) - 1)
        nearest = np.where(np.abs(sq[j0] - qp) <= np.abs(sq[j1] - qp), j0, j1)
        expected = qp + (sd - sq)[nearest]
    else:
        expected = qp + int(np.median(dp - qp))
    err = np.abs(dp - expected)
    order = np.lexsort((err, qp))
    sq = qp[order]
    keep = np.sort(order[np.concatenate([[True], sq[1:] != sq[:-1]])])
    return qp[keep], dp[keep]


def _best_suffix(piece: str, window: str) -> tuple[int, int] | None:
    """The suffix of ``window`` closest to ``piece`` in edit distance: (its length, distance), or
    None when even the best one differs in more than a third of the characters."""
    if not piece or not window:
        return None
    limit = max(1, len(piece) // 3)
    best: tuple[int, int] | None = None
    for used in range(1, len(window) + 1):
        d = Levenshtein.distance(piece, window[len(window) - used :], score_cutoff=limit)
        if d <= limit and (best is None or d < best[1]):
            best = (used, d)
    return best


_LAST: list[Grounder] = []  # the most recently used documents' grounders (strong refs, bounded)
_KEEP = 2


def _grounder(root: ParsingResult) -> Grounder:
    for g in _LAST:
        if g.root is root:
            return g
    g = Grounder(root)
    _LAST.insert(0, g)
    del _LAST[_KEEP:]
    return g


def ground(texts: Sequence[str], root: ParsingResult, **options: Any) -> list[Grounding]:
    """Ground texts in document order (e.g. a splitter's chunks) in the parse tree ``root``."""
    grounder = Grounder(root, **options) if options else _grounder(root)
    return grounder.ground_all(texts)


def ground_quote(root: ParsingResult, sentence: str, *, near: int | None = None) -> Grounding:
    """Boxes for a quoted sentence (e.g. an answer's evidence). The document's grounder is built on
    first use and reused for the next quotes (the two most recent documents are kept)."""
    return _grounder(root).ground(sentence, near=near)
