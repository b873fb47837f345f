"""The default backend: PyMuPDF >= 2.0 with its bundled ONNX layout model (offline).

:mod:`.layout` runs the layout model (in this process or worker processes), :mod:`.parser` is the
backend class (input, OCR plan, layout, tree), :mod:`.tree` builds the tree from layout boxes and the
text layer, :mod:`.tables` holds the box-level rules (small print, table notes, panels, grids),
:mod:`.ocr_text` and :mod:`.running_furniture` the rules for OCR'd pages.
"""

from __future__ import annotations

from .layout import PyMuPDFNative
from .parser import PyMuPDFParser

__all__ = ["PyMuPDFParser", "PyMuPDFNative"]
