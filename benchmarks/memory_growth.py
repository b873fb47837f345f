"""Memory of a long-lived process: one parser object, the same PDF parsed N times (issue #14.7).

Run: ``python benchmarks/memory_growth.py [-n 50] [--pdf PATH] [--save docs/results/memory_growth.md]``
(``--no-release`` measures the old behaviour: no cache flush / ``malloc_trim`` after a parse;
``--no-font-balance`` the behaviour before issue #34: PyMuPDF's layout features keep a reference
to every font they count, see ``grounded.runtime.memory``;
``--ocr`` parses a one-page scan of page 2 of ``--pdf`` (rendered at 200 dpi, no text layer) with
OCR on, so every parse runs Tesseract: issue #21.9, target <= 0.5 MB per OCR'd page).

Prints, after every parse, the process RSS, the C heap bytes in use and free inside glibc's
arenas (``mallinfo2``; Linux/glibc only) and the parse time; then RSS after the 1st, 5th and last
parse and the growth after the 5th parse (target: <= 20 MB over 50 parses of the 13-page
reference document). The free-in-arena column is memory the allocator kept after it was freed;
the in-use column is what is still allocated (the layout features' small per-document leak; see
``grounded.runtime.memory``).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PDF = REPO.parent / "shared" / "data" / "long" / "cermine_web_example3_clinsci.pdf"


def rss_mb() -> float:
    """Resident set size of this process in MB."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        import psutil

        return float(psutil.Process().memory_info().rss) / 2**20


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


def _mallinfo() -> tuple[float, float] | None:
    """(MB in use, MB free inside the arenas) from glibc, or None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _MallInfo2
    m = fn()
    return (m.uordblks + m.hblkhd) / 2**20, m.fordblks / 2**20


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=50, help="number of parses (default 50)")
    ap.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--no-release", action="store_true", help="baseline: no memory release after a parse")
    ap.add_argument("--no-font-balance", action="store_true",
                    help="baseline: leave the font references PyMuPDF's layout features leak (before #34)")
    ap.add_argument("--save", type=Path, help="write the table as Markdown")
    ap.add_argument("--ocr", action="store_true", help="parse a one-page scan of --pdf's page 2 with OCR on")
    args = ap.parse_args(argv)
    if args.n < 6:
        ap.error("-n must be >= 6 (growth is measured after the 5th parse)")
    if not args.pdf.exists():
        ap.error(f"no such PDF: {args.pdf}")

    from grounded.parsers import base
    from grounded.parsers.backends.pymupdf import pool as pymupdf_pool
    from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser

    if args.no_font_balance:
        from grounded.parsers.backends.pymupdf import layout as pymupdf_layout

        pymupdf_layout.balance_feature_font_refs = lambda: False  # type: ignore[assignment]
    if args.no_release:
        base.release_memory = lambda: None  # type: ignore[assignment]
        pymupdf_pool.release_memory = lambda: None  # type: ignore[assignment]

    lines: list[str] = []

    def out(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    import pymupdf

    pdf = args.pdf
    if args.ocr:
        import tempfile

        sys.path.insert(0, str(REPO))
        from tests.support.scanned import scanned_pdf

        pdf = Path(tempfile.mkdtemp(prefix="grounded-memory-")) / f"scan-{args.pdf.stem}-p2.pdf"
        pdf.write_bytes(scanned_pdf(args.pdf, [2]))
    out(
        f"pdf: {pdf.name}  ocr: {'yes' if args.ocr else 'no'}  parses: {args.n}  workers: {args.workers}  release after parse: "
        f"{'no' if args.no_release else 'yes'}  font refs balanced: {'no' if args.no_font_balance else 'yes'}  python {platform.python_version()}  pymupdf {pymupdf.__version__}  "
        f"cpus: {os.cpu_count()}"
    )
    out(f"{'parse':>5} {'RSS MB':>8} {'C heap in use MB':>17} {'free in arenas MB':>18} {'seconds':>8}")
    rss: list[float] = []
    with PyMuPDFParser(workers=args.workers, ocr="auto") as parser:  # the default: a scan is OCR'd
        for i in range(1, args.n + 1):
            started = time.perf_counter()
            parser.parse(pdf)
            took = time.perf_counter() - started
            rss.append(rss_mb())
            heap = _mallinfo()
            used, free = (f"{heap[0]:.1f}", f"{heap[1]:.1f}") if heap else ("-", "-")
            out(f"{i:>5} {rss[-1]:>8.1f} {used:>17} {free:>18} {took:>8.1f}")
    n = args.n
    half = n // 2
    growth = rss[-1] - rss[4]
    slope = (rss[-1] - rss[half - 1]) / (n - half)
    out("")
    out(f"RSS after parse 1: {rss[0]:.1f} MB, 5: {rss[4]:.1f} MB, {n}: {rss[-1]:.1f} MB (max {max(rss):.1f} MB)")
    out(f"growth after the 5th parse: {growth:+.1f} MB over {n - 5} parses ({growth / (n - 5):+.2f} MB/parse)")
    out(f"second half: {slope:+.2f} MB/parse")
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        cmd = "python benchmarks/memory_growth.py " + " ".join(argv if argv is not None else sys.argv[1:])
        args.save.write_text(
            f"# Memory growth over repeated parses (`{cmd.strip()}`)\n\n```\n" + "\n".join(lines) + "\n```\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
