"""Where parse memory leaks (issue #34, item 18): the same PDF through each stage of the layout
pass, N times in one process, and the C heap bytes still in use after each run.

Run: ``python benchmarks/parse_leak.py [--pdf PATH] [-n 10] [--stages base,rf,layout,grounded]
[--no-font-balance] [--save docs/results/parse_leak.md]``

Stages (each opens the PDF anew every run; after each run: ``gc.collect()``, MuPDF's store and
glyph cache emptied, ``malloc_trim``):

* ``base``: PyMuPDF layout's input extraction (text page with the layout's flags, boxes);
* ``rf``: ``base`` + its text features (``pymupdf.features.fz_features_for_region`` per box);
* ``layout``: ``page.get_layout()`` (features + the ONNX models), pymupdf only;
* ``grounded``: one ``PyMuPDFParser(workers=1)`` parsing the file.

``--no-font-balance`` leaves out :func:`grounded.runtime.memory.balance_feature_font_refs` (the
behaviour before the fix). Prints per stage the heap growth per run after the 3rd run (glibc
``mallinfo2``: in-use bytes), RSS growth, and the Python object count change.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PDF = REPO.parent / "shared" / "data" / "pdfs" / "docling_groundtruth" / "normal_4pages.pdf"
STAGES = ("base", "rf", "layout", "grounded")


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


def _heap_mb() -> float:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    m = libc.mallinfo2()
    return float(m.uordblks + m.hblkhd) / 2**20


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _stage(name: str, pdf: Path) -> Callable[[], None]:
    import pymupdf

    if name == "grounded":
        from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser

        parser = PyMuPDFParser(workers=1)
        return lambda: parser.parse(pdf) and None

    from pymupdf.layout import pymupdf_util_ext
    from pymupdf.layout.pymupdf_util_base import extract_base_elements

    def run() -> None:
        with pymupdf.open(pdf) as doc:
            for page in doc:
                if name == "layout":
                    page.get_layout()
                    continue
                data: dict[str, Any] = extract_base_elements(page, input_type=("text",))
                if name == "rf":
                    pymupdf_util_ext.apply_feature_extractors(data, feature_set_name="rf", input_type=("text",), page=page)
                data.clear()

    return run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    ap.add_argument("-n", type=int, default=10, help="runs per stage (default 10, >= 5)")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--no-font-balance", action="store_true", help="the behaviour before the fix")
    ap.add_argument("--save", type=Path, help="append the table to this Markdown file")
    args = ap.parse_args(argv)
    if args.n < 5:
        ap.error("-n must be >= 5")
    sys.path.insert(0, str(REPO))
    import pymupdf

    import grounded  # noqa: F401  (offline switches before the layout loads)
    from grounded.parsers.backends.pymupdf import layout as pymupdf_layout
    from grounded.runtime.memory import balance_feature_font_refs, release_memory

    if args.no_font_balance:
        pymupdf_layout.balance_feature_font_refs = lambda: False  # type: ignore[assignment]
    else:
        balance_feature_font_refs()
    lines = [
        f"pdf: {args.pdf.name}  runs per stage: {args.n}  font refs balanced: {'no' if args.no_font_balance else 'yes'}  "
        f"python {platform.python_version()}  pymupdf {pymupdf.__version__}  load: {os.getloadavg()[0]:.1f}",
        "",
        "| stage | heap in use after run 3 (MB) | after run N (MB) | heap growth per run (KiB) | RSS growth per run (KiB) | Python objects per run |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    print(lines[0], flush=True)
    for name in args.stages.split(","):
        run = _stage(name, args.pdf)
        rows = []
        for i in range(args.n):
            started = time.perf_counter()
            run()
            gc.collect()
            release_memory()
            rows.append((_heap_mb(), _rss_mb(), len(gc.get_objects())))
            print(f"{name:>8} {i + 1:3d} heap {rows[-1][0]:8.2f} MB  rss {rows[-1][1]:8.1f} MB  "
                  f"{time.perf_counter() - started:5.1f} s", flush=True)
        k, span = 2, args.n - 3
        heap = (rows[-1][0] - rows[k][0]) / span * 1024
        rss = (rows[-1][1] - rows[k][1]) / span * 1024
        objs = (rows[-1][2] - rows[k][2]) / span
        lines.append(f"| {name} | {rows[k][0]:.2f} | {rows[-1][0]:.2f} | {heap:+.1f} | {rss:+.1f} | {objs:+.1f} |")
    print("\n".join(lines[2:]))
    if args.save:
        cmd = "python benchmarks/parse_leak.py " + " ".join(argv if argv is not None else sys.argv[1:])
        with open(args.save, "a", encoding="utf-8") as fh:
            fh.write(f"\n`{cmd.strip()}`\n\n```\n{lines[0]}\n```\n\n" + "\n".join(lines[2:]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
