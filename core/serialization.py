"""Lossless JSON (with schema name + version) for parse trees and chunking results, atomic writes.

Stored documents carry ``{"schema": ..., "version": ...}`` so files written by an older release
stay readable: :func:`loads_parsing_result` / :func:`loads_chunking_result` accept every version
listed in ``_READABLE`` and refuse anything else with a :class:`SchemaError`.

Parse trees of any depth round-trip: :mod:`json` recurses once per nesting level and gives up
at the interpreter's recursion limit (a tree a few hundred levels deep), so such documents are
written and read by the iterative :func:`_dumps_tree` / :func:`_loads_deep` instead, with the
same text as :func:`json.dumps` would produce.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import SchemaError
from .model import Chunk, ChunkingResult, ParsingResult

__all__ = [
    "PARSE_SCHEMA",
    "CHUNKS_SCHEMA",
    "SCHEMA_VERSION",
    "dumps_parsing_result",
    "loads_parsing_result",
    "dumps_chunking_result",
    "loads_chunking_result",
    "save_parsing_result",
    "load_parsing_result",
    "save_chunking_result",
    "load_chunking_result",
    "write_chunks_jsonl",
    "read_chunks_jsonl",
    "atomic_write_text",
    "atomic_write_bytes",
]

PARSE_SCHEMA = "grounded.parsing_result"
CHUNKS_SCHEMA = "grounded.chunking_result"
SCHEMA_VERSION = 1
_READABLE = {PARSE_SCHEMA: {1}, CHUNKS_SCHEMA: {1}}
# process umask, read once at import (os.umask can only be read by setting it)
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temp file in the same folder + rename: never half-written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file normal permissions
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; give the file the mode a plain open() would (or keep the old one)
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def _envelope(schema: str, payload_key: str, payload: Any) -> dict[str, Any]:
    return {"schema": schema, "version": SCHEMA_VERSION, payload_key: payload}


def _check(data: Any, schema: str, source: str) -> dict[str, Any]:
    if not isinstance(data, dict) or "schema" not in data:
        raise SchemaError(f"{source}: not a grounded JSON document (no 'schema' field)")
    if data["schema"] != schema:
        raise SchemaError(f"{source}: schema is {data['schema']!r:.80}, expected {schema!r}")
    version = data.get("version")
    if not (isinstance(version, int) and not isinstance(version, bool)) or version not in _READABLE[schema]:
        raise SchemaError(
            f"{source}: {schema} version {version!r:.40} is not readable by this release "
            f"(readable: {sorted(_READABLE[schema])})"
        )
    return data


def _payload(data: dict[str, Any], key: str, source: str) -> Any:
    if key not in data:
        raise SchemaError(f"{source}: the document has no {key!r} field")
    return data[key]


_LOAD_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError)


@contextmanager
def _loading(source: str) -> Iterator[None]:
    """Any failure while decoding a stored document becomes one :class:`SchemaError` naming ``source``.

    The model's validators raise SchemaError with the element at fault; what they do not foresee
    (a damaged file can hold anything) still ends as a typed error with a short cause, never a
    traceback.
    """
    try:
        yield
    except SchemaError as exc:
        if str(exc).startswith(f"{source}: "):
            raise
        raise SchemaError(f"{source}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise SchemaError(
            f"{source}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); the file is damaged"
        ) from exc
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{source}: invalid JSON ({exc})") from exc
    except RecursionError as exc:
        raise SchemaError(f"{source}: nested too deeply to read") from exc
    except _LOAD_ERRORS as exc:
        cause = f"{type(exc).__name__}: {exc}"
        raise SchemaError(f"{source}: malformed document ({cause[:200]})") from exc


def _read_text(path: Path) -> str:
    """The file's text; undecodable bytes raise UnicodeDecodeError (turned into SchemaError by ``_loading``)."""
    return path.read_bytes().decode("utf-8")


