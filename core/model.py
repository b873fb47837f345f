"""Data types shared by every parser, chunker, adapter and metric (thesis §3.2, Table A.1).

Coordinates are fractions of the page size with the origin at the top-left corner, pages are
1-based. Root metadata of a parse carries each page's size in points (``metadata["pages"]``) so a
fraction can be turned back into points or pixels.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .errors import InvalidBoxError, SchemaError

__all__ = [
    "ParsingResultType",
    "ParsingBoundingBox",
    "ParsingResult",
    "RichToken",
    "Chunk",
    "ChunkingResult",
    "BoxMode",
    "CONTAINER_TYPES",
    "TEXT_TYPES",
    "HEADING_TYPES",
]

# Float overshoot that is silently clamped into [0, 1]; anything beyond is rejected.
_BOX_TOLERANCE = 0.02
_CHAR_X_SCALE = 65535


class ParsingResultType(str, Enum):
    """Unified element classes (thesis Table A.1). Backends map native labels with explicit tables."""

    ROOT = "ROOT"
    # texts
    TITLE = "TITLE"
    PARAGRAPH = "PARAGRAPH"
    SECTION_HEADER = "SECTION_HEADER"
    FOOTNOTE = "FOOTNOTE"
    # lists
    LIST = "LIST"
    LIST_ITEM = "LIST_ITEM"
    REFERENCE_LIST = "REFERENCE_LIST"
    REFERENCE_ITEM = "REFERENCE_ITEM"
    # figures and tables
    CAPTION = "CAPTION"
    FIGURE = "FIGURE"
    TABLE = "TABLE"
    DOC_INDEX = "DOC_INDEX"
    TABLE_ROW = "TABLE_ROW"
    TABLE_CELL = "TABLE_CELL"
    # miscellaneous
    PAGE_FOOTER = "PAGE_FOOTER"
    KEY_VALUE = "KEY_VALUE"
    PAGE_HEADER = "PAGE_HEADER"
    KEY_VALUE_AREA = "KEY_VALUE_AREA"
    FORM_AREA = "FORM_AREA"
    FORMULA = "FORMULA"
    WATERMARK = "WATERMARK"
    # fallback
    UNKNOWN = "UNKNOWN"
    MISSING = "MISSING"

    def __str__(self) -> str:  # "SECTION_HEADER", not "ParsingResultType.SECTION_HEADER"
        return self.value


T = ParsingResultType

#: Nodes whose text lives in their children (their own ``content`` is a rendering, not source text).
CONTAINER_TYPES = frozenset({T.ROOT, T.LIST, T.REFERENCE_LIST, T.TABLE, T.DOC_INDEX, T.TABLE_ROW, T.KEY_VALUE_AREA, T.FORM_AREA})
#: Heading types: they open a section (hierarchy inference, heading paths, Markdown ``#``, levels).
HEADING_TYPES = frozenset({T.TITLE, T.SECTION_HEADER})
#: Types whose content is running text (the ones that get line spans and character boxes).
TEXT_TYPES = frozenset(
    {T.TITLE, T.PARAGRAPH, T.SECTION_HEADER, T.FOOTNOTE, T.LIST_ITEM, T.REFERENCE_ITEM, T.CAPTION, T.TABLE_CELL,
     T.PAGE_FOOTER, T.PAGE_HEADER, T.KEY_VALUE, T.FORMULA, T.WATERMARK, T.UNKNOWN, T.MISSING}
)


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
    out = []
    for v in values:
        v = min(1.0, max(0.0, float(v)))
        out.append(round(v * _CHAR_X_SCALE) / _CHAR_X_SCALE)
    return tuple(out)


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


@dataclass(eq=False)
class ParsingResult:
    """A node of the parse tree; depth-first pre-order traversal from the root is reading order.

    ``metadata`` of a SECTION_HEADER/TITLE holds ``level`` (1 = top). Unmapped native labels keep
    ``metadata["native_label"]``. The root's metadata describes the parse (parser, version,
    elapsed seconds, source path + sha256, page count, ``pages=[{"page", "width", "height"}]``).
    """

    id: str
    type: ParsingResultType
    content: str = ""
    geom: list[ParsingBoundingBox] = field(default_factory=list)
    parent: ParsingResult | None = field(default=None, repr=False)
    children: list[ParsingResult] = field(default_factory=list, repr=False)
    metadata: dict[str, Any] = field(default_factory=dict)
    image: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.type, ParsingResultType):
            self.type = ParsingResultType(self.type)
        for child in self.children:
            child.parent = self

    # -- tree helpers ---------------------------------------------------------------------------
    def add_child(self, child: ParsingResult) -> ParsingResult:
        child.parent = self
        self.children.append(child)
        return child

    def walk(self) -> Iterator[ParsingResult]:
        """Depth-first pre-order (= reading order), iterative so deep trees do not recurse."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def find(self, element_id: str) -> ParsingResult | None:
        return next((n for n in self.walk() if n.id == element_id), None)

    def index(self) -> dict[str, ParsingResult]:
        """Map of element id -> node for the whole subtree."""
        return {n.id: n for n in self.walk()}

    def ancestors(self) -> list[ParsingResult]:
        """Parents from the direct parent up to the root."""
        out, node = [], self.parent
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    @property
    def pages(self) -> list[int]:
        return sorted({b.page for b in self.geom})

    @property
    def level(self) -> int | None:
        lvl = self.metadata.get("level")
        return int(lvl) if lvl is not None else None

    def page_size(self, page: int) -> tuple[float, float]:
        """(width, height) in points of ``page`` (from the root's metadata)."""
        root = self
        while root.parent is not None:
            root = root.parent
        for p in root.metadata.get("pages", ()):
            if p["page"] == page:
                return float(p["width"]), float(p["height"])
        raise KeyError(f"page {page} not described in the root metadata")

    # -- equality / serialization ---------------------------------------------------------------
    # Trees are walked with explicit stacks (never one Python frame per level) so that malformed,
    # very deep backend output can still be compared, serialized and loaded.
    def __eq__(self, other: object) -> bool:
        """Same as ``self.to_dict() == other.to_dict()``, compared node by node."""
        if not isinstance(other, ParsingResult):
            return NotImplemented
        stack = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a is b:
                continue
            if len(a.children) != len(b.children) or a._own_dict() != b._own_dict():
                return False
            stack.extend(zip(a.children, b.children))
        return True

    __hash__ = None  # type: ignore[assignment]

    def _own_dict(self) -> dict[str, Any]:
        """This node's serialized fields without ``children`` (which always comes last)."""
        d: dict[str, Any] = {"id": self.id, "type": self.type.value, "content": self.content}
        if self.geom:
            d["geom"] = [b.to_dict() for b in self.geom]
        if self.metadata:
            d["metadata"] = self.metadata
        if self.image is not None:
            d["image"] = self.image
        return d

    def to_dict(self) -> dict[str, Any]:
        """Nested dict of the subtree (keys: id, type, content[, geom][, metadata][, image][, children])."""
        root = self._own_dict()
        if not self.children:
            return root
        # a stack of child iterators: dicts are created in pre-order, as a recursive build would
        # ("children" is the last key, so adding it before the children are filled keeps key order)
        stack = [(iter(self.children), root.setdefault("children", []))]
        while stack:
            children, kids = stack[-1]
            for child in children:
                d = child._own_dict()
                kids.append(d)
                if child.children:
                    stack.append((iter(child.children), d.setdefault("children", [])))
                    break
            else:
                stack.pop()
        return root

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ParsingResult:
        """Inverse of :meth:`to_dict`, iterative (no recursion limit on the tree depth).

        Every node is validated (keys, types, element type, boxes, character ranges); a malformed
        dict raises :class:`~grounded.errors.SchemaError` naming the element.
        """
        root = cls._node_from_dict(d, "root")
        if root.type == T.ROOT:
            _check_root_metadata(root.metadata, "root")
        stack = [(root, d)]
        while stack:
            node, data = stack.pop()
            for i, cd in enumerate(_array(data, "children", f"element {node.id!r}")):
                child = cls._node_from_dict(cd, f"child {i} of element {node.id!r}")
                node.add_child(child)
                stack.append((child, cd))
        return root

    @classmethod
    def _node_from_dict(cls, d: dict[str, Any], where: str) -> ParsingResult:
        _object(d, where)
        raw_id = d.get("id")
        if not isinstance(raw_id, str) and not _is_int(raw_id):
            raise SchemaError(f"{where}: " + ("missing 'id'" if "id" not in d else f"'id' must be a string, got {_kind(raw_id)}"))
        where = f"element {str(raw_id)!r}"
        raw_type = d.get("type")
        try:
            kind = ParsingResultType(raw_type)
        except ValueError:
            raise SchemaError(
                f"{where}: " + ("missing 'type'" if "type" not in d else f"unknown element type {raw_type!r:.40}")
            ) from None
        content = _text(d, "content", where, default="") or ""
        geom = [ParsingBoundingBox.from_dict(b, f"{where}: geom[{i}]") for i, b in enumerate(_array(d, "geom", where))]
        for i, box in enumerate(geom):  # character ranges index into this element's content
            for j, span in enumerate((box, *box.spans)):
                if span.char_end is not None and span.char_end > len(content):
                    part = f"geom[{i}]" + (f".spans[{j - 1}]" if j else "")
                    raise SchemaError(
                        f"{where}: {part} covers characters up to {span.char_end}, but the content has {len(content)}"
                    )
        metadata = _metadata(d, where)
        level = metadata.get("level")
        if level is not None and not (_is_int(level) or (isinstance(level, float) and level.is_integer())):
            raise SchemaError(f"{where}: metadata.level must be an integer, got {_kind(level)}")
        return cls(id=str(raw_id), type=kind, content=content, geom=geom, metadata=metadata,
                   image=_text(d, "image", where))


