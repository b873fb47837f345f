"""Import guard: this adapter needs ``llama-index-core`` (the ``llama-index`` extra)."""

from __future__ import annotations

from grounded.integrations import require

require("llama_index.core", extra="llama-index", what="llama_index_grounded", package="llama-index-core")