def dumps_parsing_result(root: ParsingResult, indent: int | None = None) -> str:
    try:
        return json.dumps(_envelope(PARSE_SCHEMA, "root", root.to_dict()), ensure_ascii=False, indent=indent)
    except RecursionError:  # a tree deeper than json's recursion allows
        head = json.dumps(_envelope(PARSE_SCHEMA, "root", None), ensure_ascii=False, indent=indent)
        before, _, after = head.rpartition("null")  # "root" is the last key
        return before + _dumps_tree(root, indent, level=1) + after


def loads_parsing_result(text: str | bytes, source: str = "<string>") -> ParsingResult:
    """Parse tree from JSON text; anything malformed raises :class:`SchemaError` naming ``source``."""
    with _loading(source):
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        try:
            data = json.loads(text)
        except RecursionError:  # nested deeper than json's recursion allows
            data = _loads_deep(text)
        return ParsingResult.from_dict(_payload(_check(data, PARSE_SCHEMA, source), "root", source))


def _dumps_tree(root: ParsingResult, indent: int | str | None, level: int = 0) -> str:
    """``json.dumps(root.to_dict(), ensure_ascii=False, indent=indent)`` as if nested at ``level``,
    built without recursion: each node's own fields are dumped by :mod:`json`, the ``children``
    arrays (always the last key) are spliced in from an explicit stack."""
    pad = None if indent is None else (" " * indent if isinstance(indent, int) else str(indent))

    def nl(depth: int) -> str:
        return "" if pad is None else "\n" + pad * depth

    sep = ", " if pad is None else ","
    parts: list[str] = []
    stack: list[tuple[ParsingResult, int] | str] = [(root, level)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        node, depth = item
        text = json.dumps(node._own_dict(), ensure_ascii=False, indent=indent)
        if pad:  # re-indent to this depth (JSON strings hold no raw newlines)
            text = text.replace("\n", nl(depth))
        if not node.children:
            parts.append(text)
            continue
        closing = nl(depth) + "}"
        parts.append(text[: -len(closing)] + sep + nl(depth + 1) + '"children": [' + nl(depth + 2))
        stack.append(nl(depth + 1) + "]" + closing)
        between = sep + nl(depth + 2)
        for i in range(len(node.children) - 1, -1, -1):
            stack.append((node.children[i], depth + 2))
            if i:
                stack.append(between)
    return "".join(parts)


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
_CONSTANTS = {"null": None, "true": True, "false": False, "NaN": float("nan"),
              "Infinity": float("inf"), "-Infinity": float("-inf")}


def _loads_deep(s: str) -> Any:
    """:func:`json.loads` (default options) with explicit stacks instead of recursion."""
    scanstring = json.decoder.scanstring  # type: ignore[attr-defined]  # the C string scanner json uses
    error = json.JSONDecodeError

    def ws(i: int) -> int:  # index of the first non-whitespace character at or after i
        m = _WS.match(s, i)
        return m.end() if m else i

    def key_at(i: int) -> tuple[str, int]:
        if s[i : i + 1] != '"':
            raise error("Expecting property name enclosed in double quotes", s, i)
        key, i = scanstring(s, i + 1, True)
        i = ws(i)
        if s[i : i + 1] != ":":
            raise error("Expecting ':' delimiter", s, i)
        return key, ws(i + 1)

    stack: list[list[Any]] = []  # [open container, pending key (objects)]
    idx = ws(0)
    while True:
        # -- one value starting at idx
        c = s[idx : idx + 1]
        value: Any
        if c == "{":
            idx = ws(idx + 1)
            if s[idx : idx + 1] != "}":
                key, idx = key_at(idx)
                stack.append([{}, key])
                continue
            value, idx = {}, idx + 1
        elif c == "[":
            idx = ws(idx + 1)
            if s[idx : idx + 1] != "]":
                stack.append([[], None])
                continue
            value, idx = [], idx + 1
        elif c == '"':
            value, idx = scanstring(s, idx + 1, True)
        else:
            m = _NUMBER.match(s, idx)
            if m is not None:
                integer, frac, exp = m.groups()
                value = float(integer + (frac or "") + (exp or "")) if frac or exp else int(integer)
                idx = m.end()
            else:
                name = next((n for n in _CONSTANTS if s.startswith(n, idx)), None)
                if name is None:
                    raise error("Expecting value", s, idx)
                value, idx = _CONSTANTS[name], idx + len(name)
        # -- store it; close every container it completes
        while True:
            idx = ws(idx)
            if not stack:
                if idx != len(s):
                    raise error("Extra data", s, idx)
                return value
            top = stack[-1]
            container = top[0]
            is_obj = isinstance(container, dict)
            if is_obj:
                container[top[1]] = value
            else:
                container.append(value)
            c = s[idx : idx + 1]
            if c == ",":
                idx = ws(idx + 1)
                if is_obj:
                    top[1], idx = key_at(idx)
                break
            if c != ("}" if is_obj else "]"):
                raise error("Expecting ',' delimiter", s, idx)
            stack.pop()
            value, idx = container, idx + 1


def dumps_chunking_result(result: ChunkingResult, indent: int | None = None) -> str:
    return json.dumps(_envelope(CHUNKS_SCHEMA, "result", result.to_dict()), ensure_ascii=False, indent=indent)


def loads_chunking_result(text: str | bytes, source: str = "<string>") -> ChunkingResult:
    """Chunking result from JSON text; anything malformed raises :class:`SchemaError` naming ``source``."""
    with _loading(source):
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        data = json.loads(text)
        return ChunkingResult.from_dict(_payload(_check(data, CHUNKS_SCHEMA, source), "result", source))


def save_parsing_result(root: ParsingResult, path: str | Path) -> Path:
    return atomic_write_text(path, dumps_parsing_result(root))


def load_parsing_result(path: str | Path) -> ParsingResult:
    """Read a parse tree written by :func:`save_parsing_result` (typed errors name the file)."""
    with _loading(str(path)):
        text = _read_text(Path(path))
    return loads_parsing_result(text, source=str(path))


def save_chunking_result(result: ChunkingResult, path: str | Path) -> Path:
    return atomic_write_text(path, dumps_chunking_result(result))


def load_chunking_result(path: str | Path) -> ChunkingResult:
    """Read chunks written by :func:`save_chunking_result` (.json) or :func:`write_chunks_jsonl` (.jsonl)."""
    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        return read_chunks_jsonl(path)
    with _loading(str(path)):
        text = _read_text(path)
    return loads_chunking_result(text, source=str(path))


def write_chunks_jsonl(result: ChunkingResult, path: str | Path) -> Path:
    """First line: the envelope with the result metadata; then one chunk per line."""
    head = json.dumps(_envelope(CHUNKS_SCHEMA, "result", {"metadata": result.metadata}), ensure_ascii=False)
    lines: Iterable[str] = (json.dumps(c.to_dict(), ensure_ascii=False) for c in result.chunks)
    return atomic_write_text(path, "\n".join([head, *lines]) + "\n")


def read_chunks_jsonl(path: str | Path) -> ChunkingResult:
    """Read a file written by :func:`write_chunks_jsonl`; a damaged line raises :class:`SchemaError`
    naming the file and the line number."""
    source = str(path)
    with _loading(source):
        lines = [(n, ln) for n, ln in enumerate(_read_text(Path(path)).splitlines(), 1) if ln.strip()]
        if not lines:
            raise SchemaError(f"{source}: empty chunks file")
        head = _check(json.loads(lines[0][1]), CHUNKS_SCHEMA, source)
        result = _payload(head, "result", source)
        if not isinstance(result, dict):
            raise SchemaError(f"{source}: line {lines[0][0]}: 'result' must be an object")
        meta = ChunkingResult.from_dict({"metadata": result.get("metadata")}).metadata
        chunks = []
        for n, line in lines[1:]:
            with _loading(f"{source}: line {n}"):
                chunks.append(Chunk.from_dict(json.loads(line), "chunk"))
        return ChunkingResult(chunks=chunks, metadata=meta)
