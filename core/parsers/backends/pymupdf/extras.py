"""Typed records of what the PyMuPDF backend adds to element and root metadata beyond the shared
records of :mod:`grounded.model.element_info` (the values stay in ``metadata``)."""

from __future__ import annotations

from typing import Any

from grounded.model.element_info import MetadataView, MetaField

__all__ = ["PyMuPDFElementExtras", "PyMuPDFRootExtras"]


class PyMuPDFElementExtras(MetadataView):
    """An element's PyMuPDF-only facts: list indent, text found in or taken out of pictures, and
    how a table's cells were found."""

    __slots__ = ()
    indent = MetaField[float]("indent", "a LIST_ITEM's left edge (page share, upright)")
    picture_text = MetaField[bool]("picture_text", "a FIGURE whose content is the text inside it")
    from_picture = MetaField[bool]("from_picture", "text taken out of a picture box (OCR'd page)")
    text_taken_out = MetaField[int]("text_taken_out", "a FIGURE's text blocks that became elements")
    layout_fallback = MetaField[bool]("layout_fallback", "a text-layer block the layout model left out")
    cell_source = MetaField[str]("cell_source", "where a TABLE's cell grid came from")
    continuation_rows_joined = MetaField[int]("continuation_rows_joined", "grid rows joined to the row above")


class PyMuPDFRootExtras(MetadataView):
    """The root's PyMuPDF-only facts: layout model time and the OCR summary."""

    __slots__ = ()
    layout_seconds = MetaField[float]("layout_seconds", "time spent in the layout model")
    ocr = MetaField[dict[str, Any]]("ocr", "the OCR setting, the OCR'd pages and their seconds")
