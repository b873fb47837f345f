"""The node graph's data model (seed 002): typed nodes with boxes and two-way relationships.

Kinds: ``DOCUMENT`` > ``PAGE`` and the section tree ``HEADER`` > ``HEADER`` / ``TEXT`` / ``TABLE`` /
``IMAGE``; ``QA`` nodes hang under the Header or Table they were generated for.

Relationships (all stored on both ends, checked by :meth:`NodeGraph.check`):

* ``parent`` / ``children``: the structural tree. A Page's parent is the Document; a content node's
  parent is the Header of its section (the Document before the first heading); a QA node's parent
  is the node it asks about.
* ``next`` / ``previous``: reading order among content nodes (Header, Text, Table, Image) of the
  whole document, among Pages, and among the QA nodes of one parent.
* page membership: every node lists its ``pages``; :meth:`NodeGraph.on_page` and
  :meth:`NodeGraph.page_nodes_of` navigate it both ways.

Boxes (normalized, page-numbered :class:`~grounded.model.ParsingBoundingBox`): Page = the whole
page, Document = every whole page, Header = the heading's own box (its section's extent is
:meth:`NodeGraph.section_boxes`), Text = the chunk's exact line boxes, Table = the table's boxes on
every page it covers, Image = the figure box, QA = the boxes of the node it asks about.
Model-written text is never given boxes of its own: ``generated`` nodes and :class:`TextPiece` s
carry the region they describe.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..errors import SchemaError
from ..model.boxes import ParsingBoundingBox
from ..text.ids import stable_hash
from .node_info import NodeInfo

__all__ = ["NodeKind", "TextPiece", "GraphNode", "NodeGraph", "node_id"]


class NodeKind(str, Enum):
    DOCUMENT = "document"
    PAGE = "page"
    HEADER = "header"
    TEXT = "text"
    TABLE = "table"
    IMAGE = "image"
    QA = "qa"

    def __str__(self) -> str:
        return self.value


#: kinds in the document's reading-order chain (``next`` / ``previous``)
CONTENT_KINDS = frozenset({NodeKind.HEADER, NodeKind.TEXT, NodeKind.TABLE, NodeKind.IMAGE})


def node_id(source: str, kind: NodeKind, key: str) -> str:
    """Deterministic id ``<source 12 hex>-<kind>-<10 hex>`` of the node of ``kind`` anchored at
    ``key`` (an element id, a page number, a question) in one source (see
    :func:`grounded.text.ids.source_key`); same inputs, same id, across runs."""
    if not source:
        raise ValueError("node_id needs a non-empty source key")
    return f"{source[:12]}-{kind.value}-{stable_hash([source, kind.value, key], 10)}"


@dataclass
class TextPiece:
    """One part of a node's text and where it comes from: ``generated=False`` pieces were found in
    the document (``boxes`` exact, from the grounding engine); ``generated=True`` pieces were
    written by a model (``boxes`` = the region they describe, never invented text boxes)."""

    text: str
    boxes: list[ParsingBoundingBox] = field(default_factory=list)
    generated: bool = False
    status: str = ""  # grounding status of verbatim pieces: exact | fuzzy | partial

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "generated": self.generated, "status": self.status,
                "boxes": [b.to_dict() for b in self.boxes]}


@dataclass(eq=False)
class GraphNode:
    """One node. ``text`` is what gets embedded; ``metadata`` holds ``summary``, ``strategy`` (how
    the text was read: fast | ocr | llm), ``caption`` and the like; ``flags`` lists what went wrong
    while reading or enriching it (bad model output, no text on a page) - never dropped silently."""

    id: str
    kind: NodeKind
    text: str
    boxes: list[ParsingBoundingBox] = field(default_factory=list)
    element_ids: list[str] = field(default_factory=list)
    parent_id: str | None = None
    child_ids: list[str] = field(default_factory=list)
    next_id: str | None = None
    previous_id: str | None = None
    generated: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    pieces: list[TextPiece] = field(default_factory=list)
    page_numbers: list[int] = field(default_factory=list)

    @property
    def pages(self) -> list[int]:
        """Pages the node lies on (from its boxes, or given for nodes without boxes)."""
        return sorted({b.page for b in self.boxes} | set(self.page_numbers))

    @property
    def info(self) -> NodeInfo:
        """Typed view over ``metadata`` (summary, strategy, caption, level, page...)."""
        return NodeInfo(self.metadata)

    @property
    def summary(self) -> str:
        summary = self.info.summary
        return "" if summary is None else str(summary)

    def flag(self, reason: str) -> None:
        if reason not in self.flags:
            self.flags.append(reason)


class NodeGraph:
    """All nodes of one document in creation order, indexed by id, with navigation helpers."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._nodes: dict[str, GraphNode] = {}

    # -- building ---------------------------------------------------------------------------------
    def add(self, node: GraphNode, parent: GraphNode | None = None) -> GraphNode:
        if node.id in self._nodes:
            raise SchemaError(f"node graph: duplicate node id {node.id!r}")
        self._nodes[node.id] = node
        if parent is not None:
            node.parent_id = parent.id
            parent.child_ids.append(node.id)
        return node

    def remove(self, node: GraphNode) -> None:
        """Remove a leaf node and every link to it (its neighbours are linked to each other)."""
        if node.child_ids:
            raise SchemaError(f"node graph: {node.kind} node {node.id!r} has children; remove them first")
        parent = self.get(node.parent_id)
        if parent is not None:
            parent.child_ids.remove(node.id)
        prev, nxt = self.get(node.previous_id), self.get(node.next_id)
        if prev is not None:
            prev.next_id = nxt.id if nxt is not None else None
        if nxt is not None:
            nxt.previous_id = prev.id if prev is not None else None
        del self._nodes[node.id]

    def reorder(self, ids: list[str]) -> None:
        """Iterate the nodes in the order of ``ids`` (which must name every node once)."""
        if sorted(ids) != sorted(self._nodes):
            raise SchemaError("node graph: reorder needs every node id exactly once")
        self._nodes = {i: self._nodes[i] for i in ids}

    def chain(self, nodes: list[GraphNode]) -> None:
        """Link ``nodes`` with next/previous in the given order."""
        for a, b in zip(nodes, nodes[1:], strict=False):
            a.next_id, b.previous_id = b.id, a.id

    # -- access -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[GraphNode]:
        return iter(self._nodes.values())

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    def __getitem__(self, node_id: str) -> GraphNode:
        return self._nodes[node_id]

    def get(self, node_id: str | None) -> GraphNode | None:
        return self._nodes.get(node_id) if node_id is not None else None

    @property
    def document(self) -> GraphNode:
        return next(n for n in self._nodes.values() if n.kind == NodeKind.DOCUMENT)

    def of_kind(self, kind: NodeKind | str) -> list[GraphNode]:
        kind = NodeKind(kind)
        return [n for n in self._nodes.values() if n.kind == kind]

    def parent(self, node: GraphNode) -> GraphNode | None:
        return self.get(node.parent_id)

    def children(self, node: GraphNode) -> list[GraphNode]:
        return [self._nodes[c] for c in node.child_ids]

    def next(self, node: GraphNode) -> GraphNode | None:
        return self.get(node.next_id)

    def previous(self, node: GraphNode) -> GraphNode | None:
        return self.get(node.previous_id)

    def ancestors(self, node: GraphNode) -> list[GraphNode]:
        out, cur = [], self.parent(node)
        while cur is not None:
            out.append(cur)
            cur = self.parent(cur)
        return out

    def descendants(self, node: GraphNode) -> list[GraphNode]:
        out, stack = [], list(reversed(self.children(node)))
        while stack:
            cur = stack.pop()
            out.append(cur)
            stack.extend(reversed(self.children(cur)))
        return out

    def section_path(self, node: GraphNode) -> list[str]:
        """Heading texts from the top-level section down to ``node``'s own section."""
        return [a.text for a in reversed(self.ancestors(node)) if a.kind == NodeKind.HEADER]

    def page_node(self, page: int) -> GraphNode | None:
        return next((n for n in self.of_kind(NodeKind.PAGE) if n.info.page == page), None)

    def on_page(self, page: int) -> list[GraphNode]:
        """Content nodes (Header, Text, Table, Image) with a box on ``page``, in reading order."""
        return [n for n in self._nodes.values() if n.kind in CONTENT_KINDS and page in n.pages]

    def page_nodes_of(self, node: GraphNode) -> list[GraphNode]:
        """The Page nodes ``node`` lies on."""
        return [p for p in (self.page_node(q) for q in node.pages) if p is not None]

    def section_boxes(self, header: GraphNode) -> list[ParsingBoundingBox]:
        """The extent of a Header's section: its own box and its descendants' (one box per page)."""
        boxes = list(header.boxes)
        for node in self.descendants(header):
            if node.kind in CONTENT_KINDS:
                boxes.extend(node.boxes)
        by_page: dict[int, list[ParsingBoundingBox]] = {}
        for b in boxes:
            by_page.setdefault(b.page, []).append(b)
        return [ParsingBoundingBox.enclosing(bs) for _, bs in sorted(by_page.items())]

    # -- consistency ----------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise :class:`~grounded.errors.SchemaError` unless every relationship is stored on both
        ends and points at a node of this graph."""
        for node in self._nodes.values():
            where = f"node graph: {node.kind} node {node.id!r}"
            for name, other_id in (("parent", node.parent_id), ("next", node.next_id), ("previous", node.previous_id)):
                if other_id is not None and other_id not in self._nodes:
                    raise SchemaError(f"{where}: {name} {other_id!r} is not in the graph")
            parent = self.get(node.parent_id)
            if parent is not None and node.id not in parent.child_ids:
                raise SchemaError(f"{where}: not among its parent's children")
            for child_id in node.child_ids:
                child = self.get(child_id)
                if child is None or child.parent_id != node.id:
                    raise SchemaError(f"{where}: child {child_id!r} does not name it as parent")
            nxt = self.get(node.next_id)
            if nxt is not None and nxt.previous_id != node.id:
                raise SchemaError(f"{where}: its next node does not point back")
            prev = self.get(node.previous_id)
            if prev is not None and prev.next_id != node.id:
                raise SchemaError(f"{where}: its previous node does not point forward")
