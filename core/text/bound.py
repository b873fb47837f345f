"""The token bound, checked on the chunk text as the embedder will tokenize it.

Strategies count the tokens of the document's token stream, where every element was tokenized as
a whole. A chunk's text tokenized on its own can count more: a window that starts inside a word
(``adjuvant`` is ``ad ##ju ##vant``; ``vant`` alone is ``van ##t``), a cut between two tokens of
one character (a Hangul syllable is three WordPiece tokens), a heading prefix whose whitespace was
normalized. :class:`TokenBound` therefore checks every token group the strategy yields and splits
the ones that do not fit, so that for every chunk::

    len(tokenizer.encode(chunk.content, add_special_tokens=False)) <= max_tokens

headings included, at every ``max_tokens`` >= 1 and on any Unicode text. The one exception: a
chunk whose body is a single character - a code point with the combining marks that follow it (a
zero-width joiner glues the next code point on) - that the tokenizer encodes to more than N tokens
on its own (a Hangul syllable at N <= 2, an emoji of several byte-level BPE tokens); such a chunk
holds that character only, without headings.

Splitting keeps the reading order and tiles the group: pieces end at word starts where one fits,
else at any token boundary that splits no character, else - when one word's token run does not fit
alone - at character boundaries inside it (the group then carries ``char_start``/``char_end``).
No character of the group is lost and no piece is empty. A heading prefix that leaves no room for
the body's first character is dropped, highest ancestor first, and the dropped heading's text is
emitted once as a body of its own, so headings are not lost either.

Re-encoding every chunk would cost about a second tokenizer pass, so groups that provably re-encode
to their stream tokens skip it (:func:`prefix_stable`): WordPiece with BERT normalization and
pre-tokenization splits text into words at whitespace and punctuation, normalizes character by
character and tokenizes each word greedily from its start, so a text that starts at a word start
and whose ends split no character encodes to exactly the stream tokens it covers (a prefix of a
word cut after a token re-tokenizes to the same tokens by greedy longest match), and the heading
prefix, which ends in a blank line, adds its own count. Everything else is re-encoded in batches.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator, Sequence

from .groups import TokenGroup
from .stream import TokenStream
from .tokenizer import HFTokenizer, Tokenizer

__all__ = ["TokenBound", "enforce_bound", "heading_prefix", "prefix_stable", "char_units"]

_BATCH = 256
_ZWJ = "\u200d"


def heading_prefix(stream: TokenStream, headings: Sequence[int]) -> str:
    """The text put before a chunk body for its headings (as the chunk assembly builds it)."""
    if not headings:
        return ""
    nodes = stream.doc.nodes
    return "\n".join(" ".join(nodes[k].content.split()) for k in headings) + "\n\n"


def prefix_stable(tokenizer: Tokenizer | None) -> bool:
    """True for a Hugging Face WordPiece tokenizer with BERT normalization (or none), BERT
    pre-tokenization and no non-special added tokens: word-local and greedy from each word's start
    (see the module docstring)."""
    if not isinstance(tokenizer, HFTokenizer):
        return False
    cached = tokenizer.prefix_stable
    if cached is None:
        from tokenizers import models, normalizers, pre_tokenizers

        tok = tokenizer._tok
        try:
            added = tok.get_added_tokens_decoder().values()
        except AttributeError:  # pragma: no cover - tokenizers < 0.15
            added = ()
        cached = (
            isinstance(tok.model, models.WordPiece)
            and isinstance(tok.pre_tokenizer, pre_tokenizers.BertPreTokenizer)
            and (tok.normalizer is None or isinstance(tok.normalizer, normalizers.BertNormalizer))
            and all(t.special for t in added)
        )
        tokenizer.prefix_stable = cached
    return bool(cached)


def char_units(text: str, start: int, end: int) -> list[int]:
    """Cut positions ``start = p0 < p1 < ... < pn = end`` between characters of ``text[start:end]``
    that keep every code point with its following combining marks (and a zero-width joiner with the
    code points on both sides)."""
    cuts = [start]
    for i in range(start + 1, end):
        ch, prev = text[i], text[i - 1]
        if unicodedata.category(ch).startswith("M") or ch == _ZWJ or prev == _ZWJ:
            continue
        cuts.append(i)
    cuts.append(end)
    return cuts


class TokenBound:
    """Filter of token groups that makes every chunk's re-encoded text fit ``max_tokens``."""

    def __init__(self, stream: TokenStream, max_tokens: int) -> None:
        self.stream = stream
        self.N = max_tokens
        self.tokenizer = stream.tokenizer
        self.stable = prefix_stable(self.tokenizer)
        self._prefix: dict[tuple[int, ...], str] = {}
        self._prefix_count: dict[tuple[int, ...], int] = {}
        self._released: set[int] = set()
        self.checked = 0  # groups re-encoded
        self.split = 0  # groups that did not fit and were split

    # -- texts and counts ------------------------------------------------------------------------
    def prefix(self, headings: tuple[int, ...]) -> str:
        p = self._prefix.get(headings)
        if p is None:
            p = self._prefix[headings] = heading_prefix(self.stream, headings)
        return p

    def prefix_count(self, headings: tuple[int, ...]) -> int:
        n = self._prefix_count.get(headings)
        if n is None:
            assert self.tokenizer is not None
            n = self._prefix_count[headings] = self.tokenizer.count(self.prefix(headings)) if headings else 0
        return n

    def _count(self, headings: tuple[int, ...], a: int, b: int) -> int:
        assert self.tokenizer is not None
        return self.tokenizer.count(self.prefix(headings) + self.stream.text[a:b])

    def fits(self, headings: tuple[int, ...], a: int, b: int) -> bool:
        return self._count(headings, a, b) <= self.N

    def farthest(self, headings: tuple[int, ...], spans: Sequence[tuple[int, int]]) -> int:
        """Index of the last span (of growing spans) whose text fits with ``headings``, by binary
        search assuming longer spans never count fewer tokens; -1 if the first does not fit. Only a
        span whose count was checked is ever returned."""
        lo, hi, best = 0, len(spans) - 1, -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.fits(headings, *spans[mid]):
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return best

    # -- the filter ------------------------------------------------------------------------------
    def __call__(self, groups: Iterable[TokenGroup]) -> Iterator[TokenGroup]:
        pending: list[TokenGroup] = []
        for group in groups:
            if group.end <= group.start:
                continue
            pending.append(group)
            if len(pending) >= _BATCH:
                yield from self._check(pending)
                pending = []
        if pending:
            yield from self._check(pending)

    def _provable(self, g: TokenGroup) -> bool:
        if not self.stable or g.char_start is not None or g.char_end is not None:
            return False
        st = self.stream
        if len(g) + self.prefix_count(g.headings) > self.N:
            return False
        return bool(st.starts_word(g.start)) and st.clean_cut(g.start) and st.clean_cut(g.end)

    def _check(self, groups: list[TokenGroup]) -> Iterator[TokenGroup]:
        st = self.stream
        spans = [g.char_span(st) for g in groups]
        if self.tokenizer is None:
            yield from (g for g, (a, b) in zip(groups, spans) if b > a)
            return
        todo = [i for i, (g, (a, b)) in enumerate(zip(groups, spans)) if b > a and not self._provable(g)]
        texts = [self.prefix(groups[i].headings) + st.text[spans[i][0] : spans[i][1]] for i in todo]
        counts = dict(zip(todo, self.tokenizer.count_batch(texts))) if texts else {}
        self.checked += len(todo)
        for i, g in enumerate(groups):
            a, b = spans[i]
            if b <= a:
                continue  # no characters (tokens inside one multi-byte character): nothing to show
            if counts.get(i, 0) > self.N:
                self.split += 1
                yield from self._split(g)
            else:
                yield g

    # -- splitting a group that does not fit -----------------------------------------------------
    def _span(self, g: TokenGroup, k: int, e: int) -> tuple[int, int]:
        """Body characters of tokens ``[k, e)`` of group ``g`` (cut at the group's own char limits)."""
        a, b = self.stream.char_span(k, e)
        if k == g.start and g.char_start is not None:
            a = max(a, g.char_start)
        if e == g.end and g.char_end is not None:
            b = min(b, g.char_end)
        return a, b

    def _release(self, heading: int) -> Iterator[TokenGroup]:
        """Body chunk(s) for a heading dropped from a prefix (once per heading node)."""
        if heading in self._released:
            return
        self._released.add(heading)
        st = self.stream
        lo, hi = int(st.node_lo[heading]), int(st.node_hi[heading])
        if hi > lo:
            yield from self(iter([TokenGroup(lo, hi)]))

    def _split(self, g: TokenGroup) -> Iterator[TokenGroup]:
        st = self.stream
        text = st.text
        headings = g.headings
        cuts = [k for k in range(g.start + 1, g.end) if st.clean_cut(k)] + [g.end]
        k = g.start
        ci = 0  # cuts[ci] is the first cut after k
        while k < g.end:
            while cuts[ci] <= k:
                ci += 1
            a = self._span(g, k, cuts[ci])[0]
            # a prefix that leaves no room for the first character: drop headings, highest first
            while headings:
                first = char_units(text, a, self._span(g, k, cuts[ci])[1])
                if self.fits(headings, a, first[1] if len(first) > 1 else a):
                    break
                dropped, headings = headings[0], headings[1:]
                yield from self._release(dropped)
            ends = [(e, self._span(g, k, e)) for e in cuts[ci:]]
            ends = [(e, (s0, s1)) for e, (s0, s1) in ends if s1 > s0]
            words = [(e, sp) for e, sp in ends if e == g.end or st.is_boundary(e)]
            best = -1
            for candidates in (words, ends):
                best_i = self.farthest(headings, [sp for _, sp in candidates])
                if best_i >= 0:
                    e, (s0, s1) = candidates[best_i]
                    yield TokenGroup(k, e, headings, s0 if s0 != st.token_start(k) else None, s1 if s1 != st.token_end(e - 1) else None)
                    k, best = e, e
                    break
            if best >= 0:
                continue
            # not even the run of tokens up to the next clean cut fits: split it between characters
            if not ends:
                break  # the remaining tokens cover no character
            m = ends[0][0]
            s0, s1 = ends[0][1]
            yield from self._char_split(k, m, s0, s1, headings)
            k = m

    def _char_split(self, k: int, m: int, a: int, b: int, headings: tuple[int, ...]) -> Iterator[TokenGroup]:
        """Pieces of characters ``[a, b)`` (inside tokens ``[k, m)``), each as long as fits."""
        units = char_units(self.stream.text, a, b)
        i = 0
        while i < len(units) - 1:
            j = self.farthest(headings, [(units[i], u) for u in units[i + 1 :]])
            if j < 0:
                if headings:  # no room beside the headings (they were checked for the first character only)
                    for h in headings:
                        yield from self._release(h)
                    headings = ()
                    continue
                j = 0  # one character the tokenizer alone encodes to more than N tokens
            yield TokenGroup(k, m, headings, units[i], units[i + 1 + j])
            i += 1 + j


def enforce_bound(groups: Iterable[TokenGroup], stream: TokenStream, max_tokens: int) -> Iterator[TokenGroup]:
    """``groups`` with every group whose chunk text exceeds ``max_tokens`` split (see module doc)."""
    return TokenBound(stream, max_tokens)(groups)
