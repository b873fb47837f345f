"""Import guard: this adapter needs ``langchain-core`` and ``langchain-text-splitters`` (the ``langchain`` extra)."""

from __future__ import annotations

from grounded.integrations import require

for _module in ("langchain_core", "langchain_text_splitters"):
    require(_module, extra="langchain", what="langchain_grounded", package="langchain-core langchain-text-splitters")
