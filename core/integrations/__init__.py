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

from ..grounding.blocks import ELEMENT_KEY
from ..grounding.wrappers import splitter_fingerprint
from ..model.chunk_fields import embed_hidden_keys, llm_hidden_keys, resplit_keys
from ..parsers.cache import TREE_REF_KEY, ParseCache
from ..runtime.optional import require
from ..text.ids import stable_hash
from .boxes import boxes_of, chunk_of
from .loader_parts import DocPart
from .loaders import LoaderPipeline
from .options import build_chunker
from .sources import SourceView, document_view, source_view
from .split_nodes import NodeChunker
from .split_parts import PartSplitter

__all__ = [
    # the operations
    "SourceView", "source_view", "document_view", "chunk_of", "boxes_of", "DocPart", "NodeChunker", "PartSplitter",
    "LoaderPipeline", "build_chunker",
    # the vocabulary the adapters share with the core
    "TREE_REF_KEY", "ELEMENT_KEY", "ParseCache", "embed_hidden_keys", "llm_hidden_keys", "resplit_keys",
    "splitter_fingerprint", "stable_hash", "require",
]
