"""Element types and the parse-tree node (thesis Table A.1, Fig. 3.2)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..errors import SchemaError
from ._checks import _array, _check_root_metadata, _is_int, _kind, _metadata, _object, _text
from .boxes import ParsingBoundingBox
from .element_info import ElementStyle, ElementTrace, HeadingInfo, RelabelHistory, RootInfo, TablePlace


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


@dataclass(eq=False)
class ParsingResult:
    """A node of the parse tree; depth-first pre-order traversal from the root is reading order.

    A SECTION_HEADER/TITLE's ``heading.level`` is 1 at the top. Unmapped native labels are kept as
    ``relabel.native_label``. The root's metadata describes the parse (parser, version, elapsed
    seconds, source path + sha256, page count, ``info.pages=[{"page", "width", "height"}]``).
    ``style``, ``heading``, ``relabel``, ``trace``, ``table_place`` and ``info`` are typed views over ``metadata``, the only
    way code reads or writes their keys (:mod:`grounded.model.element_info`).
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

    # -- typed metadata (views over ``metadata``, see grounded.model.element_info) ---------------
    @property
    def style(self) -> ElementStyle:
        """Font size and boldness (headings)."""
        return ElementStyle(self.metadata)

    @property
    def heading(self) -> HeadingInfo:
        """Level, its source and the backend's native level (TITLE / SECTION_HEADER)."""
        return HeadingInfo(self.metadata)

    @property
    def relabel(self) -> RelabelHistory:
        """Native label and the types this element had before a relabel."""
        return RelabelHistory(self.metadata)

    @property
    def trace(self) -> ElementTrace:
        """The backend's own id, parent id and score; the text's alignment to the PDF."""
        return ElementTrace(self.metadata)

    @property
    def table_place(self) -> TablePlace:
        """Row, column and header flag of a TABLE_ROW / TABLE_CELL."""
        return TablePlace(self.metadata)

    @property
    def info(self) -> RootInfo:
        """The parse description a ROOT carries (page sizes, source, parser)."""
        return RootInfo(self.metadata)

    @property
    def level(self) -> int | None:
        lvl = self.heading.level
        return int(lvl) if lvl is not None else None

    def page_size(self, page: int) -> tuple[float, float]:
        """(width, height) in points of ``page`` (from the root's metadata)."""
        root = self
        while root.parent is not None:
            root = root.parent
        for p in root.info.page_sizes():
            if p.page == page:
                return p.width, p.height
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
        level: Any = HeadingInfo(metadata).level  # as loaded: not checked yet
        if level is not None and not (_is_int(level) or (isinstance(level, float) and level.is_integer())):
            raise SchemaError(f"{where}: metadata.level must be an integer, got {_kind(level)}")
        return cls(id=str(raw_id), type=kind, content=content, geom=geom, metadata=metadata,
                   image=_text(d, "image", where))


