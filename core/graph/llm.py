"""One call interface over injected models, with retries, for the graph's LLM steps.

:class:`ModelClient` accepts what the vision strategy accepts (:func:`grounded.vision.models.as_vision_model`:
a google-genai client, a LlamaIndex LLM, a LangChain chat model) and plain callables:
``callable(prompt) -> str`` for text requests, ``callable(images, prompt) -> str`` for requests
with PNG images (the vision strategy's order). No framework is imported until such a model is used.

Transient failures (HTTP 429, 5xx, timeouts, dropped connections) are retried with exponential
backoff by :func:`grounded.parsers._cloud.call_with_retries` (``retry`` policy, injectable
``sleep``). Anything that still fails - retries used up, a rejected request, an exception from
the client - raises :class:`~grounded.errors.ModelCallError`; an empty answer, or one cut off or
blocked, raises :class:`~grounded.errors.ModelOutputError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ModelCallError, ModelOutputError, RemoteServiceError
from ..parsers._cloud import RetryPolicy, _describe, call_with_retries

__all__ = ["ModelClient", "as_client"]


def _is_plain_callable(model: Any) -> bool:
    modules = " ".join(c.__module__ for c in type(model).__mro__)
    framework = "llama_index" in modules or "langchain_core" in modules or hasattr(getattr(model, "models", None), "generate_content")
    return callable(model) and not framework


class ModelClient:
    """Send a prompt (and PNG images) to an injected model; see the module docstring.
    ``retry``: the backoff policy (default :class:`~grounded.parsers._cloud.RetryPolicy`)."""

    def __init__(self, model: Any, *, retry: RetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.model = model
        self.plain = _is_plain_callable(model)
        if not self.plain:
            from ..vision.models import as_vision_model

            try:
                self._framework: Any = as_vision_model(model)
            except Exception as exc:  # noqa: BLE001 - ChunkingError names the strategy; say it for the graph
                raise TypeError(f"unsupported model {type(model).__name__}: pass a LlamaIndex LLM, a LangChain chat "
                                "model, a google-genai client or a callable(prompt) -> str") from exc
        self.retry = retry
        self.sleep = sleep

    def complete(self, prompt: str, images: Sequence[bytes] = (), *, what: str = "model call") -> str:
        """The model's text answer to ``prompt`` (+ ``images``); ``what`` names the request in errors."""
        attempts = 0

        def ask() -> Any:
            nonlocal attempts
            attempts += 1
            return self._call(prompt, list(images), what)

        try:
            answer = call_with_retries(ask, backend="model", source=what, policy=self.retry, sleep=self.sleep, what="call")
        except ModelOutputError:
            raise
        except RemoteServiceError as exc:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            raise ModelCallError(what, _describe(cause), attempts) from exc
        except Exception as exc:  # noqa: BLE001 - a client's own error (bad key, bug) is a failed call
            raise ModelCallError(what, _describe(exc), attempts) from exc
        if not isinstance(answer, str):
            raise ModelOutputError(what, f"the model answered with a {type(answer).__name__}, not text")
        if not answer.strip():
            raise ModelOutputError(what, "the model returned an empty answer")
        return answer

    def _call(self, prompt: str, images: list[bytes], what: str) -> Any:
        if not self.plain:
            return self._framework(images, prompt, what=what)
        return self.model(images, prompt) if images else self.model(prompt)


def as_client(model: Any, **options: Any) -> ModelClient:
    """``model`` itself when it already is a :class:`ModelClient`, else a new one with ``options``."""
    return model if isinstance(model, ModelClient) else ModelClient(model, **options)
