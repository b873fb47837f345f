"""The document as one text and one token stream (thesis §3.4 "Chunk Token Identification").

The document text joins the content of every text-bearing node in reading order with structural
delimiters: ``" | "`` between cells of one table row, ``"\\n"`` between rows of one table and
between items of one list, ``"\\n\\n"`` between all other blocks. Every node's content is
tokenized on its own (so no token straddles two elements) and each delimiter is tokenized too,
giving a token stream whose entries carry their element and character span. Strategies work on
index ranges of this stream; :class:`~grounded.model.RichToken` objects are made lazily.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..errors import ChunkingError
from ..model import CONTAINER_TYPES, ParsingResult, RichToken
from ..model import ParsingResultType as T
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
    """Parallel arrays over all tokens of a document (separator tokens have ``node == -1``).

    ``starts``/``ends`` are offsets into ``doc.text``; ``node_first[k]``/``node_last[k]`` give the
    token index range ``[first, last)`` of text node ``k``.
    """

    def __init__(
        self,
        doc: DocumentText,
        ids: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        node: np.ndarray,
        tokenizer: Tokenizer | None = None,
    ):
        self.doc = doc
        self.tokenizer = tokenizer
        self.ids = ids
        self.starts = starts
        self.ends = ends
        self.node = node
        n_nodes = len(doc.nodes)
        has = node >= 0
        idx = np.nonzero(has)[0]
        self.node_first = np.full(n_nodes, -1, dtype=np.int64)
        self.node_last = np.full(n_nodes, -1, dtype=np.int64)
        if len(idx):
            owners = node[idx]
            # first occurrence / last occurrence of each node index
            first_pos = np.unique(owners, return_index=True)
            self.node_first[first_pos[0]] = idx[first_pos[1]]
            rev_owner = owners[::-1]
            last_pos = np.unique(rev_owner, return_index=True)
            self.node_last[last_pos[0]] = idx[len(idx) - 1 - last_pos[1]] + 1
        self._node_index = {n.id: k for k, n in enumerate(doc.nodes)}

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def text(self) -> str:
        return self.doc.text

    def node_index(self, element_id: str) -> int | None:
        return self._node_index.get(element_id)

    def char_span(self, i: int, j: int) -> tuple[int, int]:
        """Document-text span covered by tokens ``[i, j)``."""
        return int(self.starts[i]), int(self.ends[j - 1])

    def content(self, i: int, j: int) -> str:
        s, e = self.char_span(i, j)
        return self.doc.text[s:e]

    def is_boundary(self, k: int) -> bool:
        """True if a chunk may start at token ``k`` without cutting a word in two."""
        if k <= 0 or k >= len(self.ids):
            return True
        if self.node[k] != self.node[k - 1] or self.starts[k] != self.ends[k - 1]:
            return True
        text = self.doc.text
        a, b = text[self.ends[k - 1] - 1], text[self.starts[k]]
        return not (a.isalnum() and b.isalnum())

    def snap_back(self, k: int, lo: int) -> int:
        """Largest boundary ``b`` with ``lo < b <= k`` (``k`` itself if none: a word longer than the window)."""
        b = k
        while b > lo:
            if self.is_boundary(b):
                return b
            b -= 1
        return k

    def rich_tokens(self, i: int, j: int) -> Iterator[RichToken]:
        """Lazily materialize tokens ``[i, j)`` as RichTokens (char spans relative to their element)."""
        doc, text = self.doc, self.doc.text
        for k in range(i, j):
            owner = int(self.node[k])
            s, e = int(self.starts[k]), int(self.ends[k])
            if owner < 0:
                yield RichToken(None, k, int(self.ids[k]), text[s:e], s, e)
            else:
                base = doc.starts[owner]
                yield RichToken(doc.nodes[owner].id, k - int(self.node_first[owner]), int(self.ids[k]), text[s:e], s - base, e - base)


def build_stream(root: ParsingResult, tokenizer: Tokenizer, doc: DocumentText | None = None) -> TokenStream:
    """Tokenize every text node (one batch) and every delimiter into one stream."""
    doc = doc or document_text(root)
    contents = [n.content for n in doc.nodes]
    encoded = tokenizer.encode_batch(contents) if contents else []
    sep_cache: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}
    ids_parts: list[np.ndarray] = []
    off_parts: list[np.ndarray] = []
    node_parts: list[np.ndarray] = []
    prev_end = 0
    for k, (node_ids, node_offsets) in enumerate(encoded):
        start = doc.starts[k]
        if k > 0 and start > prev_end:
            sep = doc.text[prev_end:start]
            if sep not in sep_cache:
                sep_cache[sep] = tokenizer.encode(sep)
            s_ids, s_off = sep_cache[sep]
            if s_ids:
                ids_parts.append(np.asarray(s_ids, dtype=np.int64))
                off_parts.append(np.asarray(s_off, dtype=np.int64).reshape(-1, 2) + prev_end)
                node_parts.append(np.full(len(s_ids), -1, dtype=np.int64))
        if node_ids:
            ids_parts.append(np.asarray(node_ids, dtype=np.int64))
            off_parts.append(np.asarray(node_offsets, dtype=np.int64).reshape(-1, 2) + start)
            node_parts.append(np.full(len(node_ids), k, dtype=np.int64))
        prev_end = start + len(contents[k])
    if ids_parts:
        ids = np.concatenate(ids_parts)
        offs = np.concatenate(off_parts)
        owner = np.concatenate(node_parts)
    else:
        ids = np.zeros(0, dtype=np.int64)
        offs = np.zeros((0, 2), dtype=np.int64)
        owner = np.zeros(0, dtype=np.int64)
    # drop zero-width tokens (e.g. special markers some tokenizers emit): they cover no text
    keep = offs[:, 1] > offs[:, 0]
    if not bool(keep.all()):
        ids, offs, owner = ids[keep], offs[keep], owner[keep]
    return TokenStream(doc, ids, offs[:, 0].copy(), offs[:, 1].copy(), owner, tokenizer)
