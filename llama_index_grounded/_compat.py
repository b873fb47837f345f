"""Import guard: this adapter needs ``llama-index-core`` (the ``llama-index`` extra)."""

from __future__ import annotations

from grounded.errors import BackendUnavailableError

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise BackendUnavailableError("llama_index_grounded", "llama-index", "llama-index-core") from exc
