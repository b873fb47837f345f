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


def alnum_text(text: str) -> AlnumText:
    """The letter/digit stream of ``text`` with its offset map (linear; ASCII words take a fast path)."""
    pieces: list[str] = []
    seg_origin: list[int] = []  # per output segment: source offset of its first char
    seg_len: list[int] = []  # output length
    seg_step: list[int] = []  # 1: consecutive source chars; 0: all from one source char
    word_starts: list[int] = []
    pos = 0
    for m in _RUN.finditer(text):
        run = m.group()
        start = m.start()
        word_starts.append(pos)
        if run.isascii():
            pieces.append(run.lower())
            seg_origin.append(start)
            seg_len.append(len(run))
            seg_step.append(1)
            pos += len(run)
            continue
        for i, ch in enumerate(run):
            if ch.isascii():
                folded = ch.lower()
            else:
                folded = _fold(ch)
                if not folded:
                    continue
            pieces.append(folded)
            seg_origin.append(start + i)
            seg_len.append(len(folded))
            seg_step.append(0)
            pos += len(folded)
    out = "".join(pieces)
    if not seg_len:
        return AlnumText(out, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    lens = np.asarray(seg_len, dtype=np.int64)
    first = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lens)[:-1]])
    within = np.arange(len(out), dtype=np.int64) - np.repeat(first, lens)
    origin = np.repeat(np.asarray(seg_origin, dtype=np.int64), lens) + within * np.repeat(np.asarray(seg_step, dtype=np.int64), lens)
    starts = np.asarray(word_starts, dtype=np.int64)
    keep = np.concatenate([starts[1:] != starts[:-1], [True]]) if len(starts) else starts.astype(bool)
    return AlnumText(out, origin, starts[keep])  # runs that folded to nothing start no word


def alnum_only(text: str) -> str:
    """Just the letter/digit stream of ``text`` (no map)."""
    return alnum_text(text).text
