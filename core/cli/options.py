"""The parser and chunking options of ``grounded parse|chunk|ground|ingest``, generated once from the
declarations of the parsers and strategies (:class:`~grounded.model.options.Option`).

* :func:`add_parser_options`: ``--parser`` (any registered name, entry points included), every
  parser's declared command-line options (``--ocr``, ``--ocr-dpi``, ...) and ``--password``;
* :func:`add_chunk_options`: ``--tokenizer`` and ``--box-mode``;
* :func:`add_strategy_options`: ``-s/--strategy``, ``-n/--max-tokens``, ``--overlap`` and every
  strategy's declared command-line options (``--percentile``, ``--min-tokens``, ``--heading-budget``,
  ...; one flag serves every strategy that declares the name, its help says which and their defaults).

Generated options default to "not given" (argparse's ``SUPPRESS``): :func:`given_parser_options` and
:func:`given_strategy_options` return what the user gave, checked by the chosen parser's or strategy's
declaration; an option given for a parser or strategy that does not declare it is an
:class:`~grounded.errors.OptionUsageError` (one line, exit code 2), never silently ignored.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import Any

from ..errors import GroundedError, OptionError, OptionUsageError, UnknownNameError
from ..model.options import Option
from .main import add_password_option

__all__ = [
    "add_parser_options", "add_chunk_options", "add_strategy_options", "given_parser_options",
    "given_strategy_options", "parser_options_given", "add_parse_cache_option", "BOX_MODE_HELP",
]

log = logging.getLogger(__name__)

BOX_MODE_HELP = ("auto/exact: character-exact boxes where the text aligns with the PDF text layer, else per-line; "
                 "line: thesis line approximation; element: whole element boxes")
_PARSER_DEST = "parser_option__"
_STRATEGY_DEST = "strategy_option__"


def _declared(kind: str) -> dict[str, tuple[Option, ...]]:
    """name -> declared command-line options of every registered parser or strategy (a class that
    cannot be imported is left out with a logged warning: ``--help`` still works)."""
    if kind == "parser":
        from ..parsers import REGISTRY as registry

        def declared(cls: Any) -> tuple[Option, ...] | None:
            return cls.declared_options()
    else:
        from ..chunking.base import REGISTRY as registry  # type: ignore[assignment]

        def declared(cls: Any) -> tuple[Option, ...] | None:
            return cls.options

    out: dict[str, tuple[Option, ...]] = {}
    for name in registry.names():
        try:
            cls = registry.get(name)
        except (ImportError, GroundedError) as exc:
            log.warning("%s %r: its options are not offered: %s", kind, name, exc)
            continue
        out[name] = tuple(o for o in (declared(cls) or ()) if o.on_cli)
    return out


def _flags(declared: dict[str, tuple[Option, ...]]) -> dict[str, list[tuple[str, Option]]]:
    """flag -> [(owner name, its option)], in flag order of first declaration."""
    flags: dict[str, list[tuple[str, Option]]] = {}
    for owner, options in sorted(declared.items()):
        for option in options:
            flags.setdefault(option.cli_flag, []).append((owner, option))
    return flags


def _help(kind: str, users: list[tuple[str, Option]]) -> str:
    """``strategy semantic: ... (rule; default D)``, owners with the same declaration joined."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for owner, o in users:
        default = "" if o.default is None else f"; default {o.default}"
        groups.setdefault((o.help, o.rule(), default), []).append(owner)
    plural = {"strategy": "strategies", "parser": "parsers"}.get(kind, kind)
    parts = [f"{plural if len(owners) > 1 else kind} {', '.join(owners)}: {text} ({rule}{default})"
             for (text, rule, default), owners in groups.items()]
    return "; ".join(parts).replace("%", "%%")


def _add_generated(p: argparse.ArgumentParser, kind: str, prefix: str, reserved: set[str]) -> None:
    for flag, users in _flags(_declared(kind)).items():
        if flag in reserved or flag in p._option_string_actions:
            log.warning("%s option %s of %s clashes with a fixed option of the command: not offered", kind, flag,
                        ", ".join(owner for owner, _ in users))
            continue
        dest = prefix + flag.lstrip("-").replace("-", "_")
        types = {o.type for _, o in users}
        if types == {bool}:
            p.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                           help=_help(kind, users))
        else:
            choices = users[0][1].choices if len(users) == 1 else None
            metavar = "{" + ",".join(str(c) for c in choices) + "}" if choices else flag.lstrip("-").replace("-", "_").upper()
            p.add_argument(flag, dest=dest, default=argparse.SUPPRESS, metavar=metavar, help=_help(kind, users))


def _name_type(kind: str) -> Callable[[str], str]:
    """An argparse ``type`` checking a registry name: unknown -> one usage line listing the known names."""

    def check(text: str) -> str:
        try:
            if kind == "parser":
                from ..parsers import REGISTRY as parsers

                return parsers.check(text)
            from ..chunking.base import REGISTRY as strategies

            return strategies.check(text)
        except UnknownNameError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    check.__name__ = f"{kind} name"
    return check


