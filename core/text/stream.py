"""The document as one text and one token stream (thesis §3.4 "Chunk Token Identification").

The document text joins the content of every text-bearing node in reading order with structural
delimiters: ``" | "`` between cells of one table row, ``"\\n"`` between rows of one table and
between items of one list, ``"\\n\\n"`` between all other blocks. Every node's content is
tokenized on its own (so no token straddles two elements) and each delimiter is tokenized too,
giving a token stream whose entries carry their element and character span. Strategies work on
index ranges of this stream; :class:`~grounded.model.RichToken` objects are made lazily.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ChunkingError
from ..model.chunk import RichToken
from ..model.elements import CONTAINER_TYPES, ParsingResult
from ..model.elements import ParsingResultType as T
from .tokenizer import Tokenizer

__all__ = ["DocumentText", "TokenStream", "document_text", "build_stream", "separator_between"]

_LIST_ITEMS = (T.LIST_ITEM, T.REFERENCE_ITEM)


def _is_text_node(node: ParsingResult) -> bool:
    if node.type == T.ROOT or not node.content.strip():
        return False
    return not (node.type in CONTAINER_TYPES and node.children)


def separator_between(prev: ParsingResult, nxt: ParsingResult) -> str:
    """Delimiter placed in the document text between two consecutive text nodes."""
    if prev.type == T.TABLE_CELL and nxt.type == T.TABLE_CELL:
        if prev.parent is nxt.parent:
            return " | "
        row_a, row_b = prev.parent, nxt.parent
        if row_a is not None and row_b is not None and row_a.parent is row_b.parent:
            return "\n"
    if prev.type in _LIST_ITEMS and nxt.type in _LIST_ITEMS and prev.parent is nxt.parent:
        return "\n"
    return "\n\n"


@dataclass
class DocumentText:
    """``text`` of the whole document; ``nodes[k]``'s content starts at ``starts[k]``."""

    text: str
    nodes: list[ParsingResult]
    starts: list[int]
    element_offsets: dict[str, int] = field(default_factory=dict)

    def node_span(self, k: int) -> tuple[int, int]:
        """Character span of node ``k`` in ``text``."""
        return self.starts[k], self.starts[k] + len(self.nodes[k].content)


def document_text(root: ParsingResult) -> DocumentText:
    """Join the tree's text nodes (depth-first = reading order) with structural delimiters."""
    parts: list[str] = []
    nodes: list[ParsingResult] = []
    starts: list[int] = []
    pos = 0
    prev: ParsingResult | None = None
    for node in root.walk():
        if not _is_text_node(node):
            continue
        if prev is not None:
            sep = separator_between(prev, node)
            parts.append(sep)
            pos += len(sep)
        nodes.append(node)
        starts.append(pos)
        parts.append(node.content)
        pos += len(node.content)
        prev = node
    text = "".join(parts)
    offsets = {n.id: s for n, s in zip(nodes, starts, strict=False)}
    if len(offsets) != len(nodes):
        raise ChunkingError("element ids are not unique in the tree; parse with grounded or call assign_ids")
    return DocumentText(text=text, nodes=nodes, starts=starts, element_offsets=offsets)


