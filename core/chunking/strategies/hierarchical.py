"""Hierarchical chunking on the parse tree (thesis §3.4.4, after Docling's HybridChunker).

For each node: (1) subtree evaluation - a subtree that fits the remaining capacity N - S becomes
one chunk; (2) recursion - otherwise a heading node's text joins the heading context and its
children are processed, after which adjacent children that were not split are merged while they
fit; (3) leaf-splitting - an oversized leaf is split recursively. Heading context is prepended to
every chunk under a budget B_h; the highest ancestors are dropped first when it overflows. Text of
non-heading nodes that have children (e.g. a list item with a sub-list) stays body text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from grounded.errors import ChunkingError
from grounded.model.elements import HEADING_TYPES, ParsingResult

from ..base import Option
from ..pieces import Document, Piece, PieceStrategy, Span


class _Piece(NamedTuple):
    lo: int
    hi: int
    headings: tuple[int, ...]
    unsplit: bool


class HierarchicalStrategy(PieceStrategy):
    """Parameters: ``heading_budget`` B_h in tokens (default 0.4 N)."""

    name = "hierarchical"
    piece_kind = None  # works on the tree: element token ranges come from the Document
    options = (Option("heading_budget", int, None, "heading token budget B_h (default: 0.4 x max-tokens)", low=0),)

    def __init__(self, max_tokens: int = 256, overlap: int = 0, heading_budget: int | None = None) -> None:
        super().__init__(max_tokens, overlap)
        self.heading_budget = int(0.4 * max_tokens) if heading_budget is None else int(heading_budget)
        if not 0 <= self.heading_budget < max_tokens:
            raise ChunkingError(f"heading_budget must be in [0, max_tokens), got {heading_budget!r}")

    def split(self, pieces: Sequence[Piece], doc: Document) -> Iterator[Span]:
        run = _Run(self, doc)
        for piece in run.process(doc.root, ()):
            yield Span(piece.lo, piece.hi, piece.headings)


class _Run:
    """State of one hierarchical pass over one document."""

    def __init__(self, strategy: HierarchicalStrategy, doc: Document):
        self.N = strategy.max_tokens
        self.O = strategy.overlap
        self.budget = strategy.heading_budget
        self.doc = doc
        self.text_index = {id(doc.element(k)): k for k in range(doc.element_count)}
        ranges = [doc.element_range(k) for k in range(doc.element_count)]
        self.tok_lo = [lo for lo, _ in ranges]
        self.tok_hi = [hi for _, hi in ranges]
        self.sep_line = doc.count("\n")
        self.sep_body = doc.count("\n\n")
        self.sub_range = self._subtree_ranges(doc.root)

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
        return [_Piece(s, e, headings, False) for s, e in self.doc.split(lo, hi, avail, self.O)]

    def process(self, node: ParsingResult, headings: tuple[int, ...]) -> list[_Piece]:
        """The pieces of ``node``'s subtree, in reading order.

        Iterative (an explicit stack of :class:`_Frame` s) so a tree nested thousands of levels deep
        does not exhaust Python's recursion limit, and linear in depth: every frame owns the tail
        ``out[frame.start:]`` of one shared list instead of copying its children's pieces."""
        out: list[_Piece] = []
        self.carried: set[int] = set()  # heading nodes some piece carries as prepended context
        entered = self._enter(node, headings, out)
        stack = [entered] if entered is not None else []
        while stack:
            frame = stack[-1]
            if frame.next_child < len(frame.kids):
                child = frame.kids[frame.next_child]
                frame.next_child += 1
                child_start = len(out)
                entered = self._enter(child, frame.child_headings, out)
                if entered is not None:
                    stack.append(entered)
                else:
                    self._absorb(frame, child_start, out)
                continue
            self._finish(frame, out)
            stack.pop()
            if stack:
                self._absorb(stack[-1], frame.start, out)
        return out

    def _emit(self, out: list[_Piece], pieces: list[_Piece]) -> None:
        for piece in pieces:
            self.carried.update(piece.headings)
        out.extend(pieces)

    def _enter(self, node: ParsingResult, headings: tuple[int, ...], out: list[_Piece]) -> _Frame | None:
        """Steps (1) and (3) (pieces appended to ``out``, returns None), or the start of step (2):
        a frame whose children are still to process."""
        rng = self.sub_range.get(id(node))
        if rng is None:
            return None
        lo, hi = self.tok_lo[rng[0]], self.tok_hi[rng[1]]
        if hi <= lo:
            return None
        if hi - lo <= self.N - self.cost(headings):  # (1) subtree evaluation
            self._emit(out, [_Piece(lo, hi, headings, True)])
            return None
        own = self.text_index.get(id(node))
        kids = [c for c in node.children if id(c) in self.sub_range]
        if not kids:  # (3) leaf-splitting
            self._emit(out, self.split_leaf(lo, hi, headings))
            return None
        # (2) recursion
        frame = _Frame(len(out), headings, headings, own, kids)
        if own is not None and self.tok_hi[own] > self.tok_lo[own]:
            candidate = self.fit_budget((*headings, own)) if node.type in HEADING_TYPES else headings
            if own in candidate:
                frame.child_headings = candidate
            else:  # own text stays body (non-heading, or a heading too long for the budget)
                own_lo, own_hi = self.tok_lo[own], self.tok_hi[own]
                if own_hi - own_lo <= self.N - self.cost(headings):
                    self._emit(out, [_Piece(own_lo, own_hi, headings, True)])
                else:
                    self._emit(out, self.split_leaf(own_lo, own_hi, headings))
        frame.avail = self.N - self.cost(frame.child_headings)
        return frame

    def _absorb(self, frame: _Frame, child_start: int, out: list[_Piece]) -> None:
        """A child's pieces ``out[child_start:]`` join the frame's: an unsplit child merges into an
        unsplit predecessor while they fit together."""
        if len(out) - child_start != 1 or child_start <= frame.start:
            return
        prev, piece = out[child_start - 1], out[child_start]
        if piece.unsplit and prev.unsplit and prev.headings == piece.headings and piece.hi - prev.lo <= frame.avail:
            out[child_start - 1] = _Piece(prev.lo, piece.hi, piece.headings, True)
            out.pop()

    def _finish(self, frame: _Frame, out: list[_Piece]) -> None:
        own = frame.own
        if own is not None and frame.child_headings is not frame.headings and own not in self.carried:
            # the budget dropped this heading in every deeper chunk: keep its text as a body of its own
            out.insert(frame.start, _Piece(self.tok_lo[own], self.tok_hi[own], frame.headings, True))
            self.carried.update(frame.headings)
        if len(out) > frame.start:  # a split subtree: the parent must not merge into its last piece
            out[-1] = out[-1]._replace(unsplit=False)


class _Frame:
    """A node in step (2): where its pieces start in the shared list, its heading context and that
    of its children, its own text node and the children still to process."""

    __slots__ = ("start", "headings", "child_headings", "own", "kids", "next_child", "avail")

    def __init__(
        self, start: int, headings: tuple[int, ...], child_headings: tuple[int, ...], own: int | None, kids: list[ParsingResult]
    ):
        self.start = start
        self.headings = headings
        self.child_headings = child_headings
        self.own = own
        self.kids = kids
        self.next_child = 0
        self.avail = 0
