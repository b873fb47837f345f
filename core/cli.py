"""``grounded`` command line: parse, chunk, highlight, eval, demo.

Each sub-command lives beside the code it drives (``grounded.<area>.cli``) and registers itself
through ``register(subparsers)``; the handler it sets returns an exit code. Any
:class:`~grounded.errors.GroundedError` (and OS errors on inputs/outputs) ends the program with
exit code 1 and a one-line reason on stderr, never a stack trace.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from . import __version__
from .errors import GroundedError

#: modules that define ``register(subparsers)``, in the order shown by ``--help``
COMMAND_MODULES = [
    "grounded.parsers.cli",
    "grounded.chunking.cli",
    "grounded.attribution.cli",
    "grounded.evaluation.cli",
    "grounded.demo",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grounded",
        description="PDF -> retrieval chunks with exact, multi-page source boxes.",
    )
    parser.add_argument("--version", action="version", version=f"grounded {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except GroundedError as exc:
        print(f"grounded {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"grounded {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"grounded {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
