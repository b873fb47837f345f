"""LangChain adapter: :class:`GroundedPDFLoader` (PDF -> chunk, element, page or single Documents
with exact source boxes), :class:`GroundedPDFParser` (the same as a blob parser for
``GenericLoader``) and :class:`GroundedTextSplitter` (splits any of them again with the boxes of
each part's own text; splits plain Documents by tokens with character offsets) and
:class:`GroundingSplitter` (any LangChain splitter, its parts grounded in the PDF: boxes and offsets)
and :class:`GroundedRetriever` (an output folder of ``grounded ingest`` as a retriever).

Importing this package imports ``langchain_core``; without it an
:class:`~grounded.errors.BackendUnavailableError` names ``pip install 'grounded[langchain]'``.
"""

from __future__ import annotations

from grounded.integrations.embedding import EmbeddingInputWarning
from grounded.metadata import GroundingWarning, boxes_from_metadata, boxes_to_metadata, unflatten_metadata

from . import _compat  # noqa: F401  (fails early, with the pip hint, when langchain-core is missing)
from .embeddings import MiniLMEmbeddings
from .graph import graph_to_documents
from .grounding import GroundingSplitter
from .loader import GroundedPDFLoader, GroundedPDFParser
from .parts import GroundedParts
from .retriever import GroundedRetriever
from .splitter import GroundedTextSplitter

__all__ = [
    "EmbeddingInputWarning",
    "GroundedParts",
    "graph_to_documents",
    "GroundedPDFLoader",
    "GroundedPDFParser",
    "GroundedRetriever",
    "GroundingWarning",
    "GroundedTextSplitter",
    "GroundingSplitter",
    "MiniLMEmbeddings",
    "boxes_from_metadata",
    "boxes_to_metadata",
    "unflatten_metadata",
]
