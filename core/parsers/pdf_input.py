"""Validate an input PDF before any backend sees it (spec §10).

:func:`inspect_pdf` turns every way a file can be unusable into a typed
:class:`~grounded.errors.InputError` naming the file and the cause, and returns the facts the
pipeline needs: sha256, page count, each page's displayed size and which pages carry a text layer.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import (
    CorruptPDFError,
    EmptyDocumentError,
    EncryptedPDFError,
    InputNotFoundError,
    NotAPDFError,
    NoTextLayerError,
    PageTooLargeError,
    escape_controls,
)
from .ocr.engine import ENABLE_HINT, text_layer_verdict

__all__ = [
    "PDFInfo",
    "inspect_pdf",
    "MAX_PAGE_POINTS",
    "NoTextLayerWarning",
    "PDFDamageWarning",
    "format_pages",
    "glyph_name_maps",
    "mupdf_quiet",
]

#: PDF 1.7 implementation limit for a page side (200 inches) in points.
MAX_PAGE_POINTS = 14400.0
# the header may be preceded by junk; readers look for it in the first KiB
_HEADER_WINDOW = 1024
# an intact file ends with %%EOF (possibly followed by a little whitespace / junk)
_TRAILER_WINDOW = 4096


class NoTextLayerWarning(UserWarning):
    """Some (not all) pages have no text layer and OCR is off or not installed: their content is
    not extracted (``PyMuPDFParser(ocr="auto")`` with ``grounded[ocr]`` reads them)."""


class PDFDamageWarning(UserWarning):
    """MuPDF reported errors while reading the PDF: the listed pages may be incomplete or wrong
    (their ``root.info.pages[i]`` has ``status: "damaged"`` and the MuPDF ``warnings``)."""


#: MuPDF messages about a page's content stream that mean its content was not read completely
#: (or was altered): syntax errors while interpreting it. Any message while *decoding* the page's
#: own content streams (zlib/flate errors, read errors, objects that cannot be loaded) counts too.
_CONTENT_DAMAGE = re.compile(
    r"content stream|page may not be correct|ignoring rest of page|unknown keyword|syntax error in array",
    re.IGNORECASE,
)
#: MuPDF messages while extracting a page's text that mean a font it uses is damaged (a byte flip
#: in an embedded font stream: ``ignoring zlib error``, ``FT_Load_Glyph(...): broken file``): the
#: page's glyphs, and so the text and its positions, may be wrong. Such a page is damaged too, but
#: does not count towards "every page is broken" (its text was read).
_FONT_DAMAGE = re.compile(
    r"zlib error|inflate|FT_Load_Glyph|FT_New_Memory_Face|broken file|cannot load font|invalid font",
    re.IGNORECASE,
)
#: at most this many distinct MuPDF messages are kept per page
_MAX_MESSAGES = 20
#: A Type 3 font (glyphs drawn by content streams, no font program) without a ToUnicode CMap maps
#: a character code to Unicode only through the glyph name its /Encoding /Differences gives the
#: code. A name that is not a standard one (:func:`glyph_name_maps`: Adobe Glyph List, ``uniXXXX``,
#: ``uXXXX``) maps to no Unicode: MuPDF then guesses ("g3" -> a space, "a12" -> U+000C) or takes the
#: code itself, so the text is wrong or missing (a hostile-corpus file lost 13 % of its characters).
#: A page showing such glyphs is damaged (``reason`` says so, ``unmapped_glyphs`` counts them).
_UNMAPPED_FONT_TYPES = frozenset({"Type3"})
_UNI_NAME = re.compile(r"uni(?:[0-9A-F]{4})+|u[0-9A-F]{4,6}")
_DIFF_TOKEN = re.compile(r"/([^\s/\[\]<>()]*)|(-?\d+)")


@contextlib.contextmanager
def mupdf_quiet() -> Iterator[None]:
    """MuPDF's messages go to its warning store only, not to stderr (restored on exit)."""
    import pymupdf

    errors = pymupdf.TOOLS.mupdf_display_errors()
    shown = pymupdf.TOOLS.mupdf_display_warnings()
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    try:
        yield
    finally:
        pymupdf.TOOLS.mupdf_display_errors(errors)
        pymupdf.TOOLS.mupdf_display_warnings(shown)


