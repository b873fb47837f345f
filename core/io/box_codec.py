"""The box codec: chunk boxes as vector-store metadata (used by both framework adapters) and as the
Parquet/LanceDB box struct.

Two forms of the same payload:

* **flat** (default): every list becomes a compact JSON string and every other value is a scalar,
  so any vector store keeps it (Chroma, ``filter_complex_metadata``, SQL-backed stores);
* **nested** (``flat=False``): ``boxes`` is a list of small dicts, lists stay lists - for
  in-memory stores and JSON document stores.

A box dict uses short keys: ``p`` page (1-based), ``b`` ``[left, top, right, bottom]`` fractions of
the page (origin top-left, rounded to 5 decimals ~ 0.01 pt), ``s`` its line boxes (omitted when the
box is a single line), ``m`` box mode, ``e`` element id, ``h`` 1 for a prepended heading.
:func:`boxes_from_metadata` reads either form (and full ``ParsingBoundingBox.to_dict`` dicts) back.

``text_hash`` (:data:`TEXT_HASH_KEY`) is a short hash of the exact text the boxes belong to (a
Document's ``page_content``, a node's text). A splitter that copies metadata onto parts of that
text (LangChain's ``RecursiveCharacterTextSplitter``, LlamaIndex's ``SentenceSplitter``) copies the
hash too, so ``boxes_from_metadata(metadata, text=part_text)`` sees the mismatch and returns no
boxes (one :class:`GroundingWarning`) instead of the whole parent's boxes.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import SchemaError
from ..model.boxes import ParsingBoundingBox
from ..model.chunk import text_hash

__all__ = [
    "BOXES_KEY",
    "FURNITURE_BOXES_KEY",
    "TEXT_HASH_KEY",
    "GroundingWarning",
    "text_hash",
    "boxes_to_metadata",
    "boxes_from_metadata",
    "box_struct",
]

BOXES_KEY = "boxes"
#: boxes that grounding found for a chunk outside the parse tree (page furniture)
FURNITURE_BOXES_KEY = "grounding_furniture_boxes"
#: short hash of the exact text the boxes were made for (see :func:`text_hash`)
TEXT_HASH_KEY = "text_hash"
_DECIMALS = 5


class GroundingWarning(UserWarning):
    """Boxes were withheld because they do not belong to the text at hand (it was re-split or
    edited after grounding); highlighting them would point at the wrong region. The message has its
    control characters escaped (a ``file_path`` with a newline or an ANSI escape reaches no terminal raw)."""

    def __init__(self, *args: object) -> None:
        from ..errors import escape_controls

        super().__init__(*(escape_controls(a) if isinstance(a, str) else a for a in args))


_STALE_MESSAGE = (
    "boxes withheld: the text differs from the text its boxes were made for (metadata 'text_hash'), "
    "so it was re-split or edited after grounding and the boxes would show another region. Split with "
    "GroundedTextSplitter / GroundedNodeParser to get the boxes of every part."
)


def compact_json(value: Any) -> str:
    """``value`` as compact JSON (no spaces, non-ASCII kept): the form of every JSON string in metadata."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _ltrb(box: ParsingBoundingBox) -> list[float]:
    return [round(box.left, _DECIMALS), round(box.top, _DECIMALS), round(box.right, _DECIMALS), round(box.bottom, _DECIMALS)]


def _box_dict(box: ParsingBoundingBox, line_spans: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"p": box.page, "b": _ltrb(box)}
    if line_spans and box.spans:
        lines = [_ltrb(s) for s in box.spans]
        if len(lines) > 1 or lines[0] != d["b"]:
            d["s"] = lines
    if box.mode is not None:
        d["m"] = box.mode
    if box.element_id is not None:
        d["e"] = box.element_id
    if box.is_heading:
        d["h"] = 1
    return d


def boxes_to_metadata(
    geom: Iterable[ParsingBoundingBox], flat: bool = False, *, line_spans: bool = True
) -> list[dict[str, Any]] | str:
    """Chunk boxes -> compact dicts (nested) or one compact JSON string (``flat=True``).

    Character extents (``char_x``) are dropped: highlighting needs lines, not characters.
    ``line_spans=False`` keeps only one box per page run (smaller, coarser).
    """
    out = [_box_dict(b, line_spans) for b in geom]
    return compact_json(out) if flat else out


def _ltrb_box(page: int, values: Sequence[Any], **kwargs: Any) -> ParsingBoundingBox:
    left, top, right, bottom = (float(v) for v in values)
    return ParsingBoundingBox(page, left, top, right, bottom, **kwargs)


