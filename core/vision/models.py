"""Injected multimodal models behind one call: ``model(images, prompt) -> str``.

Accepted: a google-genai ``Client`` (``client.models.generate_content``), a LlamaIndex LLM that
takes images (``chat`` with ``ImageBlock`` s), a LangChain chat model (``invoke`` with image
content blocks), or a plain ``callable(images: list[bytes], prompt: str) -> str``. None of those
libraries is imported until a model of that kind is called. An answer cut off by the output limit
or blocked raises :class:`~grounded.errors.ModelOutputError`: its pages would be lost otherwise.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..errors import ChunkingError, ModelOutputError

__all__ = ["VisionModel", "as_vision_model", "DEFAULT_GEMINI_MODEL"]

DEFAULT_GEMINI_MODEL = "gemini-2.5-pro"  # the seed's model
_CUT = ("max_tokens", "length", "safety", "recitation", "blocklist", "prohibited_content")


class VisionModel(Protocol):
    """``name`` identifies the model in chunk fingerprints; calling it sends PNG images + a prompt."""

    name: str

    def __call__(self, images: Sequence[bytes], prompt: str, *, what: str) -> str: ...


def _check_finish(reason: Any, what: str) -> None:
    text = str(getattr(reason, "name", reason) or "").lower()
    if any(cut in text for cut in _CUT):
        raise ModelOutputError(what, f"the answer was cut off or blocked (finish reason {text.upper()})")


def _text_blocks(content: Any, what: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    if content is None:
        return ""
    raise ModelOutputError(what, f"the model answered with a {type(content).__name__}, not text")


class _GenAI:
    def __init__(self, client: Any, model: str) -> None:
        self.client, self.model, self.name = client, model, f"google-genai[{model}]"

    def __call__(self, images: Sequence[bytes], prompt: str, *, what: str) -> str:
        from google.genai import types

        contents: list[Any] = [types.Part.from_bytes(data=png, mime_type="image/png") for png in images]
        response = self.client.models.generate_content(model=self.model, contents=[*contents, prompt])
        feedback = getattr(response, "prompt_feedback", None)
        if feedback is not None and getattr(feedback, "block_reason", None):
            raise ModelOutputError(what, f"the request was blocked ({getattr(feedback.block_reason, 'name', feedback.block_reason)})")
        candidates = getattr(response, "candidates", None) or []
        if candidates:
            _check_finish(getattr(candidates[0], "finish_reason", None), what)
        return str(getattr(response, "text", None) or "")


class _LlamaIndex:
    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.name = f"llama_index:{type(llm).__name__}[{getattr(llm, 'model', '') or getattr(llm, 'model_name', '')}]"

    def __call__(self, images: Sequence[bytes], prompt: str, *, what: str) -> str:
        from llama_index.core.llms import ChatMessage, ImageBlock, TextBlock

        blocks: list[Any] = [ImageBlock(image=png, image_mimetype="image/png") for png in images]
        blocks.append(TextBlock(text=prompt))
        response = self.llm.chat([ChatMessage(role="user", blocks=blocks)])
        raw = getattr(response, "raw", None)
        if isinstance(raw, dict):
            _check_finish(raw.get("finish_reason") or raw.get("stop_reason"), what)
        return _text_blocks(response.message.content, what)


class _LangChain:
    def __init__(self, model: Any) -> None:
        self.model = model
        self.name = f"langchain:{type(model).__name__}[{getattr(model, 'model', '') or getattr(model, 'model_name', '')}]"

    def __call__(self, images: Sequence[bytes], prompt: str, *, what: str) -> str:
        from langchain_core.messages import HumanMessage

        blocks: list[str | dict[Any, Any]] = [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode("ascii")}}
            for png in images
        ]
        blocks.append({"type": "text", "text": prompt})
        message = self.model.invoke([HumanMessage(content=blocks)])
        meta = getattr(message, "response_metadata", None) or {}
        _check_finish(meta.get("finish_reason") or meta.get("stop_reason"), what)
        return _text_blocks(getattr(message, "content", message), what)


class _Callable:
    def __init__(self, fn: Callable[[list[bytes], str], str]) -> None:
        self.fn = fn
        self.name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"

    def __call__(self, images: Sequence[bytes], prompt: str, *, what: str) -> str:
        return _text_blocks(self.fn(list(images), prompt), what)


def as_vision_model(llm: Any, model: str | None = None) -> VisionModel:
    """Wrap an injected model (see the module docstring); ``model`` names the Gemini model for a
    google-genai client (default :data:`DEFAULT_GEMINI_MODEL`)."""
    if llm is None:
        raise ChunkingError(
            "the 'vision' strategy needs a multimodal model: pass llm=<google-genai Client | LlamaIndex LLM | "
            "LangChain chat model | callable(images, prompt) -> str> (`grounded chunk`: --vision-model or --vision-llm; see docs/vision.md)"
        )
    if all(hasattr(llm, a) for a in ("__call__", "name")) and isinstance(llm, (_GenAI, _LlamaIndex, _LangChain, _Callable)):
        return llm
    models = getattr(llm, "models", None)
    if models is not None and callable(getattr(models, "generate_content", None)):
        return _GenAI(llm, model or DEFAULT_GEMINI_MODEL)
    modules = " ".join(c.__module__ for c in type(llm).__mro__)
    if "llama_index" in modules and callable(getattr(llm, "chat", None)):
        return _LlamaIndex(llm)
    if "langchain_core" in modules and callable(getattr(llm, "invoke", None)):
        return _LangChain(llm)
    if callable(llm):
        return _Callable(llm)
    raise ChunkingError(
        f"unsupported model {type(llm).__name__}: pass a google-genai Client, a LlamaIndex LLM, a LangChain chat model "
        "or a callable(images, prompt) -> str"
    )
