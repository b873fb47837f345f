"""Evaluation framework (thesis §3.5): layout analysis, content extraction, chunk retrieval.

* :mod:`.dla` / :mod:`.dla_data` – per-class and macro F1@50 and F1@50:95 from faster-coco-eval
  matches; readers for PubLayNet COCO, ICDAR-2013 regions, DoclingDocument JSON, parse trees.
* :mod:`.content_eval` / :mod:`.content_data` / :mod:`.teds` / :mod:`.text_metrics` –
  OmniDocBench-style text edit distance with adjacency matching, TEDS / S-TEDS, reading order.
* :mod:`.chunking_eval` – Chroma's token-level recall / precision / IoU / precision_Ω with
  MiniLM retrieval (:mod:`.retrieval_metrics`, :mod:`.baseline_splitters`, :mod:`.embeddings`,
  :mod:`.chroma_data`, :mod:`.text_reader`).
* :mod:`.runs` – the runs behind ``grounded eval dla|content|chunking``; :mod:`.report` – tables.

Heavy dependencies (faster-coco-eval, apted, sentence-transformers, bpe-openai) are imported by
the functions that need them, never by ``import grounded.evaluation``.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "read_text": "grounded.evaluation.text_reader",
    "read_text_file": "grounded.evaluation.text_reader",
    "evaluate_layout": "grounded.evaluation.dla",
    "evaluate_chunker": "grounded.evaluation.chunking_eval",
    "load_chroma_dataset": "grounded.evaluation.chroma_data",
    "score_document": "grounded.evaluation.content_eval",
    "extract_markdown": "grounded.evaluation.content_data",
    "teds": "grounded.evaluation.teds",
    "s_teds": "grounded.evaluation.teds",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'grounded.evaluation' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
