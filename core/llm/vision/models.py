"""Backward-compatible names of the vision strategy's model adapter, now :mod:`grounded.llm`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grounded.errors import ChunkingError

from .. import DEFAULT_GEMINI_MODEL, GenerationSettings, Model, RetryPolicy, as_model

__all__ = ["VisionModel", "as_vision_model", "DEFAULT_GEMINI_MODEL"]

#: the model the vision strategy calls (``complete(prompt, images=..., what=...)``)
VisionModel = Model


def as_vision_model(
    llm: Any, model: str | None = None, *, retry: RetryPolicy | None = None, sleep: Callable[[float], None] | None = None,
    settings: GenerationSettings | None = None,
) -> Model:
    """:func:`grounded.llm.as_model` of ``llm``; a :class:`~grounded.errors.ChunkingError` naming what
    to pass when there is none. ``model`` names the Gemini model of a google-genai client (default
    :data:`~grounded.llm.DEFAULT_GEMINI_MODEL`)."""
    if llm is None:
        raise ChunkingError(
            "the 'vision' strategy needs a multimodal model: pass llm=<google-genai Client | LlamaIndex LLM | "
            "LangChain chat model | callable(images, prompt) -> str> (`grounded chunk`: --llm-model or --llm; "
            "see docs/vision.md)"
        )
    return as_model(llm, model=model, retry=retry, sleep=sleep, settings=settings)
