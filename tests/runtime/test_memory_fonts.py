"""Issue #34 item 18: parsing grew RSS ~0.47 MB per parse of the 13-page reference PDF, linearly.
The held reference: PyMuPDF's layout features (``pymupdf.features.fz_features_for_region``, called
by ``pymupdf.layout`` for every text box) take a reference to every font of the region they count
and never drop it, so each parsed document's fonts outlived it. grounded wraps the one caller
(:func:`grounded.runtime.memory.balance_feature_font_refs`) and gives the references back."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from grounded.runtime import memory
from tests.support.data import shared

#: one page, TrueType + CFF fonts (Type 1 fonts leak little: a leaked TrueType font keeps its file)
SMALL_PDF = ("pdfs", "docling_groundtruth", "amt_handbook_sample.pdf")


def _text_page(page: Any) -> Any:
    from pymupdf.layout import pymupdf_util_ext
    from pymupdf.layout.pymupdf_util_base import extract_base_elements

    data = extract_base_elements(page, input_type=("text",))
    pymupdf_util_ext._init_custom_features(data)  # what apply_feature_extractors does first
    return data, data["stext_page"]


def _refs(fonts: dict[int, Any]) -> dict[int, int]:
    return {address: font.refs for address, font in fonts.items()}


def test_layout_features_give_back_every_font_reference() -> None:
    import pymupdf
    from pymupdf.layout import pymupdf_util_ext

    assert memory.balance_feature_font_refs()
    with pymupdf.open(shared(*SMALL_PDF)) as doc:
        data, tp = _text_page(doc[0])
        fonts = memory._text_page_fonts(tp)
        assert len(fonts) >= 3
        before = _refs(fonts)
        pymupdf_util_ext.extract_rf_features(data, tp)  # what pymupdf.layout calls, wrapped
        assert _refs(fonts) == before
        assert data["custom_features"] and "font_size" in data["custom_features"][0]


def test_pymupdfs_own_features_keep_font_references() -> None:
    """The cause, on PyMuPDF's unwrapped function: a ``fz_keep_font`` per font and call, no drop.
    Skipped when a PyMuPDF release has fixed it (the wrapper then drops nothing)."""
    import pymupdf
    from pymupdf.layout import pymupdf_util_ext

    memory.balance_feature_font_refs()
    original = pymupdf_util_ext.extract_rf_features.__wrapped__
    with pymupdf.open(shared(*SMALL_PDF)) as doc:
        data, tp = _text_page(doc[0])
        fonts = memory._text_page_fonts(tp)
        before = _refs(fonts)
        original(data, tp)
        leaked = {a: fonts[a].refs - before[a] for a in fonts if fonts[a].refs != before[a]}
        if not leaked:
            pytest.skip("this PyMuPDF's layout features keep no font reference: the wrapper is a no-op")
        assert all(n > 0 for n in leaked.values())
        for address, n in leaked.items():  # give them back: the fonts are freed with the document
            for _ in range(n):
                pymupdf.mupdf.ll_fz_drop_font(fonts[address])


PARSES = 30
#: bounds for 30 parses of the one-page SMALL_PDF, growth after the 5th parse (see docs/results/memory_growth.md:
#: before the fix the C heap in use grew ~0.1 MB and RSS ~0.15 MB per parse, after it is flat)
MAX_RSS_GROWTH_MB = 1.5
MAX_HEAP_GROWTH_MB = 0.5

JOB = """
import ctypes, gc, os, sys
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

def heap():
    m = libc.mallinfo2()
    return (m.uordblks + m.hblkhd) / 2**20

with PyMuPDFParser(workers=1) as parser:
    for i in range(1, int(sys.argv[2]) + 1):
        parser.parse(sys.argv[1])
        gc.collect()
        print(i, round(rss(), 2), round(heap(), 3), flush=True)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and glibc's mallinfo2")
def test_thirty_parses_keep_memory_flat() -> None:
    pdf = shared(*SMALL_PDF)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(JOB), str(pdf), str(PARSES)],
        env=env, capture_output=True, text=True, timeout=3600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines() if line.strip()]
    assert len(rows) == PARSES
    rss = [float(r[1]) for r in rows]
    heap = [float(r[2]) for r in rows]
    assert rss[-1] - rss[4] < MAX_RSS_GROWTH_MB, done.stdout
    assert heap[-1] - heap[4] < MAX_HEAP_GROWTH_MB, done.stdout
