"""Two one-call entry points: ``grounded.parse(pdf)`` and ``grounded.chunk(pdf_or_tree)``.

They are thin conveniences over :func:`grounded.get_parser` and :class:`grounded.chunking.Chunker`
for scripts and notebooks; build those objects yourself to reuse a parser (worker pool, loaded
model) or a chunker (tokenizer) across many documents.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .model.chunk import ChunkingResult
from .model.elements import ParsingResult

if TYPE_CHECKING:
    from .parsers.source import PDFSource

__all__ = ["parse", "chunk"]


def parse(pdf: PDFSource, parser: str = "pymupdf", *, password: str | None = None, **options: Any) -> ParsingResult:
    """Parse ``pdf`` (a path, PDF bytes or a binary file object) with the backend ``parser``;
    ``options`` go to the backend's constructor. A stored parse (``.json`` written by
    ``grounded parse``) is not accepted here: use :func:`grounded.load_parsing_result`."""
    from .parsers import get_parser

    backend = get_parser(parser, **options)
    try:
        return backend.parse(pdf, password=password)
    finally:
        close = getattr(backend, "close", None)
        if close is not None:
            close()


def chunk(
    source: ParsingResult | PDFSource,
    strategy: str = "recursive",
    max_tokens: int = 256,
    overlap: int | float = 0,
    *,
    parser: str = "pymupdf",
    password: str | None = None,
    **options: Any,
) -> ChunkingResult:
    """Chunk a parse tree, a stored parse (``.json`` path) or a PDF (parsed first with ``parser``).

    ``options`` go to the :class:`~grounded.chunking.Chunker` (``tokenizer``, ``box_mode`` and the
    strategy's options such as ``heading_budget``)."""
    from .chunking import Chunker
    from .io.codec import load_parsing_result

    if isinstance(source, ParsingResult):
        root = source
    elif isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() == ".json":
        root = load_parsing_result(Path(source))
    else:
        root = parse(source, parser, password=password)
    return Chunker(strategy, max_tokens, overlap, **options).chunk(root)