class TokenStream:
    """All tokens of a document, as segments (one per text node, one per delimiter).

    Counts and owners are known for every token (``node[k]`` is the text-node index, -1 for
    delimiter tokens); ids and character offsets are converted from the tokenizer's encodings only
    for the segments a strategy or the assembly actually looks into (chunk boundaries, oversized
    elements), which keeps chunking close to the cost of tokenization itself. ``starts``/``ends``/
    ``ids`` materialize everything on first access.
    """

    def __init__(
        self,
        doc: DocumentText,
        encodings: list[Any],
        seg_node: np.ndarray,
        seg_base: np.ndarray,
        seg_end: np.ndarray,
        tokenizer: Tokenizer | None = None,
    ):
        self.doc = doc
        self.tokenizer = tokenizer
        self._enc = encodings
        counts = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(encodings))
        self.seg_first = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(counts)])
        self._seg_first_list: list[int] = self.seg_first.tolist()  # bisect on lists beats numpy for scalars
        self.seg_node = seg_node
        self.seg_base = seg_base
        self.seg_end = seg_end
        self.node = np.repeat(seg_node, counts)
        self._offsets: list[np.ndarray | None] = [None] * len(encodings)
        self._words: list[Any] = [None] * len(encodings)  # per segment: word ids, False (none), None (not read yet)
        n_nodes = len(doc.nodes)
        is_elem = seg_node >= 0
        elem_segs = np.nonzero(is_elem)[0]
        # token range [node_lo, node_hi) of every text node (empty range if it has no tokens)
        self.node_lo = np.zeros(n_nodes, dtype=np.int64)
        self.node_hi = np.zeros(n_nodes, dtype=np.int64)
        self.node_lo[seg_node[elem_segs]] = self.seg_first[elem_segs]
        self.node_hi[seg_node[elem_segs]] = self.seg_first[elem_segs + 1]
        self._node_seg = np.zeros(n_nodes, dtype=np.int64)
        self._node_seg[seg_node[elem_segs]] = elem_segs
        has = self.node_hi > self.node_lo
        self.node_first = np.where(has, self.node_lo, -1)
        self.node_last = np.where(has, self.node_hi, -1)
        self._node_index = {n.id: k for k, n in enumerate(doc.nodes)}
        self._all: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return int(self.seg_first[-1])

    @property
    def text(self) -> str:
        return self.doc.text

    def node_index(self, element_id: str) -> int | None:
        return self._node_index.get(element_id)

    # -- lazy offsets ---------------------------------------------------------------------------
    def _seg_offsets(self, seg: int) -> np.ndarray:
        off = self._offsets[seg]
        if off is None:
            raw = self._enc[seg].offsets
            off = np.asarray(raw, dtype=np.int64).reshape(-1, 2) + int(self.seg_base[seg])
            self._offsets[seg] = off
        return off

    def _seg_of(self, k: int) -> int:
        return bisect_right(self._seg_first_list, k) - 1

    def token_start(self, k: int) -> int:
        seg = bisect_right(self._seg_first_list, k) - 1
        return int(self._seg_offsets(seg)[k - self._seg_first_list[seg], 0])

    def token_end(self, k: int) -> int:
        seg = bisect_right(self._seg_first_list, k) - 1
        return int(self._seg_offsets(seg)[k - self._seg_first_list[seg], 1])

    def offsets(self, lo: int, hi: int) -> np.ndarray:
        """``(hi - lo, 2)`` document offsets of tokens ``[lo, hi)`` (materializing only their segments)."""
        if hi <= lo:
            return np.zeros((0, 2), dtype=np.int64)
        first, last = self._seg_of(lo), self._seg_of(hi - 1)
        parts = [self._seg_offsets(seg) for seg in range(first, last + 1)]
        both = parts[0] if len(parts) == 1 else np.concatenate(parts)
        start = lo - self._seg_first_list[first]
        return both[start : start + (hi - lo)]

    def _seg_words(self, seg: int) -> np.ndarray | None:
        """Pre-tokenizer word index of every token of segment ``seg`` (Hugging Face encodings carry
        ``word_ids``), or None when the tokenizer does not report words."""
        words = self._words[seg]
        if words is None:
            raw = getattr(self._enc[seg], "word_ids", None)
            if raw is None or any(w is None for w in raw):
                self._words[seg] = False
                return None
            words = self._words[seg] = np.asarray(raw, dtype=np.int64)
        return None if words is False else words

    def word_ids(self, lo: int, hi: int) -> np.ndarray | None:
        """A word key per token of ``[lo, hi)``: equal keys = one word of the tokenizer's
        pre-tokenizer (keys of different segments never collide); None without word information."""
        if hi <= lo:
            return np.zeros(0, dtype=np.int64)
        first, last = self._seg_of(lo), self._seg_of(hi - 1)
        parts = []
        for seg in range(first, last + 1):
            words = self._seg_words(seg)
            if words is None:
                return None
            parts.append(words + (seg << 32))
        both = parts[0] if len(parts) == 1 else np.concatenate(parts)
        start = lo - self._seg_first_list[first]
        return both[start : start + (hi - lo)]

    def boundaries(self, lo: int, hi: int) -> np.ndarray:
        """Token indices ``k`` in ``(lo, hi)`` where :meth:`is_boundary` holds (vectorized)."""
        if hi - lo < 2:
            return np.zeros(0, dtype=np.int64)
        words = self.word_ids(lo, hi)
        if words is not None:
            return np.nonzero(words[1:] != words[:-1])[0] + lo + 1
        off = self.offsets(lo, hi)
        starts, ends = off[1:, 0], off[:-1, 1]
        node = self.node[lo:hi]
        cand = (node[1:] != node[:-1]) | (starts != ends)
        text = self.doc.text
        glued = np.nonzero(~cand)[0]
        if len(glued):
            cand[glued] = [not (text[e - 1].isalnum() and text[e].isalnum()) for e in ends[glued].tolist()]
        return np.nonzero(cand)[0] + lo + 1

    def node_starts(self, k: int) -> np.ndarray:
        """Document-text start offsets of the tokens of text node ``k``."""
        return self._seg_offsets(int(self._node_seg[k]))[:, 0]

    def token_at_char(self, chars: np.ndarray) -> np.ndarray:
        """For each document offset: index of the first token starting at or after it."""
        chars = np.asarray(chars, dtype=np.int64)
        segs = np.searchsorted(self.seg_base, chars, side="right") - 1
        out = np.empty(len(chars), dtype=np.int64)
        inside = (segs >= 0) & (chars < self.seg_end[np.maximum(segs, 0)])
        out[:] = self.seg_first[np.maximum(segs, 0) + 1]
        out[segs < 0] = 0
        for i in np.nonzero(inside)[0].tolist():
            seg = int(segs[i])
            local = self._seg_offsets(seg)[:, 0]
            out[i] = self._seg_first_list[seg] + int(np.searchsorted(local, chars[i], side="left"))
        return out

    def _materialize(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._all is None:
            offs = [self._seg_offsets(s) for s in range(len(self._enc))]
            ids = [np.asarray(e.ids, dtype=np.int64) for e in self._enc]
            both = np.concatenate(offs) if offs else np.zeros((0, 2), dtype=np.int64)
            self._all = (
                np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64),
                both[:, 0].copy(),
                both[:, 1].copy(),
            )
        return self._all

    @property
    def ids(self) -> np.ndarray:
        return self._materialize()[0]

    @property
    def starts(self) -> np.ndarray:
        return self._materialize()[1]

    @property
    def ends(self) -> np.ndarray:
        return self._materialize()[2]

    # -- queries used by strategies and assembly -------------------------------------------------
    def char_span(self, i: int, j: int) -> tuple[int, int]:
        """Document-text span covered by tokens ``[i, j)``."""
        return self.token_start(i), self.token_end(j - 1)

    def content(self, i: int, j: int) -> str:
        s, e = self.char_span(i, j)
        return self.doc.text[s:e]

    def is_boundary(self, k: int) -> bool:
        """True if a chunk may start at token ``k`` without cutting a word in two: ``k`` starts a
        word of the tokenizer's pre-tokenizer (no ``##`` continuation) where the tokenizer reports
        words (Hugging Face tokenizers), else a gap or a non-alphanumeric character lies between
        token ``k - 1`` and ``k``."""
        if k <= 0 or k >= len(self):
            return True
        seg = self._seg_of(k)
        local = k - self._seg_first_list[seg]
        if local == 0:  # first token of a segment (an element or a delimiter)
            return True
        words = self._seg_words(seg)
        if words is not None:
            return bool(words[local] != words[local - 1])
        start, prev_end = self.token_start(k), self.token_end(k - 1)
        if start != prev_end:
            return True
        text = self.doc.text
        return not (text[prev_end - 1].isalnum() and text[start].isalnum())

    def starts_word(self, k: int) -> bool | None:
        """True if token ``k`` is the first token of a pre-tokenizer word (None: the tokenizer
        reports no words)."""
        if k <= 0 or k >= len(self):
            return True
        seg = self._seg_of(k)
        local = k - self._seg_first_list[seg]
        if local == 0:
            return True
        words = self._seg_words(seg)
        return None if words is None else bool(words[local] != words[local - 1])

    def clean_cut(self, k: int) -> bool:
        """True if tokens ``k - 1`` and ``k`` share no character (a cut there splits no character;
        one Hangul syllable is three WordPiece tokens with the same one-character span)."""
        if k <= 0 or k >= len(self):
            return True
        seg = self._seg_of(k)
        if k == self._seg_first_list[seg]:
            return True
        return self.token_end(k - 1) <= self.token_start(k)

    def snap_back(self, k: int, lo: int) -> int:
        """Largest boundary ``b`` with ``lo < b <= k``; in a word longer than the window, the largest
        cut between tokens that share no character; ``k`` itself if there is none."""
        b = k
        while b > lo:
            if self.is_boundary(b):
                return b
            b -= 1
        b = k
        while b > lo:
            if self.clean_cut(b):
                return b
            b -= 1
        return k

    def rich_tokens(self, i: int, j: int) -> Iterator[RichToken]:
        """Lazily materialize tokens ``[i, j)`` as RichTokens (char spans relative to their element)."""
        doc, text = self.doc, self.doc.text
        for k in range(i, j):
            seg = self._seg_of(k)
            local = k - int(self.seg_first[seg])
            s, e = (int(v) for v in self._seg_offsets(seg)[local])
            token_id = int(self._enc[seg].ids[local])
            owner = int(self.seg_node[seg])
            if owner < 0:
                yield RichToken(None, k, token_id, text[s:e], s, e)
            else:
                base = doc.starts[owner]
                yield RichToken(doc.nodes[owner].id, local, token_id, text[s:e], s - base, e - base)


