"""The model options of ``grounded chunk``, ``grounded ingest`` and ``grounded eval chunking``.

``--llm MODULE:OBJECT`` imports a model object (anything :func:`grounded.llm.as_model` accepts;
``MODULE:FACTORY()`` calls a factory without arguments, e.g. to read a key from the environment);
``--llm-model NAME`` names a Gemini model reached through google-genai (key in ``GEMINI_API_KEY`` or
``GOOGLE_API_KEY``), or the Gemini model of a google-genai client given with ``--llm``. The options
become a :class:`ModelSpec` (two strings: picklable, so worker processes build their own model) and
:func:`strategy_options` turns it into a model-driven strategy's ``llm=`` / ``model=`` options, or a
typed error naming the options when such a strategy gets no model.
"""

from __future__ import annotations

import argparse

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
    parser.set_defaults(model_options=_options_text("/".join(llm), "/".join(name)))


def model_spec(args: argparse.Namespace) -> ModelSpec:
    """The :class:`ModelSpec` of parsed options added by :func:`add_model_options`."""
    return ModelSpec(args.llm, args.llm_model, getattr(args, "model_options", _options_text()))
