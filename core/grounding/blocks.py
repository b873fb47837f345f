"""Blocks: a parse tree as a sequence of self-contained blocks, and back (LangChain's element mode),
and the document text cut into page runs (its page mode).

A block is a text element of the document text (paragraph, heading, caption, ...) or a whole
container (a table with its rows and cells, a list with its items). Each block carries its
lossless subtree (with line boxes and character extents) and the ids/types of its ancestors, so a
sequence of blocks rebuilds a tree that chunks exactly like the original: same document text, same
heading paths, same exact boxes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SchemaError
from ..model.boxes import ParsingBoundingBox
from ..model.elements import CONTAINER_TYPES, ParsingResult, ParsingResultType
from ..text.stream import document_text

__all__ = ["Block", "iter_blocks", "tree_from_payloads", "ELEMENT_KEY", "page_runs"]

#: metadata key holding a block's lossless payload (a compact JSON string)
ELEMENT_KEY = "grounded_element"
_T = ParsingResultType


@dataclass
class Block:
    """One block: its node, its text (a slice of the document text) and where that slice starts."""

    node: ParsingResult
    text: str
    start_char: int
    end_char: int
    text_nodes: list[ParsingResult]

    @property
    def geom(self) -> list[ParsingBoundingBox]:
        if self.node.geom:
            return self.node.geom
        return [b for n in self.text_nodes for b in n.geom]

    def payload_dict(self) -> dict[str, Any]:
        """The block's subtree (a text block without its children, which are blocks of their own)
        and its ancestors ``[[id, type], ...]`` from the root down."""
        tree = self.node.to_dict()
        if self.node.type not in CONTAINER_TYPES:
            tree.pop("children", None)
        ancestors = [[a.id, a.type.value] for a in reversed(self.node.ancestors()) if a.type != _T.ROOT]
        return {"node": tree, "ancestors": ancestors}

    def payload(self) -> str:
        """:meth:`payload_dict` as compact JSON."""
        return json.dumps(self.payload_dict(), ensure_ascii=False, separators=(",", ":"))


def _block_node(node: ParsingResult) -> ParsingResult:
    """The outermost container (below the root) holding ``node``, else ``node`` itself."""
    block = node
    for ancestor in node.ancestors():
        if ancestor.type in CONTAINER_TYPES and ancestor.type != _T.ROOT:
            block = ancestor
    return block


def iter_blocks(root: ParsingResult) -> Iterator[Block]:
    """Blocks in reading order; their texts joined by the document's delimiters give the document text."""
    doc = document_text(root)
    current: ParsingResult | None = None
    members: list[int] = []
    for k, node in enumerate([*doc.nodes, None]):
        block = _block_node(node) if node is not None else None
        if members and block is not current:
            start, end = doc.starts[members[0]], doc.node_span(members[-1])[1]
            assert current is not None
            yield Block(current, doc.text[start:end], start, end, [doc.nodes[m] for m in members])
            members = []
        current = block
        if node is not None:
            members.append(k)


def tree_from_payloads(payloads: Sequence[str | Mapping[str, Any]], root_metadata: Mapping[str, Any] | None = None) -> ParsingResult:
    """Rebuild a ROOT tree from block payloads in reading order. Ancestors that are not blocks
    themselves (e.g. a figure around a caption) come back as empty nodes of their type."""
    root = ParsingResult("root", _T.ROOT, metadata=dict(root_metadata or {}))
    by_id: dict[str, ParsingResult] = {}
    for raw in payloads:
        try:
            data = json.loads(raw) if isinstance(raw, str) else raw
            parent = root
            for ancestor_id, ancestor_type in data["ancestors"]:
                node = by_id.get(ancestor_id)
                if node is None:
                    node = parent.add_child(ParsingResult(str(ancestor_id), _T(ancestor_type)))
                    by_id[node.id] = node
                parent = node
            block = ParsingResult.from_dict(data["node"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise SchemaError(f"not a grounded element payload ({type(exc).__name__}: {exc})") from exc
        if block.id in by_id:
            raise SchemaError(f"element {block.id!r} occurs twice among the documents")
        parent.add_child(block)
        for node in block.walk():
            by_id[node.id] = node
    return root


def page_runs(doc_nodes: Sequence[ParsingResult], starts: Sequence[int]) -> list[tuple[int, int, int]]:
    """The document text cut into ``(page, start, end)`` runs: consecutive text of one page. An
    element whose lines know their characters is cut at its page breaks; one without goes to the
    page of its first box (or the page before it when it has none)."""
    segments: list[tuple[int, int, int]] = []
    page = 1
    for node, base in zip(doc_nodes, starts, strict=True):
        lines = [s for b in node.geom for s in b.spans]
        if lines and all(ln.char_start is not None and ln.char_end is not None for ln in lines):
            for ln in lines:
                assert ln.char_start is not None and ln.char_end is not None
                lo, hi = base + ln.char_start, base + ln.char_end
                if segments and segments[-1][0] == ln.page:
                    segments[-1] = (ln.page, min(segments[-1][1], lo), max(segments[-1][2], hi))
                else:
                    segments.append((ln.page, lo, hi))
            page = lines[-1].page
            continue
        if node.geom:
            page = node.geom[0].page
        segments.append((page, base, base + len(node.content)))
    runs: list[tuple[int, int, int]] = []
    for seg in segments:  # merge consecutive segments of one page (the delimiters between them included)
        if runs and runs[-1][0] == seg[0]:
            runs[-1] = (seg[0], runs[-1][1], max(runs[-1][2], seg[2]))
        else:
            runs.append(seg)
    return [r for r in runs if r[2] > r[1]]