def _mupdf_messages() -> list[str]:
    """MuPDF's messages since the last call (distinct, in order; the store is reset)."""
    import pymupdf

    out: list[str] = []
    for line in pymupdf.TOOLS.mupdf_warnings(reset=True).splitlines():
        line = line.strip()
        if line and not line.startswith("... repeated") and line not in out:
            out.append(line)
    return out[:_MAX_MESSAGES]


def glyph_name_maps(name: str) -> bool:
    """Whether glyph ``name`` maps to Unicode by a standard: the Adobe Glyph List (MuPDF's own
    table), ``uniXXXX[XXXX...]`` or ``uXXXX[XX]``; a suffix after ``.`` or ``_`` parts are judged
    on the base name ("A.sc", "f_i")."""
    from pymupdf import mupdf

    name = re.sub(r"#([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), name)
    base = name.split(".", 1)[0]
    if not base:
        return False
    parts = base.split("_") if "_" in base else [base]
    return all(
        bool(part) and (_UNI_NAME.fullmatch(part) is not None or mupdf.fz_unicode_from_glyph_name_strict(part) > 0)
        for part in parts
    )


def _unmapped_codes(doc: Any, xref: int) -> frozenset[int]:
    """The character codes of simple font ``xref`` whose glyphs map to no Unicode (see
    :data:`_UNMAPPED_FONT_TYPES`): none when the font has a ToUnicode CMap."""
    if doc.xref_get_key(xref, "ToUnicode")[0] != "null":
        return frozenset()
    kind, value = doc.xref_get_key(xref, "Encoding/Differences")
    if kind != "array":
        return frozenset()
    codes: set[int] = set()
    code = 0
    for name, number in _DIFF_TOKEN.findall(value):
        if number:
            code = int(number)
            continue
        if not glyph_name_maps(name):
            codes.add(code)
        code += 1
    return frozenset(codes)


def _type3_display_name(font: tuple[Any, ...]) -> str:
    """The span font name MuPDF gives a Type 3 font (its /Name, else ``Type3 (<xref> 0 R)``)."""
    return str(font[3]) if font[3] else f"Type3 ({font[0]} 0 R)"


def _unmapped_glyphs(doc: Any, page: Any, fonts: dict[int, frozenset[int]]) -> tuple[int, int, list[str]]:
    """Page ``page``'s glyphs that map to no Unicode (see :data:`_UNMAPPED_FONT_TYPES`): (their
    count, all glyphs shown on the page, the fonts' names); ``fonts`` caches each font's unmapped
    codes by xref over the document."""
    suspects: dict[str, frozenset[int]] = {}
    for font in page.get_fonts(full=False):
        xref, kind = int(font[0]), str(font[2])
        if kind not in _UNMAPPED_FONT_TYPES or xref <= 0:
            continue
        if xref not in fonts:
            fonts[xref] = _unmapped_codes(doc, xref)
        if fonts[xref]:
            name = _type3_display_name(font)
            suspects[name] = suspects.get(name, frozenset()) | fonts[xref]
    if not suspects:
        return 0, 0, []
    unmapped = total = 0
    used: set[str] = set()
    for span in page.get_texttrace():
        chars = span.get("chars") or ()
        total += len(chars)
        codes = suspects.get(str(span.get("font", "")))
        if codes:  # a Type 3 glyph's id is its character code
            hit = sum(1 for ch in chars if ch[1] in codes)
            if hit:
                unmapped += hit
                used.add(str(span.get("font", "")))
    return unmapped, total, sorted(used)


@dataclass
class PDFInfo:
    """Facts about a readable PDF. ``page_sizes`` are (width, height) in points of the page as
    displayed (rotation and crop box applied); ``text_pages`` are the 1-based pages with text;
    ``page_chars`` the non-space characters of each page's text layer; ``text_verdicts`` per page
    (0-based list) why its text layer needs OCR (:func:`~grounded.parsers.ocr.engine.text_layer_verdict`:
    ``"image_only"``, ``"garbage_text: ..."``, ``"blank"``) or None -- judged on the text read
    here, so the OCR decision (:func:`~grounded.parsers.ocr.engine.plan_ocr`) reads no page again.

    ``warnings`` are MuPDF's messages while opening the file (e.g. a repaired xref);
    ``page_warnings`` its messages while reading each 1-based page, and ``damaged_pages`` the
    pages whose content stream could not be read completely or whose fonts are broken
    (``font_damaged_pages``: only a font, see :func:`_check_damage`) or that show glyphs mapping to
    no Unicode (``unmapped_glyphs``: page -> their count, see :data:`_UNMAPPED_FONT_TYPES`).
    """

    path: Path
    sha256: str
    page_count: int
    page_sizes: list[tuple[float, float]] = field(default_factory=list)
    text_pages: list[int] = field(default_factory=list)
    #: the file needed a password (it was opened with the one given)
    encrypted: bool = False
    page_chars: list[int] = field(default_factory=list)
    text_verdicts: list[str | None] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    page_warnings: dict[int, list[str]] = field(default_factory=dict)
    damaged_pages: list[int] = field(default_factory=list)
    font_damaged_pages: list[int] = field(default_factory=list)
    unmapped_glyphs: dict[int, int] = field(default_factory=dict)
    #: damaged pages whose only damage is glyphs without Unicode (MuPDF read them without complaint)
    glyph_only_pages: list[int] = field(default_factory=list)
    repaired: bool = False
    #: the document information (PyMuPDF's ``Document.metadata``), read while the PDF is open
    doc_info: dict[str, str] = field(default_factory=dict)

    def damage_reasons(self) -> dict[int, str]:
        """Per damaged 1-based page, why: MuPDF could not read it, and/or its glyphs map to no Unicode."""
        out = {}
        for page in self.damaged_pages:
            reasons = []
            if page not in self.glyph_only_pages:
                reasons.append("MuPDF could not read the page's content completely; text may be missing or wrong")
            if page in self.unmapped_glyphs:
                reasons.append(
                    f"{self.unmapped_glyphs[page]} glyph(s) map to no Unicode (a Type 3 font without ToUnicode and "
                    "with non-standard glyph names): their text is a guess, wrong or missing"
                )
            out[page] = "; ".join(reasons)
        return out

    @property
    def image_only_pages(self) -> list[int]:
        """1-based pages without any text layer."""
        have = set(self.text_pages)
        return [p for p in range(1, self.page_count + 1) if p not in have]


def format_pages(pages: list[int], limit: int = 12) -> str:
    """'1, 2, 5' or '1, 2, ... (+30 more)' for messages."""
    shown = ", ".join(str(p) for p in pages[:limit])
    return shown + (f", ... (+{len(pages) - limit} more)" if len(pages) > limit else "")


def _read_checked(path: Path) -> bytes:
    if not path.exists():
        raise InputNotFoundError(path, "no such file")
    if not path.is_file():
        raise InputNotFoundError(path, "not a regular file (is it a directory?)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputNotFoundError(path, f"cannot be read ({exc.strerror or exc})") from exc
    if not data:
        raise NotAPDFError(path, "empty file (0 bytes), not a PDF")
    if b"%PDF-" not in data[:_HEADER_WINDOW]:
        from .file_type import describe_type  # the type, never the content (it may be a secret)

        raise NotAPDFError(path, f"not a PDF: {describe_type(data[:_HEADER_WINDOW * 4])} (no %PDF- header)")
    return data


def _open_document(path: Path, data: bytes, password: str | None = None) -> tuple[Any, bool]:
    """(the open pymupdf.Document, whether it needed a password). Never read ``doc.needs_pass``
    after ``authenticate()``: MuPDF then retries the empty password and a decrypted copy saved
    afterwards has unreadable content streams."""
    import pymupdf

    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # MuPDF raises FileDataError/RuntimeError with its own message
        raise CorruptPDFError(path, f"damaged PDF that MuPDF cannot open ({exc})") from exc
    truncated = b"%%EOF" not in data[-_TRAILER_WINDOW:]
    encrypted = bool(doc.needs_pass)
    if encrypted:
        if password is None:
            doc.close()
            raise EncryptedPDFError(
                path, "encrypted PDF: a password is needed to open it (pass password=..., CLI: --password)"
            )
        if not doc.authenticate(password):
            doc.close()
            raise EncryptedPDFError(path, "encrypted PDF: the password given is wrong (it does not open the file)")
    count = _page_count(path, doc)
    if doc.is_repaired and truncated:
        pages = count
        doc.close()
        raise CorruptPDFError(
            path, f"truncated PDF (no %%EOF at the end; MuPDF had to repair it and found {pages} page(s))"
        )
    if count == 0:
        repaired = doc.is_repaired
        doc.close()
        if repaired:
            raise CorruptPDFError(path, "damaged PDF: the page tree cannot be read (0 readable pages)")
        raise EmptyDocumentError(path, "the PDF has 0 pages")
    return doc, encrypted


def _page_count(path: Path, doc: Any) -> int:
    """The document's page count; a page tree MuPDF cannot count (e.g. ``/Count -1``) is a
    :class:`CorruptPDFError` naming the file (MuPDF raises a bare RuntimeError)."""
    try:
        return int(doc.page_count)
    except Exception as exc:  # MuPDF's RuntimeError/FzError: "Invalid number of pages", ...
        doc.close()
        raise CorruptPDFError(path, f"damaged PDF: the page tree cannot be read ({exc})") from exc


def _read_page(doc: Any, index: int) -> tuple[Any, str, str | None, list[str], str | None]:
    """Load page ``index``: (page, its text, whether it needs OCR (see
    :func:`~grounded.parsers.ocr.engine.text_layer_verdict`), MuPDF's messages, how it is damaged:
    ``"content"`` (its content streams could not be read completely), ``"font"`` (a font it uses
    is broken, :data:`_FONT_DAMAGE`) or None)."""
    page = doc.load_page(index)
    load_messages = _mupdf_messages()
    page.read_contents()  # decode the page's own content streams (zlib/flate errors show here)
    decode_messages = _mupdf_messages()
    text = page.get_textpage(flags=0).extractText()
    verdict = text_layer_verdict(page, text)  # a page without text is checked for ink here
    messages = load_messages + [m for m in decode_messages + _mupdf_messages() if m not in load_messages]
    damaged: str | None = None
    if decode_messages or any(_CONTENT_DAMAGE.search(m) for m in messages):
        damaged = "content"
    elif any(_FONT_DAMAGE.search(m) for m in messages):
        damaged = "font"
    return page, text, verdict, messages[:_MAX_MESSAGES], damaged


def _inspect_pages(path: Path, sha256: str, doc: Any) -> PDFInfo:
    info = PDFInfo(path=path, sha256=sha256, page_count=int(doc.page_count), warnings=_mupdf_messages())
    fonts: dict[int, frozenset[int]] = {}  # Type 3 font xref -> its codes without Unicode
    for index in range(info.page_count):
        number = index + 1
        try:
            page, text, verdict, messages, damaged = _read_page(doc, index)
            unmapped, glyphs, names = _unmapped_glyphs(doc, page, fonts)
            _mupdf_messages()  # the second read of the page's text adds nothing new
            rect = page.rect  # displayed page: crop box with /Rotate applied
        except Exception as exc:
            raise CorruptPDFError(path, f"page {number} cannot be read ({exc})") from exc
        width, height = float(rect.width), float(rect.height)
        if not (width > 0 and height > 0):
            raise CorruptPDFError(path, f"page {number} has an empty size ({width:g} x {height:g} pt)")
        if max(width, height) > MAX_PAGE_POINTS:
            raise PageTooLargeError(
                path,
                f"page {number} is {width:.0f} x {height:.0f} pt, beyond the PDF limit of "
                f"{MAX_PAGE_POINTS:.0f} pt per side",
            )
        info.page_sizes.append((width, height))
        chars = sum(1 for c in text if not c.isspace())
        info.page_chars.append(chars)
        info.text_verdicts.append(verdict)
        if chars:
            info.text_pages.append(number)
        if messages:
            info.page_warnings[number] = messages
        if damaged:
            info.damaged_pages.append(number)
        if damaged == "font":
            info.font_damaged_pages.append(number)
        if unmapped:
            info.unmapped_glyphs[number] = unmapped
            note = (f"{unmapped} of {glyphs} glyph(s) map to no Unicode: Type 3 font(s) "
                    f"{', '.join(repr(n) for n in names)} without ToUnicode and with non-standard glyph names")
            info.page_warnings[number] = [*info.page_warnings.get(number, []), note]
            if not damaged:
                info.damaged_pages.append(number)
                info.glyph_only_pages.append(number)
    info.repaired = bool(doc.is_repaired)  # MuPDF may repair the file while loading a page
    return info


def _check_damage(info: PDFInfo) -> None:
    """Documented rule: a page whose content stream MuPDF could not decode or interpret
    completely (zlib/flate/read errors, content-stream syntax errors) is *damaged*: it is
    flagged in the result and a :class:`PDFDamageWarning` names it. A document whose every
    page is damaged raises :class:`CorruptPDFError` -- nothing in it can be trusted. A page whose
    only damage is a broken font (:data:`_FONT_DAMAGE`) is damaged but does not count for "every
    page": its text was read, its glyphs may be wrong. So is a page that shows glyphs mapping to no
    Unicode (:data:`_UNMAPPED_FONT_TYPES`): flagged damaged with its own reason and named in the
    same warning, never an error."""
    damaged = info.damaged_pages
    if not damaged and not info.repaired:
        return
    read = [p for p in damaged if p not in info.glyph_only_pages]  # MuPDF's own complaints
    first = next((m for p in read for m in info.page_warnings.get(p, [])), None)
    broken = [p for p in read if p not in info.font_damaged_pages]
    if broken and len(broken) == info.page_count:
        raise CorruptPDFError(
            info.path,
            f"damaged PDF: the content of every page ({info.page_count}) is broken (MuPDF: {first})",
        )
    parts = []
    if info.repaired:
        parts.append("MuPDF had to repair the file's structure")
    if read:
        parts.append(
            f"{len(read)} of {info.page_count} page(s) may be incomplete (pages {format_pages(read)}; "
            f"MuPDF: {first})"
        )
    if info.unmapped_glyphs:
        pages = sorted(info.unmapped_glyphs)
        parts.append(
            f"{len(pages)} of {info.page_count} page(s) show glyphs that map to no Unicode, their text is a guess "
            f"(pages {format_pages(pages)}; {sum(info.unmapped_glyphs.values())} glyph(s) of Type 3 fonts without "
            "ToUnicode)"
        )
    warnings.warn(f"{escape_controls(str(info.path))}: damaged PDF: " + "; ".join(parts), PDFDamageWarning, stacklevel=3)


def inspect_pdf(path: str | Path, require_text: bool, password: str | None = None) -> PDFInfo:
    """Check ``path`` is a readable, non-empty PDF with sane pages; an encrypted PDF needs its
    (user or owner) ``password`` and is reported with ``encrypted=True``.

    With ``require_text`` a document whose pages all lack a text layer raises
    :class:`NoTextLayerError`; if only some pages lack one, a :class:`NoTextLayerWarning`
    lists them and parsing goes on. Raises :class:`PageTooLargeError` for pages beyond
    :data:`MAX_PAGE_POINTS` and :class:`CorruptPDFError` for pages MuPDF cannot load.
    """
    path = Path(path)
    data = _read_checked(path)
    sha256 = hashlib.sha256(data).hexdigest()
    with mupdf_quiet():
        _mupdf_messages()  # drop messages of earlier documents
        doc, encrypted = _open_document(path, data, password)
        try:
            info = _inspect_pages(path, sha256, doc)
            info.encrypted = encrypted
            info.doc_info = {k: str(v) for k, v in (doc.metadata or {}).items() if v}
        finally:
            doc.close()
    _check_damage(info)
    missing = info.image_only_pages
    if missing and require_text:
        if not info.text_pages:
            raise NoTextLayerError(
                path,
                f"none of the {info.page_count} page(s) has a text layer (scanned/image-only PDF); "
                f"{ENABLE_HINT}",
            )
        warnings.warn(
            f"{escape_controls(str(path))}: {len(missing)} of {info.page_count} page(s) have no text layer and will yield no "
            f"text: pages {format_pages(missing)}; {ENABLE_HINT}",
            NoTextLayerWarning,
            stacklevel=2,
        )
    return info
