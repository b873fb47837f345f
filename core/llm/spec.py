"""A model as a command or a worker names it: :class:`ModelSpec` (strings and the generation settings,
picklable, so worker processes build their own model), whether a strategy is model-driven, and the
``llm=`` / ``model=`` / ``generation=`` options of such a strategy, or a typed error naming the options
when it gets no model."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from ..errors import ChunkingError, GroundedError, UsageError
from ..model.options import Option
from .settings import GenerationSettings

__all__ = ["MODEL_OPTIONS", "ModelSpec", "takes_model", "check_model", "strategy_options", "GEMINI_KEYS"]

GEMINI_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def _options_text(llm: str = "--llm", name: str = "--llm-model") -> str:
    """How errors name the model options (``llm`` / ``name``: the option strings, '/'-joined)."""
    return f"{name} NAME (Gemini via google-genai, key in GEMINI_API_KEY or GOOGLE_API_KEY) or {llm} MODULE:OBJECT"


@dataclass(frozen=True)
class ModelSpec:
    """A model as the command line names it: ``obj`` (``MODULE:OBJECT`` / ``MODULE:FACTORY()``) and/or
    ``name`` (a Gemini model name); ``settings``: the generation settings given (unset fields keep the
    strategy's defaults, the seeds' values: :mod:`grounded.llm.settings`); ``options`` is how the
    command spells them in errors."""

    obj: str | None = None
    name: str | None = None
    options: str = field(default=_options_text(), compare=False)
    settings: GenerationSettings = field(default_factory=GenerationSettings)

    def __bool__(self) -> bool:
        return bool(self.obj or self.name)

    def identity(self, defaults: GenerationSettings | None = None) -> dict[str, Any]:
        """The model as plain data for cache keys and fingerprints: ``{"obj", "name", "settings"}``,
        ``settings`` being the given ones over ``defaults`` (the strategy's, e.g.
        :data:`~grounded.llm.LLM_CHUNKER_SETTINGS`) - the settings the requests are sent with, so another
        temperature, output length or seed is another key. Built without importing the model."""
        return {"obj": self.obj, "name": self.name, "settings": self.settings.over(defaults).given()}

    def build(self) -> tuple[Any, str | None]:
        """``(model object, model name)``: the imported object, or a google-genai client for ``name``."""
        if self.obj:
            return _import_object(self.obj), self.name
        if not self.name:
            raise ChunkingError(f"no model given: pass {self.options}")
        from ..runtime.cloud import credential_from_env
        from ..runtime.optional import require

        require("google.genai", extra="gemini", what=f"--llm-model {self.name}", package="google-genai")
        key = credential_from_env("gemini", GEMINI_KEYS, f"the API key of the Gemini model {self.name}")
        from google import genai

        return genai.Client(api_key=key), self.name


def _import_object(spec: str) -> Any:

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


def takes_model(strategy: str) -> bool:
    """Whether the registered ``strategy`` is model-driven: its declared capability
    (:attr:`~grounded.chunking.base.ChunkingStrategy.needs_model`), never guessed from its signature."""
    from ..chunking.base import strategy_class

    return strategy_class(strategy).needs_model


def check_model(strategy: str, spec: ModelSpec) -> bool:
    """Whether ``strategy`` is model-driven, without building the model. Raises
    :class:`~grounded.errors.ChunkingError` when a model-driven strategy has no model, and
    :class:`~grounded.cli.UsageError` when a model is given to a strategy that takes none."""
    if not takes_model(strategy):
        if spec or spec.settings:
            what = "--llm/--llm-model" if spec else "--llm-temperature/--llm-max-tokens/--llm-seed"
            raise UsageError(f"{what} apply to the model-driven strategies (llm, vision), not to {strategy!r}")
        return False
    if not spec:
        kind = "a multimodal model" if strategy == "vision" else "a language model"
        raise ChunkingError(f"--strategy {strategy} needs {kind}: {spec.options} (see docs/strategies.md)")
    return True


def strategy_options(strategy: str, spec: ModelSpec) -> dict[str, Any]:
    """``{"llm": ..., "model": ...}`` for a model-driven ``strategy`` (the model built from ``spec``;
    ``"generation"`` too when settings were given, as a mapping of the set fields), ``{}`` for another
    one; the errors of :func:`check_model`."""
    if not check_model(strategy, spec):
        return {}
    llm, name = spec.build()
    options: dict[str, Any] = {"llm": llm, "model": name}
    if spec.settings:  # a plain mapping: JSON-able in result files and fingerprints (the strategies accept it)
        options["generation"] = spec.settings.given()
    return options


#: the options every model-driven strategy declares first: the model and how it is called (written
#: once for the llm and vision strategies; their command-line flags are :mod:`grounded.cli.llm_options`)
MODEL_OPTIONS: tuple[Option, ...] = (
    Option("llm", None, help="the model (anything grounded.llm.as_model accepts); the command line: --llm/--llm-model"),
    Option("model", str, None, "Gemini model name of a google-genai client (the command line: --llm-model)", cli=False,
           param=False),  # the model's identity enters a strategy's params instead
    Option("generation", None,
           help="GenerationSettings or a mapping (the command line: --llm-temperature/--llm-max-tokens/--llm-seed)"),
    Option("retry", None, help="RetryPolicy of failed calls"),
    Option("sleep", None, help="the sleep function of the backoff"),
)
