"""Give memory back after each parse, so a long-lived process stays flat (issue #14.7).

Measured on the 13-page ``cermine_web_example3_clinsci.pdf`` (one parser object, repeated
parses; ``benchmarks/memory_growth.py``, table in ``docs/results/memory_growth.md``): the Python
heap does not grow at all (same object and block counts after every parse). What grows is the C
heap, for two reasons:

1. **Retained free memory (most of it).** glibc's ``mallinfo2`` shows the bytes *in use* nearly
   constant while the arena's *free* bytes climb in steps of ~13 MB: MuPDF's text pages and the
   layout model's feature arrays are freed, but the allocator keeps the fragmented pages mapped.
   ``malloc_trim(0)`` returns them to the OS (glibc only; a no-op elsewhere). MuPDF's resource
   store (``fz_empty_store``) and glyph cache are emptied first, so what they cached for the
   finished document is freed too and can be trimmed.
2. **A small native leak in PyMuPDF's layout features** (``pymupdf.features.fz_features_for_region``,
   C code in ``pymupdf/_features.so`` called by ``pymupdf.layout`` for every page): ~146 KiB per
   *new document* for a 4-page paper, nothing when the same open document is analysed again
   (consistent with per-document font data being kept). grounded cannot free it; it is the
   residual growth the benchmark reports.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
from typing import Any

__all__ = ["release_memory", "malloc_trim"]

log = logging.getLogger(__name__)

_libc: Any = None
_trim: Any = None


def malloc_trim() -> bool:
    """``malloc_trim(0)`` on glibc (returns whether it ran)."""
    global _libc, _trim
    if _libc is None:
        _libc = False
        if sys.platform.startswith("linux"):
            try:
                lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                _trim = lib.malloc_trim  # missing on musl
                _trim.argtypes = [ctypes.c_size_t]
                _trim.restype = ctypes.c_int
                _libc = lib
            except (OSError, AttributeError):
                _trim = None
    if _trim is None:
        return False
    _trim(0)
    return True


def release_memory() -> None:
    """Empty MuPDF's resource store and glyph cache, then hand free heap pages back to the OS.

    Cheap (a few ms) and safe to call between documents; items in use elsewhere stay cached.
    """
    pymupdf = sys.modules.get("pymupdf")
    if pymupdf is not None:
        try:
            pymupdf.TOOLS.store_shrink(100)
            pymupdf.TOOLS.glyph_cache_empty()
        except (AttributeError, RuntimeError) as exc:  # an old/odd PyMuPDF: trimming still helps
            log.debug("could not empty MuPDF's caches: %s", exc)
    malloc_trim()
