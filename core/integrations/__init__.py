"""Integrations: what the LlamaIndex and LangChain adapters share, by operation, framework-free.

The adapters (``llama_index_grounded``, ``langchain_grounded``) are glue over this package: they
turn their nodes and Documents into parts (text, metadata, id) and back, and import the operations
from these modules (checked by ``tests/project/test_adapter_imports.py``):

* **sources** (:mod:`.sources`): the PDF behind an item - its parse tree, document text, the boxes
  of a span and a grounder (:class:`~.sources.SourceView`); :mod:`.boxes`: the boxes of an item's
  own text (:func:`~.boxes.chunk_of`);
* **split** (:mod:`.split_nodes`, :mod:`.split_parts`, :mod:`.options`): one input's chunks - the
  whole tree, a recorded span re-split, or foreign text grounded in the PDF - and the chunker of a
  splitter's options;
* **metadata per surface profile** (:mod:`.profiles`): the source-key table (each document-level key
  with its embed/llm/inherit columns, beside the chunk field table) and LlamaIndex's and LangChain's
  conventions for the keys a chunk, page and source carry;
* **loaders** (:mod:`.loaders`, :mod:`.loader_parts`, :mod:`.reader_parts`): PDFs in, the parts of a
  reader or loader mode out.

The grounding engine itself stays in :mod:`grounded.grounding`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names resolve lazily: importing one module of the package loads no other
    from ..grounding.blocks import ELEMENT_KEY as ELEMENT_KEY
    from ..grounding.wrappers import splitter_fingerprint as splitter_fingerprint
    from ..model.chunk_fields import embed_hidden_keys as embed_hidden_keys
    from ..model.chunk_fields import llm_hidden_keys as llm_hidden_keys
    from ..model.chunk_fields import resplit_keys as resplit_keys
    from ..parsers.cache import TREE_REF_KEY as TREE_REF_KEY
    from ..parsers.cache import ParseCache as ParseCache
    from ..runtime.main_guard import check_pickled_for_spawned_pool as check_pickled_for_spawned_pool
    from ..runtime.optional import require as require
    from ..text.ids import stable_hash as stable_hash
    from .boxes import boxes_of as boxes_of
    from .boxes import chunk_of as chunk_of
    from .loader_parts import DocPart as DocPart
    from .loaders import LoaderPipeline as LoaderPipeline
    from .options import build_chunker as build_chunker
    from .sources import SourceView as SourceView
    from .sources import document_view as document_view
    from .sources import source_view as source_view
    from .split_nodes import NodeChunker as NodeChunker
    from .split_parts import PartSplitter as PartSplitter

_LAZY = {
    # the operations
    "SourceView": "grounded.integrations.sources",
    "source_view": "grounded.integrations.sources",
    "document_view": "grounded.integrations.sources",
    "chunk_of": "grounded.integrations.boxes",
    "boxes_of": "grounded.integrations.boxes",
    "DocPart": "grounded.integrations.loader_parts",
    "NodeChunker": "grounded.integrations.split_nodes",
    "PartSplitter": "grounded.integrations.split_parts",
    "LoaderPipeline": "grounded.integrations.loaders",
    "build_chunker": "grounded.integrations.options",
    # the vocabulary the adapters share with the core
    "TREE_REF_KEY": "grounded.parsers.cache",
    "ELEMENT_KEY": "grounded.grounding.blocks",
    "ParseCache": "grounded.parsers.cache",
    "embed_hidden_keys": "grounded.model.chunk_fields",
    "llm_hidden_keys": "grounded.model.chunk_fields",
    "resplit_keys": "grounded.model.chunk_fields",
    "splitter_fingerprint": "grounded.grounding.wrappers",
    "stable_hash": "grounded.text.ids",
    "require": "grounded.runtime.optional",
    "check_pickled_for_spawned_pool": "grounded.runtime.main_guard",
}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'grounded.integrations' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
