""":class:`GroundedRetriever`: an ingest output folder as a LlamaIndex retriever (glue over
:func:`grounded.search.search`); node metadata: docs/adapters.md#groundedretriever-metadata."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from grounded.integrations import embed_hidden_keys, llm_hidden_keys
from grounded.integrations.profiles import FOCUS_KEYS, hit_fields
from grounded.model import Chunk
from grounded.search import MODES, Hit, Mode, QueryEmbedder, SearchIndex, page_numbers, search

__all__ = ["GroundedRetriever"]

#: source keys a node adds to the chunk fields; the LLM sees ``file_name`` and ``page_label`` of them
_SOURCE_HIDDEN = ("file_path", "source_sha256", "config_fingerprint", "page")
_EMBED_HIDDEN = (*embed_hidden_keys(), *_SOURCE_HIDDEN, *FOCUS_KEYS, "file_name", "page_label", "pages", "section")
_LLM_HIDDEN = (*llm_hidden_keys(), *_SOURCE_HIDDEN, *FOCUS_KEYS)


class GroundedRetriever(BaseRetriever):
    """Retrieve chunks of an ingest output folder ``out`` with their exact source boxes: ``mode``
    text | vector | hybrid, None: the index's default (hybrid, text without embeddings; as
    :func:`grounded.search.search`), ``pages`` or ``page_range``
    (1-based), ``config``, ``embedder``, ``flat_metadata``, ``line_boxes``; nodes carry their focus
    (``focus_spans``/``focus_boxes``, hidden from embedder and LLM). ``out`` is opened here
    (typed :class:`~grounded.errors.GroundedError` when it is missing or not an index)."""

    def __init__(
        self,
        out: str | Path | SearchIndex,
        similarity_top_k: int = 5,
        mode: Mode | None = None,
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
        if mode is not None and mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be an integer >= 1, got {similarity_top_k!r}")
        self.index = out if isinstance(out, SearchIndex) else SearchIndex(out)
        self.similarity_top_k = similarity_top_k
        self.mode: Mode | None = mode
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

    def _node(self, hit: Hit, record: Chunk) -> TextNode:
        pages = {"page": record.page_start, "page_label": str(record.page_start)} if record.pages else None
        # the node id is the chunk id (as GroundedNodeParser's nodes)
        metadata = hit_fields(hit, record, flat=self.flat_metadata, line_spans=self.line_boxes, drop=("chunk_id",), pages=pages)
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

