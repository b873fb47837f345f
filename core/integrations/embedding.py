"""What the adapters' embedding classes share: grounded's default embedder (MiniLM, ONNX), the
device check and the warnings about inputs longer than the embedder reads."""

from __future__ import annotations

from ..chunking.nlp import minilm_embedder
from ..runtime.device import check_device
from ..text.embed_input import EmbeddingInputWarning, warn_long_chunk_size, warn_long_texts

__all__ = ["minilm_embedder", "check_device", "EmbeddingInputWarning", "warn_long_chunk_size", "warn_long_texts"]
