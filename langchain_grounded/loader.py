"""``GroundedPDFLoader``: PDFs -> LangChain Documents with exact source boxes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from grounded.chunking.chunker import Chunker
from grounded.parsers import BaseParser, get_parser

from .documents import chunk_document, element_documents, source_metadata

__all__ = ["GroundedPDFLoader"]


class GroundedPDFLoader(BaseLoader):
    """Load PDFs with a grounded parser (default ``pymupdf``).

    ``mode="chunks"`` (default) yields one Document per chunk of grounded's chunker (``strategy``,
    ``max_tokens``, ``overlap``, ``box_mode``, ``tokenizer`` and strategy options as keyword
    arguments); ``mode="elements"`` yields one Document per element (a table or list as one
    element) for :class:`~langchain_grounded.GroundedTextSplitter`, which re-chunks them with
    exact boxes. Metadata: ``source`` (path), ``file_name``, ``pages``, ``section``/``heading_path``,
    ``boxes`` and ids; ``flat_metadata=True`` turns lists into compact JSON strings for
    flat-metadata vector stores (read boxes back with ``boxes_from_metadata``).
    """

    def __init__(
        self,
        file_path: str | Path | Iterable[str | Path],
        *,
        mode: Literal["chunks", "elements"] = "chunks",
        parser: str | BaseParser = "pymupdf",
        parser_options: Mapping[str, Any] | None = None,
        strategy: str = "recursive",
        max_tokens: int = 256,
        overlap: int | float = 0,
        box_mode: str = "auto",
        tokenizer: Any = None,
        flat_metadata: bool = False,
        line_boxes: bool = True,
        **strategy_options: Any,
    ) -> None:
        if mode not in ("chunks", "elements"):
            raise ValueError(f"mode must be 'chunks' or 'elements', got {mode!r}")
        self.file_paths = [file_path] if isinstance(file_path, (str, Path)) else list(file_path)
        self.mode = mode
        if isinstance(parser, BaseParser) and parser_options:
            raise ValueError("parser_options cannot be combined with a built parser")
        self._parser = parser if isinstance(parser, BaseParser) else None
        self.parser_name = parser.name if isinstance(parser, BaseParser) else parser
        self.parser_options = dict(parser_options or {})
        # built now so bad chunking parameters fail before any PDF is parsed
        self.chunker = (
            Chunker(strategy, max_tokens, overlap, tokenizer=tokenizer, box_mode=box_mode, **strategy_options)
            if mode == "chunks"
            else None
        )
        self.flat_metadata = flat_metadata
        self.line_boxes = line_boxes

    @property
    def parser(self) -> BaseParser:
        if self._parser is None:
            self._parser = get_parser(self.parser_name, **self.parser_options)
        return self._parser

    def lazy_load(self) -> Iterator[Document]:
        for path in self.file_paths:
            root = self.parser.parse(path)
            if self.chunker is None:
                yield from element_documents(root, flat=self.flat_metadata, line_spans=self.line_boxes)
                continue
            source = source_metadata(root)
            for chunk in self.chunker.iter_chunks(root):
                yield chunk_document(chunk, source, flat=self.flat_metadata, line_spans=self.line_boxes)
