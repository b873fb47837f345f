"""The model options of ``grounded chunk``, ``grounded ingest`` and ``grounded eval chunking``.

``--llm MODULE:OBJECT`` imports a model object (anything :func:`grounded.llm.as_model` accepts;
``MODULE:FACTORY()`` calls a factory without arguments, e.g. to read a key from the environment);
``--llm-model NAME`` names a Gemini model reached through google-genai (key in ``GEMINI_API_KEY`` or
``GOOGLE_API_KEY``), or the Gemini model of a google-genai client given with ``--llm``;
``--llm-temperature``, ``--llm-max-tokens`` and ``--llm-seed`` set the generation settings (on top of
the strategy's defaults, the seeds' values: :mod:`grounded.llm.settings`). The options
become a :class:`ModelSpec` (picklable, so worker processes build their own model) and
:func:`strategy_options` turns it into a model-driven strategy's ``llm=`` / ``model=`` options, or a
typed error naming the options when such a strategy gets no model.
"""

from __future__ import annotations

import argparse

from ..llm.settings import GenerationSettings
from ..llm.spec import ModelSpec, _options_text

__all__ = ["add_model_options", "model_spec"]


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
    parser.add_argument(
        "--llm-temperature", dest="llm_temperature", type=float, default=None, metavar="T",
        help="sampling temperature of the model (0-2; default: the strategy's, from the seeds: llm 0.2, vision 0.1)",
    )
    parser.add_argument(
        "--llm-max-tokens", dest="llm_max_tokens", type=int, default=None, metavar="N",
        help="most tokens the model may answer per request (default: the strategy's: llm 200, vision the provider's)",
    )
    parser.add_argument(
        "--llm-seed", dest="llm_seed", type=int, default=None, metavar="SEED",
        help="sampling seed, for providers that take one (google-genai, OpenAI-style APIs, a callable with seed=)",
    )
    parser.set_defaults(model_options=_options_text("/".join(llm), "/".join(name)))


def model_spec(args: argparse.Namespace) -> ModelSpec:
    """The :class:`ModelSpec` of parsed options added by :func:`add_model_options` (bad generation
    settings: :class:`~grounded.errors.ChunkingError`)."""
    settings = GenerationSettings(getattr(args, "llm_temperature", None), getattr(args, "llm_max_tokens", None),
                                  getattr(args, "llm_seed", None))
    return ModelSpec(args.llm, args.llm_model, getattr(args, "model_options", _options_text()), settings)
