"""grounded: PDF -> retrieval chunks with exact, multi-page source boxes.

Importing ``grounded`` imports no backend SDK, torch or framework; heavy objects load lazily.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import GroundedError
from .model import (
    BoxMode,
    Chunk,
    ChunkingResult,
    ParsingBoundingBox,
    ParsingResult,
    ParsingResultType,
    RichToken,
)
from .runtime import offline as _offline  # noqa: F401  (sets ORT_DISABLE_TELEMETRY etc. before any backend can load onnxruntime, #14.9)
from .runtime.version import __version__

# name -> module holding it; resolved on first attribute access (keeps `import grounded` light)
_LAZY = {
    "get_parser": "grounded.parsers",
    "BaseParser": "grounded.parsers",
    "parse": "grounded.api",
    "chunk": "grounded.api",
    "Chunker": "grounded.chunking",
    "highlight": "grounded.attribution",
    "render": "grounded.attribution",
    "to_markdown": "grounded.io.markdown",
    "load_parsing_result": "grounded.io.codec",
    "save_parsing_result": "grounded.io.codec",
    "load_chunking_result": "grounded.io.codec",
    "save_chunking_result": "grounded.io.codec",
}

__all__ = [
    "GroundedError",
    "BoxMode",
    "Chunk",
    "ChunkingResult",
    "ParsingBoundingBox",
    "ParsingResult",
    "ParsingResultType",
    "RichToken",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'grounded' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
