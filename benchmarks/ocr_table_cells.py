"""Table cells of the sample guideline read by OCR vs its born-digital text (issue #34 item 21).

Run: ``python benchmarks/ocr_table_cells.py [--pdf PATH --pages 2,3] [--no-table-reread]`` (from
the repository root, the tree to measure on PYTHONPATH). The sample guideline
(``grounded.samples.write_sample_pdf``; or the pages of ``--pdf``) is scanned at 200 dpi
(``tests.support.scanned.scanned_pdf``, every page an image) and parsed with ``ocr="always"``; the
born-digital copy with ``ocr="never"`` is the truth. ``--no-table-reread`` measures the parse
without the second reading of table regions (``grounded.parsers.ocr.tables.TABLE_REREAD``). Each born-digital table cell is paired with the
OCR'd cell whose box overlaps it most: CER (Levenshtein / characters, whitespace collapsed) over all
cells, over header cells (grid row 0) and over each page's header cells, and the vertical offset (points) between the centres of
the two cells' first line spans. Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
import tempfile
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    import argparse

    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("--pdf", type=Path, help="a born-digital PDF (default: the sample guideline)")
    args.add_argument("--pages", default="", help="1-based pages of --pdf, comma-separated (default: all)")
    args.add_argument("--no-table-reread", action="store_true", help="parse without re-reading table regions")
    opts = args.parse_args()
    sys.path.insert(0, str(REPO))
    import numpy as np
    from rapidfuzz.distance import Levenshtein

    from grounded.model import ParsingResultType as T
    from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
    from grounded.parsers.ocr import tables as ocr_tables
    from grounded.samples import write_sample_pdf
    from tests.support.scanned import scanned_pdf

    ocr_tables.TABLE_REREAD = not opts.no_table_reread
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        pages = [int(p) for p in opts.pages.split(",") if p.strip()] or None
        src = write_sample_pdf(Path(tmp) / "sample.pdf") if opts.pdf is None else opts.pdf
        if pages is not None:  # the born-digital truth of the same pages, as one PDF
            import pymupdf

            with pymupdf.open(src) as doc, pymupdf.open() as part:
                for p in pages:
                    part.insert_pdf(doc, from_page=p - 1, to_page=p - 1)
                part.save(Path(tmp) / "pages.pdf")
            src = Path(tmp) / "pages.pdf"
        scan = Path(tmp) / "scan.pdf"
        scan.write_bytes(scanned_pdf(src, dpi=200))
        truth = _cells(PyMuPDFParser(ocr="never").parse(src), T)
        got = _cells(PyMuPDFParser(ocr="always").parse(scan), T)
    kinds = ["all", "header", *sorted({f"header p{t[0]}" for t in truth if t[1] == 0})]
    out: dict[str, list[float]] = {kind: [] for kind in kinds}
    dist = {kind: [0, 0] for kind in kinds}
    for page, row, text, box, height in truth:
        best = max((g for g in got if g[0] == page), key=lambda g: _overlap(g[3], box), default=None)
        other = " ".join(best[2].split()) if best else ""
        d = Levenshtein.distance(text, other)
        for kind in ("all", "header", f"header p{page}") if row == 0 else ("all",):
            dist[kind][0] += d
            dist[kind][1] += len(text)
            if best is not None and box.spans and best[3].spans:
                out[kind].append(abs(_centre(best[3]) - _centre(box)) * height)
    print(json.dumps({
        kind: {"cells": len(out[kind]), "cer": round(dist[kind][0] / max(dist[kind][1], 1), 4),
               "offset_pt_mean": round(float(np.mean(out[kind])), 2) if out[kind] else None}
        for kind in kinds
    }))
    return 0


def _cells(root, T):  # noqa: ANN001, ANN202, N803
    cells = []
    for table in (n for n in root.walk() if n.type == T.TABLE):
        for row in table.children:
            for cell in row.children:
                box = cell.geom[0]
                height = next(p["height"] for p in root.metadata["pages"] if p["page"] == box.page)
                cells.append((box.page, cell.metadata.get("row"), " ".join(cell.content.split()), box, height))
    return cells


def _overlap(a, b) -> float:  # noqa: ANN001
    return max(0.0, min(a.right, b.right) - max(a.left, b.left)) * max(0.0, min(a.bottom, b.bottom) - max(a.top, b.top))


def _centre(box) -> float:  # noqa: ANN001
    return (box.spans[0].top + box.spans[0].bottom) / 2


if __name__ == "__main__":
    raise SystemExit(main())
