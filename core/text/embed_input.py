"""How much text the default embedding model reads, and the warning when a chunk is longer.

all-MiniLM-L6-v2 (the bundled ``MiniLMEmbedding``/``MiniLMEmbeddings`` and grounded's default
tokenizer) embeds at most 256 word pieces (``max_seq_length``; sentence-transformers cuts the
rest silently). A ported ``chunk_size=1000`` in tokens therefore embeds only each chunk's first 256
tokens. :class:`EmbeddingInputWarning` says so: once per embedding object (when it first gets a
longer text) and once per splitter (when it is made with a larger ``chunk_size`` and the default
MiniLM tokenizer). Silence it with
``warnings.filterwarnings("ignore", category=EmbeddingInputWarning)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from .tokenizer import DEFAULT_TOKENIZER_NAME

__all__ = ["MINILM_MAX_TOKENS", "EmbeddingInputWarning", "is_minilm_tokenizer", "warn_long_chunk_size", "warn_long_texts"]

#: word pieces all-MiniLM-L6-v2 embeds ([CLS] and [SEP] included); the rest is cut
MINILM_MAX_TOKENS = 256

_SILENCE = 'warnings.filterwarnings("ignore", category=grounded.text.embed_input.EmbeddingInputWarning)'


class EmbeddingInputWarning(UserWarning):
    """A text (or a splitter's chunk size) is longer than the embedding model reads."""


def is_minilm_tokenizer(tokenizer: Any) -> bool:
    """True for ``None`` (the default) and grounded's MiniLM tokenizer object or name."""
    if tokenizer is None or tokenizer in (DEFAULT_TOKENIZER_NAME, "all-MiniLM-L6-v2"):
        return True
    return getattr(tokenizer, "name", None) == DEFAULT_TOKENIZER_NAME


def warn_long_chunk_size(owner: str, chunk_size: int, tokenizer: Any, *, stacklevel: int = 3) -> bool:
    """Warn (and return True) when ``chunk_size`` in MiniLM tokens exceeds what MiniLM embeds."""
    if chunk_size <= MINILM_MAX_TOKENS or not is_minilm_tokenizer(tokenizer):
        return False
    warnings.warn(
        f"{owner}(chunk_size={chunk_size}) counts all-MiniLM-L6-v2 tokens, and MiniLM embeds only the first "
        f"{MINILM_MAX_TOKENS} of a chunk (MiniLMEmbedding/MiniLMEmbeddings and grounded's --embed minilm cut the "
        f"rest silently): use chunk_size <= {MINILM_MAX_TOKENS} with MiniLM, or an embedding model with a longer "
        f"input (and its tokenizer=). Silence with {_SILENCE}",
        EmbeddingInputWarning,
        stacklevel=stacklevel,
    )
    return True


def warn_long_texts(owner: str, texts: Sequence[str], *, stacklevel: int = 3) -> bool:
    """Warn (and return True) when any of ``texts`` has more than :data:`MINILM_MAX_TOKENS` word
    pieces (the shipped MiniLM tokenizer, as grounded's splitters count: [CLS]/[SEP] not counted).
    The model's 256 include those two, so a chunk of 255-256 tokens - the splitters' default size -
    loses at most its last two word pieces, without a warning: the warning is for real loss."""
    if not texts:
        return False
    from .tokenizer import minilm_tokenizer

    tok = minilm_tokenizer()
    counts = [tok.count(t) for t in texts]
    long = [c for c in counts if c > MINILM_MAX_TOKENS]
    if not long:
        return False
    warnings.warn(
        f"{owner}: {len(long)} of {len(texts)} texts are longer than all-MiniLM-L6-v2's input of {MINILM_MAX_TOKENS} "
        f"word pieces (longest {max(long)}); only their first {MINILM_MAX_TOKENS} are embedded. Chunk with "
        f"chunk_size <= {MINILM_MAX_TOKENS} MiniLM tokens (grounded's default tokenizer). This warning is given "
        f"once per {owner} object; silence it with {_SILENCE}",
        EmbeddingInputWarning,
        stacklevel=stacklevel,
    )
    return True
