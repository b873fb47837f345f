"""The strategy-authoring interface: pieces in, token ranges out (see ``docs/strategies.md``).

A :class:`PieceStrategy` never touches :class:`~grounded.text.stream.TokenStream` internals. It
declares which pieces it wants (``piece_kind``: document elements, sentences, words, or small runs of
at most N tokens, N from :meth:`PieceStrategy.piece_options`) and gets them as a list of
:class:`Piece` (text, token count, token range, element index and type, heading flag, whether the
piece starts an element). It returns chunks as token ranges: ``(start, end)`` tuples, :class:`Span` s
(a range plus prepended headings), or :func:`join` of a run of pieces. The base class validates
every range (ints, inside the stream, in reading order, heading indices that name text elements)
and converts it to a :class:`~grounded.chunking.base.TokenGroup`; the chunker then enforces the
token bound (:mod:`grounded.text.bound`) on every group, so a range above ``max_tokens`` is split,
never dropped. :class:`Document` offers the splitting helpers the built-in strategies use (windows,
recursive delimiter splitting) on token ranges.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from ..errors import ChunkingError
from ..model.elements import HEADING_TYPES, ParsingResult
from ..model.elements import ParsingResultType as T
from ..text.splitting import DEFAULT_DELIMITERS, recursive_split, window_split, word_ranges
from .base import ChunkingStrategy, TokenGroup, is_int
from .nlp import punkt_sentence_tokenizer

if TYPE_CHECKING:
    from ..text.stream import TokenStream

__all__ = ["Piece", "Span", "Document", "PieceStrategy", "PieceKind", "join"]

PieceKind = Literal["element", "sentence", "word", "split"]
PIECE_KINDS: tuple[str, ...] = ("element", "sentence", "word", "split")


class Piece:
    """One piece of the document: tokens ``[start, end)`` of the document's token stream.

    ``index`` is its position in the list; ``element`` the index of the text element its first token
    belongs to (``None`` for a structural delimiter between elements); ``text`` the exact document
    text it covers (computed on first access)."""

    __slots__ = ("index", "start", "end", "element", "_doc", "_text")

    def __init__(self, doc: Document, index: int, start: int, end: int, element: int | None) -> None:
        self._doc = doc
        self.index = index
        self.start = start
        self.end = end
        self.element = element
        self._text: str | None = None

    @property
    def tokens(self) -> int:
        """Token count (of the chunker's tokenizer)."""
        return self.end - self.start

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self._doc.text(self.start, self.end)
        return self._text

    @property
    def element_type(self) -> T | None:
        return None if self.element is None else self._doc.element_type(self.element)

    @property
    def is_heading(self) -> bool:
        """The piece lies in a title or section heading."""
        return self.element_type in HEADING_TYPES

    @property
    def starts_element(self) -> bool:
        """The piece begins with the first token of an element (a paragraph, heading, cell...)."""
        return self.element is not None and self._doc.element_range(self.element)[0] == self.start

    def __repr__(self) -> str:
        return f"Piece({self.index}, tokens=[{self.start}, {self.end}), element={self.element}, text={self.text[:30]!r})"


@dataclass(frozen=True, slots=True)
class Span:
    """A chunk as a strategy returns it: body tokens ``[start, end)`` and the element indices of
    headings to prepend (outermost first; their tokens count against ``max_tokens``)."""

    start: int
    end: int
    headings: tuple[int, ...] = ()


def join(pieces: Sequence[Piece]) -> Span:
    """The token range from the first to the last of consecutive ``pieces``."""
    if not pieces:
        raise ChunkingError("join() needs at least one piece")
    return Span(pieces[0].start, pieces[-1].end)


class Document:
    """What a strategy may read of the document: its text, its elements and pieces, and the
    token-range splitting helpers. Token indices are positions in the document's token stream."""

    def __init__(self, stream: TokenStream, root: ParsingResult) -> None:
        self._stream = stream
        self.root = root
        self._elements = stream.doc.nodes

    def __len__(self) -> int:
        """Number of tokens."""
        return len(self._stream)

    @property
    def full_text(self) -> str:
        return self._stream.text

    def text(self, start: int, end: int) -> str:
        """The document text covered by tokens ``[start, end)``."""
        return self._stream.content(start, end) if end > start else ""

    def count(self, text: str) -> int:
        """Token count of any text by the chunker's tokenizer (0 without a tokenizer)."""
        tok = self._stream.tokenizer
        return tok.count(text) if tok is not None else 0

    # -- elements ----------------------------------------------------------------------------
    @property
    def element_count(self) -> int:
        return len(self._elements)

    def element(self, k: int) -> ParsingResult:
        """The parse-tree node of text element ``k``."""
        return self._elements[k]

    def element_type(self, k: int) -> T:
        return self._elements[k].type

    def element_index(self, node: ParsingResult) -> int | None:
        """Index of ``node`` among the text elements (None: it carries no text of its own)."""
        return self._stream.node_index(node.id)

    def element_range(self, k: int) -> tuple[int, int]:
        """Token range of element ``k`` (empty when its text has no token)."""
        return int(self._stream.node_lo[k]), int(self._stream.node_hi[k])

    # -- pieces ------------------------------------------------------------------------------
    def pieces(self, kind: PieceKind | str = "element", max_tokens: int | None = None, language: str = "english") -> list[Piece]:
        """The document as pieces in reading order.

        * ``element``: one piece per text element with tokens, covering exactly its tokens (the
          delimiters between elements belong to no piece);
        * ``sentence``: Punkt sentences (``language``), never crossing elements; delimiter tokens join the
          following sentence, so the pieces tile the stream;
        * ``word``: pre-tokenizer words (a token run that must not be cut), tiling the stream;
        * ``split``: the recursive delimiter splitter's ranges of at most ``max_tokens`` tokens
          (paragraphs, lines, sentences, words - coarsest first), tiling the stream."""
        n = len(self)
        if kind == "element":
            elems = [(k, *self.element_range(k)) for k in range(self.element_count)]
            return [Piece(self, i, lo, hi, k) for i, (k, lo, hi) in enumerate(e for e in elems if e[2] > e[1])]
        if kind == "sentence":
            starts = self.sentence_starts(language)
            ranges = list(zip(starts, [*starts[1:], n], strict=False))
        elif kind == "word":
            ranges = word_ranges(self._stream, 0, n)
        elif kind == "split":
            if max_tokens is None or not is_int(max_tokens) or max_tokens < 1:
                raise ChunkingError(f"split pieces need max_tokens >= 1, got {max_tokens!r}")
            ranges = recursive_split(self._stream, 0, n, int(max_tokens), 0, DEFAULT_DELIMITERS)
        else:
            raise ChunkingError(f"unknown piece kind {kind!r}; choose one of: {', '.join(PIECE_KINDS)}")
        owner = self._stream.node
        return [Piece(self, i, a, b, _owner(owner, a)) for i, (a, b) in enumerate(ranges)]

    def sentence_starts(self, language: str = "english") -> list[int]:
        """Token index where each sentence starts (see :meth:`pieces`, kind ``sentence``)."""
        sentences = punkt_sentence_tokenizer(language)
        stream = self._stream
        cuts: list[int] = [0] if len(stream) else []
        doc = stream.doc
        for k, node in enumerate(doc.nodes):
            first = int(stream.node_first[k])
            if first < 0:
                continue
            spans = list(sentences.span_tokenize(node.content))
            if not spans:
                continue
            local_starts = np.asarray([s for s, _ in spans], dtype=np.int64) + doc.starts[k]
            toks = np.searchsorted(stream.node_starts(k), local_starts, side="left") + first
            for t in [first, *toks[1:].tolist()]:
                if t > cuts[-1] and t < len(stream):
                    cuts.append(int(t))
        return cuts

    # -- splitting helpers on token ranges ---------------------------------------------------
    def windows(self, start: int, end: int, limit: int, overlap: int = 0) -> list[tuple[int, int]]:
        """Windows of at most ``limit`` tokens over ``[start, end)`` with ``overlap`` tokens repeated,
        ends moved back to word starts."""
        return window_split(self._stream, start, end, limit, overlap)

    def split(
        self, start: int, end: int, limit: int, overlap: int = 0, delimiters: Sequence[str] = DEFAULT_DELIMITERS
    ) -> list[tuple[int, int]]:
        """Recursive delimiter splitting of ``[start, end)`` into ranges of at most ``limit`` tokens
        (``[(start, end)]`` itself when it fits)."""
        return recursive_split(self._stream, start, end, limit, overlap, tuple(delimiters))


def _owner(owner: np.ndarray, k: int) -> int | None:
    v = int(owner[k]) if k < len(owner) else -1
    return v if v >= 0 else None


class PieceStrategy(ChunkingStrategy):
    """Base class of a strategy written against :class:`Piece` s.

    Set ``name`` (and register the class: see :mod:`grounded.chunking.base`),
    ``piece_kind`` (``None``: no pieces, work with the :class:`Document` helpers) and, for kind
    ``split``, return the piece size from :meth:`piece_options`. Implement :meth:`split`: it gets the
    pieces and the document and yields token ranges in reading order."""

    piece_kind: ClassVar[str | None] = "element"

    def piece_options(self) -> dict[str, Any]:
        """Keyword arguments of :meth:`Document.pieces` (``max_tokens`` for kind ``split``,
        ``language`` for kind ``sentence``)."""
        return {}

    @abstractmethod
    def split(self, pieces: Sequence[Piece], doc: Document) -> Iterable[Span | tuple[int, int]]:
        """Yield the chunks as token ranges (``Span`` or ``(start, end)``) in reading order."""

    def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
        if len(stream) == 0:
            return
        doc = Document(stream, root)
        pieces = doc.pieces(self.piece_kind, **self.piece_options()) if self.piece_kind is not None else []
        yield from _validated(self.name or type(self).__name__, self.split(pieces, doc), stream)


def _validated(name: str, ranges: Iterable[Any], stream: TokenStream) -> Iterator[TokenGroup]:
    """TokenGroups of a strategy's ranges; a range that is no pair of ints inside the stream, goes
    back in reading order, or names a heading that is not a text element is a ChunkingError. Empty
    ranges (no tokens) are skipped."""
    n, n_elements = len(stream), len(stream.doc.nodes)
    previous = 0
    for item in ranges:
        if isinstance(item, Span):
            start, end, headings = item.start, item.end, item.headings
        elif isinstance(item, tuple) and len(item) == 2:
            (start, end), headings = item, ()
        else:
            raise ChunkingError(f"strategy {name!r} returned {item!r}; expected a Span or a (start, end) token range")
        if not (is_int(start) and is_int(end)) or not 0 <= start <= end <= n:
            raise ChunkingError(f"strategy {name!r} returned the token range {(start, end)!r} outside [0, {n}]")
        if start < previous:
            raise ChunkingError(f"strategy {name!r} returned {(start, end)!r} after a range starting at {previous}: "
                                "not in reading order")
        if any(not is_int(h) or not 0 <= h < n_elements for h in headings):
            raise ChunkingError(f"strategy {name!r} returned headings {headings!r}; "
                                f"expected element indices in [0, {n_elements})")
        if end == start:
            continue
        previous = int(start)
        yield TokenGroup(int(start), int(end), tuple(int(h) for h in headings))
