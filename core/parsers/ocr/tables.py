"""Table regions of OCR'd pages read a second time (issue #34 item 21).

Tesseract merges a line of text set tight between table rules (a shaded header row with its cell
borders) with the rules. :func:`reocr_tables` reads each TABLE region the layout model found on an
OCR'd page again from an image of that region alone, rules erased and shading whitened
(:func:`clean_table_image`), and puts that reading in place of the first one inside the region.
Only table regions: a picture's frame or axes erased as a grid lost or retyped figure captions.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from .engine import DEFAULT_OCR_DPI, _recognize, ocr_dpi, require_ocr

__all__ = [
    "TABLE_RULE_MIN_INCHES",
    "TABLE_RULE_MAX_INCHES",
    "TABLE_INK_GRAY",
    "TABLE_REREAD",
    "table_rule_mask",
    "clean_table_image",
    "reocr_tables",
]

log = logging.getLogger(__name__)

#: Tesseract merges a line of text set tight between table rules (a shaded header row with its cell
#: borders) with the rules: it reads garbage ("[stipe | __[nialatuton" for "Subtype | Clinical
#: situation") placed half a line off (issue #34.21). So each TABLE region the layout model finds on
#: an OCR'd page is read again (:func:`reocr_tables`) from an image of that region alone in which the
#: ruling lines are erased -- runs of ink (darkest channel below :data:`TABLE_INK_GRAY`) at least
#: this long (inches) ...
TABLE_RULE_MIN_INCHES = 0.2
#: ... and at most this thick (inches; thicker runs are solid areas, kept) -- and the shading of its
#: cells is whitened (every pixel at least :data:`TABLE_INK_GRAY` becomes white). Only inside table
#: regions: a picture's frame or axes erased as a grid lost or retyped figure captions.
TABLE_RULE_MAX_INCHES = 0.03
TABLE_INK_GRAY = 160
#: Whether the PyMuPDF parser reads table regions again (:func:`reocr_tables`); False only to measure
#: the difference (``benchmarks/ocr_table_cells.py --no-table-reread``).
TABLE_REREAD = True


def _runs(mask: Any) -> tuple[Any, Any, Any]:
    """Runs of True along the rows of the 2-D bool ``mask``: (row, start, end) arrays."""
    import numpy as np

    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    d = np.diff(padded, axis=1)
    rows, starts = np.nonzero(d == 1)
    _, ends = np.nonzero(d == -1)
    return rows, starts, ends


def _keep_runs(mask: Any, least: int = 0, most: int | None = None) -> Any:
    """``mask`` with only its row runs of ``least`` to ``most`` pixels."""
    import numpy as np

    out = np.zeros_like(mask)
    rows, starts, ends = _runs(mask)
    length = ends - starts
    keep = (length >= least) & (length <= (most if most is not None else mask.shape[1]))
    for r, a, b in zip(rows[keep].tolist(), starts[keep].tolist(), ends[keep].tolist(), strict=True):
        out[r, a:b] = True
    return out


def table_rule_mask(gray: Any, dpi: float) -> Any:
    """Pixels of the table image ``gray`` (darkest channel, uint8) on ruling lines (see
    :data:`TABLE_RULE_MIN_INCHES`): long thin horizontal and vertical runs of ink."""
    ink = gray < TABLE_INK_GRAY
    least, most = max(1, round(TABLE_RULE_MIN_INCHES * dpi)), max(1, round(TABLE_RULE_MAX_INCHES * dpi))
    across = _keep_runs(_keep_runs(ink, least).T, 1, most).T  # horizontal rules, thin vertically
    down = _keep_runs(_keep_runs(ink.T, least).T, 1, most)  # vertical rules, thin horizontally
    return across | down


def clean_table_image(pix: Any, dpi: float) -> Any:
    """A copy of the RGB pixmap ``pix`` of a table region with its ruling lines erased and its cell
    shading whitened (see :data:`TABLE_RULE_MIN_INCHES`)."""
    import numpy as np
    import pymupdf

    rgb = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w, pix.n)[:, :, :3].copy()
    gray = rgb.min(axis=2)
    rgb[(gray >= TABLE_INK_GRAY) | table_rule_mask(gray, dpi)] = 255
    out = pymupdf.Pixmap(pymupdf.csRGB, pix.w, pix.h, rgb.tobytes(), False)
    out.set_dpi(dpi, dpi)
    return out


def reocr_tables(
    src: str | Path,
    ocr_pdf: str | Path,
    target: str | Path,
    tables: dict[int, list[tuple[float, float, float, float]]],
    *,
    dpi: int = DEFAULT_OCR_DPI,
    tessdata: str | None = None,
    max_pixels: int | None = None,
) -> int:
    """Write to ``target`` a copy of ``ocr_pdf`` (the OCR'd copy of ``src`` made by :func:`ocr_copy`)
    in which the text inside each table rect of ``tables`` (0-based page -> rects in the displayed
    page's points, upright pages only) is Tesseract's reading of that region of ``src`` alone, its
    rules erased and its shading whitened (:func:`clean_table_image`). Returns the regions read."""
    import pymupdf

    folder = tessdata or require_ocr("OCR")
    done = 0
    with pymupdf.open(src) as source, pymupdf.open(ocr_pdf) as doc:
        for pno, rects in sorted(tables.items()):
            page = source.load_page(pno)
            if page.rotation != 0 or not rects:
                continue
            page_dpi = ocr_dpi(float(page.rect.width), float(page.rect.height), dpi, max_pixels)
            layers: list[tuple[Any, Any]] = []
            try:
                for x0, y0, x1, y1 in rects:
                    rect = pymupdf.Rect(x0, y0, x1, y1) & page.rect
                    if rect.is_empty:
                        continue
                    pix = clean_table_image(page.get_pixmap(dpi=page_dpi, clip=rect, alpha=False), page_dpi)
                    # the rect of the pixels rendered (whole pixels), where Tesseract's layer goes
                    scale = 72.0 / page_dpi
                    shown = pymupdf.Rect(rect.x0, rect.y0, rect.x0 + pix.w * scale, rect.y0 + pix.h * scale)
                    layers.append((shown, _recognize(pix, page_dpi, folder)))
                if not layers:
                    continue
                out = doc.load_page(pno)
                for shown, _ in layers:
                    out.add_redact_annot(shown)
                out.apply_redactions(
                    images=pymupdf.PDF_REDACT_IMAGE_NONE,  # type: ignore[attr-defined]
                    graphics=pymupdf.PDF_REDACT_LINE_ART_NONE,  # type: ignore[attr-defined]
                    text=pymupdf.PDF_REDACT_TEXT_REMOVE,  # type: ignore[attr-defined]
                )
                out = doc.load_page(pno)
                for shown, layer in layers:
                    out.show_pdf_page(shown, layer, 0, keep_proportion=False, overlay=True)
                done += len(layers)
            finally:
                for _, layer in layers:
                    layer.close()
            log.debug("re-read %d table region(s) of page %d of %s", len(layers), pno + 1, src)
        doc.save(target, garbage=1, deflate=True)
    return done