def _box_from_compact(d: Mapping[str, Any]) -> ParsingBoundingBox:
    page = int(d["p"])
    spans = [_ltrb_box(page, s) for s in d.get("s", ())]
    return _ltrb_box(page, d["b"], spans=spans, mode=d.get("m"), element_id=d.get("e"), is_heading=bool(d.get("h", 0)))


def _box_from_any(d: Any, where: str = "box") -> ParsingBoundingBox:
    if isinstance(d, ParsingBoundingBox):
        return d
    if isinstance(d, Mapping):
        if "p" in d and "b" in d:
            return _box_from_compact(d)
        if "heading" in d and "left" in d:  # the Parquet / LanceDB box struct
            return _box_from_struct(d, where)
        if "page" in d:
            return ParsingBoundingBox.from_dict(dict(d))
    raise SchemaError(f"not a grounded box: {str(d)[:80]!r}")


def boxes_from_metadata(meta_or_value: Any, text: str | None = None) -> list[ParsingBoundingBox]:
    """Boxes from a metadata mapping (reads its ``boxes`` key) or from the value itself: a flat JSON
    string, a list of compact dicts, a list of ``ParsingBoundingBox.to_dict`` dicts or of boxes.

    With ``text`` (the Document's ``page_content`` / the node's text) and a mapping that records
    ``text_hash``, boxes made for another text (a part of a re-split chunk that copied its parent's
    metadata) are not returned: ``[]`` and one :class:`GroundingWarning`. Without ``text_hash`` (or
    without ``text``) the boxes are returned unchecked.

    A mapping without ``boxes`` gives ``[]``; anything unreadable raises :class:`SchemaError`.
    """
    value = meta_or_value
    if isinstance(value, Mapping) and not ("p" in value and "b" in value):
        if text is not None:
            recorded = value.get(TEXT_HASH_KEY)
            if recorded is not None and value.get(BOXES_KEY) and str(recorded) != text_hash(text):
                warnings.warn(_STALE_MESSAGE, GroundingWarning, stacklevel=2)
                return []
        value = value.get(BOXES_KEY)
        if value is None:
            return []
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"box metadata is not valid JSON ({exc})") from exc
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, Sequence):
        raise SchemaError(f"box metadata must be a list or a JSON string, got {type(value).__name__}")
    try:
        return [_box_from_any(d, f"boxes[{i}]") for i, d in enumerate(value)]
    except SchemaError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"box metadata is malformed ({type(exc).__name__}: {exc})") from exc


# -- the Parquet / LanceDB box struct --------------------------------------------------------------
def box_struct(b: ParsingBoundingBox) -> dict[str, Any]:
    """One box as the Parquet/LanceDB box struct (``grounded.ingest.rows.box_type``)."""
    return {
        "page": int(b.page),
        "left": float(b.left),
        "top": float(b.top),
        "right": float(b.right),
        "bottom": float(b.bottom),
        "mode": b.mode,
        "heading": bool(b.is_heading),
        "element_id": b.element_id,
        "spans": [{"left": float(s.left), "top": float(s.top), "right": float(s.right), "bottom": float(s.bottom)} for s in b.spans],
    }


def _fraction(d: Mapping[str, Any], key: str, where: str) -> float:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SchemaError(f"{where}: {key!r} must be a number, got {value!r}")
    return float(value)


def _box_from_struct(d: Mapping[str, Any], where: str = "box") -> ParsingBoundingBox:
    """A Parquet/LanceDB box struct (:func:`box_struct`) back; a malformed one raises
    :class:`SchemaError` naming ``where`` and the field."""
    page = d.get("page")
    if isinstance(page, bool) or not isinstance(page, (int, np.integer)) or page < 1:
        raise SchemaError(f"{where}: 'page' must be an integer >= 1, got {page!r}")
    page = int(page)
    sides = ("left", "top", "right", "bottom")
    spans = [_ltrb_box(page, [_fraction(s, k, f"{where}.spans[{i}]") for k in sides]) for i, s in enumerate(d.get("spans") or ())]
    left, top, right, bottom = (_fraction(d, k, where) for k in sides)
    return ParsingBoundingBox(
        page, left, top, right, bottom,
        spans=spans, mode=d.get("mode"), element_id=d.get("element_id"), is_heading=bool(d.get("heading") or d.get("is_heading")),
    )
