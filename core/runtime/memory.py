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
2. **Font references leaked by PyMuPDF's layout features** (issue #34, item 18; found with
   ``benchmarks/parse_leak.py``). ``pymupdf.features.fz_features_for_region`` (C code in
   ``pymupdf/_features.so``, called by ``pymupdf.layout`` for every text box of every page) counts
   the fonts of the region in a frequency table that takes a reference to each font
   (``fz_keep_font``) and is never dropped: every call leaves each font of its region with one
   more reference. A font with a leaked reference outlives its text page, its document and
   MuPDF's store (``fz_empty_store`` evicts it but cannot free it), so every parse of a new
   document -- or of the same one after the store was emptied -- kept all of its fonts (the
   embedded font file, glyph outlines, HarfBuzz data): ~1.5 MB per parse of a 4-page paper.
   :func:`balance_feature_font_refs` wraps PyMuPDF's ``extract_rf_features`` (the one caller):
   it reads the reference counts of the text page's fonts before, and drops exactly the
   references the call added after (none when a fixed PyMuPDF adds none). This assumes no other
   thread of the process takes or drops references to the same fonts during the call: a
   document's fonts are its own, and grounded runs MuPDF work of a process in one thread (the
   in-process ingest's second thread embeds and writes rows, it does not touch MuPDF).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["release_memory", "malloc_trim", "balance_feature_font_refs"]

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


def _text_page_fonts(stext_page: Any) -> dict[int, Any]:
    """address -> ``fz_font`` (low-level) of every character of a ``pymupdf.TextPage``, text
    blocks nested in structure blocks included (depth-first block walk). The characters of a line
    are followed by their low-level ``next`` links (no class-aware wrapper per character: 2.7x
    less CPU than iterating ``FzStextLine``, which ran inside every page's layout pass)."""
    from pymupdf import mupdf

    fonts: dict[int, Any] = {}
    text = mupdf.FZ_STEXT_BLOCK_TEXT
    walk = mupdf.ll_fz_stext_page_block_iterator_begin_dfs(stext_page.this.m_internal)
    while not mupdf.ll_fz_stext_page_block_iterator_eod_dfs(walk):
        block = walk.block
        if block.type == text:
            for line in mupdf.FzStextBlock(block):
                char = line.m_internal.first_char
                last = None
                while char is not None:
                    font = char.font
                    if font is not None:
                        address = int(font.this)
                        if address != last:  # runs of one font: one lookup
                            fonts.setdefault(address, font)
                            last = address
                    char = char.next
        walk = mupdf.ll_fz_stext_page_block_iterator_next_dfs(walk)
    return fonts


_PATCH_LOCK = threading.Lock()
#: the wrapper installed by :func:`balance_feature_font_refs` (None: not installed)
_balanced: Callable[..., Any] | None = None


def balance_feature_font_refs() -> bool:
    """Make PyMuPDF's layout features give back the font references they take (module doc, 2.).

    Wraps ``extract_rf_features`` where ``pymupdf.layout`` calls it; idempotent; returns whether
    the wrapper is in place (False when this PyMuPDF has no such function)."""
    global _balanced
    with _PATCH_LOCK:
        if _balanced is not None:
            return True
        try:
            from pymupdf.layout import pymupdf_util_ext, pymupdf_util_rf
        except ImportError:
            return False
        original = getattr(pymupdf_util_ext, "extract_rf_features", None)
        if original is None:
            return False
        from pymupdf import mupdf

        def extract_rf_features(data_dict: Any, stext_page: Any) -> Any:
            fonts = _text_page_fonts(stext_page)
            before = {address: font.refs for address, font in fonts.items()}
            try:
                return original(data_dict, stext_page)
            finally:
                for address, font in fonts.items():
                    for _ in range(font.refs - before[address]):  # the text page still holds its own
                        mupdf.ll_fz_drop_font(font)

        extract_rf_features.__wrapped__ = original  # type: ignore[attr-defined]
        pymupdf_util_ext.extract_rf_features = extract_rf_features
        pymupdf_util_rf.extract_rf_features = extract_rf_features
        _balanced = extract_rf_features
        return True