@dataclass(slots=True)
class RichToken:
    """One token of the chunker's stream, tied to its element (thesis Fig. 3.5).

    ``char_start``/``char_end`` locate the token inside the element's ``content``; delimiter
    tokens between elements have ``element_id`` None.
    """

    element_id: str | None
    token_idx: int
    token: int
    text: str
    char_start: int
    char_end: int


@dataclass(eq=True)
class Chunk:
    """One retrieval passage. ``metadata`` keys: token_count, strategy, element_ids, heading_path,
    pages, start_char/end_char (``document_text[start_char:end_char]`` is the chunk body),
    body_start (offset of the body inside ``content``; > 0 when headings are prepended)."""

    id: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    geom: list[ParsingBoundingBox] = field(default_factory=list)

    @property
    def body(self) -> str:
        return self.content[int(self.metadata.get("body_start", 0)) :]

    @property
    def pages(self) -> list[int]:
        return sorted({b.page for b in self.geom})

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "metadata": self.metadata,
            "geom": [b.to_dict() for b in self.geom],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "chunk") -> Chunk:
        """Inverse of :meth:`to_dict`; a malformed dict raises :class:`~grounded.errors.SchemaError`."""
        _object(d, where)
        raw_id = d.get("id")
        if not isinstance(raw_id, str) and not _is_int(raw_id):
            raise SchemaError(f"{where}: " + ("missing 'id'" if "id" not in d else f"'id' must be a string, got {_kind(raw_id)}"))
        where = f"chunk {str(raw_id)!r}"
        content = _text(d, "content", where, required=True) or ""
        metadata = _metadata(d, where)
        _check_chunk_metadata(metadata, len(content), where)
        geom = [ParsingBoundingBox.from_dict(b, f"{where}: geom[{i}]") for i, b in enumerate(_array(d, "geom", where))]
        return cls(id=str(raw_id), content=content, metadata=metadata, geom=geom)


