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
from typing import Any

__all__ = ["ElementStyle", "HeadingInfo", "RelabelHistory", "ElementTrace", "TablePlace", "RootInfo", "PageSize", "META_KEYS", "MetadataView", "metadata_field"]


class MetadataView:
    """A typed window on some keys of one metadata dict (no state of its own); subclasses declare
    their keys with :func:`metadata_field`."""

    __slots__ = ("_meta",)

    def __init__(self, metadata: dict[str, Any]) -> None:
        self._meta = metadata

    def _get(self, key: str) -> Any:
        return self._meta.get(key)

    def _set(self, key: str, value: Any) -> None:
        self._meta[key] = value

    def _delete(self, key: str) -> None:
        self._meta.pop(key, None)


def metadata_field(key: str, doc: str) -> property:
    """A property reading, writing and deleting ``metadata[key]`` of a :class:`MetadataView`."""
    return property(
        lambda self: self._get(key), lambda self, value: self._set(key, value), lambda self: self._delete(key), doc=doc
    )


class ElementStyle(MetadataView):
    """How a heading (or a first-line PAGE_HEADER turned heading) is set, read from the text layer
    or the backend: the evidence :func:`grounded.parsers.hierarchy.assign_heading_levels` uses."""

    __slots__ = ()
    size: float | None = metadata_field("font_size", "most common font size in points, rounded to 0.5")  # type: ignore[assignment]
    bold: bool | None = metadata_field("font_bold", "whether most of its characters are bold")  # type: ignore[assignment]


class HeadingInfo(MetadataView):
    """A TITLE / SECTION_HEADER's level (1 = top) and where it came from."""

    __slots__ = ()
    level: int | None = metadata_field("level", "the heading level post-processing decided (1 = top)")  # type: ignore[assignment]
    source: str | None = metadata_field("level_source", "which rule decided ``level`` (native, font size, numbering...)")  # type: ignore[assignment]
    native_level: int | None = metadata_field("native_level", "the level the backend gave, when it gives one")  # type: ignore[assignment]


class RelabelHistory(MetadataView):
    """What an element was before grounded changed its type."""

    __slots__ = ()
    native_label: str | None = metadata_field("native_label", "the backend's own label, kept when mapped to another type")  # type: ignore[assignment]
    relabeled_from: str | None = metadata_field("relabeled_from", "the type before a relabel (kept furniture, first-line heading)")  # type: ignore[assignment]
    demoted_from: str | None = metadata_field("demoted_from", "set when a heading became a PARAGRAPH")  # type: ignore[assignment]
    promoted_from: str | None = metadata_field("promoted_from", "set when a section header became the TITLE")  # type: ignore[assignment]
    running_furniture: bool | None = metadata_field("running_furniture", "set when it repeats on other pages' margins")  # type: ignore[assignment]


class ElementTrace(MetadataView):
    """How an element traces back to its source: the backend's own ids and score, and how well its
    text matched the PDF's characters."""

    __slots__ = ()
    native_id: str | None = metadata_field("native_id", "the backend's own id (grounded's ids are root, e1, e2...)")  # type: ignore[assignment]
    native_parent_id: str | None = metadata_field("native_parent_id", "the backend's id of its parent element")  # type: ignore[assignment]
    score: float | None = metadata_field("score", "the backend's detection confidence")  # type: ignore[assignment]
    char_alignment: float | None = metadata_field("char_alignment", "share of the content aligned to PDF characters")  # type: ignore[assignment]


class TablePlace(MetadataView):
    """Where a TABLE_ROW / TABLE_CELL sits in its table's grid."""

    __slots__ = ()
    row: int | None = metadata_field("row", "0-based row")  # type: ignore[assignment]
    col: int | None = metadata_field("col", "0-based column (a cell)")  # type: ignore[assignment]
    header: bool | None = metadata_field("header", "set on header rows and cells")  # type: ignore[assignment]


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
    pages: list[dict[str, Any]] | None = metadata_field("pages", "per-page dicts: page, width, height, parser extras")  # type: ignore[assignment]
    source: dict[str, Any] | None = metadata_field("source", "the parsed file: name, path, sha256, size...")  # type: ignore[assignment]
    parser: str | None = metadata_field("parser", "the registered name of the parser that built the tree")  # type: ignore[assignment]
    parser_version: str | None = metadata_field("parser_version", "the version of the tool behind the parser")  # type: ignore[assignment]
    elapsed_seconds: float | None = metadata_field("elapsed_seconds", "how long the parse took")  # type: ignore[assignment]
    page_count: int | None = metadata_field("page_count", "pages in the PDF")  # type: ignore[assignment]
    body_font_size: float | None = metadata_field("body_font_size", "the most common paragraph font size (points)")  # type: ignore[assignment]
    pdf_warnings: list[str] | None = metadata_field("pdf_warnings", "what MuPDF said while opening a damaged PDF")  # type: ignore[assignment]
    pdf_repaired: bool | None = metadata_field("pdf_repaired", "whether MuPDF had to repair the file")  # type: ignore[assignment]

    def page_sizes(self) -> Iterator[PageSize]:
        """Each described page's number and size, in the order the parser listed them."""
        for p in self._get("pages") or ():
            yield PageSize(int(p["page"]), float(p["width"]), float(p["height"]))

    def page_numbers(self) -> list[int]:
        """The described pages' numbers, in the parser's order."""
        return [int(p["page"]) for p in self._get("pages") or ()]


#: Every metadata key a record above reads or writes.
META_KEYS = frozenset(
    {"font_size", "font_bold", "level", "level_source", "native_level", "native_label", "relabeled_from",
     "demoted_from", "promoted_from", "running_furniture", "native_id", "native_parent_id", "score",
     "char_alignment", "row", "col", "header", "pages", "source", "parser", "parser_version", "elapsed_seconds", "page_count",
     "body_font_size", "pdf_warnings", "pdf_repaired"}
)
