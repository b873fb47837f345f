"""Parse time of the OCR bombs of issue #21.8, with the OCR budgets on and (``--before``) off.

Run: ``python benchmarks/ocr_bombs.py [--before] [--cases noise1000,noise_image,real] [--save FILE]``

Each case is parsed once in its own process by ``PyMuPDFParser(ocr="auto")`` (the layout model's
load is not timed: it is loaded before the clock starts); printed per case: wall and CPU seconds
of the parse, OCR seconds, the page's ``ocr_budget`` record, element counts by type and the
characters left out as OCR garbage. ``--before`` switches the budgets off in the child
(OCR_MAX_PAGE_IMAGES and the noise share out of reach, the garbage rule off): the behaviour before
#21.8's budgets. Cases: ``noise1000`` -- 1000 small noise images under two scanned lines;
``noise_image`` -- one 4000 x 4000 noise image under them; ``real`` -- page 2 of the shared PeerJ
article scanned at 200 dpi. The machine's load average is printed: CPU seconds are the number to
compare on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, sys, time, warnings
from collections import Counter
sys.path.insert(0, sys.argv[3])
from grounded.parsers.backends.pymupdf import ocr_text, tree
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.ocr import budget, engine
if sys.argv[2] == "before":
    engine.OCR_MAX_PAGE_IMAGES = 10**9
    engine.NOISE_MIN_PAGE_SHARE = 2.0
    tree.is_garbage_element = lambda text: False
from grounded.parsers.backends.pymupdf.layout import _require_layout
_require_layout()
warnings.simplefilter("ignore")
wall, cpu = time.perf_counter(), time.process_time()
root = PyMuPDFParser(ocr="auto").parse(sys.argv[1])
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
page = root.metadata["pages"][0]
print(json.dumps({
    "wall": round(wall, 1), "cpu": round(cpu, 1), "ocr": root.metadata.get("ocr", {}).get("seconds"),
    "budget": page.get("ocr_budget"), "left_out": page.get("ocr_text_left_out"),
    "types": dict(Counter(str(n.type).rsplit(".", 1)[-1] for n in root.walk() if n is not root)),
}))
"""

LINES = ["Bounded optical character reading", "Noise never becomes a table"]


def _build(case: str, folder: Path) -> Path:
    sys.path.insert(0, str(REPO))
    from tests.support.data import shared
    from tests.support.pdf_builders import noise_image_pdf, noise_images_pdf
    from tests.support.scanned import scanned_pdf

    if case == "noise1000":
        return noise_images_pdf(folder / "noise1000.pdf", 1000, lines=LINES)
    if case == "noise_image":
        return noise_image_pdf(folder / "noise_image.pdf", 4000, lines=LINES)
    path = folder / "real.pdf"
    path.write_bytes(scanned_pdf(shared("long", "cermine_test6_peerjcs118.pdf"), [2]))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", action="store_true", help="also parse with the budgets off")
    ap.add_argument("--cases", default="noise1000,noise_image,real")
    ap.add_argument("--save", type=Path, help="write the table as Markdown")
    args = ap.parse_args(argv)
    imp = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or str(REPO)
    rows = ["| case | budgets | wall s | CPU s | OCR s | ocr_budget | elements | garbage left out |", "|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="grounded-ocr-bombs-") as tmp:
        for case in [c.strip() for c in args.cases.split(",") if c.strip()]:
            path = _build(case, Path(tmp))
            for mode in (["before"] if args.before else []) + ["after"]:
                done = subprocess.run(
                    [sys.executable, "-c", _CHILD, str(path), mode, imp], capture_output=True, text=True, check=False
                )
                if done.returncode:
                    rows.append(f"| {case} | {mode} | error | | | {done.stderr.strip().splitlines()[-1][:120]} | | |")
                else:
                    r = json.loads(done.stdout.strip().splitlines()[-1])
                    b = r["budget"] or {}
                    note = (f"{b.get('images')} images, whole page {b.get('whole_page')}, noise tiles "
                            f"{b.get('noise_tiles')}/{b.get('tiles')}") if b else "-"
                    lo = r["left_out"] or {}
                    rows.append(
                        f"| {case} | {'on' if mode == 'after' else 'off'} | {r['wall']} | {r['cpu']} | {r['ocr']} | {note} | "
                        f"{r['types']} | {lo.get('garbage_elements', 0)} elements, {lo.get('garbage_chars', 0)} chars |"
                    )
                print(rows[-1], flush=True)
    load = os.getloadavg()[0]
    text = "\n".join(rows) + f"\n\nload average {load:.1f} on {os.cpu_count()} CPUs\n"
    print(text)
    if args.save:
        args.save.write_text(f"# OCR bombs (`python benchmarks/ocr_bombs.py{' --before' if args.before else ''}`)\n\n{text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
