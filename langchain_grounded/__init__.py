"""LangChain adapter: :class:`GroundedPDFLoader` (PDF -> chunk or element Documents with exact
source boxes) and :class:`GroundedTextSplitter` (re-chunks element Documents with boxes; splits
plain Documents by tokens with character offsets).

Importing this package imports ``langchain_core``; without it an
:class:`~grounded.errors.BackendUnavailableError` names ``pip install 'grounded[langchain]'``.
"""

from __future__ import annotations

from grounded.metadata import boxes_from_metadata, boxes_to_metadata, unflatten_metadata

from . import _compat  # noqa: F401  (fails early, with the pip hint, when langchain-core is missing)
from .embeddings import MiniLMEmbeddings
from .loader import GroundedPDFLoader
from .splitter import GroundedTextSplitter

__all__ = [
    "GroundedPDFLoader",
    "GroundedTextSplitter",
    "MiniLMEmbeddings",
    "boxes_from_metadata",
    "boxes_to_metadata",
    "unflatten_metadata",
]
