"""The four kinds of injected model and how one request is sent to each.

* ``genai``: a google-genai ``Client`` (``client.models.generate_content``);
* ``llama_index``: a LlamaIndex LLM (``chat``; images as ``ImageBlock`` s);
* ``langchain``: a LangChain chat model or other message Runnable (``invoke``; images as
  ``image_url`` data-URL content blocks);
* ``callable``: ``fn(prompt) -> str`` for text, ``fn(images, prompt) -> str`` when PNG images are
  sent; a system prompt is put before the prompt, separated by a blank line.

Generation settings (:class:`~grounded.llm.settings.GenerationSettings`; only the fields that are
set are sent):

* ``genai``: ``GenerateContentConfig(temperature=, max_output_tokens=, seed=)``;
* ``llama_index`` / ``langchain``: a setting the model declares as a field (``temperature``;
  ``max_tokens`` / ``max_output_tokens`` / ``max_new_tokens`` / ``num_predict``; ``seed`` /
  ``random_seed``) is set on a copy of the model for the request (``model_copy(update=...)``, the
  object given is never changed); the others are passed as keyword arguments of ``chat`` / ``invoke``,
  which both frameworks hand to the provider's API call;
* ``callable``: passed as the keyword arguments ``temperature``, ``max_tokens``, ``seed`` when the
  function accepts them (by name, or through ``**kwargs``); a setting it cannot take is not applied
  and :func:`unapplied` names it (the :class:`~grounded.llm.Model` logs it once).

No framework is imported until a request of its kind is sent.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Sequence
from typing import Any, Literal

from ..errors import ModelError
from ..runtime.optional import require
from .settings import GenerationSettings

__all__ = ["Kind", "UnsupportedModelError", "kind_of", "send", "identity", "DEFAULT_GEMINI_MODEL", "unapplied", "FIELD_NAMES"]

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


#: a framework model's field names for each setting, in the order they are looked for
FIELD_NAMES: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature",),
    "max_tokens": ("max_tokens", "max_output_tokens", "max_new_tokens", "num_predict"),
    "seed": ("seed", "random_seed"),
}


def _declared(obj: Any) -> set[str]:
    model_fields = getattr(type(obj), "model_fields", None)  # pydantic v2 models (both frameworks)
    return set(model_fields) if isinstance(model_fields, dict) else set()


def _framework_target(obj: Any, settings: GenerationSettings) -> tuple[Any, dict[str, Any]]:
    """``(model to call, keyword arguments of the call)``: declared fields set on a copy, the rest as kwargs."""
    given = settings.given()
    if not given:
        return obj, {}
    declared = _declared(obj)
    update: dict[str, Any] = {}
    kwargs: dict[str, Any] = {}
    for key, value in given.items():
        name = next((n for n in FIELD_NAMES[key] if n in declared), None)
        if name is None:
            kwargs[key] = value
        else:
            update[name] = value
    if update and callable(getattr(obj, "model_copy", None)):
        obj = obj.model_copy(update=update)
    else:
        kwargs.update({k: v for k, v in given.items() if k not in kwargs})
    return obj, kwargs


def _callable_accepts(fn: Any) -> set[str] | None:
    """Setting names ``fn`` takes as keyword arguments (None: any, through ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: pass nothing
        return set()
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} & set(FIELD_NAMES)


def unapplied(obj: Any, kind: Kind, settings: GenerationSettings) -> list[str]:
    """The set settings a request of this model cannot carry (only a callable that does not accept
    them as keyword arguments; the other kinds pass every setting on)."""
    if kind != "callable":
        return []
    accepts = _callable_accepts(obj)
    return [] if accepts is None else [k for k in settings.given() if k not in accepts]


def send(
    obj: Any,
    kind: Kind,
    model: str | None,
    prompt: str,
    system: str | None,
    images: Sequence[bytes],
    settings: GenerationSettings | None = None,
) -> Any:
    """One request; returns the client's raw reply (read by :func:`grounded.llm.replies.reply_text`)."""
    settings = settings or GenerationSettings()
    if kind == "genai":
        require("google.genai", extra="gemini", what="a google-genai model", package="google-genai")
        from google.genai import types

        parts: list[Any] = [types.Part.from_bytes(data=png, mime_type="image/png") for png in images]
        request: dict[str, Any] = {"model": model or DEFAULT_GEMINI_MODEL, "contents": [*parts, prompt]}
        config: dict[str, Any] = {"system_instruction": system} if system else {}
        names = {"temperature": "temperature", "max_tokens": "max_output_tokens", "seed": "seed"}
        config.update({names[k]: v for k, v in settings.given().items()})
        if config:
            request["config"] = types.GenerateContentConfig(**config)
        return obj.models.generate_content(**request)
    if kind == "llama_index":
        require("llama_index.core", extra="llama-index", what="a LlamaIndex model")
        from llama_index.core.llms import ChatMessage, ImageBlock, TextBlock

        blocks: list[Any] = [ImageBlock(image=png, image_mimetype="image/png") for png in images]
        blocks.append(TextBlock(text=prompt))
        messages = [ChatMessage(role="system", content=system)] if system else []
        llm, kwargs = _framework_target(obj, settings)
        return llm.chat([*messages, ChatMessage(role="user", blocks=blocks)], **kwargs)
    if kind == "langchain":
        require("langchain_core", extra="langchain", what="a LangChain model")
        from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

        content: str | list[str | dict[Any, Any]] = prompt
        if images:
            content = [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode("ascii")}}
                       for png in images]
            content.append({"type": "text", "text": prompt})
        chat: list[BaseMessage] = [SystemMessage(content=system)] if system else []
        runnable, kwargs = _framework_target(obj, settings)
        return runnable.invoke([*chat, HumanMessage(content=content)], **kwargs)
    text = f"{system}\n\n{prompt}" if system else prompt
    accepts = _callable_accepts(obj)
    options = {k: v for k, v in settings.given().items() if accepts is None or k in accepts}
    return obj(list(images), text, **options) if images else obj(text, **options)


def _model_name(obj: Any, kind: Kind) -> str | None:
    for attr in ("model_name", "model"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return value
    if kind == "llama_index":
        name = getattr(getattr(obj, "metadata", None), "model_name", None)
        return name if isinstance(name, str) and name else None
    return None


def identity(obj: Any, kind: Kind, model: str | None = None, settings: GenerationSettings | None = None) -> str:
    """A stable name of the model for cache fingerprints: ``kind:module.Class[model]`` (a function:
    its qualified name), ``google-genai[model]`` for a google-genai client, followed by
    ``{temperature=0.2,max_tokens=200}`` when generation settings are set. No object ids."""
    suffix = f"{{{settings.identity()}}}" if settings else ""
    if kind == "genai":
        return f"google-genai[{model or DEFAULT_GEMINI_MODEL}]{suffix}"
    target = obj if kind == "callable" and hasattr(obj, "__qualname__") else type(obj)
    name = f"{kind}:{getattr(target, '__module__', '')}.{target.__qualname__}"
    used = _model_name(obj, kind)
    return (f"{name}[{used}]" if used else name) + suffix
