"""Boxes on a page: LTRB fractions, line spans, character extents; how a chunk box was made."""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from ..errors import InvalidBoxError, SchemaError
from ._checks import _array, _is_number, _kind, _object, _opt_int, _text

# Float overshoot that is silently clamped into [0, 1]; anything beyond is rejected.
_BOX_TOLERANCE = 0.02
_CHAR_X_SCALE = 65535
class BoxMode(str, Enum):
    """How a chunk box was obtained (recorded on every chunk box)."""

    EXACT = "exact"  # token char spans -> PDF character boxes, unioned per line
    LINE = "line"  # thesis: constant token density -> line index, +-1 line
    ELEMENT = "element"  # whole element box (no line spans known)

    def __str__(self) -> str:
        return self.value


def _clamp_fraction(value: float, name: str) -> float:
    if not math.isfinite(value):
        raise InvalidBoxError(f"{name}={value!r} is not a finite number")
    if value < 0.0:
        if value < -_BOX_TOLERANCE:
            raise InvalidBoxError(f"{name}={value:.4f} lies outside the page (< 0)")
        return 0.0
    if value > 1.0:
        if value > 1.0 + _BOX_TOLERANCE:
            raise InvalidBoxError(f"{name}={value:.4f} lies outside the page (> 1)")
        return 1.0
    return float(value)


def _quantize_char_x(values: tuple[float, ...] | list[float]) -> tuple[float, ...]:
    """Each value clamped to [0, 1] and rounded (half to even, as ``round``) to a multiple of
    1/_CHAR_X_SCALE; vectorized (a hot path: every line span of every element)."""
    arr = np.asarray(values, dtype=np.float64)
    if np.isnan(arr).any():  # as round() does
        raise ValueError("cannot convert float NaN to integer")
    # + 0.0: -0.0 becomes 0.0, as max(0.0, -0.0) gives
    return tuple((np.rint(np.clip(arr, 0.0, 1.0) * _CHAR_X_SCALE) / _CHAR_X_SCALE + 0.0).tolist())


def _encode_char_x(values: tuple[float, ...]) -> str:
    data = bytearray()
    for v in values:
        data += int(round(v * _CHAR_X_SCALE)).to_bytes(2, "little")
    return base64.b64encode(bytes(data)).decode("ascii")


def _decode_char_x(text: str) -> tuple[float, ...]:
    raw = base64.b64decode(text, validate=True)
    if len(raw) % 2:
        raise ValueError(f"{len(raw)} bytes of char_x data (two per value expected)")
    return tuple(int.from_bytes(raw[i : i + 2], "little") / _CHAR_X_SCALE for i in range(0, len(raw), 2))


