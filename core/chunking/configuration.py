"""One configuration of the parse-and-chunk pipeline and its one fingerprint.

:class:`Configuration` names everything a user chooses that decides the chunks of a PDF: the parser
and its options, the strategy and its options, ``max_tokens``, ``overlap``, the tokenizer, the box
mode and the model of a model-driven strategy. :meth:`Configuration.canonical` turns it into one JSON
dict -- options checked by their declarations (:mod:`grounded.model.options`), values equal to their
declared defaults left out (``--ocr auto`` and no ``--ocr`` are one configuration), ``secret``
options such as a password never included -- and :meth:`Configuration.fingerprint` hashes it. The
ingest folder's configuration (resume and refusal) is built on it; chunk ids keep hashing the
chunker's own :meth:`~grounded.chunking.Chunker.config` (the strategy's resolved parameters), so ids
of default settings are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.options import Option, fingerprinted
from ..text.ids import stable_hash

__all__ = ["Configuration"]


def _without_defaults(declared: tuple[Option, ...] | None, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` without the ``secret`` options and without values equal to their declared default
    (an undeclared class: every value kept, secrets cannot be known); keys sorted."""
    if declared is None:
        return {k: values[k] for k in sorted(values)}
    defaults = {o.name: o.default for o in declared}
    kept = fingerprinted(declared, values)
    return {k: kept[k] for k in sorted(kept) if kept[k] is not None and not (k in defaults and kept[k] == defaults[k])}


@dataclass(frozen=True)
class Configuration:
    """``model``: the model of a model-driven strategy as plain data (``{"obj": ..., "name": ...,
    "settings": {...}}``, None without one). Options are checked when the canonical form is built
    (:class:`~grounded.errors.OptionError` naming the parser or strategy and the option)."""

    parser: str = "pymupdf"
    parser_options: Mapping[str, Any] = field(default_factory=dict)
    strategy: str = "recursive"
    strategy_options: Mapping[str, Any] = field(default_factory=dict)
    max_tokens: int = 256
    overlap: int | float = 0
    tokenizer: str | None = None
    box_mode: str = "auto"
    model: Mapping[str, Any] | None = None

    def canonical(self) -> dict[str, Any]:
        """The configuration as one JSON dict: the readable settings first; ``parser_options``,
        ``strategy_options``, ``tokenizer``, ``box_mode`` only when they differ from the defaults
        (so a configuration recorded before they existed keeps its form)."""
        from ..parsers import parser_class
        from .base import strategy_class

        pcls = parser_class(self.parser)
        scls = strategy_class(self.strategy)
        parser_options = _without_defaults(pcls.declared_options(), pcls.check_options(self.parser_options))
        strategy_options = _without_defaults(scls.options, scls.check_options(dict(self.strategy_options)))
        out: dict[str, Any] = {
            "parser": self.parser,
            "strategy": self.strategy,
            "max_tokens": self.max_tokens,
            "overlap": self.overlap,
        }
        if parser_options:
            out["parser_options"] = parser_options
        if strategy_options:
            out["strategy_options"] = strategy_options
        if self.tokenizer is not None:
            out["tokenizer"] = self.tokenizer
        if self.box_mode != "auto":
            out["box_mode"] = self.box_mode
        out["model"] = dict(self.model) if self.model else None
        return out

    def fingerprint(self) -> str:
        """The stable hash of :meth:`canonical`."""
        return stable_hash(self.canonical())
