"""Hierarchical chunking on the parse tree (thesis §3.4.4, after Docling's HybridChunker).

For each node: (1) subtree evaluation - a subtree that fits the remaining capacity N - S becomes
one chunk; (2) recursion - otherwise a heading node's text joins the heading context and its
children are processed, after which adjacent children that were not split are merged while they
fit; (3) leaf-splitting - an oversized leaf is split recursively. Heading context is prepended to
every chunk under a budget B_h; the highest ancestors are dropped first when it overflows. Text of
non-heading nodes that have children (e.g. a list item with a sub-list) stays body text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from ...errors import ChunkingError
from ...model import ParsingResult
from ...model import ParsingResultType as T
from ..base import ChunkingStrategy, TokenGroup, register_strategy
from ..splitting import DEFAULT_DELIMITERS, recursive_split
from ..stream import TokenStream

HEADING_TYPES = frozenset({T.SECTION_HEADER, T.TITLE})


class _Piece(NamedTuple):
    lo: int
    hi: int
    headings: tuple[int, ...]
    unsplit: bool


@register_strategy
class HierarchicalStrategy(ChunkingStrategy):
    """Parameters: ``heading_budget`` B_h in tokens (default 0.4 N)."""

    name = "hierarchical"

    def __init__(self, max_tokens: int = 256, overlap: int = 0, heading_budget: int | None = None) -> None:
        super().__init__(max_tokens, overlap)
        self.heading_budget = int(0.4 * max_tokens) if heading_budget is None else int(heading_budget)
        if not 0 <= self.heading_budget < max_tokens:
            raise ChunkingError(f"heading_budget must be in [0, max_tokens), got {heading_budget!r}")

    def params(self) -> dict[str, Any]:
        return {**super().params(), "heading_budget": self.heading_budget}

    def groups(self, stream: TokenStream, root: ParsingResult) -> Iterator[TokenGroup]:
        if len(stream) == 0:
            return
        run = _Run(self, stream, root)
        for piece in run.process(root, ()):
            yield TokenGroup(piece.lo, piece.hi, piece.headings)


class _Run:
    """State of one hierarchical pass over one document."""

    def __init__(self, strategy: HierarchicalStrategy, stream: TokenStream, root: ParsingResult):
        self.N = strategy.max_tokens
        self.O = strategy.overlap
        self.budget = strategy.heading_budget
        self.stream = stream
        doc = stream.doc
        self.text_index = {id(n): k for k, n in enumerate(doc.nodes)}
        self.tok_lo = stream.node_lo.tolist()
        self.tok_hi = stream.node_hi.tolist()
        tok = stream.tokenizer
        self.sep_line = tok.count("\n") if tok is not None else 0
        self.sep_body = tok.count("\n\n") if tok is not None else 0
        self.sub_range = self._subtree_ranges(root)

    def _subtree_ranges(self, root: ParsingResult) -> dict[int, tuple[int, int]]:
        """id(node) -> (first, last) text-node index within its subtree (absent: no text)."""
        ranges: dict[int, tuple[int, int]] = {}
        order = list(root.walk())
        for node in reversed(order):  # children before parents
            lo = hi = self.text_index.get(id(node))
            for child in node.children:
                r = ranges.get(id(child))
                if r is None:
                    continue
                lo = r[0] if lo is None else min(lo, r[0])
                hi = r[1] if hi is None else max(hi, r[1])
            if lo is not None and hi is not None:
                ranges[id(node)] = (lo, hi)
        return ranges

    def cost(self, headings: tuple[int, ...]) -> int:
        if not headings:
            return 0
        size = sum(self.tok_hi[k] - self.tok_lo[k] for k in headings)
        return size + self.sep_line * (len(headings) - 1) + self.sep_body

    def fit_budget(self, headings: tuple[int, ...]) -> tuple[int, ...]:
        hs = list(headings)
        while hs and self.cost(tuple(hs)) > self.budget:
            hs.pop(0)  # highest ancestor first
        return tuple(hs)

    def split_leaf(self, lo: int, hi: int, headings: tuple[int, ...]) -> list[_Piece]:
        avail = self.N - self.cost(headings)
        return [_Piece(s, e, headings, False) for s, e in recursive_split(self.stream, lo, hi, avail, self.O, DEFAULT_DELIMITERS)]

    def process(self, node: ParsingResult, headings: tuple[int, ...]) -> list[_Piece]:
        rng = self.sub_range.get(id(node))
        if rng is None:
            return []
        lo, hi = self.tok_lo[rng[0]], self.tok_hi[rng[1]]
        if hi <= lo:
            return []
        if hi - lo <= self.N - self.cost(headings):  # (1) subtree evaluation
            return [_Piece(lo, hi, headings, True)]
        own = self.text_index.get(id(node))
        kids = [c for c in node.children if id(c) in self.sub_range]
        if not kids:  # (3) leaf-splitting
            return self.split_leaf(lo, hi, headings)
        # (2) recursion
        merged: list[_Piece] = []
        child_headings = headings
        if own is not None and self.tok_hi[own] > self.tok_lo[own]:
            candidate = self.fit_budget((*headings, own)) if node.type in HEADING_TYPES else headings
            if own in candidate:
                child_headings = candidate
            else:  # own text stays body (non-heading, or a heading too long for the budget)
                own_lo, own_hi = self.tok_lo[own], self.tok_hi[own]
                if own_hi - own_lo <= self.N - self.cost(headings):
                    merged.append(_Piece(own_lo, own_hi, headings, True))
                else:
                    merged.extend(self.split_leaf(own_lo, own_hi, headings))
        avail = self.N - self.cost(child_headings)
        for child in kids:
            result = self.process(child, child_headings)
            if (
                len(result) == 1
                and result[0].unsplit
                and merged
                and merged[-1].unsplit
                and merged[-1].headings == result[0].headings
                and result[0].hi - merged[-1].lo <= avail
            ):
                merged[-1] = _Piece(merged[-1].lo, result[0].hi, result[0].headings, True)
            else:
                merged.extend(result)
        if child_headings is not headings and not any(own in p.headings for p in merged):
            # the budget dropped this heading in every deeper chunk: keep its text as a body of its own
            merged.insert(0, _Piece(self.tok_lo[own], self.tok_hi[own], headings, True))  # type: ignore[index]
        return [p._replace(unsplit=False) for p in merged]
