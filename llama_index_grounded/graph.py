"""A :class:`~grounded.graph.NodeGraph` as LlamaIndex nodes with real PARENT/CHILD/NEXT/PREVIOUS
relationships (QA nodes as ``IndexNode``); see docs/adapters.md#graph_to_nodes."""

from __future__ import annotations

from typing import Any

from llama_index.core.schema import (
    BaseNode,
    IndexNode,
    NodeRelationship,
    ObjectType,
    RelatedNodeInfo,
    TextNode,
)

from grounded.graph import EMBED_KEYS, LLM_KEYS, GraphNode, NodeGraph, NodeKind, export_text, node_metadata

__all__ = ["graph_to_nodes", "LEAF_KINDS"]

#: kinds without children of their own content: what a vector index over the graph embeds
LEAF_KINDS = frozenset({NodeKind.TEXT, NodeKind.TABLE, NodeKind.IMAGE, NodeKind.QA})


def graph_to_nodes(graph: NodeGraph, *, flat_metadata: bool = True, line_boxes: bool = True) -> list[BaseNode]:
    """All nodes of ``graph`` (graph order: Document, Pages, then sections in reading order)."""
    doc_id = graph.document.id
    out: list[BaseNode] = []
    for node in graph:
        meta = node_metadata(graph, node, flat=flat_metadata, line_spans=line_boxes)
        text = export_text(node)
        embed_keys = EMBED_KEYS if text is node.text else tuple(k for k in EMBED_KEYS if k != "summary")
        hidden_embed = [k for k in meta if k not in embed_keys]
        hidden_llm = [k for k in meta if k not in LLM_KEYS]
        common: dict[str, Any] = dict(id_=node.id, text=text, metadata=meta, excluded_embed_metadata_keys=hidden_embed,
                      excluded_llm_metadata_keys=hidden_llm, relationships=_relationships(graph, node, doc_id))
        if node.kind == NodeKind.QA:
            out.append(IndexNode(index_id=str(node.metadata["target_id"]), **common))
        else:
            out.append(TextNode(**common))
    return out


def _info(node: GraphNode | None) -> RelatedNodeInfo | None:
    if node is None:
        return None
    kind = ObjectType.INDEX if node.kind == NodeKind.QA else ObjectType.TEXT
    return RelatedNodeInfo(node_id=node.id, node_type=kind, metadata={"node_type": node.kind.value})


def _relationships(graph: NodeGraph, node: GraphNode, doc_id: str) -> dict[NodeRelationship, RelatedNodeInfo | list[RelatedNodeInfo]]:
    rel: dict[NodeRelationship, RelatedNodeInfo | list[RelatedNodeInfo]] = {}
    if node.id != doc_id:
        rel[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id, node_type=ObjectType.TEXT)
    for key, other in ((NodeRelationship.PARENT, graph.parent(node)), (NodeRelationship.NEXT, graph.next(node)),
                       (NodeRelationship.PREVIOUS, graph.previous(node))):
        info = _info(other)
        if info is not None:
            rel[key] = info
    children = [i for i in (_info(c) for c in graph.children(node)) if i is not None]
    if children:
        rel[NodeRelationship.CHILD] = children
    return rel
