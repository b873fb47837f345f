"""PDF info: a PDF's document information (title, author, dates, ...) under the names LangChain's
``PyMuPDFLoader`` gives them, read from what the parse recorded or from the PDF itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..model.elements import ParsingResult

__all__ = ["PDF_METADATA_KEYS", "SOURCE_INFO_KEY", "document_info", "recorded_info", "pdf_metadata"]

#: PDF document metadata keys, named as LangChain's ``PyMuPDFLoader`` names them
PDF_METADATA_KEYS = ("title", "author", "subject", "keywords", "creator", "producer", "creationdate", "moddate")


_PDF_DATE = re.compile(
    r"^D:(?P<y>\d{4})(?P<mo>\d{2})?(?P<d>\d{2})?(?P<h>\d{2})?(?P<mi>\d{2})?(?P<s>\d{2})?"
    r"(?:(?P<z>[Zz])|(?P<sign>[+-])(?P<th>\d{2})'?(?P<tm>\d{2})?'?)?"
)


def _pdf_date(value: str) -> str:
    """``D:20230115093000+01'00'`` -> ``2023-01-15T09:30:00+01:00`` (ISO 8601, as ``PyMuPDFLoader``
    writes what it can parse; also ``Z``, ``Z00'00'`` and dates without seconds or zone); other
    values are returned stripped."""
    raw = value.strip()
    match = _PDF_DATE.match(raw)
    if not match:
        return raw
    g = match.groupdict()
    try:
        tz: timezone | None = None
        if g["z"]:
            tz = timezone.utc
        elif g["sign"]:
            offset = timedelta(hours=int(g["th"]), minutes=int(g["tm"] or 0))
            tz = timezone(offset if g["sign"] == "+" else -offset)
        moment = datetime(
            int(g["y"]), int(g["mo"] or 1), int(g["d"] or 1), int(g["h"] or 0), int(g["mi"] or 0), int(g["s"] or 0), tzinfo=tz
        )
    except ValueError:
        return raw
    return moment.isoformat("T")


#: key of a parse tree's ``metadata["source"]`` under which the parse records the PDF's document
#: information as read while it had the PDF open (PyMuPDF's ``Document.metadata``, raw)
SOURCE_INFO_KEY = "info"
_PYMUPDF_NAMES = {"creationdate": "creationDate", "moddate": "modDate"}


def document_info(raw: Mapping[str, Any]) -> dict[str, str]:
    """:data:`PDF_METADATA_KEYS` of PyMuPDF's ``Document.metadata`` (empty strings when absent);
    dates ISO 8601 like LangChain's ``PyMuPDFLoader``."""
    out: dict[str, str] = {}
    for key in PDF_METADATA_KEYS:
        value = raw.get(_PYMUPDF_NAMES.get(key, key)) or ""
        out[key] = _pdf_date(str(value)) if key in _PYMUPDF_NAMES else str(value).strip()
    return out


def recorded_info(root: ParsingResult) -> dict[str, str] | None:
    """The document information the parse of ``root`` recorded (:data:`SOURCE_INFO_KEY`), or None
    when it recorded none (another parser, or a tree made before it was recorded)."""
    source = root.info.source
    raw = source.get(SOURCE_INFO_KEY) if isinstance(source, Mapping) else None
    return document_info(raw) if isinstance(raw, Mapping) else None


def pdf_metadata(
    pdf: str | Path | bytes | None, password: str | None = None, *, root: ParsingResult | None = None
) -> dict[str, str]:
    """The PDF's document information (:data:`PDF_METADATA_KEYS`; empty strings when absent).

    ``root``: the PDF's parse tree; when its parse recorded the information (:func:`recorded_info`)
    that is returned and the PDF is not opened again. Otherwise it is read with PyMuPDF from ``pdf``
    (a path or the PDF bytes; None: empty values). A PDF that cannot be opened gives empty values
    (parsing reports the cause)."""
    recorded = recorded_info(root) if root is not None else None
    if recorded is not None:
        return recorded
    if pdf is None:
        return dict.fromkeys(PDF_METADATA_KEYS, "")
    import pymupdf

    try:
        doc = pymupdf.open(stream=pdf, filetype="pdf") if isinstance(pdf, (bytes, bytearray)) else pymupdf.open(str(pdf))
    except Exception:  # noqa: BLE001 - MuPDF's own errors; the parser raises the typed error
        return dict.fromkeys(PDF_METADATA_KEYS, "")
    try:
        if doc.needs_pass and not (password and doc.authenticate(password)):
            return dict.fromkeys(PDF_METADATA_KEYS, "")
        info = doc.metadata or {}
    finally:
        doc.close()
    return document_info(info)
