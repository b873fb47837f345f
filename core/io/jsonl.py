"""Read a JSON Lines file written by a person or another tool: one JSON object per line.

:func:`iter_jsonl` is the one loop the input readers share (``grounded ground`` chunk files, the
question files of ``grounded eval rag``, the ``chunks.jsonl`` files of
:func:`grounded.io.codec.read_chunks_jsonl`); each caller checks the fields it needs.

Lines are split at ``\\n``, ``\\r\\n`` and a lone ``\\r`` (never at the Unicode separators that may sit
inside a JSON string, such as U+2028); a UTF-8 byte-order mark at the start of the file is dropped;
lines holding only whitespace are skipped. Every other line must be one JSON object: a line that is
not UTF-8, not valid JSON (or holds an integer longer than Python converts), nested deeper than Python's JSON reader recurses, or a JSON value other
than an object is a :class:`~grounded.errors.SchemaError` that names the file and the line
(``FILE: line N: cause``), so the CLI prints one line and no traceback.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError, InputNotFoundError, SchemaError, escape_controls

__all__ = ["iter_jsonl", "where"]

_KIND = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}


def where(path: str | Path, line: int) -> str:
    """The place prefix of every message about a line (``FILE: line N``); callers that check the
    fields of a line's object name it the same way."""
    return f"{escape_controls(str(path))}: line {line}"


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of ``path`` (1-based, counting blank lines).

    A missing file is :class:`InputNotFoundError`, an unreadable one :class:`InputError`; a bad line
    a :class:`SchemaError` raised when the iteration reaches it (the lines before it have been
    yielded: a caller that must not act on part of a file collects the lines first).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        raise InputNotFoundError(path, "no such file") from exc
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from exc
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    for no, data in enumerate(raw.splitlines(), 1):  # bytes split only at \n, \r\n and \r
        try:
            line = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(
                f"{where(path, no)}: not UTF-8 text (byte 0x{data[exc.start]:02x} at column {exc.start + 1})"
            ) from exc
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"{where(path, no)}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
        except ValueError as exc:  # a number past Python's int conversion limit (4300 digits)
            raise SchemaError(f"{where(path, no)}: not readable JSON ({exc})") from exc
        except RecursionError as exc:
            raise SchemaError(f"{where(path, no)}: JSON nested too deeply to read") from exc
        if not isinstance(obj, dict):
            raise SchemaError(f"{where(path, no)}: expected a JSON object, got {_KIND.get(type(obj), type(obj).__name__)}")
        yield no, obj
