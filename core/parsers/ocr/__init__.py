"""OCR of scanned pages with the Tesseract engine built into PyMuPDF (:mod:`.engine`: which pages,
the OCR'd copy of the PDF; :mod:`.regions`: a multi-column page cut into columns first)."""

from __future__ import annotations

from .engine import *  # noqa: F403
from .engine import __all__ as __all__  # noqa: F401
