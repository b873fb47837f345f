"""Lossless JSON (with schema name + version) for parse trees and chunking results, atomic writes.

Stored documents carry ``{"schema": ..., "version": ...}`` so files written by an older release
stay readable: :func:`loads_parsing_result` / :func:`loads_chunking_result` accept every version
listed in ``_READABLE`` and refuse anything else with a :class:`SchemaError`.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterable
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
        raise SchemaError(f"{source}: schema is {data['schema']!r}, expected {schema!r}")
    if data.get("version") not in _READABLE[schema]:
        raise SchemaError(
            f"{source}: {schema} version {data.get('version')!r} is not readable by this release "
            f"(readable: {sorted(_READABLE[schema])})"
        )
    return data


def dumps_parsing_result(root: ParsingResult, indent: int | None = None) -> str:
    return json.dumps(_envelope(PARSE_SCHEMA, "root", root.to_dict()), ensure_ascii=False, indent=indent)


def loads_parsing_result(text: str, source: str = "<string>") -> ParsingResult:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{source}: invalid JSON ({exc})") from exc
    return ParsingResult.from_dict(_check(data, PARSE_SCHEMA, source)["root"])


def dumps_chunking_result(result: ChunkingResult, indent: int | None = None) -> str:
    return json.dumps(_envelope(CHUNKS_SCHEMA, "result", result.to_dict()), ensure_ascii=False, indent=indent)


def loads_chunking_result(text: str, source: str = "<string>") -> ChunkingResult:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{source}: invalid JSON ({exc})") from exc
    return ChunkingResult.from_dict(_check(data, CHUNKS_SCHEMA, source)["result"])


def save_parsing_result(root: ParsingResult, path: str | Path) -> Path:
    return atomic_write_text(path, dumps_parsing_result(root))


def load_parsing_result(path: str | Path) -> ParsingResult:
    return loads_parsing_result(Path(path).read_text(encoding="utf-8"), source=str(path))


def save_chunking_result(result: ChunkingResult, path: str | Path) -> Path:
    return atomic_write_text(path, dumps_chunking_result(result))


def load_chunking_result(path: str | Path) -> ChunkingResult:
    path = Path(path)
    if path.suffix == ".jsonl":
        return read_chunks_jsonl(path)
    return loads_chunking_result(path.read_text(encoding="utf-8"), source=str(path))


def write_chunks_jsonl(result: ChunkingResult, path: str | Path) -> Path:
    """First line: the envelope with the result metadata; then one chunk per line."""
    head = json.dumps(_envelope(CHUNKS_SCHEMA, "result", {"metadata": result.metadata}), ensure_ascii=False)
    lines: Iterable[str] = (json.dumps(c.to_dict(), ensure_ascii=False) for c in result.chunks)
    return atomic_write_text(path, "\n".join([head, *lines]) + "\n")


def read_chunks_jsonl(path: str | Path) -> ChunkingResult:
    source = str(path)
    with open(path, encoding="utf-8") as fh:
        lines = [ln for ln in fh.read().splitlines() if ln.strip()]
    if not lines:
        raise SchemaError(f"{source}: empty chunks file")
    try:
        head = _check(json.loads(lines[0]), CHUNKS_SCHEMA, source)
        chunks = [Chunk.from_dict(json.loads(ln)) for ln in lines[1:]]
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{source}: invalid JSON line ({exc})") from exc
    return ChunkingResult(chunks=chunks, metadata=dict(head["result"].get("metadata", {})))
