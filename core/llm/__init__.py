"""Injected language / vision models behind one adapter (``import grounded.llm``).

``as_model(obj)`` wraps a google-genai ``Client``, a LlamaIndex LLM, a LangChain chat model or a
plain callable as a :class:`Model` with ``complete(prompt, *, system=None, images=(), what=...) -> str``:
one request per kind (:mod:`.adapters`), one reading of the reply and its finish reason
(:mod:`.replies`), one retry policy for 429 / 5xx / timeouts (:mod:`.model`) and a stable
``identity`` for cache fingerprints. The vision strategy, the llm strategy and the node graph use it;
:mod:`.cli` gives the commands their model options. No framework is imported here.
"""

from __future__ import annotations

from ..runtime.cloud import RetryPolicy
from .adapters import DEFAULT_GEMINI_MODEL, UnsupportedModelError
from .model import Model, as_model
from .replies import reply_text

__all__ = ["Model", "as_model", "RetryPolicy", "UnsupportedModelError", "DEFAULT_GEMINI_MODEL", "reply_text"]