def add_parser_options(p: argparse.ArgumentParser, *, default: str | None = "pymupdf", pdf_only: bool = False) -> None:
    """``--parser``, the parsers' declared options and ``--password`` (``pdf_only``: the command also
    reads parse trees, to which these options do not apply)."""
    from ..parsers import parser_names

    tail = ". PDF input only: refused with a .json tree (already parsed)" if pdf_only else ""
    p.add_argument("--parser", default=default, type=_name_type("parser"), metavar="NAME",
                   help=f"parser (default: pymupdf, offline); one of: {', '.join(parser_names())} (and any registered "
                   f"by the entry point group grounded.parsers){tail}")
    _add_generated(p, "parser", _PARSER_DEST, set())
    add_password_option(p)


def add_parse_cache_option(p: argparse.ArgumentParser) -> None:
    """``--no-parse-cache`` (``args.parse_cache``, default True)."""
    p.add_argument(
        "--no-parse-cache", dest="parse_cache", action="store_false",
        help="parse the PDF even when the parse cache holds its tree, and do not store the new one (default: a PDF "
        "parsed before with the same parser and options is loaded from $GROUNDED_CACHE_DIR/parses, else the user "
        "cache folder, e.g. ~/.cache/grounded/parses)",
    )


def add_chunk_options(p: argparse.ArgumentParser) -> None:
    """``--tokenizer`` and ``--box-mode`` (of chunking and grounding)."""
    from ..text.assembly import BOX_MODES

    p.add_argument("--tokenizer", default=None,
                   help="tokenizer of token counts and the token bound: default all-MiniLM-L6-v2; 'cl100k_base' (tiktoken) "
                   "or a tokenizer.json path/folder")
    p.add_argument("--box-mode", choices=BOX_MODES, default="auto", help=BOX_MODE_HELP)


def add_strategy_options(
    p: argparse.ArgumentParser, *, reserved: set[str] | None = None, max_tokens_help: str | None = None
) -> None:
    """``-s/--strategy``, ``-n/--max-tokens``, ``--overlap`` and every strategy's declared options.
    ``max_tokens_help``: the command resolves ``-n`` itself (its default is None) and says how."""
    from ..chunking.base import strategy_names

    p.add_argument("-s", "--strategy", default="recursive", type=_name_type("strategy"), metavar="NAME",
                   help=f"chunking strategy (default: recursive); one of: {', '.join(strategy_names())} (and any "
                   "registered by the entry point group grounded.strategies)")
    p.add_argument("-n", "--max-tokens", type=int, default=256 if max_tokens_help is None else None,
                   help="maximum tokens per chunk, headings included " + (max_tokens_help or "(default: 256)"))
    p.add_argument("--overlap", type=float, default=0,
                   help="overlap between windows: tokens (e.g. 50) or a fraction of --max-tokens (e.g. 0.2); strategies "
                   "that take overlap only (fixed, recursive, hierarchical)")
    _add_generated(p, "strategy", _STRATEGY_DEST, reserved or set())


def _given(args: argparse.Namespace, prefix: str) -> dict[str, Any]:
    """flag -> raw value of the generated options the user gave."""
    return {"--" + k[len(prefix):].replace("_", "-"): v for k, v in vars(args).items() if k.startswith(prefix)}


def _collect(kind: str, name: str, declared: tuple[Option, ...], given: dict[str, Any]) -> dict[str, Any]:
    by_flag = {o.cli_flag: o for o in declared}
    owner = f"{kind} {name!r}"
    out: dict[str, Any] = {}
    for flag, raw in given.items():
        option = by_flag.get(flag)
        if option is None:
            takers = sorted(n for n, opts in _declared(kind).items() if any(o.cli_flag == flag for o in opts))
            plural = {"strategy": "strategies", "parser": "parsers"}.get(kind, kind)
            raise OptionUsageError(f"{flag} does not apply to the {kind} {name!r}; it is an option of the "
                                   f"{plural if len(takers) > 1 else kind} {', '.join(takers)}")
        try:
            out[option.name] = option.check(raw, owner) if isinstance(raw, bool) else option.from_text(raw, owner)
        except OptionError as exc:
            raise OptionUsageError(f"{flag}: {exc}") from None
    return out


def given_parser_options(args: argparse.Namespace, parser: str) -> dict[str, Any]:
    """The parser options given on the command line, checked by ``parser``'s declaration."""
    given = _given(args, _PARSER_DEST)
    if not given:
        return {}
    from ..parsers import parser_class

    return _collect("parser", parser, tuple(o for o in (parser_class(parser).declared_options() or ()) if o.on_cli), given)


def given_strategy_options(args: argparse.Namespace, strategy: str) -> dict[str, Any]:
    """The strategy options given on the command line, checked by ``strategy``'s declaration."""
    given = _given(args, _STRATEGY_DEST)
    if not given:
        return {}
    from ..chunking.base import strategy_class

    return _collect("strategy", strategy, tuple(o for o in (strategy_class(strategy).options or ()) if o.on_cli), given)


def parser_options_given(args: argparse.Namespace) -> list[str]:
    """The flags of the generated parser options the user gave (for "PDF input only" refusals)."""
    return sorted(_given(args, _PARSER_DEST))
