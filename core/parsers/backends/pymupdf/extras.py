"""Typed records of what the PyMuPDF backend adds to element and root metadata beyond the shared
records of :mod:`grounded.model.element_info` (the values stay in ``metadata``)."""

from __future__ import annotations

from typing import Any

from grounded.model.element_info import MetadataView, metadata_field

__all__ = ["PyMuPDFElementExtras", "PyMuPDFRootExtras"]


class PyMuPDFElementExtras(MetadataView):
    """An element's PyMuPDF-only facts: list indent, text found in or taken out of pictures, and
    how a table's cells were found."""

    __slots__ = ()
    indent: float | None = metadata_field("indent", "a LIST_ITEM's left edge (page share, upright)")  # type: ignore[assignment]
    picture_text: bool | None = metadata_field("picture_text", "a FIGURE whose content is the text inside it")  # type: ignore[assignment]
    from_picture: bool | None = metadata_field("from_picture", "text taken out of a picture box (OCR'd page)")  # type: ignore[assignment]
    text_taken_out: int | None = metadata_field("text_taken_out", "a FIGURE's text blocks that became elements")  # type: ignore[assignment]
    layout_fallback: bool | None = metadata_field("layout_fallback", "a text-layer block the layout model left out")  # type: ignore[assignment]
    cell_source: str | None = metadata_field("cell_source", "where a TABLE's cell grid came from")  # type: ignore[assignment]
    continuation_rows_joined: int | None = metadata_field("continuation_rows_joined", "grid rows joined to the row above")  # type: ignore[assignment]


class PyMuPDFRootExtras(MetadataView):
    """The root's PyMuPDF-only facts: layout model time and the OCR summary."""

    __slots__ = ()
    layout_seconds: float | None = metadata_field("layout_seconds", "time spent in the layout model")  # type: ignore[assignment]
    ocr: dict[str, Any] | None = metadata_field("ocr", "the OCR setting, the OCR'd pages and their seconds")  # type: ignore[assignment]
