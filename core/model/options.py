"""The options of a parser or chunking strategy, declared once on its class as typed data.

A class lists its options as ``options: ClassVar[tuple[Option, ...]]``; from that one declaration
come the checks of the values given in Python (:func:`check_options`), the command-line options of
``grounded parse|chunk|ground|ingest`` (scalar options only, parsed from text by
:meth:`Option.from_text`), the keywords the LlamaIndex and LangChain adapters accept, and what enters a
configuration's fingerprint (:func:`fingerprinted`: a ``secret`` option such as a password never does),
and a chunking strategy's ``params()`` (:attr:`Option.in_params`: the resolved values that enter every
chunk's metadata and the chunker fingerprint).

An option whose ``type`` is ``None`` takes any Python object (an embedder, a model client, a callback):
it is checked by the class itself and never appears on the command line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import OptionError

__all__ = ["Option", "check_options", "option_names", "fingerprinted", "SCALAR_TYPES"]

#: the option types the command line can spell
SCALAR_TYPES: tuple[type, ...] = (bool, int, float, str)


@dataclass(frozen=True)
class Option:
    """One option: ``name`` (the Python keyword), ``type`` (``bool``/``int``/``float``/``str``, or
    ``None`` for any object), ``default`` (``None``: the class derives it, e.g. from ``max_tokens``),
    ``help`` (one phrase, shown by ``--help``), ``choices`` or a range ``low``..``high`` (``open_low``
    / ``open_high`` exclude the bound), ``secret`` (never fingerprinted, stored or logged),
    ``cli`` (shown on the command line; scalar types only), ``flag`` (its spelling there, default
    ``--name-with-dashes``) and ``param`` (a strategy's option: its resolved value is one of the
    strategy's ``params()``; ``None``: when it is a scalar, see :attr:`in_params`)."""

    name: str
    type: type | None
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    secret: bool = False
    cli: bool = True
    flag: str | None = None
    param: bool | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"option name {self.name!r} is not a Python identifier")
        if self.type is not None and self.type not in SCALAR_TYPES:
            raise ValueError(f"option {self.name!r}: type must be one of bool, int, float, str or None, got {self.type!r}")

    @property
    def on_cli(self) -> bool:
        """Whether the command line offers this option (a scalar ``cli`` option)."""
        return self.cli and self.type is not None

    @property
    def in_params(self) -> bool:
        """Whether a strategy's ``params()`` hold this option's resolved value: ``param`` when given,
        else for a scalar option (an object such as an embedder or a model has no stable JSON form);
        never for a ``secret`` one."""
        if self.secret:
            return False
        return self.type is not None if self.param is None else self.param

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def rule(self) -> str:
        """What a valid value is, in words (for errors and ``--help``)."""
        kinds: dict[type | None, str] = {bool: "true or false", int: "an int", float: "a number", str: "a string"}
        kind = kinds.get(self.type, "any object")
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.low is not None or self.high is not None:
            lo = "-inf" if self.low is None else f"{self.low:g}"
            hi = "inf" if self.high is None else f"{self.high:g}"
            left = "(" if self.open_low or self.low is None else "["
            right = ")" if self.open_high or self.high is None else "]"
            return f"{kind} in {left}{lo}, {hi}{right}"
        return kind

    def check(self, value: Any, owner: str) -> Any:
        """``value`` checked against this declaration (``None`` is always accepted: the class's
        default); an int given for a float option becomes a float. Raises :class:`OptionError`
        naming ``owner`` (e.g. ``strategy 'semantic'``) and this option."""
        if value is None or self.type is None:
            return value
        if self.type is bool:
            if not isinstance(value, bool):
                raise OptionError(owner, self.name, f"must be true or false, got {value!r}")
        elif self.type is int:
            if isinstance(value, bool) or not _is_integral(value):
                raise OptionError(owner, self.name, f"must be {self.rule()}, got {value!r}")
            value = int(value)
        elif self.type is float:
            if isinstance(value, bool) or not _is_real(value) or not math.isfinite(float(value)):
                raise OptionError(owner, self.name, f"must be {self.rule()}, got {value!r}")
            value = float(value)
        elif not isinstance(value, str):
            raise OptionError(owner, self.name, f"must be {self.rule()}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise OptionError(owner, self.name, f"must be {self.rule()}, got {value!r}")
        if self.low is not None and (value < self.low or (self.open_low and value == self.low)):
            raise OptionError(owner, self.name, f"must be {self.rule()}, got {value!r}")
        if self.high is not None and (value > self.high or (self.open_high and value == self.high)):
            raise OptionError(owner, self.name, f"must be {self.rule()}, got {value!r}")
        return value

    def from_text(self, text: str, owner: str) -> Any:
        """The value of a command-line string (``true``/``false``/``yes``/``no``/``1``/``0`` for a
        bool), checked by :meth:`check`."""
        value: Any = text
        try:
            if self.type is int:
                value = int(text)
            elif self.type is float:
                value = float(text)
            elif self.type is bool:
                lowered = text.strip().lower()
                if lowered not in _BOOLS:
                    raise ValueError(text)
                value = _BOOLS[lowered]
        except ValueError:
            raise OptionError(owner, self.name, f"must be {self.rule()}, got {text!r}") from None
        return self.check(value, owner)


_BOOLS = {"true": True, "yes": True, "1": True, "on": True, "false": False, "no": False, "0": False, "off": False}


def _is_integral(value: Any) -> bool:
    from numbers import Integral

    return isinstance(value, Integral)


def _is_real(value: Any) -> bool:
    from numbers import Real

    return isinstance(value, Real)


def option_names(options: Iterable[Option]) -> list[str]:
    return [o.name for o in options]


def check_options(
    declared: Iterable[Option], given: Mapping[str, Any], owner: str, *, fixed: Iterable[str] = ()
) -> dict[str, Any]:
    """``given`` checked against the ``declared`` options of ``owner``: an undeclared name raises
    :class:`OptionError` listing the declared ones (``fixed``: keywords the caller handles itself,
    e.g. ``max_tokens``, shown in the list too); returns the checked values."""
    by_name = {o.name: o for o in declared}
    out: dict[str, Any] = {}
    for name, value in given.items():
        option = by_name.get(name)
        if option is None:
            valid = sorted({*by_name, *fixed})
            raise OptionError(owner, name, f"is not an option of it; its options: {', '.join(valid) or 'none'}")
        out[name] = option.check(value, owner)
    return out


def fingerprinted(declared: Iterable[Option], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` without the ``secret`` options (passwords): what a fingerprint or a stored record
    may hold. A name not declared is kept (the class decides what it means)."""
    secret = {o.name for o in declared if o.secret}
    return {k: v for k, v in values.items() if k not in secret}
