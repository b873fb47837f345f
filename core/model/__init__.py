"""The data types every layer shares (thesis §3.2, Table A.1): element types, boxes, the parse-tree
node, the chunker's token, the chunk and the chunking result. Lowest layer: imports only
:mod:`grounded.errors`."""

from __future__ import annotations

from .boxes import BoxMode, ParsingBoundingBox
from .chunk import Chunk, ChunkingResult, RichToken
from .elements import CONTAINER_TYPES, HEADING_TYPES, TEXT_TYPES, ParsingResult, ParsingResultType

__all__ = [
    "ParsingResultType",
    "ParsingBoundingBox",
    "ParsingResult",
    "RichToken",
    "Chunk",
    "ChunkingResult",
    "BoxMode",
    "CONTAINER_TYPES",
    "TEXT_TYPES",
    "HEADING_TYPES",
]
