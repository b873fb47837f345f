"""Framework-free metadata of graph nodes, shared by the LlamaIndex and LangChain exports.

Follows :mod:`grounded.metadata`: ``boxes`` in its compact form (a JSON string when flat),
``text_hash`` of the exported text, ``pages``; plus ``node_type``, ``section`` (heading path joined
with " > "), and - only when present - ``summary``, ``strategy``, ``generated``,
``flags``, ``page``, ``target_id`` (QA); on the Document node ``topic``, ``keywords`` (metadata
extractor) and the PDF's document information as ``pdf_title``, ``pdf_author``,
``pdf_creationdate``, ... ; on Page nodes ``snapshot_path`` / ``snapshot_sha256`` (a stored PNG).
Relationship ids are added by each export in its own form.

What is embedded (:func:`export_text`): seed 002 embeds the *summary* of Page and Document nodes
("the embedding is generated from the summary"), so a Page or Document node with a summary is
exported with the summary as its text (``text_kind="summary"``; its boxes are the whole pages the
summary describes); its full text stays in the graph (the page's content nodes). Header nodes hold
only the heading; their summary reaches the embedder as metadata (``summary`` is an embed key).
"""

from __future__ import annotations

from typing import Any

from ..io.box_codec import BOXES_KEY, TEXT_HASH_KEY, boxes_to_metadata, text_hash
from ..io.chunk_codec import flatten_metadata
from .nodes import GraphNode, NodeGraph, NodeKind

__all__ = ["node_metadata", "export_text", "PAYLOAD_KEYS", "LLM_KEYS", "EMBED_KEYS", "SUMMARY_EMBEDDED"]

#: machine payload: hidden from embedders and LLMs
PAYLOAD_KEYS = (BOXES_KEY, TEXT_HASH_KEY, "flags", "strategy", "target_id", "node_id", "parent_id", "child_ids",
                "next_id", "previous_id", "generated", "snapshot_path", "snapshot_sha256", "text_kind")
#: what an LLM reading a retrieved node sees besides its text
LLM_KEYS = ("node_type", "pages", "page", "section", "summary", "topic", "keywords", "pdf_title", "pdf_author")
#: what an embedder sees besides the exported text (``summary`` only where the text is not the summary)
EMBED_KEYS = ("section", "summary")
#: kinds whose summary, when they have one, is the exported (embedded) text (seed 002)
SUMMARY_EMBEDDED = frozenset({NodeKind.PAGE, NodeKind.DOCUMENT})


def export_text(node: GraphNode) -> str:
    """The text an export stores and an embedder sees: the summary of a Page or Document node that
    has one (seed 002), else the node text."""
    return node.summary if node.kind in SUMMARY_EMBEDDED and node.summary.strip() else node.text


def node_metadata(graph: NodeGraph, node: GraphNode, *, flat: bool = True, line_spans: bool = True) -> dict[str, Any]:
    """The metadata of ``node`` (scalars and compact JSON strings with ``flat=True``)."""
    text = export_text(node)
    meta: dict[str, Any] = {
        "node_type": node.kind.value,
        "pages": node.pages,
        BOXES_KEY: boxes_to_metadata(node.boxes, line_spans=line_spans),
        TEXT_HASH_KEY: text_hash(text),
    }
    if text is not node.text:
        meta["text_kind"] = "summary"
    section = " > ".join(graph.section_path(node) + ([node.text] if node.kind == NodeKind.HEADER else []))
    if section:
        meta["section"] = section
    for key in ("summary", "strategy", "page", "target_id", "topic", "keywords"):  # a caption is in the node text
        value = node.metadata.get(key)
        if value not in (None, "", []):
            meta[key] = value
    info = node.info.pdf
    if isinstance(info, dict):
        meta.update({f"pdf_{k}": v for k, v in info.items() if v})
    snapshot = node.info.snapshot
    if isinstance(snapshot, dict):
        meta["snapshot_path"], meta["snapshot_sha256"] = snapshot["path"], snapshot["sha256"]
    if node.generated:
        meta["generated"] = True
    if node.flags:
        meta["flags"] = list(node.flags)
    return flatten_metadata(meta) if flat else meta
