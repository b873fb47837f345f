"""Two-column reading order over every shared PDF (issue #13.1): pages where a column-2 layout box
is read before a column-1 box of its band, in the layout model's order and after
:func:`grounded.parsers.reading_order.reading_order`. The bound: at most a quarter of the pages out
of order before are still out of order after (exit code 1 otherwise).

Run: ``python benchmarks/reading_order_columns.py [--save docs/results/reading_order_columns.md]``.
Every page of ``../shared/data/pdfs`` and ``../shared/data/long`` (~350 pages) runs through the
layout model (~5 CPU-minutes). The suite checks the same bound on the two-column PDFs only
(tests/parse/test_reading_order.py::test_shared_two_column_pdfs_read_column_one_first); this is
the measurement over the whole corpus that test ran before issue #30.7 moved it here.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
for _key, _value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(_key, _value)

import grounded  # noqa: E402,F401  (before pymupdf: grounded's offline defaults first)
from tests.support.columns import count_column_order  # noqa: E402
from tests.support.data import SHARED_DATA  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--save", type=Path, help="write the Markdown table here")
    args = ap.parse_args()
    pdfs = sorted((SHARED_DATA / "pdfs").rglob("*.pdf")) + sorted((SHARED_DATA / "long").glob("*.pdf"))
    started, cpu = time.perf_counter(), time.process_time()
    count = count_column_order(pdfs)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    ok = count.after <= count.before // 4
    lines = [
        "# Two-column reading order over every shared PDF",
        "",
        "Command: `python benchmarks/reading_order_columns.py --save docs/results/reading_order_columns.md`",
        "",
        "Pages with a column-2 layout box read before a column-1 box of its band (layout model order ->",
        "`reading_order`). Bound: after <= before // 4.",
        "",
        "| PDF | pages | out of order: model | out of order: reading_order |",
        "|---|---:|---:|---:|",
    ]
    for path, (pages, before, after) in count.per_pdf.items():
        if before or after:
            lines.append(f"| {Path(path).relative_to(SHARED_DATA)} | {pages} | {before} | {after} |")
    lines += [
        f"| **all {len(pdfs)} PDFs** | **{count.pages}** | **{count.before}** | **{count.after}** |",
        "",
        f"PDFs with no page out of order in either order are not listed. Still out of order: {', '.join(count.remaining) or 'none'}.",
        f"Bound {'met' if ok else 'NOT met'}. {seconds:.0f} s wall, {cpu_seconds:.0f} s CPU (one ONNX thread; load {os.getloadavg()[0]:.1f}).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.save:
        args.save.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
