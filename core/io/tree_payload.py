"""The tree payload: a parse tree as one compact ASCII string a source node / Document carries in its
metadata (:data:`TREE_KEY`), so a splitter can chunk it with boxes anywhere; a plain-text tree; and what
a tree's root says about its source.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ..errors import SchemaError
from ..model.elements import ParsingResult, ParsingResultType
from .box_codec import compact_json
from .codec import dumps_parsing_result, loads_parsing_result

__all__ = ["TREE_KEY", "encode_tree", "decode_tree", "text_tree", "source_info"]

#: a compressed parse tree kept on a source document so a splitter can chunk it with boxes
TREE_KEY = "grounded_tree"
_TREE_PREFIX = "z2:"


def _char_x_holders(data: Any) -> Iterator[dict[str, Any]]:
    """Dicts holding a ``char_x`` value, in one fixed order (iterative: deep trees do not recurse)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "char_x" in item:
                yield item
            stack.extend(reversed([v for v in item.values() if isinstance(v, (dict, list))]))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def encode_tree(root: ParsingResult) -> str:
    """A parse tree as one ASCII string: lossless JSON plus all character extents as one
    delta-coded binary stream, both zlib-compressed (3-4x smaller than the JSON)."""
    data = json.loads(dumps_parsing_result(root))
    blobs: list[bytes] = []
    for holder in _char_x_holders(data):
        raw = base64.b64decode(holder["char_x"])
        blobs.append(raw)
        holder["char_x"] = len(raw) // 2
    values = np.frombuffer(b"".join(blobs), dtype="<u2")
    deltas = np.diff(values, prepend=np.uint16(0)).astype("<u2")  # wraps mod 2**16, exactly invertible
    text = zlib.compress(compact_json(data).encode("utf-8"), 9)
    chars = zlib.compress(deltas.tobytes(), 9)
    return f"{_TREE_PREFIX}{base64.b64encode(text).decode('ascii')}.{base64.b64encode(chars).decode('ascii')}"


def decode_tree(value: str, source: str = "<metadata>") -> ParsingResult:
    """Inverse of :func:`encode_tree`; also accepts the plain JSON of ``dumps_parsing_result``."""
    if not isinstance(value, str):
        raise SchemaError(f"{source}: a stored parse tree must be a string, got {type(value).__name__}")
    if not value.startswith(_TREE_PREFIX):
        return loads_parsing_result(value, source=source)
    try:
        text_part, chars_part = value[len(_TREE_PREFIX) :].split(".")
        data = json.loads(zlib.decompress(base64.b64decode(text_part, validate=True)))
        deltas = np.frombuffer(zlib.decompress(base64.b64decode(chars_part, validate=True)), dtype="<u2")
        values = np.cumsum(deltas, dtype=np.uint16).astype("<u2").tobytes()
        pos = 0
        for holder in _char_x_holders(data):
            n = 2 * int(holder["char_x"])
            if pos + n > len(values):
                raise ValueError("character extents are truncated")
            holder["char_x"] = base64.b64encode(values[pos : pos + n]).decode("ascii")
            pos += n
        if pos != len(values):
            raise ValueError("character extents do not match the tree")
    except (ValueError, TypeError, zlib.error) as exc:
        raise SchemaError(f"{source}: stored parse tree is corrupt ({exc})") from exc
    return loads_parsing_result(compact_json(data), source=source)


def text_tree(text: str) -> ParsingResult:
    """A parse tree for plain text without a PDF behind it: ROOT -> one PARAGRAPH holding ``text``
    verbatim, so the chunker's offsets index ``text`` itself (chunks get no boxes)."""
    root = ParsingResult("root", ParsingResultType.ROOT)
    if text.strip():
        root.add_child(ParsingResult("text-0", ParsingResultType.PARAGRAPH, text))
    return root


def source_info(root: ParsingResult) -> dict[str, Any]:
    """What a parse tree's root says about its source: ``path``, ``name``, ``sha256``, ``parser``,
    ``parser_version``, ``page_count`` (empty strings / 0 when unknown)."""
    info = root.info
    raw_source = info.source
    source: Mapping[str, Any] = raw_source if isinstance(raw_source, Mapping) else {}
    path = str(source.get("path", ""))
    return {
        "path": path,
        "name": str(source.get("name") or (path.replace("\\", "/").rsplit("/", 1)[-1] if path else "")),
        "sha256": str(source.get("sha256", "")),
        "parser": str(info.parser or ""),
        "parser_version": str(info.parser_version or ""),
        "page_count": int(info.page_count or 0),
    }
