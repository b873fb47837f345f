"""PyMuPDF's binding of ``fz_scale_pixmap`` leaks every scaled copy (issue #21.9): only pymupdf calls.

Run: ``python benchmarks/pymupdf_scale_leak.py [-n 6]``

Makes a white 1700 x 2200 RGB pixmap (a letter page at 200 dpi) and, N times per way, a scaled
copy of its 700 x 1900 part (what the OCR of one column region did), printing RSS and glibc's
heap bytes in use after each copy is deleted (gc, MuPDF's store emptied, ``malloc_trim``):

* ``pymupdf.Pixmap(pix, w, h, clip)`` and ``pymupdf.mupdf.fz_scale_pixmap`` (the class-aware
  binding it calls): the copy comes back with two references (``storable.refs == 2``), one is
  never dropped, so every copy (~3.8 MB) stays allocated;
* ``pymupdf.mupdf.ll_fz_scale_pixmap`` wrapped in ``FzPixmap`` (what
  ``grounded.parsers.ocr.engine.scaled_pixmap`` does): one reference, freed, memory flat.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import os


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=6, help="copies per way (default 6)")
    args = ap.parse_args(argv)

    import pymupdf
    from pymupdf import mupdf

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 1700, 2200), False)
    pix.clear_with(255)
    clip = pymupdf.IRect(100, 100, 800, 2000)

    def pixmap_ctor() -> tuple[object, int]:
        out = pymupdf.Pixmap(pix, pix.w, pix.h, clip)
        return out, out.this.m_internal.storable.refs

    def class_aware() -> tuple[object, int]:
        out = mupdf.fz_scale_pixmap(pix.this, 0, 0, pix.w, pix.h, mupdf.FzIrect(100, 100, 800, 2000))
        return out, out.m_internal.storable.refs

    def low_level() -> tuple[object, int]:
        box = mupdf.FzIrect(100, 100, 800, 2000)
        out = mupdf.FzPixmap(mupdf.ll_fz_scale_pixmap(pix.this.m_internal, 0, 0, pix.w, pix.h, box.internal()))
        return out, out.m_internal.storable.refs

    print(f"pymupdf {pymupdf.__version__}, MuPDF {pymupdf.mupdf_version}; {args.n} scaled copies of a 700 x 1900 RGB part each")
    print("| call | refs | RSS first MB | RSS last MB | heap in use first MB | heap in use last MB | MB per copy |")
    print("|---|---|---|---|---|---|---|")
    for name, make in (
        ("pymupdf.Pixmap(pix, w, h, clip)", pixmap_ctor),
        ("mupdf.fz_scale_pixmap", class_aware),
        ("mupdf.ll_fz_scale_pixmap + FzPixmap", low_level),
    ):
        rss, heap, refs = [], [], 0
        for _ in range(args.n):
            copy, refs = make()
            del copy
            gc.collect()
            pymupdf.TOOLS.store_shrink(100)
            libc.malloc_trim(0)
            m = libc.mallinfo2()
            rss.append(_rss_mb())
            heap.append((m.uordblks + m.hblkhd) / 2**20)
        per = (heap[-1] - heap[0]) / max(1, args.n - 1)
        print(f"| {name} | {refs} | {rss[0]:.1f} | {rss[-1]:.1f} | {heap[0]:.1f} | {heap[-1]:.1f} | {per:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
