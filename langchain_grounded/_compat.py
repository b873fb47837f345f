"""Import guard: this adapter needs ``langchain-core`` and ``langchain-text-splitters`` (the ``langchain`` extra)."""

from __future__ import annotations

from grounded.errors import BackendUnavailableError

try:
    import langchain_core  # noqa: F401
    import langchain_text_splitters  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise BackendUnavailableError("langchain_grounded", "langchain", "langchain-core langchain-text-splitters") from exc