_CHUNK_INT_KEYS = ("token_count", "start_char", "end_char", "body_start")
_CHUNK_LIST_KEYS = {"pages": _is_int, "heading_path": lambda v: isinstance(v, str),
                    "element_ids": lambda v: isinstance(v, str), "heading_ids": lambda v: isinstance(v, str)}


def _check_chunk_metadata(meta: dict[str, Any], length: int, where: str) -> None:
    """The chunk metadata keys readers rely on have the types the chunker writes."""
    for key in _CHUNK_INT_KEYS:
        v = meta.get(key)
        if v is not None and (not _is_int(v) or v < 0):
            raise SchemaError(f"{where}: metadata.{key} must be an integer >= 0, got {_kind(v)} {v!r:.40}")
    body_start = meta.get("body_start")
    if body_start is not None and body_start > length:
        raise SchemaError(f"{where}: metadata.body_start {body_start} lies beyond the content ({length} characters)")
    for key, ok in _CHUNK_LIST_KEYS.items():
        v = meta.get(key)
        if v is not None and (not isinstance(v, list) or not all(ok(x) for x in v)):
            raise SchemaError(f"{where}: metadata.{key} must be an array of {'integers' if key == 'pages' else 'strings'}")


@dataclass(eq=True)
class ChunkingResult:
    """All chunks of one document plus metadata: strategy + parameters, tokenizer, and the root
    metadata of the parse they came from (``metadata["document"]``)."""

    chunks: list[Chunk] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"metadata": self.metadata, "chunks": [c.to_dict() for c in self.chunks]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChunkingResult:
        """Inverse of :meth:`to_dict`; a malformed dict raises :class:`~grounded.errors.SchemaError`."""
        _object(d, "result")
        chunks = [Chunk.from_dict(c, f"chunks[{i}]") for i, c in enumerate(_array(d, "chunks", "result"))]
        return cls(chunks=chunks, metadata=_metadata(d, "result"))
