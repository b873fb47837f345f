""":class:`GroundedRetriever`: the library's own index (an output folder of ``grounded ingest ...
--sink lancedb``) as a LangChain retriever, for LCEL chains and anything that takes a
``BaseRetriever``.

Glue over :func:`grounded.search.search` (its modes, its page filter, its typed errors): each hit
becomes a ``Document`` (``id`` = the chunk id) whose metadata is every field of the chunk field
table (:func:`grounded.io.chunk_codec.chunk_metadata` of the row's record: ``chunk_id``,
``pages``/``page_start``/``page_end`` **1-based**, ``section``, ``boxes`` with line spans, offsets,
strategy, ...) plus the loader's source keys: ``source``/``file_path`` (the indexed PDF's path),
``file_name``, ``source_sha256``, ``page`` (**0-based** index of the first page, as
``PyMuPDFLoader``'s), and ``config_fingerprint`` (the ingest configuration) and ``score`` (the
search score; LangChain Documents have no score of their own). ``boxes_from_metadata(doc.metadata,
text=doc.page_content)`` and ``chunk_of(doc)`` read the boxes back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from grounded.integrations.profiles import focus_metadata
from grounded.metadata import chunk_metadata
from grounded.model import Chunk
from grounded.search import Hit, Mode, QueryEmbedder, SearchIndex, page_numbers, search

__all__ = ["GroundedRetriever"]


class GroundedRetriever(BaseRetriever):
    """Retrieve chunks of an ingest output folder ``out`` with their exact source boxes.

    ``mode``: ``text`` (BM25; never loads the embedding model), ``vector`` or ``hybrid`` (MiniLM,
    needs ``grounded ingest --embed minilm``), as :func:`grounded.search.search`; None (the default):
    the index's default mode (hybrid, or text when it has no embeddings).
    ``pages``: only chunks touching one of these 1-based pages; ``page_range=(first, last)``: the
    chunks touching that inclusive range (one or the other). ``config``: the ingest configuration
    (fingerprint or prefix) when ``out`` holds several. ``embedder``: the query embedder of the
    vector modes (default MiniLM). ``flat_metadata=True`` writes lists as compact JSON strings
    (store-safe, like :class:`~langchain_grounded.GroundedPDFLoader`'s default); by default they stay
    lists (``4 in doc.metadata["pages"]``). ``line_boxes=False`` keeps one box per page run. Each
    Document carries its focus: ``focus_spans`` (offsets into ``page_content`` of the sentences,
    rows or items that answer the query) and ``focus_boxes`` (their boxes); format only
    ``page_content`` for the LLM (as an LCEL chain does) and they never reach it.

    ``out`` is opened when the retriever is made: a missing folder raises
    :class:`~grounded.search.IndexNotFoundError`, a folder without an index
    :class:`~grounded.search.NotAnIndexError` (both ``GroundedError``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    out: Path = Field(description="An output folder of `grounded ingest ... --sink lancedb`.")
    k: int = Field(default=5, ge=1, description="Number of Documents to return.")
    mode: Mode | None = Field(default=None, description="text (BM25), vector or hybrid; None: the index's default.")
    pages: list[int] | None = Field(default=None, description="Only chunks touching one of these 1-based pages.")
    page_range: tuple[int, int] | None = Field(default=None, description="Only chunks touching these 1-based pages (inclusive).")
    config: str | None = Field(default=None, description="Ingest configuration fingerprint (or prefix).")
    embedder: QueryEmbedder | None = Field(default=None, exclude=True, description="Query embedder of the vector modes.")
    flat_metadata: bool = Field(default=False, description="Lists as compact JSON strings (store-safe).")
    line_boxes: bool = Field(default=True, description="Boxes with their line spans.")
    _index: SearchIndex = PrivateAttr()

    @field_validator("out", mode="before")
    @classmethod
    def _path(cls, value: Any) -> Any:
        return value.out if isinstance(value, SearchIndex) else value

    @model_validator(mode="after")
    def _open(self) -> GroundedRetriever:
        page_numbers(self.pages, self.page_range)  # a bad filter fails here, not at the first query
        self._index = SearchIndex(self.out)
        return self

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = search(
            self._index, query, self.k, mode=self.mode, config=self.config, embedder=self.embedder,
            pages=page_numbers(self.pages, self.page_range),
        )
        return [self._document(h, r) for h, r in zip(hits, self._index.records(hits), strict=True)]

    def _document(self, hit: Hit, record: Chunk) -> Document:
        metadata: dict[str, Any] = {
            "source": hit.source_path,
            "file_path": hit.source_path,
            "file_name": Path(hit.source_path).name,
            "source_sha256": hit.source_sha256,
            "config_fingerprint": hit.config,
            "page": max(record.page_start - 1, 0),
            **chunk_metadata(record, flat=self.flat_metadata, line_spans=self.line_boxes, text=record.content),
            **focus_metadata(hit, flat=self.flat_metadata, line_spans=self.line_boxes),
            "score": hit.score,
        }
        return Document(page_content=record.content, metadata=metadata, id=record.id)
