"""The configuration of an ingest run: its readable settings, their fingerprint, and the one-line
reason a folder holding another configuration refuses a run.

An output folder holds one configuration (recorded in ``OUT/manifest.json``): every row in it has
the same ``config_fingerprint``. The fingerprint hashes everything that decides a document's rows:
grounded's version, parsing and chunking code (so a folder is never resumed under changed code),
the parser and the versions of the libraries it runs, the chunking settings and the embedding.
"""

from __future__ import annotations

import dataclasses
from importlib import metadata as importlib_metadata
from typing import Any

from ..chunking.configuration import Configuration
from ..runtime.code_version import chunking_code_version, parser_code_version
from ..runtime.version import __version__
from ..text.ids import stable_hash
from ..text.tokenizer import DEFAULT_TOKENIZER_NAME
from .worker import JobConfig

__all__ = ["configuration", "config_settings", "config_fingerprint", "settings_difference"]

#: how a setting is named in a refusal (its command-line option, or what changed)
_NAMES = {
    "parser": "--parser",
    "strategy": "-s/--strategy",
    "max_tokens": "-n/--max-tokens",
    "overlap": "--overlap",
    "parser_options": "parser options (--ocr, --ocr-dpi, ...)",
    "strategy_options": "strategy options (--percentile, --heading-budget, ...)",
    "tokenizer": "--tokenizer",
    "box_mode": "--box-mode",
    "embed": "--embed",
    "model": "--llm/--llm-model",
    "grounded": "grounded version",
    "parser_code": "grounded's parsing code",
    "chunking_code": "grounded's chunking code",
    "parser_libs": "parser library versions",
    "chunker": "chunker settings",
}


def _dist_version(name: str) -> str | None:
    try:
        return importlib_metadata.version(name)
    except importlib_metadata.PackageNotFoundError:
        return None


def configuration(config: JobConfig) -> Configuration:
    """The job's :class:`~grounded.chunking.configuration.Configuration` (its password left out)."""
    model = config.model
    return Configuration(
        parser=config.parser, parser_options=config.parser_options, strategy=config.strategy,
        strategy_options=config.strategy_options, max_tokens=config.max_tokens, overlap=config.overlap,
        tokenizer=config.tokenizer, box_mode=config.box_mode,
        model={"obj": model.obj, "name": model.name} if model else None,
    )


def config_settings(config: JobConfig, chunker_fingerprint: str) -> dict[str, Any]:
    """Everything that decides a document's rows, as JSON values (the readable options first): the
    canonical :func:`configuration` (no password), the embedding, grounded's code and the parser's
    library versions, the chunker's fingerprint."""
    parser_libs = {"pymupdf": ("pymupdf", "pymupdf4llm", "pymupdf-layout")}.get(config.parser, ())
    settings = configuration(config).canonical()
    model = settings.pop("model")
    return {
        **settings,
        "embed": config.embed,
        "model": model,
        "grounded": __version__,
        "parser_code": parser_code_version(),
        "chunking_code": chunking_code_version(),
        "parser_libs": {name: _dist_version(name) for name in parser_libs},
        "chunker": chunker_fingerprint,
    }


def config_fingerprint(config: JobConfig, chunker_fingerprint: str) -> str:
    """The hash of :func:`config_settings` (the ``config_fingerprint`` of every row)."""
    return settings_fingerprint(config_settings(config, chunker_fingerprint))


def settings_fingerprint(settings: dict[str, Any]) -> str:
    return stable_hash(settings)


#: how a setting the canonical configuration leaves out (because it is the default) reads in a
#: message: the default itself, never "none" (issue #34: "--tokenizer none -> cl100k_base")
_DEFAULT_SHOWN = {
    "tokenizer": f"{DEFAULT_TOKENIZER_NAME.rsplit('/', 1)[-1]} (default)",
    "box_mode": "auto (default)",
    "parser_options": "defaults",
    "strategy_options": "defaults",
}


def _shown(value: Any, key: str | None = None) -> str:
    if value is None and key in _DEFAULT_SHOWN:
        return _DEFAULT_SHOWN[key]
    if isinstance(value, str) and len(value) > 16:  # a code hash
        return value[:8]
    if isinstance(value, dict):
        return ",".join(f"{k}={_shown(v)}" for k, v in value.items() if v is not None) or "none"
    return "none" if value is None else str(value)


def settings_difference(held: dict[str, Any] | None, wanted: dict[str, Any]) -> str:
    """What differs, e.g. ``-n/--max-tokens 256 -> 128, --embed minilm -> none`` (``held``: the
    folder's settings; None: a folder written before configurations were recorded)."""
    if not held:
        return "the folder was written by an earlier grounded that did not record its configuration"
    keys = [k for k in wanted if held.get(k) != wanted.get(k)]
    keys += [k for k in held if k not in wanted]
    readable = {"strategy", "max_tokens", "overlap", "model", "strategy_options", "tokenizer", "box_mode"}
    if "chunker" in keys and readable & set(keys):
        keys.remove("chunker")  # implied by the chunking options that differ
    if not keys:
        return "configuration fingerprint"
    return ", ".join(f"{_NAMES.get(k, k)} {_shown(held.get(k), k)} -> {_shown(wanted.get(k), k)}" for k in keys)


def asdict(config: JobConfig) -> dict[str, Any]:
    """``config`` as a dict (for rebuilding it with the fingerprint set)."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
