"""Generation settings of one model request: temperature, output length, sampling seed.

:class:`GenerationSettings` is the typed record every provider kind receives (see
:func:`grounded.llm.adapters.send` for how each one gets it). A field left ``None`` is not sent:
the provider's own default applies. The settings are part of a model's stable identity
(:attr:`grounded.llm.Model.identity`), so they change cache keys and chunker fingerprints.

The strategies' defaults are the seeds' values:

* :data:`VISION_SETTINGS` - seed 001 §4 ("The model is configured with low temperature settings
  (T=0.1) to ensure consistent and reliable chunk generation"): temperature 0.1, no output cap
  (a batch of pages is long).
* :data:`LLM_CHUNKER_SETTINGS` - Chroma's ``LLMSemanticChunker`` (seed 003 §"LLMSemanticChunker";
  the seed points to its code, ``chunking_evaluation/chunking/llm_semantic_chunker.py``, which asks
  ``create_message(..., max_tokens=200, temperature=0.2)``): temperature 0.2, 200 output tokens.
* :data:`GRAPH_SETTINGS` - seed 002 names no value; its requests (table transcriptions, JSON
  summaries) are structured output like seed 001's, so they use seed 001's temperature 0.1.

Re-asking (:func:`nudged`): a model that gave an invalid answer is asked again with the error named
in the prompt (:func:`reask_prompt`) and, when a temperature is set, a temperature raised by
:data:`NUDGE_STEP` per re-ask, capped at :data:`NUDGE_CAP`: near-greedy decoding returns the same
answer to the same prompt, a slightly warmer one can leave it. A temperature left to the provider
(``None``) is not touched: its value is unknown, so raising it is not possible.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from ..errors import ChunkingError

__all__ = [
    "GenerationSettings", "as_settings", "VISION_SETTINGS", "LLM_CHUNKER_SETTINGS", "GRAPH_SETTINGS",
    "NUDGE_STEP", "NUDGE_CAP", "nudged", "reask_prompt", "excerpt", "effective_settings",
]

#: temperature added per re-ask after an invalid answer, and the highest a nudge goes
NUDGE_STEP = 0.2
NUDGE_CAP = 1.0


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class GenerationSettings:
    """``temperature`` (0-2), ``max_tokens`` (output tokens, >= 1), ``seed`` (sampling seed, only
    providers that have one use it); ``None``: the provider's default. Invalid values raise
    :class:`~grounded.errors.ChunkingError` (a model-driven strategy's option)."""

    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        t = self.temperature
        if t is not None:
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 <= t <= 2:
                raise ChunkingError(f"temperature must be a number in [0, 2], got {t!r}")
            object.__setattr__(self, "temperature", float(t))
        if self.max_tokens is not None and (not _is_int(self.max_tokens) or self.max_tokens < 1):
            raise ChunkingError(f"max_tokens (model output) must be a positive int, got {self.max_tokens!r}")
        if self.seed is not None and not _is_int(self.seed):
            raise ChunkingError(f"seed must be an int, got {self.seed!r}")

    def given(self) -> dict[str, Any]:
        """The fields that are set (what is sent to the provider)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def over(self, base: GenerationSettings | None) -> GenerationSettings:
        """These settings on top of ``base``: a field set here wins, an unset one keeps ``base``'s."""
        return self if base is None else replace(base, **self.given())

    def identity(self) -> str:
        """``temperature=0.2,max_tokens=200`` (set fields only; "" when none is set)."""
        return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.given().items())

    def __bool__(self) -> bool:
        return bool(self.given())


def as_settings(value: GenerationSettings | Mapping[str, Any] | None) -> GenerationSettings:
    """``value`` as :class:`GenerationSettings` (a mapping with the field names is accepted, e.g. from
    a LlamaIndex/LangChain adapter's JSON-able options); ``None``: nothing set."""
    if value is None:
        return GenerationSettings()
    if isinstance(value, GenerationSettings):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {f.name for f in fields(GenerationSettings)})
        if unknown:
            raise ChunkingError(f"unknown generation setting(s) {unknown}: use temperature, max_tokens, seed")
        return GenerationSettings(**value)
    raise ChunkingError(f"generation settings must be GenerationSettings or a mapping, got {type(value).__name__}")


VISION_SETTINGS = GenerationSettings(temperature=0.1)
LLM_CHUNKER_SETTINGS = GenerationSettings(temperature=0.2, max_tokens=200)
GRAPH_SETTINGS = GenerationSettings(temperature=0.1)


def nudged(settings: GenerationSettings, reask: int) -> GenerationSettings:
    """The settings of re-ask number ``reask`` (1 = the first re-ask): temperature + ``reask`` *
    :data:`NUDGE_STEP`, at most :data:`NUDGE_CAP` (never lowered); unchanged when no temperature is set."""
    t = settings.temperature
    if t is None or reask < 1:
        return settings
    return replace(settings, temperature=max(t, min(NUDGE_CAP, round(t + reask * NUDGE_STEP, 6))))


def excerpt(text: str, limit: int = 120) -> str:
    """A short escaped excerpt of a model answer for errors and prompts: ``repr`` of its first
    ``limit`` characters, ``…`` marking a cut, and its length when cut."""
    cut = len(text) > limit
    shown = repr(text[:limit]) + ("…" if cut else "")
    return f"{shown} ({len(text)} characters)" if cut else shown


def reask_prompt(prompt: str, answer: str, error: str, expected: str) -> str:
    """``prompt`` again, followed by what was wrong with the previous ``answer`` (``error``), an
    excerpt of it, and what is expected instead."""
    return (
        f"{prompt}\n\nYour previous answer was invalid: {error}.\n"
        f"It was: {excerpt(answer.strip(), 200)}\n"
        f"Expected: {expected}. Do not repeat the previous answer."
    )


def effective_settings(
    default: GenerationSettings, llm: Any, given: GenerationSettings | Mapping[str, Any] | None
) -> GenerationSettings:
    """A strategy's settings: its ``default`` (the seed's values), under the settings of ``llm`` when
    it is already a :class:`~grounded.llm.Model` with settings, under the ``given`` ones."""
    own = getattr(llm, "settings", None)
    base = own.over(default) if isinstance(own, GenerationSettings) else default
    return as_settings(given).over(base)
