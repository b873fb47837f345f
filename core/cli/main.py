"""``grounded`` command line: parse, chunk, ground, highlight, eval, ingest, search, view, demo.

Each sub-command is one module of this package (``grounded.cli.<command>``, listed in
:data:`COMMAND_MODULES`; ``grounded eval`` comes from the evaluation lab when its extra is installed)
and registers itself through ``register(subparsers)``; the handler it sets returns an exit code. Any
:class:`~grounded.errors.GroundedError` (and OS errors on inputs/outputs) ends the program with
exit code 1 and a one-line reason on stderr, never a stack trace. Python warnings raised while a
command runs (damaged pages, pages without a text layer, ...) are printed as one
``grounded <command>: warning: ...`` line each.

Outputs never replace inputs: a command whose output path is one of its input files refuses
with a one-line reason (exit 1).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, NoReturn, TextIO

from ..errors import GroundedError, OptionUsageError, escape_controls
from ..runtime.version import __version__

#: modules that define ``register(subparsers)``, in the order shown by ``--help``
COMMAND_MODULES = [
    "grounded.cli.parse",
    "grounded.cli.chunk",
    "grounded.cli.ground",
    "grounded.cli.highlight",
    "grounded.cli.ingest",
    "grounded.cli.search",
    "grounded.cli.view",
    "grounded.cli.demo",
]
#: the evaluation lab (``grounded eval``): its command module, the packages of its extra and the
#: extra's name. Nothing in the product imports the lab; without the extra, ``grounded eval`` says
#: what to install.
LAB_COMMAND = ("grounded.evaluation.cli", ("faster_coco_eval", "apted", "pandas", "matplotlib", "scipy"), "eval")


class _ArgumentParser(argparse.ArgumentParser):
    """Usage errors as one line (``grounded chunk: error: ... (see: grounded chunk --help)``), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see: {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI, or only ``command``'s subparser when it names one of :data:`COMMAND_MODULES`
    (a command does not import the others' modules: ``grounded search`` answers in about a second)."""
    parser = _ArgumentParser(
        prog="grounded",
        description="PDF -> retrieval chunks with exact, multi-page source boxes.",
    )
    parser.add_argument("--version", action="version", version=f"grounded {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    if command and f"grounded.cli.{command}" in COMMAND_MODULES:
        importlib.import_module(f"grounded.cli.{command}").register(sub)
        return parser
    for module in COMMAND_MODULES[:4]:
        importlib.import_module(module).register(sub)
    _register_lab(sub)
    for module in COMMAND_MODULES[4:]:
        importlib.import_module(module).register(sub)
    return parser


def _register_lab(sub: Any) -> None:
    """``grounded eval``: the lab's own command when its extra is installed, else a command that
    names the ``pip install`` (exit 1)."""
    module, packages, extra = LAB_COMMAND
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    if not missing:
        importlib.import_module(module).register(sub)
        return
    hint = f"grounded eval needs the evaluation extra (missing: {', '.join(missing)}): pip install 'grounded[{extra}]'"
    p = sub.add_parser("eval", help=f"evaluation framework (needs pip install 'grounded[{extra}]')",
                       description=hint, add_help=True)
    p.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def missing_extra(args: argparse.Namespace) -> int:
        sys.stderr.write(f"grounded eval: error: {hint}\n")
        return 1

    p.set_defaults(func=missing_extra)


#: environment variable read when ``--password`` is not given (not visible in the process list)
PASSWORD_ENV = "GROUNDED_PDF_PASSWORD"


def add_password_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--password", default=None, metavar="PW",
        help=f"password of an encrypted PDF; or set {PASSWORD_ENV} (a command-line password is visible to "
        "other users in the process list); it never enters a configuration fingerprint or an output",
    )


def pdf_password(args: argparse.Namespace) -> str | None:
    """``--password``, else ``$GROUNDED_PDF_PASSWORD``, else None."""
    given: str | None = getattr(args, "password", None)
    return given if given is not None else (os.environ.get(PASSWORD_ENV) or None)


def one_line(text: object) -> str:
    """``text`` with all whitespace runs (newlines included) collapsed to single spaces and every
    other control character escaped (:func:`~grounded.errors.escape_controls`): a file name with a
    newline or an ANSI escape cannot forge a line or drive the terminal."""
    return " ".join(escape_controls(str(text), whitespace=False).split())


class OneLineFormatter(logging.Formatter):
    """Each log record's message as one line (:func:`one_line`): a file name or an exception text
    with a newline or an ANSI escape cannot forge a log line or drive the terminal. A traceback
    (``exc_info``) still follows on its own lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        return one_line(super().formatMessage(record))


@contextmanager
def warnings_as_lines(command: str) -> Iterator[None]:
    """Show each Python warning as one ``grounded <command>: warning: <message>`` line on stderr
    (instead of ``file:line: Category: message`` plus a source line); the usual filters apply."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        stream = file if file is not None else sys.stderr
        with suppress(OSError, ValueError):  # stderr closed: nothing to report to
            stream.write(f"grounded {command}: warning: {one_line(message)}\n")

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _command_word(argv: Sequence[str]) -> str | None:
    """The first word of ``argv`` that is no option (the command), or None."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_word(words))
    args = parser.parse_args(words)
    handler = logging.StreamHandler()
    handler.setFormatter(OneLineFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
    with warnings_as_lines(args.command):
        return _run(args)


def _run(args: Any) -> int:
    try:
        return int(args.func(args) or 0)
    except OptionUsageError as exc:  # a misused option: the usage line and code of argparse
        print(f"grounded {args.command}: error: {one_line(exc)} (see: grounded {args.command} --help)", file=sys.stderr)
        return 2
    except GroundedError as exc:
        print(f"grounded {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"grounded {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"grounded {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
