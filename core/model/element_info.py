"""Typed records of a parse-tree node's metadata: style, heading, relabel history, and the root's
parse info (page sizes, source, parser).

Each record is a view over the node's ``metadata`` dict, which stays the one place the values
live: the tree JSON keeps its keys and their order byte for byte, and pickling or copying a tree
needs nothing new. Code reads and writes these keys only through the records
(``node.style.size``, ``node.heading.level``, ``node.relabel.relabeled_from``,
``root.info.pages``); ``metadata`` itself is the open-ended bag for what has no typed home (a
backend's unmapped native extras). A getter returns the stored value or ``None`` when the key is
absent; a setter writes the key (in place when it exists, so its position in the JSON does not
move); ``del`` removes it (a no-op when absent).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

__all__ = ["ElementStyle", "HeadingInfo", "RelabelHistory", "ElementTrace", "TablePlace", "RootInfo", "PageSize", "META_KEYS", "MetadataView", "MetaField"]


V = TypeVar("V")


class MetadataView:
    """A typed window on some keys of one metadata dict (no state of its own); subclasses declare
    their keys as :class:`MetaField` class attributes."""

    __slots__ = ("_meta",)

    def __init__(self, metadata: dict[str, Any]) -> None:
        self._meta = metadata

    @classmethod
    def new(cls, **values: Any) -> dict[str, Any]:
        """A fresh metadata dict holding ``values`` (attribute names of this record, written in
        the order given); an unknown name raises :class:`AttributeError`."""
        metadata: dict[str, Any] = {}
        view = cls(metadata)
        for name, value in values.items():
            setattr(view, name, value)
        return metadata


class MetaField(Generic[V]):
    """One metadata key of a :class:`MetadataView`: read (``None`` when absent), written in place,
    deleted (a no-op when absent)."""

    def __init__(self, key: str, doc: str) -> None:
        self.key = key
        self.__doc__ = doc

    @overload
    def __get__(self, view: None, owner: type | None = None) -> MetaField[V]: ...
    @overload
    def __get__(self, view: MetadataView, owner: type | None = None) -> V | None: ...
    def __get__(self, view: MetadataView | None, owner: type | None = None) -> MetaField[V] | V | None:
        if view is None:
            return self
        return view._meta.get(self.key)

    def __set__(self, view: MetadataView, value: V) -> None:
        view._meta[self.key] = value

    def __delete__(self, view: MetadataView) -> None:
        view._meta.pop(self.key, None)


class ElementStyle(MetadataView):
    """How a heading (or a first-line PAGE_HEADER turned heading) is set, read from the text layer
    or the backend: the evidence :func:`grounded.parsers.hierarchy.assign_heading_levels` uses."""

    __slots__ = ()
    size = MetaField[float]("font_size", "most common font size in points, rounded to 0.5")
    bold = MetaField[bool]("font_bold", "whether most of its characters are bold")


class HeadingInfo(MetadataView):
    """A TITLE / SECTION_HEADER's level (1 = top) and where it came from."""

    __slots__ = ()
    level = MetaField[int]("level", "the heading level post-processing decided (1 = top)")
    source = MetaField[str]("level_source", "which rule decided ``level`` (native, font size, numbering...)")
    native_level = MetaField[int]("native_level", "the level the backend gave, when it gives one")


class RelabelHistory(MetadataView):
    """What an element was before grounded changed its type."""

    __slots__ = ()
    native_label = MetaField[str]("native_label", "the backend's own label, kept when mapped to another type")
    relabeled_from = MetaField[str]("relabeled_from", "the type before a relabel (kept furniture, first-line heading)")
    demoted_from = MetaField[str]("demoted_from", "set when a heading became a PARAGRAPH")
    promoted_from = MetaField[str]("promoted_from", "set when a section header became the TITLE")
    running_furniture = MetaField[bool]("running_furniture", "set when it repeats on other pages' margins")


class ElementTrace(MetadataView):
    """How an element traces back to its source: the backend's own ids and score, and how well its
    text matched the PDF's characters."""

    __slots__ = ()
    native_id = MetaField[str]("native_id", "the backend's own id (grounded's ids are root, e1, e2...)")
    native_parent_id = MetaField[str]("native_parent_id", "the backend's id of its parent element")
    score = MetaField[float]("score", "the backend's detection confidence")
    char_alignment = MetaField[float]("char_alignment", "share of the content aligned to PDF characters")


class TablePlace(MetadataView):
    """Where a TABLE_ROW / TABLE_CELL sits in its table's grid."""

    __slots__ = ()
    row = MetaField[int]("row", "0-based row")
    col = MetaField[int]("col", "0-based column (a cell)")
    header = MetaField[bool]("header", "set on header rows and cells")


@dataclass(frozen=True, slots=True)
class PageSize:
    """One page's number (1-based) and size in points."""

    page: int
    width: float
    height: float


class RootInfo(MetadataView):
    """The root's description of the parse. ``pages`` is a list of per-page dicts, each with
    ``page``, ``width`` and ``height`` and whatever else a parser records about the page (text
    source, OCR budget, damage): :meth:`page_sizes` is its typed reading."""

    __slots__ = ()
    pages = MetaField[list[dict[str, Any]]]("pages", "per-page dicts: page, width, height, parser extras")
    source = MetaField[dict[str, Any]]("source", "the parsed file: name, path, sha256, size...")
    parser = MetaField[str]("parser", "the registered name of the parser that built the tree")
    parser_version = MetaField[str]("parser_version", "the version of the tool behind the parser")
    elapsed_seconds = MetaField[float]("elapsed_seconds", "how long the parse took")
    page_count = MetaField[int]("page_count", "pages in the PDF")
    body_font_size = MetaField[float]("body_font_size", "the most common paragraph font size (points)")
    pdf_warnings = MetaField[list[str]]("pdf_warnings", "what MuPDF said while opening a damaged PDF")
    pdf_repaired = MetaField[bool]("pdf_repaired", "whether MuPDF had to repair the file")

    def page_sizes(self) -> Iterator[PageSize]:
        """Each described page's number and size, in the order the parser listed them."""
        for p in self.pages or ():
            yield PageSize(int(p["page"]), float(p["width"]), float(p["height"]))

    def page_numbers(self) -> list[int]:
        """The described pages' numbers, in the parser's order."""
        return [int(p["page"]) for p in self.pages or ()]


#: Every metadata key a record above reads or writes.
META_KEYS = frozenset(
    {"font_size", "font_bold", "level", "level_source", "native_level", "native_label", "relabeled_from",
     "demoted_from", "promoted_from", "running_furniture", "native_id", "native_parent_id", "score",
     "char_alignment", "row", "col", "header", "pages", "source", "parser", "parser_version", "elapsed_seconds", "page_count",
     "body_font_size", "pdf_warnings", "pdf_repaired"}
)
