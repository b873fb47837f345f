"""One call interface over injected models, with retries.

:class:`ModelClient` wraps a LlamaIndex ``LLM``, a LangChain chat model or a plain
``callable(prompt) -> str`` (``callable(prompt, images)`` for image requests) and sends a prompt
with optional PNG images. Neither framework is imported until a model of that framework is used.

Rate limits (HTTP 429, ``RateLimitError``), timeouts (``TimeoutError``, ``*Timeout*`` errors) and
server overload (500/502/503/504/529) are retried with exponential backoff (``retry-after`` is
honoured; ``sleep`` is injectable); when the retries are used up, or on any other client error,
:class:`~grounded.errors.ModelCallError` is raised. An answer that is not text, or is empty,
raises :class:`~grounded.errors.ModelOutputError`.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ModelCallError, ModelOutputError

__all__ = ["ModelClient", "as_client"]

log = logging.getLogger(__name__)

_SERVER_BUSY = frozenset({500, 502, 503, 504, 529})


def _framework(model: Any) -> str:
    modules = " ".join(c.__module__ for c in type(model).__mro__)
    if "langchain_core" in modules and hasattr(model, "invoke"):
        return "langchain"
    if "llama_index" in modules and hasattr(model, "complete"):
        return "llama_index"
    if callable(model):
        return "callable"
    raise TypeError(
        f"unsupported model {type(model).__name__}: pass a LlamaIndex LLM, a LangChain chat model or a callable(prompt) -> str"
    )


def _status(exc: BaseException) -> int | None:
    for holder in (exc, getattr(exc, "response", None)):
        value = getattr(holder, "status_code", None) if holder is not None else None
        if isinstance(value, int):
            return value
    return None


def retry_reason(exc: BaseException) -> str | None:
    """Why ``exc`` is worth retrying (rate limit, timeout, overload), or None."""
    name = type(exc).__name__.lower()
    status = _status(exc)
    if status == 429 or "ratelimit" in name or "resourceexhausted" in name:
        return "rate limited (429)"
    if isinstance(exc, TimeoutError) or "timeout" in name:
        return "timed out"
    if status in _SERVER_BUSY:
        return f"server busy ({status})"
    return None


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text blocks of a block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif getattr(block, "block_type", None) == "text":
                parts.append(str(getattr(block, "text", "")))
        return "".join(parts)
    raise TypeError(f"model answered with {type(content).__name__}, not text")


class ModelClient:
    """Send prompts (and PNG images) to an injected model, retrying transient failures.

    ``retries``: extra attempts after the first; ``backoff``: first delay in seconds (doubled per
    attempt, capped at ``max_backoff``); ``sleep``: the waiting function (tests pass a recorder)."""

    def __init__(
        self,
        model: Any,
        *,
        retries: int = 3,
        backoff: float = 2.0,
        max_backoff: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if retries < 0 or backoff < 0 or max_backoff < 0:
            raise ValueError("retries, backoff and max_backoff must be >= 0")
        self.model = model
        self.kind = _framework(model)
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.sleep = sleep

    def complete(self, prompt: str, images: Sequence[bytes] = (), *, what: str = "model call") -> str:
        """The model's text answer to ``prompt`` (+ ``images``); ``what`` names the request in errors."""
        attempts = 0
        while True:
            attempts += 1
            try:
                raw = self._call(prompt, list(images))
            except (ModelCallError, ModelOutputError):
                raise
            except Exception as exc:  # noqa: BLE001 - any client error becomes a typed error below
                reason = retry_reason(exc)
                if reason is None:
                    raise ModelCallError(what, f"{type(exc).__name__}: {exc}", attempts) from exc
                if attempts > self.retries:
                    raise ModelCallError(what, f"{reason}: {type(exc).__name__}: {exc}", attempts) from exc
                delay = min(self.max_backoff, self.backoff * 2 ** (attempts - 1))
                after = _retry_after(exc)
                if after is not None:
                    delay = min(self.max_backoff, max(delay, after))
                log.warning("%s: %s; retry %d/%d in %.1f s", what, reason, attempts, self.retries, delay)
                self.sleep(delay)
                continue
            try:
                text = _text_of(raw)
            except TypeError as exc:
                raise ModelOutputError(what, str(exc)) from None
            if not text.strip():
                raise ModelOutputError(what, "the model returned an empty answer")
            return text

    # -- per framework ------------------------------------------------------------------------------
    def _call(self, prompt: str, images: list[bytes]) -> Any:
        if self.kind == "langchain":
            from langchain_core.messages import HumanMessage

            if not images:
                return self.model.invoke([HumanMessage(content=prompt)]).content
            blocks: list[str | dict[Any, Any]] = [{"type": "text", "text": prompt}]
            blocks += [{"type": "image_url", "image_url": {"url": _data_url(png)}} for png in images]
            return self.model.invoke([HumanMessage(content=blocks)]).content
        if self.kind == "llama_index":
            if not images:
                return self.model.complete(prompt).text
            from llama_index.core.llms import ChatMessage, ImageBlock, TextBlock

            li_blocks: list[Any] = [TextBlock(text=prompt)]
            li_blocks += [ImageBlock(image=png, image_mimetype="image/png") for png in images]
            return self.model.chat([ChatMessage(role="user", blocks=li_blocks)]).message.content
        return self.model(prompt, images) if images else self.model(prompt)


def _data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def as_client(model: Any, **options: Any) -> ModelClient:
    """``model`` itself when it already is a :class:`ModelClient`, else a new one with ``options``."""
    return model if isinstance(model, ModelClient) else ModelClient(model, **options)
