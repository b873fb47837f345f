"""One reading of a model's reply: refuse a cut-off or blocked answer, then take its text.

Handles what the supported clients return: a ``str``; google-genai ``GenerateContentResponse``
(``prompt_feedback.block_reason``, ``candidates[0].finish_reason``, ``text``); LlamaIndex
``ChatResponse`` (``message.content``) and ``CompletionResponse`` (``text``), finish reason in
``raw``; LangChain ``AIMessage`` (``content`` as a string or a list of content blocks), finish
reason in ``response_metadata``. ``None`` reads as an empty answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import ModelOutputError

__all__ = ["reply_text", "check_finish", "CUT_REASONS", "CutOffAnswerError"]


class CutOffAnswerError(ModelOutputError):
    """The answer was cut off by the output limit or blocked by a filter (a caller that re-asks may
    treat it as an invalid answer; an answer that is not text at all stays a plain
    :class:`~grounded.errors.ModelOutputError`)."""

#: finish reasons (lower-case substrings) of an answer cut off by the output limit or blocked by a filter
CUT_REASONS = ("max_tokens", "length", "safety", "recitation", "blocklist", "prohibited_content", "content_filter",
               "refusal", "spii")


def _field(source: Any, key: str) -> Any:
    return source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)


def _finish_reasons(reply: Any) -> Iterator[Any]:
    candidates = getattr(reply, "candidates", None)
    if isinstance(candidates, list) and candidates:  # google-genai
        yield getattr(candidates[0], "finish_reason", None)
    for source in (getattr(reply, "response_metadata", None), getattr(reply, "raw", None)):  # LangChain, LlamaIndex
        if source is None or isinstance(source, (str, bytes)):
            continue
        yield _field(source, "finish_reason") or _field(source, "stop_reason")
        choices = _field(source, "choices")  # an OpenAI completion kept as LlamaIndex ``raw``
        if isinstance(choices, list) and choices:
            yield _field(choices[0], "finish_reason")


def check_finish(reply: Any, what: str) -> None:
    """Raise :class:`~grounded.errors.ModelOutputError` when ``reply`` was blocked or cut off."""
    feedback = getattr(reply, "prompt_feedback", None)
    block = getattr(feedback, "block_reason", None) if feedback is not None else None
    if block:
        raise CutOffAnswerError(what, f"the request was blocked ({getattr(block, 'name', block)})")
    for reason in _finish_reasons(reply):
        text = str(getattr(reason, "name", reason) or "").lower()
        if any(cut in text for cut in CUT_REASONS):
            raise CutOffAnswerError(what, f"the answer was cut off or blocked (finish reason {text.upper()})")


def _blocks(content: list[Any]) -> str:
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type", "text") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _text(reply: Any, what: str) -> str:
    if reply is None:
        return ""
    if isinstance(reply, str):
        return reply
    if isinstance(reply, list):
        return _blocks(reply)
    message = getattr(reply, "message", None)
    if message is not None:  # LlamaIndex ChatResponse
        return _text(message, what)
    if getattr(reply, "candidates", None) is not None:  # google-genai: ``text`` joins the text parts
        return str(getattr(reply, "text", None) or "")
    if hasattr(reply, "content"):  # LangChain message, LlamaIndex ChatMessage
        content = reply.content
        if content is None or isinstance(content, (str, list)):
            return _text(content, what)
    text = getattr(reply, "text", None)  # LlamaIndex CompletionResponse
    if isinstance(text, str):
        return text
    raise ModelOutputError(what, f"the model answered with a {type(reply).__name__}, not text")


def reply_text(reply: Any, what: str) -> str:
    """The text of ``reply`` after :func:`check_finish`; ``what`` names the request in errors."""
    check_finish(reply, what)
    return _text(reply, what)
