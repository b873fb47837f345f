"""LangChain's ``RecursiveCharacterTextSplitter`` and ``TokenTextSplitter`` as Chroma ran them,
returning character spans instead of strings.

Chroma's evaluation (seed 003) chunks each corpus with these two LangChain splitters, counting
length in cl100k tokens, and then *searches* every chunk string in the corpus to find its offsets.
Here the offsets come from the splitters themselves: both algorithms are re-stated on
``(start, end)`` spans, step for step (separator choice, keep-separator-at-start splitting, the
merge/overlap loop, whitespace stripping; token windows of ``N`` advancing by ``N - O``), so
``text[start:end]`` is exactly the string LangChain returns (``tests/evaluation/test_eval_chunking.py``
checks this against ``langchain_text_splitters`` itself on the Chroma corpora).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import BackendUnavailableError
from .spans import Span

__all__ = ["Cl100k", "RecursiveSpanSplitter", "TokenSpanSplitter", "CHROMA_SEPARATORS"]

#: Chroma's separators for RecursiveCharacterTextSplitter (LangChain's default lacks ".", "?", "!")
CHROMA_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")


class Cl100k:
    """OpenAI's cl100k_base encoding, offline through ``bpe-openai`` (special tokens read as text)."""

    name = "cl100k_base"

    def __init__(self) -> None:
        try:
            import bpe_openai
        except ImportError as exc:
            raise BackendUnavailableError("bpe-openai (cl100k_base token counts)", "eval") from exc
        self._enc: Any = bpe_openai.get_encoding("cl100k_base")

    def encode(self, text: str) -> list[int]:
        return list(self._enc.encode_ordinary(text))

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._enc.decode(list(ids)))

    def encode_with_starts(self, text: str) -> tuple[list[int], list[int]]:
        """Token ids and the character offset in ``text`` where each token starts."""
        ids = self.encode(text)
        decoded, starts = self._enc.decode_with_offsets(ids)
        if decoded != text:  # cannot happen for valid str input; guard against a broken encoder
            raise RuntimeError("cl100k round trip changed the text")
        return ids, list(starts)


def _strip(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class RecursiveSpanSplitter:
    """``RecursiveCharacterTextSplitter(separators, keep_separator=True, strip_whitespace=True)``
    with ``length_function``, as spans. ``chunk_size``/``chunk_overlap`` are in length units."""

    def __init__(
        self,
        chunk_size: int,
        chunk_overlap: int = 0,
        length_function: Callable[[str], int] = len,
        separators: Sequence[str] = CHROMA_SEPARATORS,
    ) -> None:
        if chunk_overlap > chunk_size:
            raise ValueError(f"chunk_overlap {chunk_overlap} > chunk_size {chunk_size}")
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.length_function = length_function
        self.separators = list(separators)

    def split(self, text: str) -> list[Span]:
        self._text = text
        self._lengths: dict[Span, int] = {}
        try:
            return self._split(0, len(text), self.separators)
        finally:
            del self._text, self._lengths

    def _len(self, span: Span) -> int:
        n = self._lengths.get(span)
        if n is None:
            n = self._lengths[span] = self.length_function(self._text[span[0] : span[1]])
        return n

    def _pieces(self, start: int, end: int, separator: str) -> list[Span]:
        if not separator:
            return [(i, i + 1) for i in range(start, end)]
        cuts = [m.start() for m in re.finditer(re.escape(separator), self._text[start:end])]
        bounds = [0, *cuts, end - start]
        return [(start + a, start + b) for a, b in zip(bounds, bounds[1:]) if b > a]

    def _split(self, start: int, end: int, separators: list[str]) -> list[Span]:
        segment = self._text[start:end]
        separator, rest = separators[-1], []
        for i, sep in enumerate(separators):
            if not sep:
                separator = sep
                break
            if sep in segment:
                separator, rest = sep, separators[i + 1 :]
                break
        chunks: list[Span] = []
        good: list[Span] = []
        for piece in self._pieces(start, end, separator):
            if self._len(piece) < self.chunk_size:
                good.append(piece)
                continue
            if good:
                chunks.extend(self._merge(good))
                good = []
            chunks.extend(self._split(*piece, rest) if rest else [piece])
        if good:
            chunks.extend(self._merge(good))
        return chunks

    def _join(self, doc: list[Span]) -> Span | None:
        s, e = _strip(self._text, doc[0][0], doc[-1][1])
        return (s, e) if e > s else None

    def _merge(self, pieces: list[Span]) -> list[Span]:
        # LangChain's _merge_splits with separator "" (keep_separator=True joins with "")
        docs: list[Span] = []
        current: list[Span] = []
        total = 0
        for piece in pieces:
            n = self._len(piece)
            if total + n > self.chunk_size and current:
                joined = self._join(current)
                if joined is not None:
                    docs.append(joined)
                while total > self.chunk_overlap or (total + n > self.chunk_size and total > 0):
                    total -= self._len(current[0])
                    current = current[1:]
            current.append(piece)
            total += n
        if current:
            joined = self._join(current)
            if joined is not None:
                docs.append(joined)
        return docs


class TokenSpanSplitter:
    """LangChain's ``TokenTextSplitter`` (``split_text_on_tokens``): windows of ``chunk_size``
    tokens advancing by ``chunk_size - chunk_overlap``; spans are the windows' character ranges."""

    def __init__(self, chunk_size: int, chunk_overlap: int = 0, encoder: Cl100k | None = None) -> None:
        if chunk_size <= chunk_overlap:
            raise ValueError("chunk_size must be greater than chunk_overlap")
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.encoder = encoder or Cl100k()

    def windows(self, n_tokens: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        start = 0
        while start < n_tokens:
            stop = min(start + self.chunk_size, n_tokens)
            out.append((start, stop))
            if stop == n_tokens:
                break
            start += self.chunk_size - self.chunk_overlap
        return out

    def split(self, text: str) -> list[Span]:
        ids, starts = self.encoder.encode_with_starts(text)
        bounds = [*starts, len(text)]
        return [(bounds[a], bounds[b]) for a, b in self.windows(len(ids)) if bounds[b] > bounds[a]]
