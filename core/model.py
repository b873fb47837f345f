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

from .errors import InvalidBoxError

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
    raw = base64.b64decode(text)
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
    def from_dict(cls, d: dict[str, Any]) -> ParsingBoundingBox:
        char_x = d.get("char_x")
        return cls(
            page=int(d["page"]),
            left=d["left"],
            top=d["top"],
            right=d["right"],
            bottom=d["bottom"],
            spans=[cls.from_dict(s) for s in d.get("spans", ())],
            char_start=d.get("char_start"),
            char_end=d.get("char_end"),
            char_x=_decode_char_x(char_x) if isinstance(char_x, str) else (tuple(char_x) if char_x else None),
            mode=d.get("mode"),
            element_id=d.get("element_id"),
            is_heading=bool(d.get("is_heading", False)),
        )


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
        # iterative: no recursion limit on the tree depth
        root = cls._node_from_dict(d)
        stack = [(root, d)]
        while stack:
            node, data = stack.pop()
            for cd in data.get("children", ()):
                child = cls._node_from_dict(cd)
                node.add_child(child)
                stack.append((child, cd))
        return root

    @classmethod
    def _node_from_dict(cls, d: dict[str, Any]) -> ParsingResult:
        return cls(
            id=str(d["id"]),
            type=ParsingResultType(d["type"]),
            content=d.get("content", ""),
            geom=[ParsingBoundingBox.from_dict(b) for b in d.get("geom", ())],
            metadata=dict(d.get("metadata", {})),
            image=d.get("image"),
        )


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
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        return cls(
            id=str(d["id"]),
            content=d["content"],
            metadata=dict(d.get("metadata", {})),
            geom=[ParsingBoundingBox.from_dict(b) for b in d.get("geom", ())],
        )


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
        return cls(chunks=[Chunk.from_dict(c) for c in d.get("chunks", ())], metadata=dict(d.get("metadata", {})))
