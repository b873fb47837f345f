"""LlamaIndex adapter: :class:`GroundedPDFReader` (PDF -> Documents referring to their parse tree),
:class:`GroundedNodeParser` (Documents -> TextNodes with exact, multi-page source boxes) and
:func:`node_boxes` (the boxes of any node's own text, also of re-split parts and citation chunks)
and :class:`GroundingNodeParser` (any node parser, its nodes grounded in the PDF) and
:class:`GroundedRetriever` (an output folder of ``grounded ingest`` as a retriever).

Importing this package imports ``llama_index.core``; without it an
:class:`~grounded.errors.BackendUnavailableError` names ``pip install 'grounded[llama-index]'``.
"""

from __future__ import annotations

from grounded.integrations import TREE_REF_KEY, ParseCache
from grounded.integrations.embedding import EmbeddingInputWarning
from grounded.metadata import GroundingWarning, boxes_from_metadata, boxes_to_metadata, unflatten_metadata

from . import _compat  # noqa: F401  (fails early, with the pip hint, when llama-index-core is missing)
from .embedding import MiniLMEmbedding
from .graph import graph_to_nodes
from .grounding import GroundingNodeParser, node_boxes
from .node_parser import GroundedNodeParser, GroundedTextNode
from .parts import GroundedParts, part_node_metadata
from .reader import GroundedPDFReader
from .retriever import GroundedRetriever

__all__ = [
    "EmbeddingInputWarning", "GroundedParts", "part_node_metadata", "graph_to_nodes", "GroundedPDFReader",
    "GroundedRetriever", "GroundedNodeParser", "GroundedTextNode", "GroundingNodeParser", "MiniLMEmbedding",
    "node_boxes", "GroundingWarning", "ParseCache", "TREE_REF_KEY", "boxes_from_metadata",
    "boxes_to_metadata", "unflatten_metadata"
]
