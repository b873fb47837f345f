"""The inputs of ``ingest``: folders, glob patterns, PDFs and list files -> the PDFs to ingest.

Paths are resolved (:func:`os.path.realpath`): a symlinked PDF is ingested and recorded under the
file it points to, whatever the order in which the link and its target are listed, and a link
beside its target is one input. Folders (and ``**`` in a pattern) are walked recursively and
follow symlinked folders, each real folder at most once per pattern position: a link that points
back up the tree (``loop -> ..``) cannot make the walk endless.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ..errors import InputNotFoundError
from .errors import NoInputsError

__all__ = ["expand_inputs", "source_exists"]

log = logging.getLogger(__name__)

_GLOB_CHARS = frozenset("*?[")


def _is_pdf_name(path: str) -> bool:
    return path.lower().endswith(".pdf")


def _magic(segment: str) -> bool:
    return bool(_GLOB_CHARS & set(segment))


def _dir_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:  # unreadable folder: nothing below it (as glob does)
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symlinks
    except OSError:
        return False


def _match(folder: str, segments: Sequence[str], seen: set[tuple[tuple[int, int], int]]) -> Iterator[str]:
    """Paths under ``folder`` matching ``segments`` (glob semantics: ``*``/``?``/``[..]`` within one
    name, ``**`` any number of folders, names starting with '.' only matched by a '.' pattern).
    ``seen``: (folder identity, segments left) already walked, so loops and repeats end."""
    key = _dir_key(folder)
    if key is None or (key, len(segments)) in seen:
        return
    seen.add((key, len(segments)))
    segment, rest = segments[0], segments[1:]
    if segment == "**":
        if rest:
            yield from _match(folder, rest, seen)
        for entry in _entries(folder):
            if entry.name.startswith("."):
                continue
            if not rest:
                yield entry.path
            if _is_dir(entry):
                yield from _match(entry.path, segments, seen)
        return
    if not _magic(segment):
        target = os.path.join(folder, segment)
        if not rest:
            if os.path.lexists(target):
                yield target
        elif os.path.isdir(target):
            yield from _match(target, rest, seen)
        return
    for entry in _entries(folder):
        if entry.name.startswith(".") and not segment.startswith("."):
            continue
        if fnmatch.fnmatchcase(entry.name, segment):
            if not rest:
                yield entry.path
            elif _is_dir(entry):
                yield from _match(entry.path, rest, seen)


def _glob(pattern: str) -> Iterator[str]:
    """:func:`glob.glob` with ``recursive=True``, without its endless walk through symlink loops."""
    segments = list(Path(pattern).parts)
    fixed: list[str] = []
    while segments and not _magic(segments[0]):
        fixed.append(segments.pop(0))
    root = os.path.join(*fixed) if fixed else os.curdir
    if not segments:
        if os.path.lexists(root):
            yield root
        return
    yield from _match(root, segments, set())


def _folder_pdfs(folder: str) -> Iterator[str]:
    return (p for p in _match(folder, ["**", "*"], set()) if _is_pdf_name(p) and os.path.isfile(p))


def _expand_one(item: str | os.PathLike[str]) -> Iterator[str]:
    text = os.fspath(item)
    path = os.path.expanduser(text)
    if os.path.isdir(path):
        yield from _folder_pdfs(path)
    elif os.path.isfile(path):
        if _is_pdf_name(path):
            yield path
        else:  # a list file: one path per line (relative to the list's folder), '#' comments
            folder = os.path.dirname(path)
            for line in Path(path).read_text(encoding="utf-8").splitlines():
                entry = line.strip()
                if entry and not entry.startswith("#"):
                    yield os.path.join(folder, os.path.expanduser(entry))
    elif _GLOB_CHARS & set(text):
        matches = list(_glob(path))
        if not matches:
            raise InputNotFoundError(text, "the pattern matches no file")
        for m in matches:
            if os.path.isdir(m):
                yield from _folder_pdfs(m)
            elif os.path.isfile(m):
                yield m
    else:
        raise InputNotFoundError(text, "no such file, folder or pattern")


def expand_inputs(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *, allow_empty: bool = True
) -> list[Path]:
    """Resolved absolute paths of the PDFs named by ``inputs`` (a folder: its ``*.pdf``
    recursively; a glob; a PDF; a list file with one path per line; or a sequence of those),
    sorted, without repeats. Files listed in a list file are returned even when they do not exist
    (they become error rows); a folder, glob or list file that does not exist raises
    :class:`~grounded.errors.InputNotFoundError`; with ``allow_empty=False``, inputs that name no
    file at all (an empty folder or list file) raise :class:`~grounded.ingest.errors.NoInputsError`."""
    items: Iterable[str | os.PathLike[str]] = [inputs] if isinstance(inputs, (str, os.PathLike)) else inputs
    items = list(items)
    found = {Path(os.path.realpath(os.path.abspath(p))) for item in items for p in _expand_one(item)}
    if not found and not allow_empty:
        named = ", ".join(os.fspath(i) for i in items[:3]) + (f" (+{len(items) - 3} more)" if len(items) > 3 else "")
        raise NoInputsError(f"no PDF to ingest: {named or 'no input given'} names no file (an empty folder or list?)")
    return sorted(found)


def source_exists(path: str | os.PathLike[str]) -> bool:
    """Whether the PDF an index row names (its ``source_path``) is still a file on disk: False once
    it was deleted, moved away, or its drive is not mounted. A re-run of ``ingest`` keeps the rows
    of such inputs (and says how many there are) until ``--prune`` (``prune=True``) removes them;
    the viewer marks their hits."""
    return os.path.isfile(path)
