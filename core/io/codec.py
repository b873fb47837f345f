"""Lossless JSON (with schema name + version) for parse trees and chunking results, atomic writes.

Stored documents carry ``{"schema": ..., "version": ...}`` so files written by an older release
stay readable: :func:`loads_parsing_result` / :func:`loads_chunking_result` accept every version
listed in ``_READABLE`` and refuse anything else with a :class:`SchemaError`.

Parse trees of any depth round-trip: :mod:`json` recurses once per nesting level and gives up
at the interpreter's recursion limit (a tree a few hundred levels deep), so such documents are
written and read by the iterative :func:`_dumps_tree` / :func:`_loads_deep` instead, with the
same text as :func:`json.dumps` would produce.

Writes are atomic (temp file in the target folder + rename). Temp files are named
``.<target name>.<pid>-<random>.grounded.tmp``; a process killed mid-write can leave one behind,
and the next atomic write into that folder removes those whose writer is gone (never other files).
A parse writes ``<name>.json`` + ``<name>.md`` as a pair: both temp files first, then both
renames, and the JSON envelope records the Markdown's sha256 (``markdown_sha256``) so
:func:`load_parse_pair` can tell a consistent pair from a mixed one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import SchemaError
from ..model.chunk import FIELD_NAMES, Chunk, ChunkingResult, stored_chunk_dict, text_hash
from ..model.elements import ParsingResult
from .atomic import atomic_write_files, atomic_write_text
from .jsonl import iter_jsonl

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
    "dumps_chunks_jsonl",
    "write_chunks_jsonl",
    "read_chunks_jsonl",
    "save_parse_pair",
    "load_parse_pair",
]

log = logging.getLogger(__name__)

PARSE_SCHEMA = "grounded.parsing_result"
CHUNKS_SCHEMA = "grounded.chunking_result"
SCHEMA_VERSION = 1
#: version 2: each chunk's metadata in the record's key order (:func:`~grounded.model.chunk.stored_chunk_dict`):
#: the strategy's parameters under ``metadata.strategy_params``, ``metadata.text_hash`` of the
#: content (checked on reading); version 1 (no hash) is still read
CHUNKS_VERSION = 2
_READABLE = {PARSE_SCHEMA: {1}, CHUNKS_SCHEMA: {1, 2}}
_WRITTEN = {PARSE_SCHEMA: SCHEMA_VERSION, CHUNKS_SCHEMA: CHUNKS_VERSION}
def _envelope(schema: str, payload_key: str, payload: Any, **extra: Any) -> dict[str, Any]:
    """``{"schema", "version", **extra, payload_key}``: the payload is always the last key."""
    return {"schema": schema, "version": _WRITTEN[schema], **extra, payload_key: payload}


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


def dumps_parsing_result(root: ParsingResult, indent: int | None = None, *, markdown_sha256: str | None = None) -> str:
    """JSON text of the tree; ``markdown_sha256`` (the companion .md's hash) goes into the envelope."""
    extra = {} if markdown_sha256 is None else {"markdown_sha256": markdown_sha256}
    try:
        return json.dumps(_envelope(PARSE_SCHEMA, "root", root.to_dict(), **extra), ensure_ascii=False, indent=indent)
    except RecursionError:  # a tree deeper than json's recursion allows
        head = json.dumps(_envelope(PARSE_SCHEMA, "root", None, **extra), ensure_ascii=False, indent=indent)
        before, _, after = head.rpartition("null")  # "root" is the last key
        return before + _dumps_tree(root, indent, level=1) + after


def _parse_envelope(text: str | bytes, schema: str, source: str) -> dict[str, Any]:
    """JSON text -> the checked envelope dict (call inside ``_loading``)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    try:
        data = json.loads(text)
    except RecursionError:  # nested deeper than json's recursion allows
        data = _loads_deep(text)
    return _check(data, schema, source)


def loads_parsing_result(text: str | bytes, source: str = "<string>") -> ParsingResult:
    """Parse tree from JSON text; anything malformed raises :class:`SchemaError` naming ``source``."""
    with _loading(source):
        return ParsingResult.from_dict(_payload(_parse_envelope(text, PARSE_SCHEMA, source), "root", source))


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
    payload = {"metadata": result.metadata, "chunks": [_chunk_dict(c) for c in result.chunks]}
    return json.dumps(_envelope(CHUNKS_SCHEMA, "result", payload), ensure_ascii=False, indent=indent)


def _chunk_dict(chunk: Chunk) -> dict[str, Any]:
    """A chunk as chunks JSON version 2 writes it (:func:`stored_chunk_dict`: its metadata as it
    is, with the content's hash). A metadata value that is no JSON value raises
    :class:`SchemaError` naming the chunk and the key (it would be lost or mangled otherwise)."""
    for key, value in chunk.metadata.items():
        if key not in FIELD_NAMES:
            try:
                json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError) as exc:
                raise SchemaError(f"chunk {chunk.id!r}: metadata {key!r} cannot be stored as JSON ({exc})") from exc
    return stored_chunk_dict(chunk)


def _checked(raw: Any, version: int, source: str) -> None:
    """A chunk dict read from chunks JSON ``version``: version 2 records ``text_hash`` of the
    content, which is checked (content edited after writing: its boxes show another text, so
    :class:`SchemaError`); the chunk does not keep it (derived, see :attr:`Chunk.text_hash`)."""
    if version > 1 and isinstance(raw, dict) and isinstance(raw.get("metadata"), dict):
        recorded = raw["metadata"].get("text_hash")
        content = raw.get("content")
        if recorded is not None and isinstance(content, str) and recorded != text_hash(content):
            raise SchemaError(
                f"{source}: chunk {raw.get('id')!r}: its content differs from the text it was written with "
                "(metadata 'text_hash'): edited after writing, its boxes would show another text"
            )


def _chunk_of(data: Any, version: int, where: str, source: str) -> Chunk:
    """A chunk of chunks JSON ``version`` (1 and 2: the metadata as it was written)."""
    chunk = Chunk.from_dict(data, where)
    _checked(data, version, source)
    return chunk


def loads_chunking_result(text: str | bytes, source: str = "<string>") -> ChunkingResult:
    """Chunking result from JSON text; anything malformed raises :class:`SchemaError` naming ``source``."""
    with _loading(source):
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        data = _check(json.loads(text), CHUNKS_SCHEMA, source)
        payload = _payload(data, "result", source)
        result = ChunkingResult.from_dict(payload)
        for raw in payload.get("chunks") or ():
            _checked(raw, data["version"], source)
        return result


def save_parsing_result(root: ParsingResult, path: str | Path) -> Path:
    return atomic_write_text(path, dumps_parsing_result(root))


def save_parse_pair(root: ParsingResult, markdown: str, json_path: str | Path, md_path: str | Path) -> tuple[Path, Path]:
    """Write the tree and its Markdown as a pair: both temp files, then both renames (JSON
    first). The JSON records the Markdown's sha256, so a pair mixed by a crash between the two
    renames is detected by :func:`load_parse_pair`."""
    md = markdown.encode("utf-8")
    text = dumps_parsing_result(root, markdown_sha256=hashlib.sha256(md).hexdigest())
    json_out, md_out = atomic_write_files([(json_path, text.encode("utf-8")), (md_path, md)])
    return json_out, md_out


def load_parse_pair(json_path: str | Path, md_path: str | Path | None = None) -> tuple[ParsingResult, str]:
    """Read ``<name>.json`` + ``<name>.md`` written by :func:`save_parse_pair` (``md_path``
    defaults to the .json's sibling) and check that they belong together: Markdown whose sha256
    differs from the one the JSON recorded raises :class:`SchemaError`. Pairs written without a
    recorded hash (older releases) are returned unchecked."""
    json_path = Path(json_path)
    md_file = Path(md_path) if md_path is not None else json_path.with_suffix(".md")
    source = str(json_path)
    with _loading(source):
        data = _parse_envelope(_read_text(json_path), PARSE_SCHEMA, source)
        root = ParsingResult.from_dict(_payload(data, "root", source))
        expected = data.get("markdown_sha256")
    try:
        md = md_file.read_bytes()
    except OSError as exc:
        raise SchemaError(f"{md_file}: cannot read the Markdown of {json_path} ({exc.strerror or exc})") from exc
    if expected is not None and hashlib.sha256(md).hexdigest() != expected:
        raise SchemaError(
            f"{md_file}: does not belong to {json_path} (its sha256 differs from the one the JSON recorded: "
            "the two were written by different runs); parse the PDF again"
        )
    with _loading(str(md_file)):
        return root, md.decode("utf-8")


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


def dumps_chunks_jsonl(result: ChunkingResult) -> str:
    """The text :func:`write_chunks_jsonl` writes: the envelope with the result metadata on the
    first line, then one chunk per line."""
    head = json.dumps(_envelope(CHUNKS_SCHEMA, "result", {"metadata": result.metadata}), ensure_ascii=False)
    lines: Iterable[str] = (json.dumps(_chunk_dict(c), ensure_ascii=False) for c in result.chunks)
    return "\n".join([head, *lines]) + "\n"


def write_chunks_jsonl(result: ChunkingResult, path: str | Path) -> Path:
    """First line: the envelope with the result metadata; then one chunk per line."""
    return atomic_write_text(path, dumps_chunks_jsonl(result))


def read_chunks_jsonl(path: str | Path) -> ChunkingResult:
    """Read a file written by :func:`write_chunks_jsonl`; a damaged line raises :class:`SchemaError`
    naming the file and the line number."""
    source = str(path)
    with _loading(source):
        lines = list(iter_jsonl(path))  # split at line ends only: a chunk's text may hold U+2028 or U+0085
        if not lines:
            raise SchemaError(f"{source}: empty chunks file")
        head = _check(lines[0][1], CHUNKS_SCHEMA, source)
        result = _payload(head, "result", source)
        if not isinstance(result, dict):
            raise SchemaError(f"{source}: line {lines[0][0]}: 'result' must be an object")
        meta = ChunkingResult.from_dict({"metadata": result.get("metadata")}).metadata
        chunks = []
        for n, item in lines[1:]:
            with _loading(f"{source}: line {n}"):
                chunks.append(_chunk_of(item, head["version"], "chunk", f"{source}: line {n}"))
        return ChunkingResult(chunks=chunks, metadata=meta)
