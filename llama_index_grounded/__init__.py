"""LlamaIndex adapter: :class:`GroundedPDFReader` (PDF -> Document carrying its parse tree) and
:class:`GroundedNodeParser` (Document -> TextNodes with exact, multi-page source boxes).

Importing this package imports ``llama_index.core``; without it an
:class:`~grounded.errors.BackendUnavailableError` names ``pip install 'grounded[llama-index]'``.
"""

from __future__ import annotations

from grounded.metadata import boxes_from_metadata, boxes_to_metadata, unflatten_metadata

from . import _compat  # noqa: F401  (fails early, with the pip hint, when llama-index-core is missing)
from .embedding import MiniLMEmbedding
from .node_parser import GroundedNodeParser
from .reader import GroundedPDFReader

__all__ = [
    "GroundedPDFReader",
    "GroundedNodeParser",
    "MiniLMEmbedding",
    "boxes_from_metadata",
    "boxes_to_metadata",
    "unflatten_metadata",
]
