"""The four kinds of injected model and how one request is sent to each.

* ``genai``: a google-genai ``Client`` (``client.models.generate_content``);
* ``llama_index``: a LlamaIndex LLM (``chat``; images as ``ImageBlock`` s);
* ``langchain``: a LangChain chat model or other message Runnable (``invoke``; images as
  ``image_url`` data-URL content blocks);
* ``callable``: ``fn(prompt) -> str`` for text, ``fn(images, prompt) -> str`` when PNG images are
  sent; a system prompt is put before the prompt, separated by a blank line.

No framework is imported until a request of its kind is sent.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Literal

from ..errors import ModelError
from ..runtime.optional import require

__all__ = ["Kind", "UnsupportedModelError", "kind_of", "send", "identity", "DEFAULT_GEMINI_MODEL"]

Kind = Literal["genai", "llama_index", "langchain", "callable"]

DEFAULT_GEMINI_MODEL = "gemini-2.5-pro"  # the model of seed 001


class UnsupportedModelError(ModelError, TypeError):
    """The object given as a model is none of the supported kinds."""


def _modules(obj: Any) -> str:
    return " ".join(c.__module__ for c in type(obj).__mro__)


def kind_of(obj: Any) -> Kind:
    """Which of the four kinds ``obj`` is; :class:`UnsupportedModelError` for anything else."""
    models = getattr(obj, "models", None)
    if models is not None and callable(getattr(models, "generate_content", None)):
        return "genai"
    modules = _modules(obj)
    if callable(getattr(obj, "chat", None)) and ("llama_index" in modules or all(
            hasattr(obj, a) for a in ("complete", "metadata"))):
        return "llama_index"
    if callable(getattr(obj, "invoke", None)):
        return "langchain"
    if callable(obj):
        return "callable"
    raise UnsupportedModelError(
        f"unsupported model {type(obj).__name__}: pass a google-genai Client, a LlamaIndex LLM, a LangChain chat "
        "model or a callable (prompt) -> str / (images, prompt) -> str"
    )


def send(obj: Any, kind: Kind, model: str | None, prompt: str, system: str | None, images: Sequence[bytes]) -> Any:
    """One request; returns the client's raw reply (read by :func:`grounded.llm.replies.reply_text`)."""
    if kind == "genai":
        require("google.genai", extra="gemini", what="a google-genai model", package="google-genai")
        from google.genai import types

        parts: list[Any] = [types.Part.from_bytes(data=png, mime_type="image/png") for png in images]
        request: dict[str, Any] = {"model": model or DEFAULT_GEMINI_MODEL, "contents": [*parts, prompt]}
        if system:
            request["config"] = types.GenerateContentConfig(system_instruction=system)
        return obj.models.generate_content(**request)
    if kind == "llama_index":
        require("llama_index.core", extra="llama-index", what="a LlamaIndex model")
        from llama_index.core.llms import ChatMessage, ImageBlock, TextBlock

        blocks: list[Any] = [ImageBlock(image=png, image_mimetype="image/png") for png in images]
        blocks.append(TextBlock(text=prompt))
        messages = [ChatMessage(role="system", content=system)] if system else []
        return obj.chat([*messages, ChatMessage(role="user", blocks=blocks)])
    if kind == "langchain":
        require("langchain_core", extra="langchain", what="a LangChain model")
        from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

        content: str | list[str | dict[Any, Any]] = prompt
        if images:
            content = [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode("ascii")}}
                       for png in images]
            content.append({"type": "text", "text": prompt})
        chat: list[BaseMessage] = [SystemMessage(content=system)] if system else []
        return obj.invoke([*chat, HumanMessage(content=content)])
    text = f"{system}\n\n{prompt}" if system else prompt
    return obj(list(images), text) if images else obj(text)


def _model_name(obj: Any, kind: Kind) -> str | None:
    for attr in ("model_name", "model"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return value
    if kind == "llama_index":
        name = getattr(getattr(obj, "metadata", None), "model_name", None)
        return name if isinstance(name, str) and name else None
    return None


def identity(obj: Any, kind: Kind, model: str | None = None) -> str:
    """A stable name of the model for cache fingerprints: ``kind:module.Class[model]`` (a function:
    its qualified name), ``google-genai[model]`` for a google-genai client. No object ids."""
    if kind == "genai":
        return f"google-genai[{model or DEFAULT_GEMINI_MODEL}]"
    target = obj if kind == "callable" and hasattr(obj, "__qualname__") else type(obj)
    name = f"{kind}:{getattr(target, '__module__', '')}.{target.__qualname__}"
    used = _model_name(obj, kind)
    return f"{name}[{used}]" if used else name
