"""Framework-free metadata of graph nodes, shared by the LlamaIndex and LangChain exports.

Follows :mod:`grounded.metadata`: ``boxes`` in its compact form (a JSON string when flat),
``text_hash`` of the node text, ``pages``; plus ``node_type``, ``section`` (heading path joined
with " > "), and - only when present - ``summary``, ``strategy``, ``generated``,
``flags``, ``page``, ``target_id`` (QA). Relationship ids are added by each export in its own form.
"""

from __future__ import annotations

from typing import Any

from ..io.chunk_metadata import BOXES_KEY, TEXT_HASH_KEY, boxes_to_metadata, flatten_metadata, text_hash
from .nodes import GraphNode, NodeGraph, NodeKind

__all__ = ["node_metadata", "PAYLOAD_KEYS", "LLM_KEYS"]

#: machine payload: hidden from embedders and LLMs
PAYLOAD_KEYS = (BOXES_KEY, TEXT_HASH_KEY, "flags", "strategy", "target_id", "node_id", "parent_id", "child_ids",
                "next_id", "previous_id", "generated")
#: what an LLM reading a retrieved node sees besides its text (embedders see ``section`` and ``summary``)
LLM_KEYS = ("node_type", "pages", "page", "section", "summary")


def node_metadata(graph: NodeGraph, node: GraphNode, *, flat: bool = True, line_spans: bool = True) -> dict[str, Any]:
    """The metadata of ``node`` (scalars and compact JSON strings with ``flat=True``)."""
    meta: dict[str, Any] = {
        "node_type": node.kind.value,
        "pages": node.pages,
        BOXES_KEY: boxes_to_metadata(node.boxes, line_spans=line_spans),
        TEXT_HASH_KEY: text_hash(node.text),
    }
    section = " > ".join(graph.section_path(node) + ([node.text] if node.kind == NodeKind.HEADER else []))
    if section:
        meta["section"] = section
    for key in ("summary", "strategy", "page", "target_id"):  # a caption is already in the node text
        value = node.metadata.get(key)
        if value not in (None, ""):
            meta[key] = value
    if node.generated:
        meta["generated"] = True
    if node.flags:
        meta["flags"] = list(node.flags)
    return flatten_metadata(meta) if flat else meta
