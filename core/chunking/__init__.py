"""Token-level chunking with exact multi-page boxes (thesis §3.4; spec §5).

Exports resolve lazily so ``import grounded.chunking`` stays light (the tokenizer, numpy-heavy
stream and strategies load on first use).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Chunker": "grounded.chunking.chunker",
    "chunk": "grounded.chunking.chunker",
    "document_text": "grounded.text.stream",
    "DocumentText": "grounded.text.stream",
    "TokenStream": "grounded.text.stream",
    "build_stream": "grounded.text.stream",
    "load_tokenizer": "grounded.text.tokenizer",
    "Tokenizer": "grounded.text.tokenizer",
    "ChunkingStrategy": "grounded.chunking.base",
    "TokenGroup": "grounded.chunking.base",
    "register_strategy": "grounded.chunking.base",
    "STRATEGIES": "grounded.chunking.base",
    "BOX_MODES": "grounded.text.assembly",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'grounded.chunking' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    if name == "STRATEGIES":
        importlib.import_module("grounded.chunking.base").load_strategies()
    globals()[name] = value
    return value
