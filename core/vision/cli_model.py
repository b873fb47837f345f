"""The model of ``grounded chunk --strategy vision``: ``--vision-model NAME`` (a Gemini model through
google-genai, key in ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``) or ``--vision-llm MODULE:OBJECT`` (any
model object this package accepts; ``MODULE:FACTORY()`` calls a factory without arguments)."""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import ChunkingError

__all__ = ["model_from_options"]

GEMINI_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def _import_object(spec: str) -> Any:
    call = spec.endswith("()")
    module_name, _, attr = spec.removesuffix("()").partition(":")
    if not module_name or not attr:
        raise ChunkingError(f"--vision-llm {spec!r}: expected MODULE:OBJECT or MODULE:FACTORY()")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ChunkingError(f"--vision-llm {spec!r}: cannot import it ({exc})") from None
    return obj() if call else obj


def model_from_options(vision_model: str | None, vision_llm: str | None) -> tuple[Any, str | None]:
    """``(llm, model name)`` for the vision strategy from the CLI options; a typed error names what
    to pass when neither is given."""
    if vision_llm:
        return _import_object(vision_llm), vision_model
    if vision_model:
        from .._optional import require
        from ..parsers._cloud import credential_from_env

        require("google.genai", extra="gemini", what="the vision strategy with --vision-model", package="google-genai")
        key = credential_from_env("vision", GEMINI_KEYS, "the API key of the Gemini model given with --vision-model")
        from google import genai

        return genai.Client(api_key=key), vision_model
    raise ChunkingError(
        "--strategy vision needs a multimodal model: --vision-model NAME (Gemini via google-genai, key in "
        "GEMINI_API_KEY or GOOGLE_API_KEY) or --vision-llm MODULE:OBJECT (see docs/vision.md)"
    )
