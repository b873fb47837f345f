"""Text normalization for grounding: the *letter/digit stream* of a text with a map back to offsets.

Other tools change everything about a text except its letters and digits: whitespace and line
breaks, hyphenation (kept as ``exam-\\nple`` or undone as ``example``), ligatures (``ﬁ``), quotes and
dashes, Markdown/HTML markup, table delimiters. Grounding therefore compares texts as the sequence
of their letters and digits only, NFKD-decomposed (ligatures expanded, accents dropped) and
case-folded; each kept character remembers the offset of the original character it came from.
Markup that carries letters of its own (HTML tags and entities, link targets, pymupdf4llm's image
placeholders) is removed from *query* texts before that (:func:`strip_markup`).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Container, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["AlnumText", "alnum_text", "alnum_only", "strip_markup"]

_RUN = re.compile(r"[^\W_]+")

_MARKUP = [
    (re.compile(r"\*\*==> picture \[[^\]]*\] intentionally omitted <==\*\*"), " "),  # pymupdf4llm
    (re.compile(r"\*\*----- (?:Start|End) of picture text -----\*\*"), " "),  # pymupdf4llm
    (re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)"), " "),  # images
    (re.compile(r"\[([^\]\n]*)\]\((?:[^()\n]|\([^()\n]*\))*\)"), r"\1"),  # links [text](url)
    (re.compile(r"<!--.*?-->", re.S), " "),  # HTML comments (docling's <!-- image -->)
    (re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>"), " "),  # HTML tags (<br>, <sup>, <td ...>)
]


def strip_markup(text: str) -> str:
    """Remove markup whose own letters are not document text: HTML tags, comments and entities,
    link targets (``[t](u)`` -> ``t``), images and pymupdf4llm's picture placeholders. Markup made of
    punctuation only (``**``, ``_``, ``#``, ``|``, ``---``, bullets) needs no removal: the letter
    stream ignores it."""
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return html.unescape(text) if "&" in text else text


def _fold(ch: str) -> str:
    """Letters/digits of one non-ASCII character after NFKD (ligatures expanded, accents dropped) and
    case folding (``ß`` -> ``ss``)."""
    decomposed = unicodedata.normalize("NFKD", ch).casefold()
    return "".join(c for c in decomposed if c.isalnum() and not unicodedata.combining(c))


@dataclass(frozen=True)
class AlnumText:
    """``text`` = the letter/digit stream; ``origin[i]`` = offset in the source text of ``text[i]``;
    ``word_starts`` = stream offsets where the source's words (letter/digit runs) begin."""

    text: str
    origin: np.ndarray
    word_starts: np.ndarray

    def __len__(self) -> int:
        return len(self.text)

    def codes(self) -> np.ndarray:
        """Code points of ``text`` (uint32), for hashing."""
        return np.frombuffer(self.text.encode("utf-32-le"), dtype=np.uint32)

    def source_span(self, lo: int, hi: int) -> tuple[int, int]:
        """Source-text span of stream characters ``[lo, hi)`` (``hi > lo``)."""
        return int(self.origin[lo]), int(self.origin[hi - 1]) + 1

    def words(self, lo: int, hi: int) -> tuple[list[str], np.ndarray]:
        """Words starting in stream range ``[lo, hi)`` and their stream offsets."""
        a = int(np.searchsorted(self.word_starts, lo, side="left"))
        b = int(np.searchsorted(self.word_starts, hi, side="left"))
        starts = self.word_starts[a:b]
        ends = self.word_starts[a + 1 : b + 1] if b < len(self.word_starts) else np.append(self.word_starts[a + 1 : b], len(self.text))
        text = self.text
        return [text[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)], starts

    def position(self, offset: int) -> int:
        """Index of the first stream character whose source offset is ``>= offset``."""
        return int(np.searchsorted(self.origin, offset, side="left"))


_ASCII_FOLD = np.zeros(128, dtype=np.uint32)  # lower-cased code of an ASCII letter/digit, else 0
for _c in range(128):
    if chr(_c).isalnum():
        _ASCII_FOLD[_c] = ord(chr(_c).lower())
_FOLDED: dict[str, tuple[str, bool]] = {}  # non-ASCII char -> (its letters/digits, is a word char)


def _fold_info(ch: str) -> tuple[str, bool]:
    info = _FOLDED.get(ch)
    if info is None:
        word = _RUN.match(ch) is not None
        info = _FOLDED[ch] = (_fold(ch) if word else "", word)
    return info


def alnum_text(text: str) -> AlnumText:
    """The letter/digit stream of ``text`` with its offset map.

    Vectorized over code points; only non-ASCII characters are looked at one by one (memoized),
    so the cost is linear with a small constant for mostly-ASCII text."""
    empty = np.zeros(0, dtype=np.int64)
    if not text:
        return AlnumText("", empty, empty)
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    is_ascii = codes < 128
    folded = np.where(is_ascii, _ASCII_FOLD[np.minimum(codes, 127)], 0).astype(np.uint32)
    lens = (folded > 0).astype(np.int64)
    is_word = lens > 0
    expanded: list[tuple[int, str]] = []
    for i in np.nonzero(~is_ascii)[0].tolist():
        letters, word = _fold_info(text[i])
        if word:
            is_word[i] = True
        if letters:
            lens[i] = len(letters)
            expanded.append((i, letters))
    ends = np.cumsum(lens)
    total = int(ends[-1])
    offsets = ends - lens  # stream offset of each source character
    out = np.zeros(total, dtype=np.uint32)
    simple = np.nonzero(folded)[0]
    out[offsets[simple]] = folded[simple]
    for i, letters in expanded:
        o = int(offsets[i])
        out[o : o + len(letters)] = [ord(c) for c in letters]
    origin = np.repeat(np.arange(len(codes), dtype=np.int64), lens)
    run_start = is_word & ~np.concatenate([[False], is_word[:-1]])
    starts = offsets[np.nonzero(run_start)[0]]
    starts = np.unique(starts[starts < total])  # runs that folded to nothing start no word
    return AlnumText(out.tobytes().decode("utf-32-le"), origin, starts.astype(np.int64))


def alnum_only(text: str) -> str:
    """Just the letter/digit stream of ``text`` (no map)."""
    return alnum_text(text).text


def max_word_run(words: Sequence[str], wanted: Container[str]) -> tuple[int, int]:
    """Maximum-sum run of ``words`` (``+len`` for a wanted word, ``-len`` otherwise, i.e. the most
    letters of wanted words net of the others): ``(a, b)`` inclusive, or ``b < a`` when no run has a
    positive sum."""
    best_sum, best_a, best_b = 0, 0, -1
    cur, cur_a = 0, 0
    for i, w in enumerate(words):
        cur += len(w) if w in wanted else -len(w)
        if cur <= 0:
            cur, cur_a = 0, i + 1
        elif cur > best_sum:
            best_sum, best_a, best_b = cur, cur_a, i
    return best_a, best_b
