"""Time one parse of a hostile page: N text operators on one letter page (issue #21.7).

Run: ``python benchmarks/hostile_pages.py --operators 10000 20000`` (from the repo root, with the
tree to measure on PYTHONPATH). Each size is parsed in a fresh subprocess; prints a table of parse
seconds, layout seconds, whether the page was beyond the layout budget, and the characters kept.
Results: docs/results/hostile_pages.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _one(operators: int) -> dict[str, object]:
    sys.path.insert(0, str(REPO))
    from grounded import get_parser
    from tests.support.pdf_builders import many_operators_pdf

    with tempfile.TemporaryDirectory() as tmp:
        path = many_operators_pdf(Path(tmp) / "ops.pdf", operators)
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        root = get_parser("pymupdf").parse(path)
        seconds = time.perf_counter() - started
    page = root.metadata["pages"][0]
    return {
        "operators": operators,
        "seconds": round(seconds, 1),
        "layout_seconds": root.metadata.get("layout_seconds"),
        "skipped": bool(page.get("layout_skipped")),
        "status": page["status"],
        "chars": page["chars"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--operators", type=int, nargs="+", default=[10_000, 20_000])
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        sys.stdout.write(json.dumps(_one(args.one)) + "\n")
        return 0
    sys.stdout.write("| operators | parse s | layout s | layout skipped | status | chars |\n|---:|---:|---:|---|---|---:|\n")
    for n in args.operators:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        sys.stdout.write(
            f"| {n} | {row['seconds']} | {row['layout_seconds']} | {row['skipped']} | {row['status']} | {row['chars']} |\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
