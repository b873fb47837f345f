""":class:`GroundedRetriever`: the library's own index (an output folder of ``grounded ingest ...
--sink lancedb``) as a LlamaIndex retriever, for ``RetrieverQueryEngine`` and any other consumer of
a ``BaseRetriever``.

Glue over :func:`grounded.search.search` (its modes, its page filter, its typed errors): each hit
becomes a ``NodeWithScore`` whose ``TextNode`` carries every field of the chunk field table
(:func:`grounded.io.chunk_metadata.chunk_metadata` of the row's record), so ``node_boxes``,
``boxes_from_metadata`` and ``chunk_from_store`` read its boxes back; plus LlamaIndex's page keys
(``page``: the first page, a **1-based** int like pymupdf4llm's; ``page_label``: the first page as a
string; ``pages``/``page_start``/``page_end`` 1-based), ``file_name``/``file_path`` of the indexed
PDF, ``source_sha256`` and ``config_fingerprint`` (the ingest configuration). The LLM sees the text,
``file_name``, ``page_label``, ``pages`` and ``section``; the boxes and ids are hidden from it and
from embedders.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from grounded.grounding.adapter import (
    chunk_metadata,
    embed_hidden_keys,
    llm_hidden_keys,
)
from grounded.model import ChunkRecord
from grounded.search import DEFAULT_MODE, MODES, Hit, Mode, QueryEmbedder, SearchIndex, page_numbers, search

__all__ = ["GroundedRetriever"]

#: source keys a node adds to the chunk fields; the LLM sees ``file_name`` and ``page_label`` of them
_SOURCE_HIDDEN = ("file_path", "source_sha256", "config_fingerprint", "page")
_EMBED_HIDDEN = (*embed_hidden_keys(), *_SOURCE_HIDDEN, "file_name", "page_label", "pages", "section")
_LLM_HIDDEN = (*llm_hidden_keys(), *_SOURCE_HIDDEN)


class GroundedRetriever(BaseRetriever):
    """Retrieve chunks of an ingest output folder ``out`` with their exact source boxes.

    ``mode``: ``text`` (BM25, the default; never loads the embedding model), ``vector`` or
    ``hybrid`` (MiniLM, needs ``grounded ingest --embed minilm``), as :func:`grounded.search.search`.
    ``pages``: only chunks touching one of these 1-based pages; ``page_range=(first, last)``: the
    chunks touching that inclusive range (one or the other). ``config``: the ingest configuration
    (fingerprint or prefix) when ``out`` holds several. ``embedder``: the query embedder of the
    vector modes (default MiniLM). ``flat_metadata=True`` writes lists as compact JSON strings
    (store-safe, like :class:`~llama_index_grounded.GroundedNodeParser`'s default); by default they
    stay lists (``4 in node.metadata["pages"]``). ``line_boxes=False`` keeps one box per page run.

    ``out`` is opened here: a missing folder raises :class:`~grounded.search.IndexNotFoundError`, a
    folder without an index :class:`~grounded.search.NotAnIndexError` (both ``GroundedError``).
    """

    def __init__(
        self,
        out: str | Path | SearchIndex,
        similarity_top_k: int = 5,
        mode: Mode = DEFAULT_MODE,
        *,
        pages: Iterable[int] | None = None,
        page_range: tuple[int, int] | None = None,
        config: str | None = None,
        embedder: QueryEmbedder | None = None,
        flat_metadata: bool = False,
        line_boxes: bool = True,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be an integer >= 1, got {similarity_top_k!r}")
        self.index = out if isinstance(out, SearchIndex) else SearchIndex(out)
        self.similarity_top_k = similarity_top_k
        self.mode: Mode = mode
        self.pages = page_numbers(pages, page_range)
        self.config = config
        self.embedder = embedder
        self.flat_metadata = flat_metadata
        self.line_boxes = line_boxes
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = search(
            self.index, query_bundle.query_str, self.similarity_top_k, mode=self.mode, config=self.config,
            embedder=self.embedder, pages=self.pages,
        )
        return [NodeWithScore(node=self._node(h, r), score=h.score) for h, r in zip(hits, self.index.records(hits), strict=True)]

    def _node(self, hit: Hit, record: ChunkRecord) -> TextNode:
        metadata: dict[str, Any] = chunk_metadata(record, flat=self.flat_metadata, line_spans=self.line_boxes, text=record.content)
        metadata.pop("chunk_id", None)  # the node id is the chunk id (as GroundedNodeParser's nodes)
        if record.pages:
            metadata.update(page=record.page_start, page_label=str(record.page_start))
        metadata.update(
            file_name=Path(hit.source_path).name, file_path=hit.source_path,
            source_sha256=hit.source_sha256, config_fingerprint=hit.config,
        )
        start = record.start_char
        return TextNode(
            id_=record.id,
            text=record.content,
            metadata=metadata,
            excluded_embed_metadata_keys=[k for k in dict.fromkeys(_EMBED_HIDDEN) if k in metadata],
            excluded_llm_metadata_keys=[k for k in dict.fromkeys(_LLM_HIDDEN) if k in metadata],
            start_char_idx=start,
            end_char_idx=None if start is None else start + len(record.body),
        )

