"""The chunk output of ``grounded chunk -o`` and ``grounded ground -o``: checked before any work,
written atomically to a regular file, or to standard output for ``-`` (and ``/dev/stdout``).

An output name must end in ``.jsonl`` (one chunk per line) or ``.json`` (one document): any other
name (``.csv``, no extension) is refused rather than silently receiving JSONL. An existing target
that is not a regular file (a symbolic link, a device, a FIFO, a directory) is refused: the atomic
rename would replace the link or device itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..errors import escape_controls
from ..io.atomic import check_output_suffix, check_output_target, is_stdout, refuse_overwriting_inputs
from ..model.chunk import ChunkingResult

__all__ = ["CHUNK_SUFFIXES", "OUT_HELP", "check_chunk_output", "write_chunk_output", "summary_stream", "shown"]

#: the output names a chunk output may have
CHUNK_SUFFIXES = (".jsonl", ".json")
OUT_HELP = ("output .jsonl (one chunk per line) or .json (other names are refused), or '-' for JSONL on "
            "stdout (the summary then goes to stderr); never an input file, a link or a device")


def shown(name: str | os.PathLike[str]) -> str:
    """A path or PDF name as every command prints it (stdout and stderr): control characters --
    ESC (ANSI colours, OSC titles), BEL, newline, carriage return, tab, DEL, C1, bidi overrides --
    written as escapes (``\\x1b``, ``\\x07``, ``\\n``, ``\\u202e``; :func:`~grounded.errors.escape_controls`),
    so a file name can neither drive the terminal nor forge an output line. Whole messages go
    through :func:`grounded.cli.main.one_line`, which applies the same escapes."""
    return escape_controls(os.fspath(name))


def check_chunk_output(out: Path | None, inputs: Sequence[Path]) -> None:
    """Raise :class:`~grounded.errors.OutputError` for an output the command must not write (an
    input, an unknown extension, an existing link/device/FIFO/directory), before any work."""
    if out is None or is_stdout(out):
        return
    refuse_overwriting_inputs([out], inputs)
    check_output_suffix(out, CHUNK_SUFFIXES)
    check_output_target(out)


def write_chunk_output(result: ChunkingResult, out: Path) -> None:
    """Write ``result`` to ``out``: ``.json`` as one document, ``.jsonl`` one chunk per line,
    ``-`` / ``/dev/stdout`` as JSONL through the open stdout stream."""
    from ..io.codec import dumps_chunks_jsonl, save_chunking_result, write_chunks_jsonl

    if is_stdout(out):
        sys.stdout.write(dumps_chunks_jsonl(result))
        sys.stdout.flush()
    elif out.suffix.lower() == ".json":
        save_chunking_result(result, out)
    else:
        write_chunks_jsonl(result, out)


def summary_stream(out: Path | None) -> TextIO:
    """Where the one-line summary goes: stderr when the chunks go to stdout, else stdout."""
    return sys.stderr if is_stdout(out) else sys.stdout
