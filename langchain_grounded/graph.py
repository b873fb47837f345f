"""A :class:`~grounded.graph.NodeGraph` as LangChain ``Document`` s.

``Document.id`` is the node id; the metadata (:func:`grounded.graph.export.node_metadata`) adds
``node_id``, ``parent_id``, ``child_ids`` (a JSON list when flat), ``next_id`` and ``previous_id``
(only the ones that exist), so a retrieved document leads to its section, its neighbours and
the table or section a generated question (``node_type="qa"``) belongs to. Read boxes back with
:func:`~langchain_grounded.boxes_from_metadata`. A Page or Document node with a summary has the
summary as its ``page_content`` - what a vector store embeds (:func:`grounded.graph.export.export_text`,
seed 002); ``text_kind="summary"`` marks it.
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document

from grounded.graph import NodeGraph, export_text, node_metadata
from grounded.metadata import flatten_metadata

__all__ = ["graph_to_documents"]


def graph_to_documents(graph: NodeGraph, *, flat_metadata: bool = True, line_boxes: bool = True) -> list[Document]:
    """All nodes of ``graph`` as Documents, in graph order."""
    out = []
    for node in graph:
        links: dict[str, Any] = {"node_id": node.id}
        for key, value in (("parent_id", node.parent_id), ("next_id", node.next_id), ("previous_id", node.previous_id)):
            if value is not None:
                links[key] = value
        if node.child_ids:
            links["child_ids"] = list(node.child_ids)
        meta = {**node_metadata(graph, node, flat=flat_metadata, line_spans=line_boxes),
                **(flatten_metadata(links) if flat_metadata else links)}
        out.append(Document(id=node.id, page_content=export_text(node), metadata=meta))
    return out
