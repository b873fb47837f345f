"""Budgets that keep OCR bounded on hostile pages (issue #21.8): image counts and noise.

Tesseract's time grows with the ink it has to segment: a page tiled with 1000 small noise images
took 67 s in Tesseract alone (and produced only garbage), while a dense real page takes a few
seconds. Two budgets, checked before Tesseract runs:

* **Images per page / per document.** A scan holds one image per page (or a few strips); a page
  that draws more than :data:`OCR_MAX_PAGE_IMAGES` images is no scan. It is still OCR'd -- once,
  as a whole, without the per-blob analysis (column regions, dot leaders, superscripts) whose
  pure-Python passes grow with the blobs -- and flagged. Once the pages OCR'd in one document
  drew :data:`OCR_MAX_DOCUMENT_IMAGES` images, further pages over the page budget are not
  OCR'd at all (flagged).
* **Noise.** The rendered page is cut into tiles of :data:`NOISE_TILE_INCH`; a tile whose ink
  covers at least :data:`NOISE_MIN_INK_SHARE` of it and changes from paper to ink at least
  :data:`NOISE_MIN_RUNS_PER_MPX` times per million pixels is noise (random dots, a halftone
  screen), not print. When noise tiles make up at least :data:`NOISE_MIN_PAGE_SHARE` of the page,
  they are whited out before Tesseract reads it (a real page's figure may have a few such tiles:
  its OCR is left as it was).

Every page a budget touched gets a :class:`OCRBudget` record (``root.info.pages[i]
["ocr_budget"]``) and an :class:`OCRBudgetWarning` naming the file, the page and the cause.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "OCR_MAX_PAGE_IMAGES",
    "OCR_MAX_DOCUMENT_IMAGES",
    "NOISE_TILE_INCH",
    "NOISE_MIN_INK_SHARE",
    "NOISE_MIN_RUNS_PER_MPX",
    "NOISE_MIN_PAGE_SHARE",
    "NOISE_INK_LEVEL",
    "OCR_BUDGET_KEY",
    "OCRBudgetWarning",
    "OCRBudget",
    "count_images",
    "noise_tiles",
    "erase_tiles",
]

#: a page drawing more images than this is OCR'd whole, without the per-blob analysis (a scan
#: draws one image per page, a few strips at most)
OCR_MAX_PAGE_IMAGES = 100
#: images drawn on the OCR'd pages of one document, after which pages over the page budget are
#: not OCR'd (a scanned book of 3000 pages of three strips each stays under it)
OCR_MAX_DOCUMENT_IMAGES = 10_000
#: side of the square tiles the noise check cuts the rendered page into (inches)
NOISE_TILE_INCH = 0.5
#: A tile is noise when its ink covers at least this share of it ... (measured on 22 scanned pages
#: of the shared long PDFs at 200 dpi and the 20 PubLayNet page images: text tiles cover at most
#: 0.22 where their ink changes most often; noise images cover ~0.5) ...
NOISE_MIN_INK_SHARE = 0.35
#: ... and its rows change from paper to ink at least this many times per million pixels (dense
#: 6 pt print: up to 79 thousand, but at ink <= 0.34; noise tiles 20-105 thousand) ...
NOISE_MIN_RUNS_PER_MPX = 20_000
#: ... and the noise tiles are erased only when they are at least this share of the page's tiles:
#: on those 42 real pages dark busy figures made at most 13 of 374 tiles (3.5%) noise-like; pages
#: tiled with 100 or more noise images are 96-100% noise
NOISE_MIN_PAGE_SHARE = 0.25
#: a pixel darker than this (0-255 gray) is ink for the noise check
NOISE_INK_LEVEL = 160
#: page-entry key (``root.info.pages``) of a page's :meth:`OCRBudget.record`
OCR_BUDGET_KEY = "ocr_budget"


class OCRBudgetWarning(UserWarning):
    """A page was OCR'd in a bounded way (or not at all) because it went over an OCR budget."""


