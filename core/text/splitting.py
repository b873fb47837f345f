"""Recursive delimiter splitting on token ranges (thesis §3.4.2), shared by the recursive,
semantic (oversize re-split) and hierarchical (leaf-splitting) strategies.

Lengths are token counts of the stream, so a split never exceeds its limit by the tokenizer that
built the stream. Delimiters stay with the piece they end (a sentence keeps its full stop).
"""

from __future__ import annotations

import re

import numpy as np

from .stream import TokenStream

__all__ = ["DEFAULT_DELIMITERS", "recursive_split", "merge_ranges", "window_split", "word_ranges"]

#: LangChain's separators with sentence punctuation added (thesis §3.4.2)
DEFAULT_DELIMITERS: tuple[str, ...] = ("\n\n", "\n", ". ", "!", "?", "\u00b6", "")

Range = tuple[int, int]


def window_split(stream: TokenStream, lo: int, hi: int, limit: int, overlap: int = 0) -> list[Range]:
    """Windows of at most ``limit`` tokens over ``[lo, hi)``, ends snapped back to word starts.

    In a word longer than the window the end falls between tokens, never inside a character
    (tokens sharing one character stay together, even past ``limit``: the token bound of
    :mod:`grounded.text.bound` then decides)."""
    out: list[Range] = []
    start = lo
    while start < hi:
        end = min(hi, start + limit)
        if end < hi:
            end = _clean_forward(stream, stream.snap_back(end, start), hi)
        out.append((start, end))
        if end >= hi:
            break
        nxt = end - overlap if overlap else end
        if overlap:
            nxt = stream.snap_back(nxt, start) if nxt > start else start + 1
            nxt = min(_clean_forward(stream, max(nxt, start + 1), hi), end)
        start = nxt
    return out


def _clean_forward(stream: TokenStream, k: int, hi: int) -> int:
    """``k``, or the next token index up to ``hi`` where a cut splits no character."""
    while k < hi and not stream.clean_cut(k):
        k += 1
    return k


def word_ranges(stream: TokenStream, lo: int, hi: int) -> list[Range]:
    """``[lo, hi)`` cut at every word start (:meth:`TokenStream.boundaries`)."""
    cuts = [lo, *stream.boundaries(lo, hi).tolist(), hi]
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def _pieces(stream: TokenStream, lo: int, hi: int, delimiter: str) -> list[Range]:
    """Split ``[lo, hi)`` after each occurrence of ``delimiter`` in its text."""
    if delimiter == "":
        return word_ranges(stream, lo, hi)
    s, e = stream.char_span(lo, hi)
    text = stream.text
    cut_chars = [m.end() for m in re.finditer(re.escape(delimiter), text[s:e])]
    if not cut_chars:
        return [(lo, hi)]
    # token index of the first token starting at/after each cut
    cut_tokens = stream.token_at_char(np.asarray(cut_chars, dtype=np.int64) + s)
    cuts = [lo]
    for k in cut_tokens.tolist():
        if lo < k < hi and k != cuts[-1]:
            cuts.append(k)
    cuts.append(hi)
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def merge_ranges(pieces: list[Range], limit: int, overlap: int) -> list[Range]:
    """Greedily merge contiguous pieces into ranges of at most ``limit`` tokens, carrying up to
    ``overlap`` tokens of trailing pieces into the next range (LangChain's ``_merge_splits``)."""
    out: list[Range] = []
    current: list[Range] = []
    total = 0
    for piece in pieces:
        size = piece[1] - piece[0]
        if current and total + size > limit:
            out.append((current[0][0], current[-1][1]))
            while current and (total > overlap or total + size > limit):
                total -= current[0][1] - current[0][0]
                current.pop(0)
        current.append(piece)
        total += size
    if current:
        last = (current[0][0], current[-1][1])
        # a trailing range made only of overlap adds nothing new
        if not out or last[1] > out[-1][1]:
            out.append(last)
    return out


def recursive_split(
    stream: TokenStream,
    lo: int,
    hi: int,
    limit: int,
    overlap: int = 0,
    delimiters: tuple[str, ...] = DEFAULT_DELIMITERS,
) -> list[Range]:
    """Coarse-to-fine split of ``[lo, hi)`` into ranges of at most ``limit`` tokens."""
    if hi - lo <= limit:
        return [(lo, hi)] if hi > lo else []
    for i, delimiter in enumerate(delimiters):
        pieces = _pieces(stream, lo, hi, delimiter)
        if len(pieces) > 1 or delimiter == "":
            rest = delimiters[i + 1 :]
            break
    else:  # no delimiter splits: hard windows
        return window_split(stream, lo, hi, limit, overlap)
    out: list[Range] = []
    good: list[Range] = []
    for piece in pieces:
        if piece[1] - piece[0] <= limit:
            good.append(piece)
            continue
        if good:
            out.extend(merge_ranges(good, limit, overlap))
            good = []
        if rest:
            out.extend(recursive_split(stream, piece[0], piece[1], limit, overlap, rest))
        else:  # a single "word" longer than the limit
            out.extend(window_split(stream, piece[0], piece[1], limit, overlap))
    if good:
        out.extend(merge_ranges(good, limit, overlap))
    return out