def build_stream(root: ParsingResult, tokenizer: Tokenizer, doc: DocumentText | None = None) -> TokenStream:
    """Tokenize every text node (one batch) and every delimiter into one stream."""
    doc = doc or document_text(root)
    contents = [n.content for n in doc.nodes]
    encoded = tokenizer.encode_lazy_batch(contents) if contents else []
    sep_cache: dict[str, Any] = {}
    encodings: list[Any] = []
    seg_node: list[int] = []
    seg_base: list[int] = []
    seg_end: list[int] = []
    prev_end = 0
    for k, enc in enumerate(encoded):
        start = doc.starts[k]
        if k > 0 and start > prev_end:
            sep = doc.text[prev_end:start]
            sep_enc = sep_cache.get(sep)
            if sep_enc is None:
                sep_enc = sep_cache[sep] = tokenizer.encode_lazy_batch([sep])[0]
            if len(sep_enc):
                encodings.append(sep_enc)
                seg_node.append(-1)
                seg_base.append(prev_end)
                seg_end.append(start)
        encodings.append(enc)
        seg_node.append(k)
        seg_base.append(start)
        prev_end = start + len(contents[k])
        seg_end.append(prev_end)
    return TokenStream(
        doc,
        encodings,
        np.asarray(seg_node, dtype=np.int64),
        np.asarray(seg_base, dtype=np.int64),
        np.asarray(seg_end, dtype=np.int64),
        tokenizer,
    )