@dataclass
class OCRBudget:
    """What the OCR budgets did to one page (0-based ``page`` of ``path``)."""

    path: str
    page: int
    images: int = 0
    #: the page was OCR'd whole, without the column/leader/superscript analysis
    whole_page: bool = False
    #: the page was not OCR'd at all (the document's image budget was spent)
    skipped: bool = False
    noise_tiles: int = 0
    tiles: int = 0
    #: the budgets this page was checked against
    page_limit: int = OCR_MAX_PAGE_IMAGES
    document_limit: int = OCR_MAX_DOCUMENT_IMAGES

    @property
    def touched(self) -> bool:
        return self.whole_page or self.skipped or self.noise_tiles > 0

    @property
    def cause(self) -> str:
        """One line: what went over which budget and what was done."""
        parts = []
        if self.skipped:
            parts.append(
                f"not OCR'd: it draws {self.images} images and the document's OCR image budget "
                f"(OCR_MAX_DOCUMENT_IMAGES = {self.document_limit}) is spent"
            )
        elif self.whole_page:
            parts.append(
                f"OCR'd as one image without column regions: it draws {self.images} images "
                f"(OCR_MAX_PAGE_IMAGES = {self.page_limit})"
            )
        if self.noise_tiles:
            parts.append(
                f"{self.noise_tiles} of {self.tiles} tiles of its image are noise (ink >= "
                f"{NOISE_MIN_INK_SHARE:g} of a tile, >= {NOISE_MIN_RUNS_PER_MPX} ink runs per million pixels) "
                "and were whited out before OCR: text inside them is not read"
            )
        return "; ".join(parts)

    def record(self) -> dict[str, Any]:
        """The page entry's :data:`OCR_BUDGET_KEY` value."""
        return {
            "images": self.images,
            "whole_page": self.whole_page,
            "skipped": self.skipped,
            "noise_tiles": self.noise_tiles,
            "tiles": self.tiles,
            "cause": self.cause,
        }

    def warn(self) -> None:
        """An :class:`OCRBudgetWarning` naming the file, the page and the cause."""
        from grounded.errors import escape_controls

        warnings.warn(
            f"{escape_controls(str(Path(self.path)))}: page {self.page + 1}: {self.cause}",
            OCRBudgetWarning,
            stacklevel=3,
        )


def count_images(page: Any) -> int:
    """How many images the open pymupdf ``page`` draws (inline images and repeated draws of one
    image included; nothing is decoded)."""
    return len(page.get_image_info(hashes=False, xrefs=False))


def noise_tiles(gray: np.ndarray, dpi: float) -> tuple[np.ndarray, int]:
    """The noise tiles of a page image ``gray`` (2-D uint8 rendered at ``dpi``): their pixel boxes
    (x0, y0, x1, y1, end-exclusive; rows of an int array) and the number of tiles checked. Tiles
    at the right and bottom edge are as wide as what is left (at least half a tile: a thinner rest
    joins its neighbour)."""
    size = max(8, int(round(NOISE_TILE_INCH * dpi)))
    h, w = gray.shape
    ink = gray < NOISE_INK_LEVEL
    starts = np.zeros_like(ink)
    starts[:, 1:] = ink[:, 1:] & ~ink[:, :-1]
    starts[:, 0] = ink[:, 0]

    def edges(n: int) -> list[int]:
        cuts = list(range(0, n, size))
        if len(cuts) > 1 and n - cuts[-1] < size // 2:
            cuts.pop()
        return [*cuts, n]

    xs, ys = edges(w), edges(h)
    # per-tile sums from prefix sums (one pass over the image)
    ink_sum = np.add.reduceat(np.add.reduceat(ink.astype(np.int64), ys[:-1], axis=0), xs[:-1], axis=1)
    run_sum = np.add.reduceat(np.add.reduceat(starts.astype(np.int64), ys[:-1], axis=0), xs[:-1], axis=1)
    area = np.outer(np.diff(ys), np.diff(xs)).astype(np.float64)
    noisy = (ink_sum >= NOISE_MIN_INK_SHARE * area) & (run_sum * 1e6 >= NOISE_MIN_RUNS_PER_MPX * area)
    rows, cols = np.nonzero(noisy)
    boxes = np.array(
        [(xs[c], ys[r], xs[c + 1], ys[r + 1]) for r, c in zip(rows.tolist(), cols.tolist(), strict=True)],
        dtype=np.int64,
    ).reshape(-1, 4)
    return boxes, int(noisy.size)


def erase_tiles(pix: Any, gray: np.ndarray, boxes: np.ndarray) -> None:
    """White out the tiles ``boxes`` (pixel boxes) in the RGB pixmap ``pix`` and in its gray image
    ``gray`` (a writable copy), in place."""
    import pymupdf

    for x0, y0, x1, y1 in boxes.tolist():
        pix.set_rect(pymupdf.IRect(x0, y0, x1, y1), (255, 255, 255))
        gray[y0:y1, x0:x1] = 255
