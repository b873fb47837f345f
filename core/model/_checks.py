"""Validation of stored JSON: every field checked, anything wrong is a SchemaError naming where."""

from __future__ import annotations

import math
from typing import Any

from ..errors import SchemaError

# -- validation of stored JSON ----------------------------------------------------------------------
# ``from_dict`` reads what json.loads produced from a file that may be damaged: every field is
# checked for presence and type, and anything wrong becomes a SchemaError naming where it is
# (``element 'p3-e12': geom[0].spans[2]: missing 'right'``); the serialization layer adds the file.
_MAX_METADATA_DEPTH = 64


def _kind(value: Any) -> str:
    return "null" if value is None else {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
                                         int: "an integer", float: "a number"}.get(type(value), type(value).__name__)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaError(f"{where}: expected an object, got {_kind(value)}")
    return value


def _array(d: dict[str, Any], key: str, where: str) -> list[Any]:
    value = d.get(key, ())
    if value is None or value == ():
        return []
    if not isinstance(value, list):
        raise SchemaError(f"{where}: {key!r} must be an array, got {_kind(value)}")
    return value


def _text(d: dict[str, Any], key: str, where: str, *, required: bool = False, default: str | None = None) -> str | None:
    if key not in d:
        if required:
            raise SchemaError(f"{where}: missing {key!r}")
        return default
    value = d[key]
    if value is None and not required:
        return default
    if not isinstance(value, str):
        raise SchemaError(f"{where}: {key!r} must be a string, got {_kind(value)}")
    return value


def _opt_int(d: dict[str, Any], key: str, where: str) -> int | None:
    value = d.get(key)
    if value is None:
        return None
    if _is_int(value):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise SchemaError(f"{where}: {key!r} must be an integer, got {_kind(value)} {value!r:.40}")


def _metadata(d: dict[str, Any], where: str) -> dict[str, Any]:
    value = d.get("metadata")
    if value is None:
        return {}
    meta = dict(_object(value, f"{where}: metadata"))
    # no value nested deeper than _MAX_METADATA_DEPTH (consumers copy metadata recursively)
    stack: list[tuple[Any, int]] = [(meta, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > _MAX_METADATA_DEPTH:
            raise SchemaError(f"{where}: metadata nested deeper than {_MAX_METADATA_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return meta


def _check_root_metadata(meta: dict[str, Any], where: str) -> None:
    """The root metadata keys consumers rely on: page sizes, page count, source."""
    pages = meta.get("pages")
    if pages is not None:
        if not isinstance(pages, list):
            raise SchemaError(f"{where}: metadata.pages must be an array, got {_kind(pages)}")
        for i, p in enumerate(pages):
            at = f"{where}: metadata.pages[{i}]"
            _object(p, at)
            if not _is_int(p.get("page")) or p["page"] < 1:
                raise SchemaError(f"{at}: 'page' must be an integer >= 1, got {p.get('page')!r:.40}")
            for key in ("width", "height"):
                v = p.get(key)
                if not _is_number(v) or not math.isfinite(v) or v < 0:
                    raise SchemaError(f"{at}: {key!r} must be a number >= 0, got {v!r:.40}")
    count = meta.get("page_count")
    if count is not None and (not _is_int(count) or count < 0):
        raise SchemaError(f"{where}: metadata.page_count must be an integer >= 0, got {count!r:.40}")
    source = meta.get("source")
    if source is not None and not isinstance(source, dict):
        raise SchemaError(f"{where}: metadata.source must be an object, got {_kind(source)}")