@dataclass(eq=True, slots=True)
class ParsingBoundingBox:
    """A box on one page, LTRB fractions of the page, origin top-left; ``spans`` are line boxes.

    A line span may carry the character range it covers inside its element's ``content``
    (``char_start``/``char_end``) and each character's horizontal extent ``char_x`` =
    ``(x0, x1, x0, x1, ...)`` (fractions, quantized to 1/65535 so JSON round trips are exact).
    That is what exact chunk boxes are built from. Characters of the range that have no box in the
    PDF (e.g. a synthetic space joining two words) repeat their neighbour's edge.

    Chunk boxes also record where they came from: ``mode`` (:class:`BoxMode`), the source
    ``element_id`` and whether the box belongs to a prepended heading (``is_heading``).
    """

    page: int
    left: float
    top: float
    right: float
    bottom: float
    spans: list[ParsingBoundingBox] = field(default_factory=list)
    char_start: int | None = None
    char_end: int | None = None
    char_x: tuple[float, ...] | None = None
    mode: str | None = None
    element_id: str | None = None
    is_heading: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.page, int) or isinstance(self.page, bool) or self.page < 1:
            raise InvalidBoxError(f"page={self.page!r} must be an int >= 1")
        self.left = _clamp_fraction(self.left, "left")
        self.top = _clamp_fraction(self.top, "top")
        self.right = _clamp_fraction(self.right, "right")
        self.bottom = _clamp_fraction(self.bottom, "bottom")
        if self.right < self.left:
            if self.left - self.right > _BOX_TOLERANCE:
                raise InvalidBoxError(f"right={self.right:.4f} < left={self.left:.4f}")
            self.right = self.left
        if self.bottom < self.top:
            if self.top - self.bottom > _BOX_TOLERANCE:
                raise InvalidBoxError(f"bottom={self.bottom:.4f} < top={self.top:.4f}")
            self.bottom = self.top
        if self.char_x is not None:
            self.char_x = _quantize_char_x(self.char_x)
            if self.char_start is None or self.char_end is None:
                raise InvalidBoxError("char_x given without char_start/char_end")
            if len(self.char_x) != 2 * (self.char_end - self.char_start):
                raise InvalidBoxError(
                    f"char_x has {len(self.char_x)} values for {self.char_end - self.char_start} characters"
                )
        if self.mode is not None:
            self.mode = str(self.mode)

    # -- construction / conversion -------------------------------------------------------------
    @classmethod
    def trusted(
        cls,
        page: int,
        left: float,
        top: float,
        right: float,
        bottom: float,
        spans: list[ParsingBoundingBox] | None = None,
        *,
        mode: str | None = None,
        element_id: str | None = None,
        is_heading: bool = False,
    ) -> ParsingBoundingBox:
        """Build from coordinates taken from already validated boxes, skipping validation (hot path)."""
        box = object.__new__(cls)
        box.page, box.left, box.top, box.right, box.bottom = page, left, top, right, bottom
        box.spans = spans if spans is not None else []
        box.char_start = box.char_end = box.char_x = None
        box.mode, box.element_id, box.is_heading = mode, element_id, is_heading
        return box

    @classmethod
    def from_points(
        cls, page: int, x0: float, y0: float, x1: float, y1: float, width: float, height: float, **kwargs: Any
    ) -> ParsingBoundingBox:
        """Build from top-left-origin PDF points on a page of ``width`` x ``height`` points."""
        if width <= 0 or height <= 0:
            raise InvalidBoxError(f"page size {width}x{height} is not positive")
        return cls(page, x0 / width, y0 / height, x1 / width, y1 / height, **kwargs)

    def to_points(self, width: float, height: float) -> tuple[float, float, float, float]:
        return (self.left * width, self.top * height, self.right * width, self.bottom * height)

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def area(self) -> float:
        return max(0.0, self.width) * max(0.0, self.height)

    def intersection_area(self, other: ParsingBoundingBox) -> float:
        if self.page != other.page:
            return 0.0
        w = min(self.right, other.right) - max(self.left, other.left)
        h = min(self.bottom, other.bottom) - max(self.top, other.top)
        return w * h if w > 0 and h > 0 else 0.0

    def iou(self, other: ParsingBoundingBox) -> float:
        inter = self.intersection_area(other)
        union = self.area + other.area - inter
        return inter / union if union > 0 else 0.0

    def union(self, other: ParsingBoundingBox) -> ParsingBoundingBox:
        if self.page != other.page:
            raise InvalidBoxError("cannot unite boxes on different pages")
        return ParsingBoundingBox(
            self.page,
            min(self.left, other.left),
            min(self.top, other.top),
            max(self.right, other.right),
            max(self.bottom, other.bottom),
        )

    @classmethod
    def enclosing(cls, boxes: list[ParsingBoundingBox], **kwargs: Any) -> ParsingBoundingBox:
        """Smallest box around ``boxes`` (all on one page)."""
        if not boxes:
            raise InvalidBoxError("no boxes to enclose")
        pages = {b.page for b in boxes}
        if len(pages) != 1:
            raise InvalidBoxError(f"boxes lie on several pages {sorted(pages)}")
        return cls(
            boxes[0].page,
            min(b.left for b in boxes),
            min(b.top for b in boxes),
            max(b.right for b in boxes),
            max(b.bottom for b in boxes),
            **kwargs,
        )

    def char_box(self, start: int, end: int) -> ParsingBoundingBox | None:
        """Box of element characters ``[start, end)`` on this line (None if disjoint or unknown)."""
        if self.char_x is None or self.char_start is None or self.char_end is None:
            return None
        lo, hi = max(start, self.char_start), min(end, self.char_end)
        if lo >= hi:
            return None
        i, j = lo - self.char_start, hi - 1 - self.char_start
        xs = self.char_x[2 * i : 2 * j + 2]
        return ParsingBoundingBox.trusted(self.page, min(xs), self.top, max(xs), self.bottom)

    # -- serialization --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "page": self.page,
            "left": self.left,
            "top": self.top,
            "right": self.right,
            "bottom": self.bottom,
        }
        if self.spans:
            d["spans"] = [s.to_dict() for s in self.spans]
        if self.char_start is not None:
            d["char_start"] = self.char_start
            d["char_end"] = self.char_end
        if self.char_x is not None:
            d["char_x"] = _encode_char_x(self.char_x)
        if self.mode is not None:
            d["mode"] = self.mode
        if self.element_id is not None:
            d["element_id"] = self.element_id
        if self.is_heading:
            d["is_heading"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "box") -> ParsingBoundingBox:
        """Inverse of :meth:`to_dict`; a malformed dict raises :class:`~grounded.errors.SchemaError`."""
        _object(d, where)
        page = d.get("page")
        if isinstance(page, float) and page.is_integer():
            page = int(page)
        if not isinstance(page, int) or isinstance(page, bool):
            raise SchemaError(f"{where}: " + ("missing 'page'" if "page" not in d else f"'page' must be an integer, got {_kind(page)}"))
        coords = []
        for key in ("left", "top", "right", "bottom"):
            if key not in d:
                raise SchemaError(f"{where}: missing {key!r}")
            v = d[key]
            if not _is_number(v):
                raise SchemaError(f"{where}: {key!r} must be a number, got {_kind(v)}")
            coords.append(v)
        spans = [cls.from_dict(s, f"{where}.spans[{i}]") for i, s in enumerate(_array(d, "spans", where))]
        char_start, char_end = _opt_int(d, "char_start", where), _opt_int(d, "char_end", where)
        if (char_start is None) != (char_end is None):
            raise SchemaError(f"{where}: 'char_start' and 'char_end' must be given together")
        if char_start is not None and char_end is not None and not 0 <= char_start <= char_end:
            raise SchemaError(f"{where}: character range [{char_start}, {char_end}) is not valid")
        raw_x = d.get("char_x")
        char_x: tuple[float, ...] | None = None
        if isinstance(raw_x, str):
            try:
                char_x = _decode_char_x(raw_x)
            except ValueError as exc:  # binascii.Error is a ValueError
                raise SchemaError(f"{where}: 'char_x' is not valid base64 data ({exc})") from None
        elif isinstance(raw_x, list):
            if not all(_is_number(v) and math.isfinite(v) for v in raw_x):
                raise SchemaError(f"{where}: 'char_x' must hold numbers only")
            char_x = tuple(raw_x) or None
        elif raw_x is not None:
            raise SchemaError(f"{where}: 'char_x' must be a string or an array, got {_kind(raw_x)}")
        is_heading = d.get("is_heading", False)
        if not isinstance(is_heading, bool):
            raise SchemaError(f"{where}: 'is_heading' must be true or false, got {_kind(is_heading)}")
        try:
            return cls(
                page=page,
                left=coords[0],
                top=coords[1],
                right=coords[2],
                bottom=coords[3],
                spans=spans,
                char_start=char_start,
                char_end=char_end,
                char_x=char_x,
                mode=_text(d, "mode", where),
                element_id=_text(d, "element_id", where),
                is_heading=is_heading,
            )
        except InvalidBoxError as exc:
            raise SchemaError(f"{where}: invalid box ({exc})") from None


def body_pages(boxes: Iterable[ParsingBoundingBox]) -> list[int]:
    """The pages a chunk's text lies on: the pages of its body boxes, sorted, once each. A
    prepended heading's box (``is_heading``) names where the section began, not where the text is
    (a node whose heading ends page 1 and whose text is on page 2 is on page 2); a chunk that has
    only heading boxes is on their pages. The one rule for ``Chunk.pages`` and every surface's
    ``page``/``page_label``/``pages``."""
    boxes = list(boxes)
    body = {int(b.page) for b in boxes if not b.is_heading}
    return sorted(body or {int(b.page) for b in boxes})
