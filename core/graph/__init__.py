"""Multi-strategy ingestion and the node graph (seed 002; issue #11 part 3).

``assemble`` merges FAST / OCR / LLM page readings into one tree, ``build_graph`` turns it into
Document, Page, Header, Text, Table, Image nodes with boxes and two-way relationships, and
``enrich`` adds LLM summaries and generated-question (QA) nodes, ``extract_metadata`` the
Document's topic and keywords, ``keep_snapshots`` stored page PNGs referenced from the Page nodes. Exports to LlamaIndex and
LangChain live in ``llama_index_grounded.graph`` and ``langchain_grounded.graph``.
Names resolve lazily (``import grounded.graph`` loads no model, renderer or framework).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "NodeKind": "grounded.graph.nodes",
    "GraphNode": "grounded.graph.nodes",
    "NodeGraph": "grounded.graph.nodes",
    "TextPiece": "grounded.graph.nodes",
    "node_id": "grounded.graph.nodes",
    "build_graph": "grounded.graph.builder",
    "assemble": "grounded.graph.assembler",
    "Assembly": "grounded.graph.assembler",
    "RegionReading": "grounded.graph.assembler",
    "enrich": "grounded.graph.enrich",
    "Enrichment": "grounded.graph.enrich",
    "ModelClient": "grounded.graph.llm",
    "extract_metadata": "grounded.graph.doc_metadata",
    "DocumentMetadata": "grounded.graph.doc_metadata",
    "keep_snapshots": "grounded.graph.snapshots",
    "EMBED_KEYS": "grounded.graph.export",
    "LLM_KEYS": "grounded.graph.export",
    "export_text": "grounded.graph.export",
    "node_metadata": "grounded.graph.export",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'grounded.graph' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
