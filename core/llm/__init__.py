"""Injected language / vision models behind one adapter (``import grounded.llm``).

``as_model(obj)`` wraps a google-genai ``Client``, a LlamaIndex LLM, a LangChain chat model or a
plain callable as a :class:`Model` with ``complete(prompt, *, system=None, images=(), what=...) -> str``:
one request per kind (:mod:`.adapters`), one reading of the reply and its finish reason
(:mod:`.replies`), one retry policy for 429 / 5xx / timeouts (:mod:`.model`) and a stable
``identity`` for cache fingerprints, and generation settings (temperature, output tokens, seed;
:mod:`.settings`) sent with every request. The vision strategy, the llm strategy and the node graph use it;
:mod:`grounded.cli.llm_options` gives the commands their model options. No framework is imported here.
"""

from __future__ import annotations

from ..runtime.cloud import RetryPolicy
from .adapters import DEFAULT_GEMINI_MODEL, UnsupportedModelError
from .model import Model, as_model
from .replies import reply_text
from .settings import (
    GRAPH_SETTINGS,
    LLM_CHUNKER_SETTINGS,
    VISION_SETTINGS,
    GenerationSettings,
    as_settings,
    nudged,
    reask_prompt,
)

__all__ = ["Model", "as_model", "RetryPolicy", "UnsupportedModelError", "DEFAULT_GEMINI_MODEL", "reply_text",
           "GenerationSettings", "as_settings", "VISION_SETTINGS", "LLM_CHUNKER_SETTINGS", "GRAPH_SETTINGS", "nudged",
           "reask_prompt"]
