"""The model options of ``grounded chunk``, ``grounded ingest`` and ``grounded eval chunking``.

``--llm MODULE:OBJECT`` imports a model object (anything :func:`grounded.models.as_model` accepts;
``MODULE:FACTORY()`` calls a factory without arguments, e.g. to read a key from the environment);
``--llm-model NAME`` names a Gemini model reached through google-genai (key in ``GEMINI_API_KEY`` or
``GOOGLE_API_KEY``), or the Gemini model of a google-genai client given with ``--llm``. The options
become a :class:`ModelSpec` (two strings: picklable, so worker processes build their own model) and
:func:`strategy_options` turns it into a model-driven strategy's ``llm=`` / ``model=`` options, or a
typed error naming the options when such a strategy gets no model.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any

from ..errors import ChunkingError, GroundedError

__all__ = ["ModelSpec", "add_model_options", "model_spec", "takes_model", "check_model", "strategy_options", "GEMINI_KEYS"]

GEMINI_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def _options_text(llm: str = "--llm", name: str = "--llm-model") -> str:
    """How errors name the model options (``llm`` / ``name``: the option strings, '/'-joined)."""
    return f"{name} NAME (Gemini via google-genai, key in GEMINI_API_KEY or GOOGLE_API_KEY) or {llm} MODULE:OBJECT"


@dataclass(frozen=True)
class ModelSpec:
    """A model as the command line names it: ``obj`` (``MODULE:OBJECT`` / ``MODULE:FACTORY()``) and/or
    ``name`` (a Gemini model name); ``options`` is how the command spells them in errors."""

    obj: str | None = None
    name: str | None = None
    options: str = field(default=_options_text(), compare=False)

    def __bool__(self) -> bool:
        return bool(self.obj or self.name)

    def build(self) -> tuple[Any, str | None]:
        """``(model object, model name)``: the imported object, or a google-genai client for ``name``."""
        if self.obj:
            return _import_object(self.obj), self.name
        if not self.name:
            raise ChunkingError(f"no model given: pass {self.options}")
        from .._optional import require
        from ..parsers._cloud import credential_from_env

        require("google.genai", extra="gemini", what=f"--llm-model {self.name}", package="google-genai")
        key = credential_from_env("gemini", GEMINI_KEYS, f"the API key of the Gemini model {self.name}")
        from google import genai

        return genai.Client(api_key=key), self.name


def _import_object(spec: str) -> Any:
    from ..cli import UsageError

    call = spec.endswith("()")
    module_name, _, attr = spec.removesuffix("()").partition(":")
    if not module_name or not attr:
        raise UsageError(f"--llm {spec!r}: expected MODULE:OBJECT or MODULE:FACTORY()")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"--llm {spec!r}: cannot import it ({exc})") from None
    if not call:
        return obj
    try:
        return obj()
    except GroundedError:
        raise
    except Exception as exc:  # the user's factory failed: one line naming it, the cause chained
        raise UsageError(f"--llm {spec!r}: the factory failed: {type(exc).__name__}: {exc}") from exc


def add_model_options(parser: argparse.ArgumentParser, *, vision_aliases: bool = False) -> None:
    """Add ``--llm`` / ``--llm-model`` (with ``vision_aliases`` also their former spellings
    ``--vision-llm`` / ``--vision-model`` of ``grounded chunk``)."""
    llm = ["--llm", *(["--vision-llm"] if vision_aliases else [])]
    name = ["--llm-model", *(["--vision-model"] if vision_aliases else [])]
    parser.add_argument(
        *llm, dest="llm", default=None, metavar="MODULE:OBJECT",
        help="model of the llm / vision strategies: import this object (google-genai Client, LlamaIndex LLM, LangChain "
        "chat model, or callable (prompt) -> str / (images, prompt) -> str); MODULE:FACTORY() calls a factory",
    )
    parser.add_argument(
        *name, dest="llm_model", default=None, metavar="NAME",
        help="Gemini model of the llm / vision strategies through google-genai (e.g. gemini-2.5-pro; key in "
        "GEMINI_API_KEY or GOOGLE_API_KEY), or the model name for a google-genai client given with --llm",
    )
    parser.set_defaults(model_options=_options_text("/".join(llm), "/".join(name)))


def model_spec(args: argparse.Namespace) -> ModelSpec:
    """The :class:`ModelSpec` of parsed options added by :func:`add_model_options`."""
    return ModelSpec(args.llm, args.llm_model, getattr(args, "model_options", _options_text()))


def takes_model(strategy: str) -> bool:
    """Whether the registered ``strategy`` is model-driven (its constructor takes ``llm``)."""
    from ..chunking import strategies  # noqa: F401 - registers the built-in strategies
    from ..chunking.base import strategy_class

    return "llm" in inspect.signature(strategy_class(strategy)).parameters


def check_model(strategy: str, spec: ModelSpec) -> bool:
    """Whether ``strategy`` is model-driven, without building the model. Raises
    :class:`~grounded.errors.ChunkingError` when a model-driven strategy has no model, and
    :class:`~grounded.cli.UsageError` when a model is given to a strategy that takes none."""
    if not takes_model(strategy):
        if spec:
            from ..cli import UsageError

            raise UsageError(f"--llm/--llm-model apply to the model-driven strategies (llm, vision), not to {strategy!r}")
        return False
    if not spec:
        kind = "a multimodal model" if strategy == "vision" else "a language model"
        raise ChunkingError(f"--strategy {strategy} needs {kind}: {spec.options} (see docs/strategies.md)")
    return True


def strategy_options(strategy: str, spec: ModelSpec) -> dict[str, Any]:
    """``{"llm": ..., "model": ...}`` for a model-driven ``strategy`` (the model built from ``spec``),
    ``{}`` for another one; the errors of :func:`check_model`."""
    if not check_model(strategy, spec):
        return {}
    llm, name = spec.build()
    return {"llm": llm, "model": name}
